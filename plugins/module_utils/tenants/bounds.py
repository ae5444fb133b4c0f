# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How many pods and claims a tenant may have, and how large a claim may be.

Volcano 1.15.1 counts a queue's pods in ``status.allocated`` but does not hold a
queue to a ``pods`` capability (docs/design-differences.md), and nothing in a queue
bounds storage. Kubernetes does both at the API server, per namespace: a
ResourceQuota (pods, claims, requested storage) and a LimitRange (the largest
claim). Both are platform objects in the tenant's namespace; the tenant Role grants
neither.

Rules held here:

* Rule tenant-bounds (``bounds_from``): by default a tenant may run
  ``max(POD_FLOOR, PODS_PER_GPU x its GPUs)`` pods (subscription plus
  pay-as-you-go), ``DEFAULT_CLAIMS`` claims, ``DEFAULT_STORAGE`` of claims in all
  and ``DEFAULT_CLAIM_SIZE`` in one claim; ``bounds`` sets any of them. A bound
  below what the namespace already holds refuses only new objects: nothing running
  is evicted and no claim is removed.
* Rule storage-class-bounds (``class_bounds``): ``bounds.storage_classes`` bounds the
  storage of each class named (``{checkpoints: 10Ti}``), within the tenant's storage in
  all; the ResourceQuota holds it as ``<class>.storageclass.storage.k8s.io/requests.storage``
  and the API server refuses a claim of that class beyond it. A class not named is bounded
  only by the total.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..common import quantity
from ..common.errors import FieldError
from ..common.names import (
    STORAGE_CLASS_QUOTA_SUFFIX,
    dns_subdomain_errors,
    namespace_name,
    tenant_labels,
)

BOUNDS_NAME = "platform-bounds"
# One kubelet's default pod limit: a tenant without GPUs still runs a node's worth.
POD_FLOOR = 110
# Pods per GPU bought: room for a GPU job's workers, its launcher and sidecars.
PODS_PER_GPU = 16
DEFAULT_CLAIMS = 50
DEFAULT_STORAGE = "20Ti"
DEFAULT_CLAIM_SIZE = "4Ti"
BOUNDS_KEYS = ("pods", "claims", "storage", "claim_size", "storage_classes")
_CLASS_SUFFIX = STORAGE_CLASS_QUOTA_SUFFIX


@dataclass(frozen=True)
class TenantBounds:
    pods: int
    claims: int
    storage: str
    claim_size: str
    # (storage class, its bound), sorted by class: rule storage-class-bounds
    storage_classes: tuple[tuple[str, str], ...] = ()


def _whole(raw: object, path: str, errors: list[FieldError]) -> int | None:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        errors.append(FieldError(path, f"{raw!r} must be a whole number of at least 1"))
        return None
    return raw


def _size(raw: object, path: str, errors: list[FieldError]) -> str | None:
    try:
        value: Decimal | None = quantity.parse_quantity(raw)
    except (TypeError, ValueError, ArithmeticError):
        value = None
    if value is None or value <= 0:
        errors.append(FieldError(path, f"{raw!r} must be a storage size such as 500Gi"))
        return None
    return str(raw)


def class_bounds(
    raw: object, storage: str, errors: list[FieldError], path: str = "bounds.storage_classes"
) -> tuple[tuple[str, str], ...]:
    """Rule storage-class-bounds: class -> size, each class a StorageClass name and each
    size within the tenant's storage in all."""
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        errors.append(
            FieldError(
                path,
                f"{raw!r} must be a mapping of storage class to size, e.g. {{checkpoints: 10Ti}}",
            )
        )
        return ()
    out = []
    for name, size in sorted(raw.items(), key=lambda kv: str(kv[0])):
        where = f"{path}.{name}"
        bad = dns_subdomain_errors(where, name)
        if bad:
            errors += bad
            continue
        checked = _size(size, where, errors)
        if checked is None:
            continue
        if quantity.parse_quantity(checked) > quantity.parse_quantity(storage):
            errors.append(
                FieldError(where, f"{checked} is more than the tenant's storage in all ({storage})")
            )
            continue
        out.append((str(name), checked))
    return tuple(out)


def bounds_from(
    raw: object,
    subscription: Mapping[str, Decimal],
    payg: Mapping[str, Decimal] | None,
    errors: list[FieldError],
    path: str = "bounds",
) -> TenantBounds:
    """Rule tenant-bounds: the tenant's bounds, each given one checked and the rest
    derived from its purchase."""
    given = raw if isinstance(raw, Mapping) else {}
    if raw is not None and not isinstance(raw, Mapping):
        errors.append(FieldError(path, f"{raw!r} must be a mapping of {', '.join(BOUNDS_KEYS)}"))
    unknown = sorted(set(given) - set(BOUNDS_KEYS))
    if unknown:
        errors.append(
            FieldError(
                path, f"unknown key(s) {', '.join(unknown)}; known: {', '.join(BOUNDS_KEYS)}"
            )
        )
    gpus = subscription.get(quantity.GPU, Decimal(0)) + (payg or {}).get(quantity.GPU, Decimal(0))
    pods = max(POD_FLOOR, int(gpus) * PODS_PER_GPU)
    if "pods" in given:
        pods = _whole(given["pods"], f"{path}.pods", errors) or pods
    claims = DEFAULT_CLAIMS
    if "claims" in given:
        claims = _whole(given["claims"], f"{path}.claims", errors) or claims
    storage = DEFAULT_STORAGE
    if "storage" in given:
        storage = _size(given["storage"], f"{path}.storage", errors) or storage
    claim_size = DEFAULT_CLAIM_SIZE
    if "claim_size" in given:
        claim_size = _size(given["claim_size"], f"{path}.claim_size", errors) or claim_size
    if quantity.parse_quantity(claim_size) > quantity.parse_quantity(storage):
        errors.append(
            FieldError(
                f"{path}.claim_size",
                f"{claim_size} is more than the tenant's storage in all ({storage})",
            )
        )
    classes = class_bounds(given.get("storage_classes"), storage, errors, f"{path}.storage_classes")
    return TenantBounds(
        pods=pods, claims=claims, storage=storage, claim_size=claim_size, storage_classes=classes
    )


def _metadata(tenant: str) -> dict[str, Any]:
    """Both bounds objects are named alike, in the tenant's namespace, with its labels."""
    return {
        "name": BOUNDS_NAME,
        "namespace": namespace_name(tenant),
        "labels": tenant_labels(tenant),
    }


def resource_quota(tenant: str, bounds: TenantBounds) -> dict[str, Any]:
    """The tenant's ResourceQuota: pods, claims and the storage they request, in all and
    per bounded class."""
    hard = {
        "pods": str(bounds.pods),
        "persistentvolumeclaims": str(bounds.claims),
        "requests.storage": bounds.storage,
    }
    hard.update({name + _CLASS_SUFFIX: size for name, size in bounds.storage_classes})
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": _metadata(tenant),
        "spec": {"hard": hard},
    }


def limit_range(tenant: str, bounds: TenantBounds) -> dict[str, Any]:
    """The tenant's LimitRange: the largest claim it may make, in any class."""
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": _metadata(tenant),
        "spec": {
            "limits": [{"type": "PersistentVolumeClaim", "max": {"storage": bounds.claim_size}}]
        },
    }


def read_bounds(
    quota: Mapping[str, Any] | None,
    limits: Mapping[str, Any] | None,
    subscription: Mapping[str, Decimal],
    payg: Mapping[str, Decimal] | None,
) -> dict[str, Any]:
    """The ``bounds`` that give the live ResourceQuota and LimitRange: only the keys
    whose value is not what the purchase gives by default (rule tenant-bounds), so a
    gathered entry says what was set and nothing more."""
    default = bounds_from(None, subscription, payg, [])
    hard = ((quota or {}).get("spec") or {}).get("hard") or {}
    largest = next(
        (
            (item.get("max") or {}).get("storage")
            for item in ((limits or {}).get("spec") or {}).get("limits") or []
            if item.get("type") == "PersistentVolumeClaim"
        ),
        None,
    )
    live: dict[str, Any] = {
        "pods": int(hard["pods"]) if str(hard.get("pods", "")).isdigit() else None,
        "claims": (
            int(hard["persistentvolumeclaims"])
            if str(hard.get("persistentvolumeclaims", "")).isdigit()
            else None
        ),
        "storage": hard.get("requests.storage"),
        "claim_size": largest,
    }
    classes = {
        key[: -len(_CLASS_SUFFIX)]: value
        for key, value in hard.items()
        if key.endswith(_CLASS_SUFFIX)
    }
    out: dict[str, Any] = {}
    for key, value in live.items():
        if value is None:
            continue
        wanted = getattr(default, key)
        same = (
            value == wanted
            if key in ("pods", "claims")
            else quantity.parse_quantity(value) == quantity.parse_quantity(wanted)
        )
        if not same:
            out[key] = value
    if classes:
        out["storage_classes"] = dict(sorted(classes.items()))
    return out
