# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule queue-holdings: what a set of queues holds and waits for (pure: lists in, lists out).

Both the paying queues' use (rule paying-use, ``spot/offer``) and the spot queues' demand
(rule spot-demand, ``spot/lending``) count the same way:

* held: the unfinished pods bound to the pool's nodes, each in the queue rule pod-queue
  (``common/names``) says. Pods on their way out and pods bound outside the pool count
  nothing.
* waiting: each PodGroup that waits (Pending: not admitted yet, or Inqueue: admitted, not
  placed) for its ``minResources`` less what its bound pods hold already.

A queue's owner (its tenant, and whatever part the caller counts in) is given by the
caller from the queue's labels, never read from a pod: admission holds a pod's queue to
its tenant's own. Pods and PodGroups of other queues count nothing.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Generic, TypeVar

from ..common.names import (
    POD_GROUP_ANNOTATION,
    POD_TERMINAL_PHASES,
    PODGROUP_WAITING_PHASES,
    pod_queue,
)
from ..common.quantity import Resources, parse
from ..workload.demand import pod_demand
from ..workload.pool import POOL_RESOURCES

Owner = TypeVar("Owner", bound=Hashable)


def zero() -> Resources:
    return {r: Decimal(0) for r in POOL_RESOURCES}


@dataclass(frozen=True)
class Waiting(Generic[Owner]):
    """A PodGroup that waits: its owner, name, creation time, what it still needs, and
    its ``minMember`` less its bound pods (the pods still to place, at least 1)."""

    owner: Owner
    namespace: str
    name: str
    created: str
    needs: Resources
    pods: int = 1


@dataclass
class Holdings(Generic[Owner]):
    held: dict[Owner, Resources]  # per owner, what its bound pods hold
    waiting: list[Waiting[Owner]]  # in the order the PodGroups were listed


def queue_holdings(
    pods: Iterable[Mapping[str, Any]],
    podgroups: Iterable[Mapping[str, Any]],
    owners: Mapping[str, Owner],
    pool_nodes: Iterable[str],
) -> Holdings[Owner]:
    """Rule queue-holdings: per owner what the queues in ``owners`` (queue name -> owner)
    hold, and each of their waiting PodGroups with what it still needs."""
    members = set(pool_nodes)
    held: dict[Owner, Resources] = {}
    bound: dict[tuple[str, str], Resources] = {}  # (namespace, PodGroup) -> held
    bound_pods: dict[tuple[str, str], int] = {}  # (namespace, PodGroup) -> how many
    for pod in pods:
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        if meta.get("deletionTimestamp") or spec.get("nodeName") not in members:
            continue
        if (pod.get("status") or {}).get("phase") in POD_TERMINAL_PHASES:
            continue
        owner = owners.get(pod_queue(meta))
        if owner is None:
            continue
        amount = pod_demand(spec, f"pods[{meta.get('name', '')}].spec")
        group = (
            meta.get("namespace", ""),
            (meta.get("annotations") or {}).get(POD_GROUP_ANNOTATION, ""),
        )
        for total in (held.setdefault(owner, zero()), bound.setdefault(group, zero())):
            for r in POOL_RESOURCES:
                total[r] += amount[r]
        bound_pods[group] = bound_pods.get(group, 0) + 1
    waiting: list[Waiting[Owner]] = []
    for pg in podgroups:
        meta = pg.get("metadata") or {}
        spec = pg.get("spec") or {}
        if meta.get("deletionTimestamp") or (pg.get("status") or {}).get("phase") not in (
            PODGROUP_WAITING_PHASES
        ):
            continue
        owner = owners.get(spec.get("queue") or "")
        if owner is None:
            continue
        name, namespace = meta.get("name", ""), meta.get("namespace", "")
        minimum = spec.get("minResources") or {}
        wanted = {
            r: parse(minimum.get(r, 0), f"podgroups[{name}].spec.minResources.{r}")
            for r in POOL_RESOURCES
        }
        already = bound.get((namespace, name)) or zero()
        needs = {r: max(Decimal(0), wanted[r] - already[r]) for r in POOL_RESOURCES}
        members = spec.get("minMember")
        to_place = (members if isinstance(members, int) and members > 0 else 1) - bound_pods.get(
            (namespace, name), 0
        )
        created = str(meta.get("creationTimestamp") or "")
        waiting.append(Waiting(owner, namespace, name, created, needs, max(1, to_place)))
    return Holdings(held, waiting)
