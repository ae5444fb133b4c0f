# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What spot may hold: rule spot-offer (pure: lists in, resources out).

Two offers, chosen per site (``spot_capacity``'s ``offer``, ``spot_reclaim``'s
``need_from``, ``spot_recompute.yml``'s ``spot_offer``):

* ``unsold``, the design's and the default: rule idle-for-spot, the pool less every
  subscription and pay-as-you-go grant. A GPU a tenant bought and leaves unused stays
  idle: its owner may use it at any moment.
* ``unused``: rule unused-for-spot, the pool less what the paying queues hold or wait for,
  each tenant's part counted at most at what it bought (rule paying-claim). A GPU bought
  and unused goes to spot until a paying pod waits for it; then rule unused-reclaim-need
  (``spot/victims``) asks ``spot_recompute.yml`` to delete the cheapest spot jobs above
  the offer, which the event-driven reconcile runs when a paying job is blocked
  (``paying_job_blocked``).

* Rule paying-use (``paying_use``): per tenant, what its subscription and team queues,
  and its pay-as-you-go queue, hold and wait for, by rule queue-holdings
  (``spot/holdings``). A queue's tenant and billing type are its labels, never the pod's.
  Pods and PodGroups of other queues (spot, burst, unmanaged) count nothing.
* Rule paying-claim (``paying_claims``): per resource, the sum over tenants of
  min(subscription, subscription use) + min(pay-as-you-go grant, pay-as-you-go use): a
  queue never claims more than it bought, so the claim is never above rule committed.
* Rule unused-for-spot (``unused_for_spot``): pool less the paying claims, never below 0;
  never less than rule idle-for-spot, since each claim is at most what was bought.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from ..common.names import (
    LABEL_QUEUE_TYPE,
    LABEL_TENANT,
    QUEUE_TYPE_PAYG,
    QUEUE_TYPE_SUBSCRIPTION,
    QUEUE_TYPE_TEAM,
)
from ..common.quantity import Resources
from ..workload.pool import POOL_RESOURCES, TenantCommitment, idle_for_spot
from .holdings import queue_holdings, zero

OFFER_UNSOLD = "unsold"
OFFER_UNUSED = "unused"
OFFERS = (OFFER_UNSOLD, OFFER_UNUSED)

SUBSCRIPTION, PAYG = "subscription", "payg"
# The paying part each managed queue type counts in (rule paying-use).
_PART_OF_QUEUE_TYPE = {
    QUEUE_TYPE_SUBSCRIPTION: SUBSCRIPTION,
    QUEUE_TYPE_TEAM: SUBSCRIPTION,
    QUEUE_TYPE_PAYG: PAYG,
}


def paying_queues(queues: Iterable[Mapping[str, Any]]) -> dict[str, tuple[str, str]]:
    """Each paying queue's tenant and part (subscription or payg), from its labels."""
    out: dict[str, tuple[str, str]] = {}
    for queue in queues:
        meta = queue.get("metadata") or {}
        labels = meta.get("labels") or {}
        part = _PART_OF_QUEUE_TYPE.get(labels.get(LABEL_QUEUE_TYPE, ""))
        tenant = labels.get(LABEL_TENANT)
        if part and tenant and meta.get("name"):
            out[meta["name"]] = (tenant, part)
    return out


def paying_use(
    pods: Iterable[Mapping[str, Any]],
    podgroups: Iterable[Mapping[str, Any]],
    queues: Iterable[Mapping[str, Any]],
    pool_nodes: Iterable[str],
) -> dict[str, dict[str, Resources]]:
    """Rule paying-use: per tenant, per part (subscription, payg), what its paying queues
    hold (bound pods) and wait for (waiting PodGroups, less what their bound pods hold),
    counted by rule queue-holdings."""
    holdings = queue_holdings(pods, podgroups, paying_queues(queues), pool_nodes)
    use: dict[str, dict[str, Resources]] = {}

    def add(owner: tuple[str, str], amount: Mapping[str, Decimal]) -> None:
        tenant, part = owner
        parts = use.setdefault(tenant, {SUBSCRIPTION: zero(), PAYG: zero()})
        for r in POOL_RESOURCES:
            parts[part][r] += amount[r]

    for owner, held in holdings.held.items():
        add(owner, held)
    for group in holdings.waiting:
        add(group.owner, group.needs)
    return use


def paying_claims(
    commitments: Iterable[TenantCommitment], use: Mapping[str, Mapping[str, Resources]]
) -> Resources:
    """Rule paying-claim: per resource, each tenant's subscription and pay-as-you-go use,
    each at most what it bought, summed."""
    claim = zero()
    for c in commitments:
        parts = use.get(c.tenant) or {}
        for bought, part in ((c.subscription, SUBSCRIPTION), (c.payg, PAYG)):
            used = parts.get(part) or {}
            for r in POOL_RESOURCES:
                claim[r] += min(Decimal(bought.get(r, 0)), Decimal(used.get(r, 0)))
    return claim


def unused_for_spot(pool: Mapping[str, Decimal], claims: Mapping[str, Decimal]) -> Resources:
    """Rule unused-for-spot: the pool less the paying claims, per resource, never below 0."""
    return {r: max(Decimal(0), Decimal(pool.get(r, 0)) - claims.get(r, 0)) for r in POOL_RESOURCES}


def spot_offer(
    offer: str,
    pool: Mapping[str, Decimal],
    commitments: Iterable[TenantCommitment],
    pods: Iterable[Mapping[str, Any]] = (),
    podgroups: Iterable[Mapping[str, Any]] = (),
    queues: Iterable[Mapping[str, Any]] = (),
    pool_nodes: Iterable[str] = (),
) -> Resources:
    """Rule spot-offer: what every spot queue together may hold, ``unsold`` (rule
    idle-for-spot) or ``unused`` (rule unused-for-spot over the pods, PodGroups and
    queues given)."""
    commitments = list(commitments)
    if offer == OFFER_UNUSED:
        use = paying_use(pods, podgroups, queues, pool_nodes)
        return unused_for_spot(pool, paying_claims(commitments, use))
    return idle_for_spot(pool, [c.subscription for c in commitments], [c.payg for c in commitments])
