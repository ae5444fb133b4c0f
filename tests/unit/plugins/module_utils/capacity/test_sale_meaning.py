# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One meaning of a GPU sale, three ways in: on the same cluster, a pay-as-you-go growth
(``payg_capacity``), a catalog run's sale (``catalog/sale_io.reclaim_for_sale``) and
``tenant_create.yml``'s reclaim (``spot_reclaim`` with ``need_from: unsold`` and the GPUs
the purchase adds) find the same shortfall (rule unsold-reclaim-need) and the same victims,
in check mode and when they delete."""

from __future__ import annotations

from decimal import Decimal

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.capacity import service as payg
from ansible_collections.gpucloud.platform.plugins.module_utils.capacity.purchase import (
    catalog_sale,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.capacity.service import PAYG_FLOW
from ansible_collections.gpucloud.platform.plugins.module_utils.catalog.sale_io import (
    reclaim_for_sale,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import Refused
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.service import RECLAIM_FLOW
from ansible_collections.gpucloud.platform.plugins.module_utils.workload.pool import (
    commitments_from_queues,
)
from ansible_collections.gpucloud.platform.plugins.modules import payg_capacity, spot_reclaim
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import (
    spot_cluster,
    spot_objects,
)

GPU = "nvidia.com/gpu"


def defaults(module, **given):
    return {name: spec.get("default") for name, spec in module.OPTIONS.items()} | given


def by_payg(grant, check_mode):
    cluster = spot_cluster(dry_run=check_mode, alpha_subscription=28)
    options = defaults(payg_capacity, tenant="alpha", capability={GPU: grant})
    return payg.run(options, cluster, check_mode)["reclaim"], cluster


def by_catalog(grant, check_mode):
    cluster = spot_cluster(dry_run=check_mode, alpha_subscription=28)
    queues = [o for o in spot_objects(alpha_subscription=28) if o.get("kind") == "Queue"]
    desired = {"alpha": ({GPU: Decimal(28)}, {GPU: Decimal(grant)})}
    sale = catalog_sale({GPU: Decimal(64)}, commitments_from_queues(queues), desired)
    assert sale.added == grant
    options = {"reclaim": True, "demand_reason": "catalog", "node_selector": {}}
    return reclaim_for_sale(options, cluster, check_mode, sale), cluster


def by_tenant_create(grant, check_mode):
    cluster = spot_cluster(dry_run=check_mode, alpha_subscription=28)
    options = defaults(spot_reclaim, need=grant, need_from="unsold", demand_reason="order")
    return RECLAIM_FLOW.run(options, cluster, check_mode), cluster


def meaning(reclaimed):
    return (
        reclaimed["shortfall"],
        reclaimed["sold"],
        reclaimed["spot"],
        tuple(f"{v['namespace']}/{v['name']}" for v in reclaimed["victims"]),
        reclaimed["freed"],
    )


@pytest.mark.parametrize("check_mode", [True, False])
@pytest.mark.parametrize(("grant", "victims"), [(4, 1), (12, 2), (20, 4)])
def test_a_growth_a_catalog_sale_and_a_purchase_find_the_same_shortfall_and_victims(
    grant, victims, check_mode
):
    answers = [way(grant, check_mode) for way in (by_payg, by_catalog, by_tenant_create)]
    meanings = {meaning(reclaimed) for reclaimed, _cluster in answers}
    assert len(meanings) == 1, meanings
    shortfall, sold, spot, names, freed = meanings.pop()
    # 64 GPUs, 40 sold (alpha 28, beta 8 + 4), spot holds all 24 unsold: spot may keep
    # 24 - grant, so the whole grant is reclaimed.
    assert (sold, spot) == (40, 24) and shortfall == grant
    assert len(names) == victims and freed >= shortfall
    if not check_mode:
        left = [{o["metadata"]["name"] for o in c.objects("Job")} for _r, c in answers]
        assert left[0] == left[1] == left[2] and len(left[0]) == 4 - victims


@pytest.mark.parametrize("grant", [4, 12, 20])
def test_the_pure_sale_plan_is_what_the_reclaims_find(grant):
    """payg_capacity's plan from gathered facts (``capacity/sale.plan_sale``) names the
    shortfall the three reclaims above find, and its parsed answer the same victims."""
    options = defaults(payg_capacity, tenant="alpha", capability={GPU: grant})
    cluster = spot_cluster(alpha_subscription=28)
    gathered = PAYG_FLOW.run({**options, "state": "gathered"}, cluster, False)["gathered"]
    request = PAYG_FLOW.parse(options)
    planned = PAYG_FLOW.plan(request, PAYG_FLOW.facts_in(request, gathered))
    assert planned.sale is not None and planned.sale.shortfall == grant
    parsed = PAYG_FLOW.offline({**options, "state": "parsed", "facts": gathered})
    reclaimed, _cluster = by_tenant_create(grant, True)
    assert meaning(parsed["reclaim"]) == meaning(reclaimed)


def test_without_reclaim_a_growth_and_a_catalog_sale_are_refused_with_the_same_numbers():
    cluster = spot_cluster(alpha_subscription=28)
    options = defaults(payg_capacity, tenant="alpha", capability={GPU: 12}, reclaim=False)
    with pytest.raises(Refused) as growth:
        payg.run(options, cluster, False)
    queues = [o for o in spot_objects(alpha_subscription=28) if o.get("kind") == "Queue"]
    desired = {"alpha": ({GPU: Decimal(28)}, {GPU: Decimal(12)})}
    sale = catalog_sale({GPU: Decimal(64)}, commitments_from_queues(queues), desired)
    with pytest.raises(Refused) as catalog:
        reclaim_for_sale(
            {"reclaim": False, "node_selector": {}},
            spot_cluster(alpha_subscription=28),
            False,
            sale,
        )
    numbers = "12 GPUs needs 12 spot GPUs reclaimed: 24 GPUs are unsold and spot jobs hold 24"
    assert (
        numbers in growth.value.extra["errors"][0] and numbers in catalog.value.extra["errors"][0]
    )
