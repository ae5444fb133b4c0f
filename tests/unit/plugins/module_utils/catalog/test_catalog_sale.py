# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules catalog-purchase and catalog-sale (``capacity.purchase``), catalog-sale-reclaim
and catalog-sale-summary (``catalog.sale``): what a catalog run sells, once for the
whole run, and what it tells."""

from __future__ import annotations

from decimal import Decimal

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.capacity.purchase import (
    CatalogSale,
    catalog_purchase,
    catalog_sale,
    purchase_demand,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.catalog.sale import (
    sale_line,
    sale_reclaim_errors,
    spot_after,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.workload.pool import (
    POOL_RESOURCES,
    TenantCommitment,
)

GPU = "nvidia.com/gpu"
POOL = {GPU: Decimal(64), "cpu": Decimal(512), "memory": Decimal(2**40)}


def res(gpus, cpu=0):
    out = dict.fromkeys(POOL_RESOURCES, Decimal(0))
    out[GPU], out["cpu"] = Decimal(gpus), Decimal(cpu)
    return out


def held(tenant, sub, payg=0):
    return TenantCommitment(tenant, subscription=res(sub), payg=res(payg))


LIVE = {"alpha": held("alpha", 16), "beta": held("beta", 8, 4), "old": held("old", 6)}


def test_a_new_tenant_and_a_growth_are_sold_once_for_the_run():
    desired = {"alpha": ({GPU: Decimal(20)}, None), "gamma": ({GPU: Decimal(10)}, None)}
    sale = catalog_sale(POOL, LIVE, desired)
    assert (sale.sold_before, sale.sold_after, sale.added, sale.unsold_after) == (34, 48, 14, 16)
    assert sale.growing == ("alpha (+4)", "gamma (+10)")
    assert sale.reclaims and sale.recomputes and sale.moved == ("alpha", "gamma")


def test_what_one_tenant_adds_is_what_the_purchase_adds():
    # One growing tenant: the catalog's sale is the purchase's own demand (rule purchase-demand).
    for sub, payg in ((20, None), (16, 6), (30, 2)):
        new_payg = None if payg is None else {GPU: Decimal(payg)}
        sale = catalog_sale(POOL, LIVE, {"beta": ({GPU: Decimal(sub)}, new_payg)})
        demand = purchase_demand(LIVE["beta"], {GPU: Decimal(sub)}, new_payg)[GPU]
        assert sale.added == max(0, (sub + (4 if payg is None else payg)) - 12)
        if sub >= 8 and (payg is None or payg >= 4):
            assert sale.added == demand


def test_a_shrink_in_the_same_run_offsets_a_growth():
    desired = {"alpha": ({GPU: Decimal(10)}, None), "gamma": ({GPU: Decimal(4)}, None)}
    sale = catalog_sale(POOL, LIVE, desired)
    assert sale.added == 0 and not sale.reclaims
    assert sale.recomputes  # the shares move: spot is recomputed
    assert sale.sold_after == 34 - 6 + 4


def test_a_pruned_tenant_holds_nothing_after_the_run_and_outside_tenants_keep_theirs():
    desired = {"gamma": ({GPU: Decimal(6)}, None)}
    sale = catalog_sale(POOL, LIVE, desired, pruned=["old"])
    assert sale.added == 0 and sale.moved == ("gamma", "old")
    totals = catalog_purchase(LIVE, desired, ["old"])
    assert totals.outside[GPU] == 16 + 8 + 4 and totals.catalog[GPU] == 6


def test_an_unchanged_catalog_neither_reclaims_nor_recomputes():
    desired = {"alpha": ({GPU: Decimal(16)}, None), "beta": ({GPU: Decimal(8)}, {GPU: Decimal(4)})}
    sale = catalog_sale(POOL, LIVE, desired)
    assert sale.added == 0 and not sale.reclaims and not sale.recomputes


def test_a_change_of_cpu_alone_recomputes_but_sells_no_gpu():
    desired = {"alpha": ({GPU: Decimal(16), "cpu": Decimal(8)}, None)}
    sale = catalog_sale(POOL, LIVE, desired)
    assert sale.added == 0 and sale.recomputes


@pytest.mark.parametrize("pool_gpus", [0, 20, 64])
def test_spot_after_the_sale_never_holds_more_than_the_unsold(pool_gpus):
    sale = catalog_sale({GPU: Decimal(pool_gpus)}, LIVE, {"gamma": ({GPU: Decimal(8)}, None)})
    assert sale.unsold_after == max(0, pool_gpus - 42)
    assert spot_after(sale, None)["gpus"] == sale.unsold_after


def test_the_reason_is_the_given_one_or_the_sale():
    sale = CatalogSale(64, 34, 48, ("alpha (+4)", "gamma (+10)"), ("alpha", "gamma"))
    assert sale.reason(None) == "the tenant catalog selling 14 more GPUs (alpha (+4), gamma (+10))"
    assert sale.reason("order 4711") == "order 4711"
    many = CatalogSale(64, 0, 7, tuple(f"t{i} (+1)" for i in range(7)), ())
    assert many.reason(" ").endswith("t4 (+1), ...)")


def test_without_reclaim_a_shortfall_is_refused_with_the_numbers():
    sale = CatalogSale(64, 52, 56, ("gamma (+4)",), ("gamma",))
    planned = {"shortfall": 16, "spot": 24}
    assert sale_reclaim_errors(sale, True, planned) == []
    assert sale_reclaim_errors(sale, False, {"shortfall": 0, "spot": 24}) == []
    (error,) = sale_reclaim_errors(sale, False, planned)
    assert str(error) == (
        "tenants.nvidia.com/gpu: the catalog selling 4 GPUs needs 16 spot GPUs reclaimed: 12 GPUs "
        "are unsold and spot jobs hold 24; set reclaim: true to reclaim spot jobs first"
    )


def test_the_summary_says_what_was_sold_reclaimed_and_left_to_spot():
    sale = CatalogSale(64, 52, 56, ("gamma (+4)",), ("gamma",))
    victims = [
        {"namespace": "tenant-alpha", "name": "a", "gpus": 4},
        {"namespace": "tenant-beta", "name": "c", "gpus": 12},
    ]
    recomputed = {
        "idle": {GPU: 8},
        "counts": {"spot_queues": 3, "changed": 2},
        "updated": ["tenant-alpha-spot", "tenant-gamma-spot"],
    }
    spot = spot_after(sale, recomputed)
    assert spot == {
        "recomputed": True,
        "gpus": 8,
        "spot_queues": 3,
        "updated": ["tenant-alpha-spot", "tenant-gamma-spot"],
    }
    assert sale_line(sale, {"victims": victims}, spot) == (
        "52 -> 56 of 64 GPUs sold (+4); reclaimed 16 spot GPUs (tenant-alpha/a, tenant-beta/c); "
        "spot capacity after: 8 GPUs over 3 spot queues (2 changed)"
    )
    assert sale_line(sale, {"victims": []}, spot).split("; ")[1] == (
        "no spot job reclaimed (spot held no more than stays unsold)"
    )
    predicted = spot_after(sale, None)
    assert sale_line(sale, {"victims": victims}, predicted, check_mode=True).endswith(
        "would reclaim 16 spot GPUs (tenant-alpha/a, tenant-beta/c); "
        "spot capacity after: would be at most 8 GPUs (the unsold ones)"
    )
    shrink = CatalogSale(64, 52, 40, (), ("alpha",))
    assert sale_line(shrink, None, spot_after(shrink, None)).startswith(
        "52 -> 40 of 64 GPUs sold (-12); nothing to reclaim"
    )
    still = CatalogSale(64, 52, 52)
    assert sale_line(still, None, spot_after(still, None)) == (
        "no subscription or pay-as-you-go grant changes: nothing reclaimed, spot left as it is"
    )
