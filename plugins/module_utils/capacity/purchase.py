# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a tenant's purchase newly sells out of the pool.

Rules held here:

* Rule purchase-growth (``purchase_growth``): the pool resources whose
  subscription or pay-as-you-go grant a purchase makes larger; what stays or
  shrinks never counts.
* Rule purchase-demand (``purchase_demand``): how much of each pool resource
  a purchase newly sells, which the purchase flows free from spot first.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from ..common.quantity import Resources
from .pool import POOL_RESOURCES, TenantCommitment


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
