# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which queues may use which node groups (Volcano Queue ``spec.affinity``).

Volcano's ``nodegroup`` plugin (with ``enableHierarchy``) gives a queue without
an affinity the affinity of its nearest ancestor. So one affinity on ``root``
binds every queue to the IDC groups, and only the queues the platform opens to
the cloud carry their own:

* Rule idc-by-default (``root_affinity``): root requires the IDC groups; every
  subscription, team and spot queue inherits it and never lands on a cloud
  node, whatever its pods tolerate.
* Rule elastic-local-first (``elastic_affinity``): the queue types the platform
  lets burst (pay-as-you-go by default) prefer the IDC groups first and the
  cloud groups after them, in that order (``enablePreferredOrder``).
* Rule burst-cloud-only (``burst_queue``): the platform's burst queue requires
  the cloud groups and is capped at the cloud's declared GPUs.
* Rule burst-queue-platform-owned (``burst_target_errors``): the queue a module
  takes as ``burst_queue`` is the platform's own burst queue, never a tenant's
  queue, ``root`` or ``default``: node_groups would reshape it into cloud-only
  quota and burst_quota would hang a tenant's leaf under it.

Why one platform-wide burst queue: the cloud pool is one pool that the
platform rents, and its size (what the providers declare) is known only to
the platform. A tenant's cloud quota is a leaf under it (``tenant-<t>-burst``),
so the cap on the whole cloud bill and each tenant's share are both queues.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from ..common.errors import FieldError
from ..common.names import (
    BURST_QUEUE,
    LABEL_MANAGED_BY,
    LABEL_QUEUE_TYPE,
    MANAGED_BY,
    QUEUE_API,
    QUEUE_TYPE_BURST,
    ROOT_QUEUE,
    is_managed,
    owner_tenant,
)
from ..common.quantity import parse
from .nodegroups import NodeGroup

GPU = "nvidia.com/gpu"


def _names(groups: Iterable[NodeGroup], cloud: bool) -> list[str]:
    return sorted(g.name for g in groups if g.cloud == cloud)


def root_affinity(groups: Sequence[NodeGroup]) -> dict[str, Any]:
    """Rule idc-by-default: every queue that names no group of its own uses the IDC groups."""
    return {
        "nodeGroupAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": _names(groups, False)
        }
    }


def elastic_affinity(groups: Sequence[NodeGroup]) -> dict[str, Any]:
    """Rule elastic-local-first: IDC groups first, then cloud groups, both allowed."""
    return {
        "nodeGroupAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                *_names(groups, False),
                *_names(groups, True),
            ]
        }
    }


def cloud_gpus(members: Mapping[str, NodeGroup], nodes: Iterable[Mapping[str, Any]]) -> int:
    """The GPUs the cloud nodes declare (Virtual Kubelet fills capacity from the provider's quota)."""
    total = Decimal(0)
    for node in nodes:
        group = members.get(node["metadata"]["name"])
        if group is not None and group.cloud:
            value = ((node.get("status") or {}).get("allocatable") or {}).get(GPU, "0")
            total += parse(value, f"nodes/{node['metadata']['name']}.status.allocatable.{GPU}")
    return int(total)


# Names that are never the burst queue: Volcano's own queues and the tenants' names.
_NOT_BURST_NAMES = (ROOT_QUEUE, "default")
_TENANT_QUEUE_PREFIX = "tenant-"


def burst_target_errors(name: str, live: Mapping[str, Any] | None) -> list[FieldError]:
    """Rule burst-queue-platform-owned: ``name`` (and the live queue of that name, None
    when there is none yet) is the platform's burst queue."""
    if name in _NOT_BURST_NAMES or name.startswith(_TENANT_QUEUE_PREFIX):
        whose = "Volcano's own queue" if name in _NOT_BURST_NAMES else "a tenant's queue name"
        return [
            FieldError(
                "burst_queue",
                f"{name!r} is {whose}, never the platform's burst queue; leave burst_queue out for "
                f"{BURST_QUEUE!r} (rule burst-queue-platform-owned)",
            )
        ]
    if live is None:
        return []
    labels = (live.get("metadata") or {}).get("labels") or {}
    if (
        not owner_tenant(labels)
        and is_managed(labels)
        and labels.get(LABEL_QUEUE_TYPE) == QUEUE_TYPE_BURST
    ):
        return []
    tenant, queue_type = owner_tenant(labels), labels.get(LABEL_QUEUE_TYPE) or "untyped"
    whose = (
        f"tenant {tenant}'s {queue_type} queue"
        if tenant
        else "a queue the platform did not make for bursting"
    )
    return [
        FieldError(
            "burst_queue",
            f"{name!r} is {whose}, not the platform's burst queue (made by node_groups: labelled "
            f"{LABEL_QUEUE_TYPE}={QUEUE_TYPE_BURST} and {LABEL_MANAGED_BY}={MANAGED_BY}, of no "
            "tenant); nothing was written (rule burst-queue-platform-owned)",
        )
    ]


def burst_queue(groups: Sequence[NodeGroup], gpus: int, name: str = BURST_QUEUE) -> dict[str, Any]:
    """Rule burst-cloud-only: the platform's cloud queue, capped at the cloud's GPUs."""
    return {
        "apiVersion": QUEUE_API,
        "kind": "Queue",
        "metadata": {
            "name": name,
            "labels": {LABEL_MANAGED_BY: MANAGED_BY, LABEL_QUEUE_TYPE: QUEUE_TYPE_BURST},
        },
        "spec": {
            "parent": ROOT_QUEUE,
            "weight": 1,
            # Its jobs are never taken back for another queue: no IDC queue can use
            # its nodes, and a cloud node a burst job leaves is not an IDC GPU.
            "reclaimable": False,
            "capability": {GPU: str(gpus)},
            "affinity": {
                "nodeGroupAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": _names(groups, True)
                }
            },
        },
    }


def affinity_patch(name: str, affinity: Mapping[str, Any]) -> dict[str, Any]:
    """A queue's affinity alone, for a server-side apply under the node-group manager."""
    return {
        "apiVersion": QUEUE_API,
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"affinity": dict(affinity)},
    }


def affinity_merge_patch(live: Mapping[str, Any], wanted: Mapping[str, Any]) -> dict[str, Any]:
    """The ``spec.affinity`` of a JSON merge patch that leaves exactly ``wanted``: a merge
    patch merges maps, so every key the live affinity has and ``wanted`` lacks is nulled."""
    out: dict[str, Any] = {}
    for key in sorted(set(live) | set(wanted)):
        if key not in wanted:
            out[key] = None
            continue
        have, want = live.get(key) or {}, wanted[key]
        out[key] = {k: want.get(k) for k in sorted(set(have) | set(want))}
    return out


def affinity_of(queue: Mapping[str, Any]) -> dict[str, Any]:
    return dict((queue.get("spec") or {}).get("affinity") or {})
