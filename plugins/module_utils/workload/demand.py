# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule job-demand: how much a pod and a Volcano Job ask for.

One rule for every caller (spot reclaim, pay-as-you-go resizing, the large-job
throttle and the job builders), so the same job never counts differently:

* a container asks for its ``requests``, else its ``limits`` (Kubernetes
  defaults a missing request to the limit);
* a pod asks for the sum over its containers, or the largest single init
  container where that is more (init containers run one at a time, before the
  others);
* a Volcano Job asks for, per task, ``replicas`` x one pod. A task without
  ``replicas`` counts ``DEFAULT_REPLICAS`` = 0 pods: that is what Volcano's
  job controller creates for it (the field is a plain ``int32``).

A quantity that is not a quantity is refused with the object's path: counting
it as 0 would make a job look smaller than the scheduler sees it.

Callers that go over every job of a LIST and want only its GPUs and pods (the spot
reclaim, the arbiter, the large-job throttle, job feasibility) ask ``gpus_and_pods``,
the same answer read without the CPU and memory sums.

Whether a job fits its queue, its nodes and its PVCs is rule job-never-runs
(``jobs/feasibility``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, DecimalException
from typing import Any

from ..common.errors import FieldError, PlatformValidationError
from ..common.quantity import CPU, GPU, MEMORY, Resources, parse, remembered

# The resources the pool, the queues and the reclaim count.
DEMAND_RESOURCES = (GPU, CPU, MEMORY)
DEFAULT_REPLICAS = 0


def _zero() -> Resources:
    return {name: Decimal(0) for name in DEMAND_RESOURCES}


def container_demand(container: Mapping[str, Any], path: str) -> Resources:
    """One container: requests, else limits, per demand resource."""
    res = container.get("resources") or {}
    requests = res.get("requests") or {}
    limits = res.get("limits") or {}
    out = _zero()
    for name in DEMAND_RESOURCES:
        raw = requests[name] if name in requests else limits.get(name)
        if raw is not None:
            out[name] = parse(raw, f"{path}.resources.{name}")
    return out


def pod_demand(pod_spec: Mapping[str, Any], path: str = "spec") -> Resources:
    """Rule job-demand for one pod: containers summed, at least the largest init container."""
    total = _zero()
    for i, container in enumerate(pod_spec.get("containers") or []):
        part = container_demand(container, f"{path}.containers[{i}]")
        for name in DEMAND_RESOURCES:
            total[name] += part[name]
    for i, container in enumerate(pod_spec.get("initContainers") or []):
        part = container_demand(container, f"{path}.initContainers[{i}]")
        for name in DEMAND_RESOURCES:
            total[name] = max(total[name], part[name])
    return total


def replicas_of(task: Mapping[str, Any]) -> int:
    """A task's replicas; missing (or not an integer) counts DEFAULT_REPLICAS."""
    value = task.get("replicas", DEFAULT_REPLICAS)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return DEFAULT_REPLICAS
    return value


@dataclass(frozen=True)
class JobDemand:
    """What a Volcano Job asks for when all its pods run."""

    pods: int = 0
    resources: Resources = field(default_factory=_zero)

    @property
    def gpus(self) -> int:
        return int(self.resources[GPU])


def job_demand(job: Mapping[str, Any]) -> JobDemand:
    """Rule job-demand for a Volcano Job (a manifest or a live object)."""
    name = (job.get("metadata") or {}).get("name", "")
    pods = 0
    total = _zero()
    for t, task in enumerate((job.get("spec") or {}).get("tasks") or []):
        replicas = replicas_of(task)
        spec = (task.get("template") or {}).get("spec") or {}
        one = pod_demand(spec, f"{name}.spec.tasks[{t}].template.spec")
        pods += replicas
        try:
            for resource in DEMAND_RESOURCES:
                total[resource] += one[resource] * replicas
        except DecimalException:
            # Only a count no int32 holds, times a huge quantity, gets here: refused,
            # not counted as something else.
            raise PlatformValidationError(
                [
                    FieldError(
                        f"{name}.spec.tasks[{t}]",
                        "replicas times the pod's requests is more than can be counted"
                        " (replicas is an int32)",
                    )
                ]
            ) from None
    return JobDemand(pods=pods, resources=total)


_ZERO = Decimal(0)


def gpus_and_pods(job: Mapping[str, Any]) -> tuple[int, int]:
    """Rule job-demand's GPUs and pods of a Volcano Job: ``job_demand(job).gpus`` and
    ``.pods``, always, read quickly for callers that go over every job of a LIST (the
    spot reclaim, the arbiter, the large-job throttle).

    A LIST returns nearly every job in one shape: plain dicts, tasks without init
    containers, quantities read before. For that shape the GPUs are summed here in
    the same ``Decimal`` steps as ``job_demand`` (the containers of a task, times
    its replicas) and the CPU and memory sums, which these callers do not use, are
    skipped; each of their quantities must still be one ``parse`` accepted before
    (``quantity.remembered``: an ordinary number, which no sum can make invalid),
    so a job ``job_demand`` would refuse is never counted here. Any other job is
    counted by ``job_demand`` itself."""
    counted = _common_shape_demand(job.get("spec") or {})
    if counted is None:
        demand = job_demand(job)
        return demand.gpus, demand.pods
    return counted


# The replicas field is an int32; larger counts are left to job_demand.
_MAX_REPLICAS = 2**31 - 1
_DEMAND = frozenset(DEMAND_RESOURCES)


def _common_shape_demand(spec: object) -> tuple[int, int] | None:
    """``gpus_and_pods`` for a job of the common shape (its ``spec``, or {}),
    None for any other."""
    tasks = (spec.get("tasks") or []) if isinstance(spec, dict) else None
    if not isinstance(tasks, list):
        return None
    total = _ZERO
    pods = 0
    for task in tasks:
        if not isinstance(task, dict):
            return None
        template = task.get("template") or {}
        pod = (template.get("spec") or {}) if isinstance(template, dict) else None
        if not isinstance(pod, dict) or pod.get("initContainers"):
            return None
        containers = pod.get("containers") or []
        if not isinstance(containers, list):
            return None
        one = _ZERO
        for container in containers:
            gpu = _container_gpus(container)
            if gpu is None:
                return None
            one += gpu
        replicas = task.get("replicas", 0)
        if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
            replicas = replicas_of(task)
        if replicas > _MAX_REPLICAS:
            return None
        pods += replicas
        total += one * replicas
    return int(total), pods


def _container_gpus(container: object) -> Decimal | None:
    """A container's GPUs as ``container_demand`` reads them (0 when it names
    none), when it is a plain dict whose demand quantities are all remembered."""
    resources = (container.get("resources") or {}) if isinstance(container, dict) else None
    if not isinstance(resources, dict):
        return None
    requests = resources.get("requests") or {}
    limits = resources.get("limits") or {}
    if not isinstance(requests, dict) or not isinstance(limits, dict):
        return None
    if requests and limits:
        # Both given: each resource from the requests, else from the limits.
        named: Iterable[tuple[str, Any]] = (
            (name, requests[name] if name in requests else limits.get(name))
            for name in DEMAND_RESOURCES
        )
    else:
        named = (requests or limits).items()
    gpu = _ZERO
    for name, raw in named:
        if raw is None or name not in _DEMAND:
            continue
        value = remembered(raw)
        if value is None:
            return None
        if name == GPU:
            gpu = value
    return gpu
