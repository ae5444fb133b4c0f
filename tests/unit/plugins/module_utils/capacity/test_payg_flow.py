# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""capacity.payg_flow (payg_capacity's pure steps) and capacity.sale as tables of
(request, facts) -> plan with no cluster; and the contract's promise against the fake
cluster: ``parsed`` of what ``gathered`` returned is the check-mode run."""

from __future__ import annotations

import copy
from decimal import Decimal

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.capacity import payg_flow
from ansible_collections.gpucloud.platform.plugins.module_utils.capacity.payg_flow import PaygFacts
from ansible_collections.gpucloud.platform.plugins.module_utils.capacity.sale import (
    SaleBook,
    plan_sale,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.capacity.service import PAYG_FLOW
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
    Refused,
)
from ansible_collections.gpucloud.platform.plugins.modules import payg_capacity
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.capacity.test_payg_service import (
    hybrid_objects,
    oversized_beta,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import (
    SpotCluster,
    spot_objects,
)

GPU = "nvidia.com/gpu"
READ_AT = 1767268800.0  # 2026-01-01T12:00:00Z


def params(**given):
    """The module's options with their defaults, as the runner passes them."""
    return {name: spec.get("default") for name, spec in payg_capacity.OPTIONS.items()} | given


def queue_type(obj):
    return (obj["metadata"].get("labels") or {}).get("platform.io/queue-type")


def facts(objects, burst=False):
    """The objects as gather lists them (the burst queues only when asked)."""

    def kind(k):
        return tuple(o for o in objects if o.get("kind") == k)

    billing = ("subscription", "payg", "spot")
    return PaygFacts(
        READ_AT,
        tuple(q for q in kind("Queue") if queue_type(q) in billing),
        kind("Job"),
        kind("Node"),
        kind("Pod"),
        tuple(p for p in kind("Pod") if p["spec"].get("schedulerName") == "volcano"),
        tuple(q for q in kind("Queue") if queue_type(q) == "burst") if burst else None,
    )


def plan(objects, burst=False, **given):
    request = payg_flow.parse_payg(params(**given))
    return payg_flow.plan_payg_run(request, facts(objects, burst))


# --- the sale: (book, growth, reclaim) -> shortfall, refusal ---------------------------

SALES = [
    # pool, sold, spot, allocated, growth, reclaim -> shortfall, refused
    (64, 40, 24, 60, 12, True, 12, False),
    (64, 40, 24, 60, 12, False, 12, True),
    (64, 40, 10, 40, 12, False, 0, False),  # spot keeps 10 of the 12 unsold left
    (64, 40, 10, 60, 12, True, 8, False),  # 4 free: rule reclaim-need asks for more
    (64, 64, 0, 0, 0, True, 0, False),
]


@pytest.mark.parametrize(
    ("pool", "sold", "spot", "allocated", "growth", "reclaim", "shortfall", "refused"), SALES
)
def test_the_sale_is_the_unsold_shortfall_and_refused_without_reclaim(
    pool, sold, spot, allocated, growth, reclaim, shortfall, refused
):
    sale = plan_sale(SaleBook(pool, sold, spot, allocated), growth, reclaim)
    assert sale.shortfall == shortfall and (sale.refusal is not None) is refused
    assert sale.reclaims is (shortfall > 0 and not refused)
    if refused:
        assert f"needs {shortfall} spot GPUs reclaimed" in sale.refusal.message


# --- plan: (request, facts) -> plan ------------------------------------------------------


def test_a_growth_is_a_sale_of_its_idc_gpus():
    planned = plan(spot_objects(alpha_subscription=28), tenant="alpha", capability={GPU: 12})
    assert planned.resize.updated == ["tenant-alpha-payg"] and planned.sale is not None
    assert (planned.sale.growth, planned.sale.shortfall) == (12, 12)
    assert planned.sale.book == SaleBook(pool=64, sold=40, spot=24, allocated=60)
    assert planned.reason == "pay-as-you-go growth of tenant alpha by 12 GPUs"
    row = planned.resize.table[0]
    assert row["kept_until"] == "2026-01-01T12:30:00Z"  # rule payg-grace, as of read_at


def test_a_shrink_sells_nothing_and_needs_no_pool():
    objects = oversized_beta()
    request = payg_flow.parse_payg(params(fit_to_use=True))
    listed = facts(objects)
    only_queues = PaygFacts(READ_AT, listed.queues, listed.jobs)
    assert payg_flow.grows(request, only_queues) is False
    planned = payg_flow.plan_payg_run(request, only_queues)
    assert planned.sale is None and planned.resize.updated == ["tenant-beta-payg"]


@pytest.mark.parametrize(
    ("given", "match"),
    [
        ({"tenant": "alpha", "capability": {GPU: 40}}, "rule oversell-guard"),
        ({"tenant": "alpha", "capability": {GPU: 12}, "reclaim": False}, "set reclaim: true"),
    ],
)
def test_what_the_pool_cannot_take_is_refused_by_the_plan_with_the_table(given, match):
    alpha = 40 if given["capability"][GPU] == 40 else 28
    with pytest.raises(Refused, match=match) as info:
        plan(spot_objects(alpha_subscription=alpha), burst=True, **given)
    assert info.value.extra["queues"][0]["queue"] == "tenant-alpha-payg"


def test_past_the_idc_the_burst_quota_takes_the_rest():
    objects = hybrid_objects()
    request = payg_flow.parse_payg(params(tenant="alpha", capability={GPU: 30}))
    assert payg_flow.needs_burst(request, facts(objects)) is True
    planned = payg_flow.plan_payg_run(request, facts(objects, burst=True))
    row = planned.resize.table[0]
    assert (row["from_idc"], row["from_cloud"], row["cloud_gpus"]) == (24, 6, 6)
    assert planned.sale is not None and planned.sale.growth == 24


def test_parse_refuses_bad_input_before_any_connection():
    with pytest.raises(PlatformValidationError, match="give the new capability"):
        PAYG_FLOW.parse(params())


def test_parsed_needs_its_read_at():
    request = PAYG_FLOW.parse(params(fit_to_use=True))
    with pytest.raises(PlatformValidationError, match=r"facts\.read_at"):
        payg_flow.facts_in(request, {"queues": []})


# --- the contract's promise on the fake cluster --------------------------------------------


def without_history(result):
    result = copy.deepcopy(result)
    for key in ("changed", "state", "requests"):
        result.pop(key, None)
    if result.get("reclaim"):
        result["reclaim"].pop("history", None)
    for row in result["queues"]:
        row.pop("kept_until", None)  # as of read_at, which differs between the two runs
    return result


CASES = [
    (lambda: spot_objects(alpha_subscription=28), {"tenant": "alpha", "capability": {GPU: 12}}),
    (lambda: spot_objects(alpha_subscription=28), {"tenant": "alpha", "capability": {GPU: 4}}),
    (
        lambda: spot_objects(alpha_subscription=28),
        {"tenant": "alpha", "capability": {GPU: 12}, "reclaim": False},
    ),
    (spot_objects, {"tenant": "alpha", "capability": {GPU: 40}}),
    (oversized_beta, {"fit_to_use": True}),
    (hybrid_objects, {"tenant": "alpha", "capability": {GPU: 30}}),
    (hybrid_objects, {"tenant": "alpha", "capability": {GPU: 33}}),
    (
        lambda: hybrid_objects(alpha_subscription=40),
        {"tenant": "alpha", "capability": {GPU: 8}, "reclaim": False},
    ),
]


@pytest.mark.parametrize(("objects", "given"), CASES)
def test_parsed_of_gathered_is_the_check_mode_run(objects, given):
    options = params(**given)
    cluster = SpotCluster(objects())
    gathered = PAYG_FLOW.run({**options, "state": "gathered"}, cluster, False)["gathered"]
    assert cluster.writes == []
    parsed_options = {**options, "state": "parsed", "facts": gathered}
    try:
        check = PAYG_FLOW.run(options, SpotCluster(objects(), dry_run=True), True)
    except Refused as exc:
        with pytest.raises(Refused) as again:
            PAYG_FLOW.offline(parsed_options)
        assert str(again.value) == str(exc)
        assert without_history({"queues": [], **again.value.extra}) == without_history(
            {"queues": [], **exc.extra}
        )
        return
    parsed = PAYG_FLOW.offline(parsed_options)
    assert parsed is not None and parsed["state"] == "parsed" and parsed["changed"] is False
    assert without_history(parsed) == without_history(check)


def test_gathered_reads_the_pool_only_when_a_queue_grows():
    shrink = SpotCluster(oversized_beta())
    answer = PAYG_FLOW.run(params(fit_to_use=True, state="gathered"), shrink, False)
    assert sorted(answer["gathered"]) == ["jobs", "queues", "read_at"]
    assert shrink.lists == ["Queue", "Job"]
    grow = SpotCluster(hybrid_objects())
    answer = PAYG_FLOW.run(
        params(tenant="alpha", capability={GPU: 30}, state="gathered"), grow, False
    )
    assert grow.lists == ["Queue", "Job", "Node", "Pod", "Pod", "Queue"]
    assert [q["metadata"]["name"] for q in answer["gathered"]["burst"]] == [
        q["metadata"]["name"] for q in facts(hybrid_objects(), burst=True).burst
    ]


def test_a_growth_reads_the_reclaim_again_under_the_lease():
    cluster = SpotCluster(spot_objects(alpha_subscription=28))
    result = PAYG_FLOW.run(params(tenant="alpha", capability={GPU: 12}), cluster, False)
    assert (
        cluster.lists
        == ["Queue", "Job", "Node", "Pod", "Pod"]
        + [
            "Node",
            "Pod",
            "Queue",
            "Job",
            "Pod",
        ]
        * 2
    )
    assert [v["name"] for v in result["reclaim"]["victims"]] == ["spot-a", "spot-b"]
    assert (
        Decimal(
            cluster.store[cluster.key("Queue", None, "tenant-alpha-payg")]["spec"]["capability"][
                GPU
            ]
        )
        == 12
    )
