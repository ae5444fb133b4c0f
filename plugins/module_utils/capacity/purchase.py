# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a tenant's purchase newly sells out of the pool.

Rules held here:

* Rule purchase-growth (``purchase_growth``): the pool resources whose
  subscription or pay-as-you-go grant a purchase makes larger; what stays or
  shrinks never counts.
* Rule purchase-demand (``purchase_demand``): how much of each pool resource
  a purchase newly sells, which the purchase flows free from spot first.
* Rule catalog-purchase (``catalog_purchase``): what a tenant catalog's purchases
  together hold out of the pool before and after its run, and which tenants' purchases
  change; the catalog's oversell guard and its sale read it.
* Rule catalog-sale (``catalog_sale``, ``CatalogSale``): what a catalog run newly
  sells, once for the whole run; it is reclaimed from spot before the run writes, as a
  purchase's demand is, and the spot capabilities are recomputed after it when a
  purchase changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..common.quantity import GPU, Resources, fmt, render
from ..workload.pool import POOL_RESOURCES, TenantCommitment, commitments_from_queues

# A catalog tenant's purchase: its subscription and its PAYG grant (None: the live
# grant stays).
Purchase = tuple[Mapping[str, Decimal], "Mapping[str, Decimal] | None"]


def purchase_growth(
    current: TenantCommitment | None,
    subscription: Mapping[str, Decimal],
    payg: Mapping[str, Decimal] | None,
) -> tuple[Resources, Resources]:
    """Rule purchase-growth: what a tenant's new purchase adds, for the oversell
    guard: the pool resources whose subscription (and, when ``payg`` is given,
    PAYG grant) would be larger than ``current`` (None for a new tenant), each
    with its new value. A PAYG grant left out means the live one is kept; a
    resource left out of a given ``payg`` is 0. Shrinking or keeping a value
    never counts: a purchase that does not grow is never refused."""
    live = current or TenantCommitment("")
    grown_sub = {
        r: Decimal(subscription[r])
        for r in POOL_RESOURCES
        if r in subscription and Decimal(subscription[r]) > live.subscription[r]
    }
    grown_payg: Resources = {}
    if payg is not None:
        grown_payg = {
            r: Decimal(payg.get(r, 0))
            for r in POOL_RESOURCES
            if Decimal(payg.get(r, 0)) > live.payg[r]
        }
    return grown_sub, grown_payg


def purchase_demand(
    current: TenantCommitment | None,
    subscription: Mapping[str, Decimal],
    payg: Mapping[str, Decimal] | None,
) -> Resources:
    """Rule purchase-demand: how much of each pool resource a purchase newly
    sells, the growth of the subscription plus the growth of the PAYG grant
    over ``current`` (``purchase_growth``; what shrinks counts 0). The purchase
    flows free this many spot GPUs before they apply the purchase."""
    live = current or TenantCommitment("")
    grown_sub, grown_payg = purchase_growth(current, subscription, payg)
    return {
        r: grown_sub.get(r, live.subscription[r])
        - live.subscription[r]
        + grown_payg.get(r, live.payg[r])
        - live.payg[r]
        for r in POOL_RESOURCES
    }


def purchase_added(
    tenant: str,
    live_queues: Mapping[str, Mapping[str, Any]],
    subscription: Resources,
    payg: Resources | None,
) -> dict[str, int | str]:
    """Rule purchase-demand for the tenant's own live queues, as manifests write
    quantities: what the purchase newly sells, which the purchase flows free
    from spot jobs first. ``live_queues``: the tenant's queues, as read."""
    current = commitments_from_queues(live_queues.values()).get(tenant)
    return render(purchase_demand(current, subscription, payg))


@dataclass(frozen=True)
class CatalogPurchase:
    """Rule catalog-purchase: what a catalog's purchases hold out of the pool."""

    before: Resources  # every live subscription and PAYG grant
    after: Resources  # the catalog tenants' new purchases + what tenants outside it keep
    outside: Resources  # kept by tenants outside the catalog (and not pruned)
    growing: dict[str, list[str]]  # per resource: "tenant (+n)" for each tenant that grows
    moved: tuple[str, ...]  # tenants whose subscription or PAYG grant changes, sorted

    @property
    def catalog(self) -> Resources:
        """The catalog tenants' purchases after the run."""
        return {r: self.after[r] - self.outside[r] for r in POOL_RESOURCES}


def catalog_purchase(
    live: Mapping[str, TenantCommitment],
    desired: Mapping[str, Purchase],
    pruned: Sequence[str] = (),
) -> CatalogPurchase:
    """Rule catalog-purchase: what a tenant catalog's purchases together hold out of the
    pool before and after its run, and which tenants' purchases change. ``desired`` maps each catalog tenant to its (subscription,
    payg) (payg None: the live grant stays); ``live`` is every tenant's commitment as
    read. Tenants outside the catalog keep what they hold unless they are ``pruned``,
    which then hold nothing."""
    zero = {r: Decimal(0) for r in POOL_RESOURCES}
    before, after, outside = dict(zero), dict(zero), dict(zero)
    growing: dict[str, list[str]] = {r: [] for r in POOL_RESOURCES}
    moved: set[str] = set()
    for commitment in live.values():
        kept = commitment.tenant not in desired and commitment.tenant not in pruned
        for r in POOL_RESOURCES:
            held = commitment.subscription[r] + commitment.payg[r]
            before[r] += held
            if kept:
                outside[r] += held
                after[r] += held
            elif commitment.tenant in pruned and held:
                moved.add(commitment.tenant)
    for tenant, (subscription, payg) in desired.items():
        current = live.get(tenant) or TenantCommitment(tenant)
        for r in POOL_RESOURCES:
            new_sub = Decimal(subscription.get(r, 0))
            new_payg = Decimal(payg.get(r, 0)) if payg is not None else current.payg[r]
            after[r] += new_sub + new_payg
            if new_sub != current.subscription[r] or new_payg != current.payg[r]:
                moved.add(tenant)
            held = current.subscription[r] + current.payg[r]
            if new_sub + new_payg > held:
                growing[r].append(f"{tenant} (+{fmt(new_sub + new_payg - held, r)})")
    return CatalogPurchase(before, after, outside, growing, tuple(sorted(moved)))


@dataclass(frozen=True)
class CatalogSale:
    """Rule catalog-sale: a catalog run sold as one purchase, in GPUs.

    ``added``, what the run newly sells (what the catalog sells after it less what is
    sold before, never below 0), is the demand of the one spot reclaim the run makes
    before its writes, counted as a sale (rule unsold-reclaim-need: spot keeps at most
    ``unsold_after``); only a run that sells more reclaims (``reclaims``), as a
    purchase reclaims only what it adds. A run that changes any purchase, a growth, a
    shrink or a prune (``moved``), recomputes the spot capabilities once after its
    writes (``recomputes``): they follow the idle pool and the subscriptions' shares."""

    pool_gpus: int
    sold_before: int
    sold_after: int
    growing: tuple[str, ...] = ()  # "tenant (+n)" for each tenant buying more GPUs
    moved: tuple[str, ...] = ()

    @property
    def added(self) -> int:
        return max(0, self.sold_after - self.sold_before)

    @property
    def unsold_after(self) -> int:
        return max(0, self.pool_gpus - self.sold_after)

    @property
    def reclaims(self) -> bool:
        return self.added > 0

    @property
    def recomputes(self) -> bool:
        return bool(self.moved)

    def reason(self, given: str | None = None) -> str:
        """What the reclaim is for, in its Events and history: ``given``, or the sale."""
        if given and given.strip():
            return given
        shown = ", ".join(self.growing[:5]) + (", ..." if len(self.growing) > 5 else "")
        return f"the tenant catalog selling {self.added} more GPUs ({shown})"

    def as_dict(self) -> dict[str, Any]:
        return {
            "pool": self.pool_gpus,
            "sold_before": self.sold_before,
            "sold_after": self.sold_after,
            "added": self.added,
            "unsold_after": self.unsold_after,
            "growing": list(self.growing),
            "reclaims": self.reclaims,
            "recomputes": self.recomputes,
        }


def catalog_sale(
    pool: Mapping[str, Decimal],
    live: Mapping[str, TenantCommitment],
    desired: Mapping[str, Purchase],
    pruned: Sequence[str] = (),
) -> CatalogSale:
    """Rule catalog-sale over rule catalog-purchase: ``desired`` holds the catalog
    tenants the run writes (a refused one keeps its live purchase), ``pruned`` the
    tenants it removes."""
    totals = catalog_purchase(live, desired, pruned)
    return CatalogSale(
        pool_gpus=int(Decimal(pool.get(GPU, 0))),
        sold_before=int(totals.before[GPU]),
        sold_after=int(totals.after[GPU]),
        growing=tuple(totals.growing[GPU]),
        moved=totals.moved,
    )
