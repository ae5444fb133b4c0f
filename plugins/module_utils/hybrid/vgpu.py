# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU sharing with HAMi's volcano-vgpu: what a container asks for.

The design's ``volcano.sh/gpu-memory`` is Volcano's old GPU sharing
(``deviceshare.GPUSharingEnable``, pkg/scheduler/api/devices/nvidia/gpushare),
deprecated since Volcano 1.9. Volcano 1.15.1 shares GPUs through HAMi's
vGPU device (``deviceshare.VGPUEnable``, pkg/scheduler/api/devices/nvidia/vgpu):
a container asks for whole virtual GPUs (``volcano.sh/vgpu-number``), each
with a slice of one physical GPU's memory (``volcano.sh/vgpu-memory``, MiB)
and of its compute (``volcano.sh/vgpu-cores``, percent). Volcano reads the
three from the container's limits (pkg/scheduler/api/devices/util.go,
``ExtractResourceRequest``); requests equal to the limits keep the API server's
extended-resource rule (requests = limits) and the queue accounting exact.

Each rule is one function named ``Rule <name>`` in its docstring; every error
names the field, the value and the rule. No I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from ..common.errors import FieldError, raise_if
from ..common.names import (
    VGPU_CORES,
    VGPU_MEMORY,
    VGPU_NUMBER,
    VGPU_QUEUE_RESOURCES,
    VGPU_RESOURCES,
)
from ..common.quantity import GPU, parse_quantity

# The resource names (VGPU_NUMBER, VGPU_MEMORY, VGPU_CORES, the queue's
# VGPU_QUEUE_RESOURCES) are common/names'.

# Keys of a vGPU request and the resource each becomes.
VGPU_KEYS = {"number": VGPU_NUMBER, "memory_mib": VGPU_MEMORY, "cores": VGPU_CORES}
# A container's vGPUs come from distinct physical GPUs of one node (utils.go,
# checkNodeGPUSharingPredicateAndScore: "no enough gpu cards on node"), so the
# number is bounded by the GPUs of the largest node (jobs/request_rules, max_gpus_per_node).
MAX_VGPU_NUMBER = 8
# Volcano keeps the memory request in an int32 (ContainerDeviceRequest.Memreq).
MAX_MEMORY_MIB = 2**31 - 1
# vgpu-cores is a percentage of one GPU; 100 takes the GPU alone.
MAX_CORES = 100


def _sub(field: str, key: str) -> str:
    return f"{field}.{key}" if field else key


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _bounded_errors(
    field: str, value: object, minimum: int, maximum: int, meaning: str
) -> list[FieldError]:
    if not _is_int(value):
        return [
            FieldError(
                field,
                f"{value!r} must be a whole number from {minimum} to {maximum} "
                f"({meaning}; rule vgpu-request)",
            )
        ]
    if not minimum <= value <= maximum:
        return [
            FieldError(
                field, f"{value} must be from {minimum} to {maximum} ({meaning}; rule vgpu-request)"
            )
        ]
    return []


def vgpu_request_errors(
    field: str, value: Any, max_number: int = MAX_VGPU_NUMBER
) -> list[FieldError]:
    """Rule vgpu-request: a container's vGPU request is a mapping ``{number, memory_mib,
    cores}``: ``number`` (required) a whole number from 1 to ``max_number`` (the physical
    GPUs of the largest vGPU node: each vGPU of a container is on a different GPU),
    ``memory_mib`` (optional) the device memory of each vGPU in MiB, more than 0, and
    ``cores`` (optional) the percentage of each GPU's compute, 1 to 100. Without
    ``memory_mib`` Volcano gives each vGPU the whole memory of its GPU. None (no
    request) is valid."""
    if value is None:
        return []
    if not isinstance(value, Mapping):
        return [
            FieldError(
                field,
                f"{value!r} must be a mapping such as {{number: 1, memory_mib: 8192, cores: 30}} "
                "(rule vgpu-request)",
            )
        ]
    errors = [
        FieldError(
            _sub(field, str(key)),
            f"{key!r} is not a key of a vGPU request; the keys are {', '.join(VGPU_KEYS)} "
            "(rule vgpu-request)",
        )
        for key in value
        if key not in VGPU_KEYS
    ]
    if "number" not in value or value["number"] is None:
        errors.append(
            FieldError(
                _sub(field, "number"),
                "is required: how many vGPUs the container gets, e.g. 1 (rule vgpu-request)",
            )
        )
    else:
        errors += _bounded_errors(
            _sub(field, "number"),
            value["number"],
            1,
            max_number,
            f"each vGPU of a container is on a different physical GPU and the largest node has "
            f"{max_number}",
        )
    if value.get("memory_mib") is not None:
        errors += _bounded_errors(
            _sub(field, "memory_mib"),
            value["memory_mib"],
            1,
            MAX_MEMORY_MIB,
            "MiB of device memory per vGPU; leave it out for the whole GPU's memory",
        )
    if value.get("cores") is not None:
        errors += _bounded_errors(
            _sub(field, "cores"),
            value["cores"],
            1,
            MAX_CORES,
            "percent of one GPU's compute per vGPU; 100 takes the GPU alone",
        )
    return errors


def vgpu_resources(value: Mapping[str, Any], max_number: int = MAX_VGPU_NUMBER) -> dict[str, int]:
    """The container's vGPU resources, for its ``limits`` and, identical, its ``requests``
    (Volcano reads the limits; the API server wants extended-resource requests equal to
    limits). Raises PlatformValidationError when rule vgpu-request is broken."""
    raise_if(vgpu_request_errors("vgpu", value, max_number))
    return {
        resource: int(value[key])
        for key, resource in VGPU_KEYS.items()
        if value.get(key) is not None
    }


def _whole_gpus(gpus: Any) -> Decimal | None:
    """The whole-GPU count as a number; None when it is absent or 0. A value that is not a
    quantity counts as a request (someone wrote something there)."""
    if gpus is None or isinstance(gpus, bool):
        return None if gpus is None or gpus is False else Decimal(1)
    try:
        number = parse_quantity(gpus)
    except (ValueError, TypeError):
        return Decimal(1)
    return number if number != 0 else None


def _has_vgpu(vgpu: Any) -> bool:
    if vgpu is None:
        return False
    if isinstance(vgpu, Mapping):
        return bool(vgpu)
    return True


def vgpu_conflict_errors(field: str, gpus: Any, vgpu: Any) -> list[FieldError]:
    """Rule vgpu-or-whole-gpu: a container asks for whole GPUs (``nvidia.com/gpu``, the
    NVIDIA device plugin) or for vGPUs (HAMi's vGPU device plugin), never both. The two
    device plugins run on disjoint nodes (the nvidia_device_plugin role keeps itself off
    nodes labelled for vGPU), so a container asking for both fits on no node and its pod,
    and with gang scheduling its whole job, waits forever."""
    if _whole_gpus(gpus) is None or not _has_vgpu(vgpu):
        return []
    return [
        FieldError(
            field,
            f"asks for vGPUs {dict(vgpu) if isinstance(vgpu, Mapping) else vgpu!r} and for "
            f"{gpus!r} whole GPUs ({GPU}) in one container; no node offers both (whole GPUs come "
            "from the NVIDIA device plugin, vGPUs from HAMi's on nodes labelled for vGPU); ask "
            "for one of them (rule vgpu-or-whole-gpu)",
        )
    ]


def resource_conflict_errors(field: str, resources: Any) -> list[FieldError]:
    """Rule vgpu-or-whole-gpu for a container's ``resources`` as written in a manifest:
    ``nvidia.com/gpu`` and any ``volcano.sh/vgpu-*`` in its limits or requests."""
    if not isinstance(resources, Mapping):
        return []
    gpus: Any = None
    vgpu: dict[str, Any] = {}
    for part in ("limits", "requests"):
        listed = resources.get(part)
        if not isinstance(listed, Mapping):
            continue
        if gpus is None and _whole_gpus(listed.get(GPU)) is not None:
            gpus = listed.get(GPU)
        vgpu.update({k: v for k, v in listed.items() if k in VGPU_RESOURCES})
    return vgpu_conflict_errors(field, gpus, vgpu)


# --------------------------------------------------------------------------
# vGPU in the queues (rules vgpu-purchase, vgpu-queue-capability)
# --------------------------------------------------------------------------


def vgpu_purchase(value: Any, field: str, errors: list[FieldError]) -> dict[str, Decimal] | None:
    """Rule vgpu-purchase: a tenant's vGPU purchase ``{number, memory_mib, cores}``, as
    queue resources. ``number`` (required) is how many vGPUs its jobs may hold at once,
    0 or more; ``memory_mib`` (optional) the device memory all of them may hold together,
    MiB; ``cores`` (optional) the percent of GPU compute all of them may hold together,
    by default ``number`` x 100 (one vGPU takes at most one whole GPU's compute, so that
    is no bound beyond the number). Without ``memory_mib`` the memory is bounded only by
    the number: a vGPU holds at most its GPU's memory. None is no purchase. Appends every
    problem to ``errors``; returns None when there is none or it is wrong."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        errors.append(
            FieldError(
                field,
                f"{value!r} must be a mapping such as {{number: 4, memory_mib: 81920, cores: 200}} "
                "(rule vgpu-purchase)",
            )
        )
        return None
    found: list[FieldError] = [
        FieldError(
            _sub(field, str(key)),
            f"{key!r} is not a key of a vGPU purchase; the keys are {', '.join(VGPU_KEYS)} "
            "(rule vgpu-purchase)",
        )
        for key in value
        if key not in VGPU_KEYS
    ]
    meanings = {
        "number": "vGPUs the tenant's jobs may hold at once",
        "memory_mib": "MiB of device memory all its vGPUs may hold together",
        "cores": "percent of GPU compute all its vGPUs may hold together",
    }
    if value.get("number") is None:
        found.append(
            FieldError(
                _sub(field, "number"),
                "is required: how many vGPUs the tenant bought, e.g. 4 (rule vgpu-purchase)",
            )
        )
    for key, meaning in meanings.items():
        raw = value.get(key)
        if raw is not None and (not _is_int(raw) or raw < 0):
            found.append(
                FieldError(
                    _sub(field, key),
                    f"{raw!r} must be a whole number, 0 or more ({meaning}; rule vgpu-purchase)",
                )
            )
    errors += found
    if found:
        return None
    number = Decimal(value["number"])
    cores = value.get("cores")
    purchase = {
        VGPU_NUMBER: number,
        VGPU_CORES: Decimal(cores) if cores is not None else number * MAX_CORES,
    }
    if value.get("memory_mib") is not None:
        purchase[VGPU_MEMORY] = Decimal(value["memory_mib"])
    return purchase


def vgpu_queue_capability(
    purchase: Mapping[str, Decimal] | None, allocated: Mapping[str, Decimal]
) -> dict[str, Decimal]:
    """Rule vgpu-queue-capability: the vGPU part of a tenant queue's capability. A queue
    with a purchase gets it (a purchase below what the queue holds is rule
    capability-above-allocated's refusal; a purchase without ``memory_mib`` leaves the
    memory unnamed: a 0 would refuse every pod that asks for memory, and the number
    already bounds it). A queue without a purchase is held to what its running pods hold
    now (``status.allocated``, rounded up) in each of the three: 0 when they hold none,
    which Volcano honours, and never below what runs, so no pod is stranded and no new
    one starts."""
    if purchase is not None:
        return dict(purchase)
    return {name: _ceil(allocated.get(name, Decimal(0))) for name in VGPU_QUEUE_RESOURCES}


def _ceil(value: Decimal) -> Decimal:
    whole = value.to_integral_value(rounding="ROUND_CEILING")
    return whole if whole > 0 else Decimal(0)


def without_vgpu(resources: Mapping[str, Decimal]) -> dict[str, Decimal]:
    """A queue's resources without the vGPU ones (the purchase in the tenant's own terms
    is ``purchase_of``)."""
    return {k: v for k, v in resources.items() if k not in VGPU_QUEUE_RESOURCES}


def purchase_of(capability: Mapping[str, Decimal]) -> dict[str, int] | None:
    """The vGPU purchase ``{number, memory_mib, cores}`` a subscription queue's capability
    carries (rule vgpu-purchase read back); None when it holds no vGPU, which is also what
    a tenant without a purchase gets while its pods hold none."""
    number = capability.get(VGPU_NUMBER)
    if not number:
        return None
    bought = {"number": int(number)}
    if VGPU_MEMORY in capability:
        bought["memory_mib"] = int(capability[VGPU_MEMORY])
    if VGPU_CORES in capability:
        bought["cores"] = int(capability[VGPU_CORES])
    return bought
