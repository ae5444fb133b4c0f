# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A tenant's cloud quota: the leaf ``tenant-<tenant>-burst`` under the platform's
``cloud-burst`` queue (``hybrid/queues``), which it inherits the cloud-only affinity from.

Rules held here:

* Rule burst-quota (``burst_quota_errors``): a whole number of GPUs, 0 or more, at most
  the cloud's declared GPUs (``cloud-burst``'s capability); Volcano's webhook refuses a
  child above its parent. The leaves together may exceed it: ``cloud-burst`` caps the
  cloud as a whole, as a parent queue does.
* Rule burst-billing (``BURST_BILLING``): jobs in a burst leaf are billed pay-as-you-go,
  so the leaf is ``payg`` in the tenant's queue list, which the admission policies and
  ``vcjob`` read for the billing type and the classes a queue takes.
"""

from __future__ import annotations

from typing import Any

from ..common.errors import FieldError
from ..common.names import (
    QUEUE_API,
    QUEUE_TYPE_BURST,
    QUEUE_TYPE_PAYG,
    queue_labels,
    queue_name,
)

GPU = "nvidia.com/gpu"
BURST_BILLING = QUEUE_TYPE_PAYG


def burst_leaf_name(tenant: str) -> str:
    return queue_name(tenant, QUEUE_TYPE_BURST)


def burst_quota_errors(gpus: Any, cloud_gpus: int | None, parent: str) -> list[FieldError]:
    """Rule burst-quota."""
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


def capability_gpus(queue: dict[str, Any] | None) -> int | None:
    value = (((queue or {}).get("spec") or {}).get("capability") or {}).get(GPU)
    return None if value is None else int(str(value))
