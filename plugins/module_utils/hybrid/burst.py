# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A tenant's cloud quota: the leaf ``tenant-<tenant>-burst`` under the platform's
``cloud-burst`` queue (``hybrid/queues``), which it inherits the cloud-only affinity from.

Rules held here:

* Rule burst-quota (``burst_quota_errors``): a whole number of GPUs, 0 or more, at most
  the cloud's declared GPUs (``cloud-burst``'s capability); Volcano's webhook refuses a
  child above its parent. The leaves together may exceed it: ``cloud-burst`` caps the
  cloud as a whole, as a parent queue does.
* Rule burst-running-work (``burst_shrink_refusal``, ``burst_removal_refusal``): a quota
  below what the leaf holds now, or removing a leaf with unfinished jobs, only with force.
* Rule burst-billing (``BURST_BILLING``): jobs in a burst leaf are billed pay-as-you-go,
  so the leaf is ``payg`` in the tenant's queue list, which the admission policies and
  ``vcjob`` read for the billing type and the classes a queue takes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..common.errors import FieldError
from ..common.names import (
    QUEUE_API,
    QUEUE_TYPE_BURST,
    QUEUE_TYPE_PAYG,
    queue_labels,
    queue_name,
)
from ..common.quantity import parse

GPU = "nvidia.com/gpu"
BURST_BILLING = QUEUE_TYPE_PAYG


def burst_leaf_name(tenant: str) -> str:
    return queue_name(tenant, QUEUE_TYPE_BURST)


def burst_quota_errors(gpus: Any, cloud_gpus: int | None, parent: str) -> list[FieldError]:
    """Rule burst-quota: a whole number of GPUs, 0 or more, at most the cloud's declared
    GPUs (``cloud_gpus``, ``cloud-burst``'s capability)."""
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0:
        return [FieldError("gpus", f"{gpus!r} must be a whole number of GPUs, 0 or more")]
    if cloud_gpus is not None and gpus > cloud_gpus:
        return [
            FieldError(
                "gpus",
                f"{gpus} is more than the cloud declares ({parent} capability {cloud_gpus}); "
                "a tenant's cloud quota is at most the cloud (rule burst-quota)",
            )
        ]
    return []


def burst_leaf(tenant: str, gpus: int, parent: str) -> dict[str, Any]:
    """The tenant's burst leaf: no affinity of its own (it inherits the parent's)."""
    return {
        "apiVersion": QUEUE_API,
        "kind": "Queue",
        "metadata": {
            "name": burst_leaf_name(tenant),
            "labels": queue_labels(tenant, QUEUE_TYPE_BURST),
        },
        "spec": {
            "parent": parent,
            "weight": 1,
            # Never taken back for another tenant's cloud job: a cloud node a job leaves
            # is rented by the hour whoever runs on it.
            "reclaimable": False,
            "capability": {GPU: str(gpus)},
        },
    }


def _gpus(queue: Mapping[str, Any] | None, part: str, key: str) -> int | None:
    value = (((queue or {}).get(part) or {}).get(key) or {}).get(GPU)
    name = ((queue or {}).get("metadata") or {}).get("name", "")
    return None if value is None else int(parse(value, f"queues[{name}].{part}.{key}.{GPU}"))


def capability_gpus(queue: Mapping[str, Any] | None) -> int | None:
    return _gpus(queue, "spec", "capability")


def allocated_gpus(queue: Mapping[str, Any] | None) -> int:
    return _gpus(queue, "status", "allocated") or 0


def burst_shrink_refusal(leaf: str, gpus: int, allocated: int, force: bool) -> str | None:
    """Rule burst-running-work, resizing: never below what the leaf holds unless forced."""
    if gpus >= allocated or force:
        return None
    return (
        f"gpus: {gpus} is below the {allocated} GPUs {leaf} holds now; wait for its jobs, or "
        "force: true to lower it anyway (running jobs are not evicted)"
    )


def burst_removal_refusal(leaf: str, jobs: Sequence[str], force: bool) -> str | None:
    """Rule burst-running-work, removing: not while unfinished jobs name the leaf, unless forced."""
    if not jobs or force:
        return None
    return (
        f"{leaf} holds jobs {', '.join(jobs)}; wait for them, or force: true to remove it "
        "anyway (Volcano then refuses new pods there)"
    )
