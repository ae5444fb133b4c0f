# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the spot offer is apportioned: by share (the design's), or by share and then lent
to spot jobs that wait (pure: lists in, capabilities out).

Two apportionments, chosen per site (``spot_capacity``'s ``apportion``,
``spot_recompute.yml``'s ``spot_apportion``):

* ``share``, the design's and the default: rule spot-apportionment
  (``spot/apportion``), every tenant's capability its subscription's share of the offer.
  A share its tenant's spot jobs leave unused stays closed to the others, and a spot
  gang larger than its tenant's share never runs.
* ``demand``: the same shares, then rule spot-lending. Every tenant keeps what its spot
  jobs hold and the waiting gangs that fit its own share; what the shares leave unused is
  lent, whole gangs at a time, to waiting gangs that do not fit their own tenant's share.

* Rule spot-demand (``spot_demand``): per tenant, the GPUs its spot queue holds, and each
  of its waiting spot PodGroups with the GPUs it still needs, as pods (its ``minMember``
  less its bound pods, the GPUs split evenly among them) (rule queue-holdings,
  ``spot/holdings``); and each pool node's free GPUs (allocatable less what its
  unfinished pods hold). A queue's tenant is its label.
* Rule spot-lending (``lend_spot``), GPUs only:

  1. Each tenant's own share first: its held GPUs, plus its waiting gangs, oldest first,
     while they fit its share.
  2. Lending: the gangs still waiting, oldest first (then by name), each taken whole
     while what every tenant keeps stays within the offer and its pods fit the pool
     nodes' free GPUs now (rule gang-fits-nodes, ``workload/fit``; each lent gang's pods
     placed before the next is tried). A gang that cannot be placed now borrows nothing,
     so a lent share never sits reserved for a gang that cannot start while the lenders'
     own small jobs wait. Only a tenant with a subscription borrows, as only such a
     tenant has a share.
  3. What is left goes back to the tenants below their share, in proportion to what
     each leaves unused (largest remainder), so with nothing lent every tenant has its
     share exactly.

  When what the tenants hold already exceeds the offer (the offer shrank under running
  spot work), nothing is lent and every tenant's capability is the larger of its share
  and what it holds: no running spot pod is put over its queue's capability by a lend,
  and a share lent out comes back as the borrowing jobs end (spot_reclaim is what takes
  GPUs back from running spot work, as ever).
* Rule spot-lending-resources (``apportion_by_demand``): cpu and memory follow the GPU
  capabilities (largest remainder, weighted by each tenant's GPUs), so a borrowing gang
  gets the cpu and memory that go with its GPUs; without GPUs to weigh by, by share.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from ..common.names import LABEL_QUEUE_TYPE, LABEL_TENANT, POD_TERMINAL_PHASES, QUEUE_TYPE_SPOT
from ..common.quantity import GPU, Resources
from ..workload.demand import pod_demand
from ..workload.fit import place_gang
from .apportion import UNITS, apportion_spot, apportion_units, largest_remainder
from .holdings import queue_holdings

APPORTION_SHARE = "share"
APPORTION_DEMAND = "demand"
APPORTIONS = (APPORTION_SHARE, APPORTION_DEMAND)


@dataclass(frozen=True)
class SpotGang:
    """A waiting spot PodGroup: its tenant, the GPUs it still needs, its place in line
    (creation time, then namespace/name), and the GPUs of each pod still to place."""

    tenant: str
    gpus: int
    created: str
    name: str
    pods: tuple[int, ...] = ()

    @property
    def pod_gpus(self) -> tuple[int, ...]:
        return self.pods or (self.gpus,)


@dataclass
class SpotDemand:
    held: dict[str, int]  # per tenant, the GPUs its spot queue's bound pods hold
    waiting: list[SpotGang]  # oldest first
    free: list[int] | None = None  # each pool node's free GPUs; None: placement not checked


def split_evenly(gpus: int, pods: int) -> tuple[int, ...]:
    """``gpus`` over ``pods`` pods as evenly as whole GPUs go (the larger first)."""
    pods = max(1, min(pods, gpus)) if gpus > 0 else 1
    whole, extra = divmod(gpus, pods)
    return tuple(whole + 1 if i < extra else whole for i in range(pods))


def free_gpus_by_node(
    allocatable: Mapping[str, Mapping[str, Decimal]], pods: Iterable[Mapping[str, Any]]
) -> list[int]:
    """Each pool node's free GPUs: its allocatable GPUs less what its unfinished pods hold
    (pods on their way out still hold theirs)."""
    free = {name: int(resources.get(GPU, 0)) for name, resources in allocatable.items()}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node not in free or (pod.get("status") or {}).get("phase") in POD_TERMINAL_PHASES:
            continue
        name = (pod.get("metadata") or {}).get("name", "")
        free[node] -= int(pod_demand(pod.get("spec") or {}, f"pods[{name}].spec")[GPU])
    return [max(0, gpus) for gpus in free.values()]


def spot_queues(queues: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Each spot queue's tenant, from its labels."""
    out: dict[str, str] = {}
    for queue in queues:
        meta = queue.get("metadata") or {}
        labels = meta.get("labels") or {}
        if labels.get(LABEL_QUEUE_TYPE) == QUEUE_TYPE_SPOT and labels.get(LABEL_TENANT):
            out[meta.get("name", "")] = labels[LABEL_TENANT]
    return out


def spot_demand(
    pods: Iterable[Mapping[str, Any]],
    podgroups: Iterable[Mapping[str, Any]],
    queues: Iterable[Mapping[str, Any]],
    allocatable: Mapping[str, Mapping[str, Decimal]],
) -> SpotDemand:
    """Rule spot-demand: what each tenant's spot queue holds, its waiting gangs, and the
    free GPUs of the pool's nodes (``allocatable``: each pool node's, rule pool)."""
    pods = list(pods)
    holdings = queue_holdings(pods, podgroups, spot_queues(queues), allocatable)
    held = {tenant: int(amount[GPU]) for tenant, amount in holdings.held.items()}
    waiting = [
        SpotGang(
            g.owner,
            int(g.needs[GPU]),
            g.created,
            f"{g.namespace}/{g.name}",
            split_evenly(int(g.needs[GPU]), g.pods),
        )
        for g in holdings.waiting
        if g.needs[GPU] > 0
    ]
    waiting.sort(key=lambda g: (g.created, g.name))  # in line, as rule spot-lending reads them
    return SpotDemand(held, waiting, free_gpus_by_node(allocatable, pods))


def lend_spot(offer: int, shares: Mapping[str, int], demand: SpotDemand) -> dict[str, int]:
    """Rule spot-lending: every tenant's spot GPUs, its share first, then what the
    shares leave unused lent whole gangs at a time to the gangs that wait (oldest first)."""
    keeps = {tenant: demand.held.get(tenant, 0) for tenant in shares}
    if sum(keeps.values()) > offer:
        return {tenant: max(shares[tenant], keeps[tenant]) for tenant in shares}
    borrowers: list[SpotGang] = []
    for gang in sorted(demand.waiting, key=lambda g: (g.created, g.name)):
        if gang.tenant not in shares:
            continue
        if keeps[gang.tenant] + gang.gpus <= shares[gang.tenant]:
            keeps[gang.tenant] += gang.gpus
        elif shares[gang.tenant] > 0:
            borrowers.append(gang)
    if sum(keeps.values()) > offer:
        return {tenant: max(shares[tenant], keeps[tenant]) for tenant in shares}
    free = demand.free
    for gang in borrowers:
        if sum(keeps.values()) + gang.gpus > offer:
            continue
        if free is not None:
            placed = place_gang(gang.pod_gpus, free)
            if placed is None:
                continue  # it cannot start now: lending to it would only strand the share
            free = placed
        keeps[gang.tenant] += gang.gpus
    left = offer - sum(keeps.values())
    unused = {tenant: Fraction(max(0, shares[tenant] - keeps[tenant])) for tenant in shares}
    back = largest_remainder(left, unused)
    return {tenant: keeps[tenant] + back[tenant] for tenant in shares}


def apportion_by_demand(
    idle: Mapping[str, Decimal], subscriptions: Mapping[str, object], demand: SpotDemand
) -> dict[str, Resources]:
    """Rule spot-lending-resources: rule spot-apportionment, then rule spot-lending on
    the GPUs; cpu and memory in proportion to the GPUs each tenant gets."""
    shared = apportion_spot(idle, subscriptions)
    shares = {tenant: int(resources.get(GPU, 0)) for tenant, resources in shared.items()}
    gpus = lend_spot(sum(shares.values()), shares, demand)
    if gpus == shares or not any(gpus.values()):
        return shared
    weights = {tenant: Fraction(count) for tenant, count in gpus.items()}
    result: dict[str, Resources] = {tenant: {GPU: Decimal(gpus[tenant])} for tenant in gpus}
    for resource, unit in UNITS.items():
        if resource != GPU:
            shares_of = apportion_units(idle.get(resource, 0), unit, weights, f"idle.{resource}")
            for tenant, amount in shares_of.items():
                result[tenant][resource] = amount
    return result
