# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A catalog run's sale, judged before its first write and told after its last.

What the run sells is rule catalog-sale (``capacity.purchase.catalog_sale``); the
reclaim and the recompute are the purchase flows' own (``spot.service``). Rules held
here:

* Rule catalog-sale-reclaim (``sale_reclaim_errors``): with ``reclaim: false`` a run
  whose sale needs spot jobs reclaimed (rule unsold-reclaim-need finds a shortfall) is
  refused before any write, with the numbers, by the refusal ``payg_capacity``'s growth
  meets (``capacity/sale.sale_refusal``, the one sale's).
* Rule catalog-oversell-guard (``capacity.oversell.catalog_oversell_errors``) over the
  whole catalog (``oversell_check``), before the first write.
* Rule catalog-sale-summary (``spot_after``, ``sale_line``): the spot capacity the run
  leaves (the recompute's idle GPUs; in check mode the unsold GPUs the sale leaves,
  which the recompute would share out) and one line saying what the run sold, what it
  reclaimed and that spot capacity.

Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..capacity.oversell import catalog_oversell_errors
from ..capacity.purchase import CatalogSale
from ..capacity.sale import SaleBook, sale_refusal
from ..capacity.storage_oversell import (
    catalog_storage_oversell_errors,
    class_bounds_of,
    class_capacity,
)
from ..common.errors import FieldError, raise_if
from ..common.quantity import GPU
from ..spot.reclaim import victim_names
from ..tenants.bounds import BOUNDS_NAME
from .fleet import Fleet, fleet_purchases
from .spec import Catalog


def sale_reclaim_errors(
    sale: CatalogSale, reclaim: bool, planned: Mapping[str, Any]
) -> list[FieldError]:
    """Rule catalog-sale-reclaim: with ``reclaim: false`` a sale that needs spot jobs
    reclaimed is refused before any write, with the numbers. ``planned`` is the reclaim's plan for the sale (its
    ``shortfall``, and the GPUs ``spot`` jobs hold), made without writing."""
    if not sale.reclaims:
        return []
    book = SaleBook(sale.pool_gpus, sale.sold_before, int(planned.get("spot") or 0), 0)
    shortfall = int(planned.get("shortfall") or 0)
    refusal = sale_refusal(
        book, sale.added, shortfall, reclaim, f"tenants.{GPU}", "the catalog selling"
    )
    return [] if refusal is None else [refusal]


def spot_after(sale: CatalogSale, recomputed: Mapping[str, Any] | None) -> dict[str, Any]:
    """Rule catalog-sale-summary: the spot capacity after the run, in GPUs (``gpus``).
    ``recomputed`` is the spot recompute's result, None when the run did not recompute
    (check mode, or nothing sold changed)."""
    if recomputed is None:
        return {"recomputed": False, "gpus": sale.unsold_after, "updated": []}
    counts = recomputed.get("counts") or {}
    return {
        "recomputed": True,
        "gpus": int((recomputed.get("idle") or {}).get(GPU, 0)),
        "spot_queues": counts.get("spot_queues", 0),
        "updated": list(recomputed.get("updated") or []),
    }


def sale_line(
    sale: CatalogSale,
    reclaimed: Mapping[str, Any] | None,
    spot: Mapping[str, Any],
    check_mode: bool = False,
) -> str:
    """Rule catalog-sale-summary: the run's sale in one line, for people."""
    if not sale.recomputes:
        return (
            "no subscription or pay-as-you-go grant changes: nothing reclaimed, spot left as it is"
        )
    would = "would " if check_mode else ""
    sold = (
        f"{sale.sold_before} -> {sale.sold_after} of {sale.pool_gpus} GPUs sold "
        f"({'+' if sale.added else ''}{sale.sold_after - sale.sold_before})"
    )
    victims = list((reclaimed or {}).get("victims") or [])
    if victims:
        freed = sum(int(v.get("gpus", 0)) for v in victims)
        names = victim_names(victims)
        shown = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
        took = f"{'would reclaim' if check_mode else 'reclaimed'} {freed} spot GPUs ({shown})"
    elif sale.reclaims:
        took = f"no spot job {would}{'be ' if check_mode else ''}reclaimed (spot held no more than stays unsold)"
    else:
        took = "nothing to reclaim"
    if spot.get("recomputed"):
        changed = len(spot.get("updated") or [])
        after = (
            f"spot capacity after: {spot['gpus']} GPUs over {spot.get('spot_queues', 0)} "
            f"spot queues ({changed} {'would change' if check_mode else 'changed'})"
        )
    else:
        after = f"spot capacity after: {would}be at most {spot['gpus']} GPUs (the unsold ones)"
    return f"{sold}; {took}; {after}"


def oversell_check(
    params: Mapping[str, Any],
    catalog: Catalog,
    fleet: Fleet,
    pruned: Sequence[str],
    storage_capacity: Mapping[str, Any] | None = None,
) -> None:
    """Rules catalog-oversell-guard (GPUs) and catalog-storage-oversell (storage per class,
    against the storage role's ``storage_capacity`` ConfigMap) over every tenant of the
    catalog together, from the fleet as read (raises PlatformValidationError naming every
    refusal); off with ``oversell_check: false``."""
    if not params.get("oversell_check", True):
        return
    pool, live = fleet_purchases(params, fleet)
    desired = {t.name: (t.subscription, t.payg) for t in catalog.tenants}
    errors = catalog_oversell_errors(pool, live, desired, pruned)
    live_classes = {
        name: class_bounds_of(tenant.objects.get("ResourceQuota", {}).get(BOUNDS_NAME))
        for name, tenant in fleet.tenants.items()
    }
    wanted = {t.name: dict(t.bounds.storage_classes) if t.bounds else {} for t in catalog.tenants}
    errors += catalog_storage_oversell_errors(
        class_capacity(storage_capacity), live_classes, wanted, pruned
    )
    raise_if(errors)
