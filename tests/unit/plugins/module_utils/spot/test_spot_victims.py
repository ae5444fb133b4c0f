# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.candidates import (
    candidates_from_vcjobs,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.victims import (
    SpotJob,
    choose_victims,
    parse_price,
    parse_time,
    reclaim_need,
    unsold_reclaim_need,
    victim_order_key,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.workload.demand import job_demand
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import NOW, vcjob

T0 = NOW.timestamp()


def job(name, price, gpus, pods, minutes, namespace="ns"):
    return SpotJob(namespace, name, Decimal(str(price)), gpus, pods, T0 - minutes * 60)


def design_jobs():
    return [
        job("A", 0.1, 4, 1, 10),
        job("B", 0.1, 8, 2, 120),
        job("C", 0.3, 4, 1, 30),
        job("D", 0.5, 8, 2, 60),
    ]


def test_design_worked_example_takes_a_then_b():
    chosen = choose_victims(design_jobs(), 12)
    assert [j.name for j in chosen] == ["A", "B"]
    assert sum(j.gpus for j in chosen) == 12


def test_stop_rule_never_takes_more_than_needed():
    assert [j.name for j in choose_victims(design_jobs(), 4)] == ["A"]
    assert [j.name for j in choose_victims(design_jobs(), 5)] == ["A", "B"]
    assert choose_victims(design_jobs(), 0) == []


def test_order_price_then_single_then_fewer_gpus_then_newest_then_name():
    jobs = [
        job("multi-cheap", 0.1, 2, 2, 5),
        job("single-cheap-big", 0.1, 8, 1, 5),
        job("single-cheap-small-old", 0.1, 2, 1, 50),
        job("single-cheap-small-new", 0.1, 2, 1, 1),
        job("single-cheap-small-new-b", 0.1, 2, 1, 1, namespace="nt"),
        job("single-cheap-small-new-a", 0.1, 2, 1, 1, namespace="nt"),
        job("free", 0, 8, 4, 500),
    ]
    order = [j.name for j in sorted(jobs, key=victim_order_key)]
    assert order == [
        "free",
        "single-cheap-small-new",
        "single-cheap-small-new-a",
        "single-cheap-small-new-b",
        "single-cheap-small-old",
        "single-cheap-big",
        "multi-cheap",
    ]


def test_jobs_without_gpus_are_never_taken():
    jobs = [job("cpu-only", 0, 0, 1, 1), job("gpu", 0.2, 2, 1, 1)]
    assert [j.name for j in choose_victims(jobs, 1)] == ["gpu"]


def test_not_enough_fails_with_numbers_unless_partial():
    with pytest.raises(
        PlatformValidationError,
        match=r"need: 30 GPUs cannot be freed: the 4 spot jobs hold 24 GPUs",
    ):
        choose_victims(design_jobs(), 30)
    assert [j.name for j in choose_victims(design_jobs(), 30, allow_partial=True)] == [
        "A",
        "B",
        "C",
        "D",
    ]


def test_negative_need_is_refused():
    with pytest.raises(PlatformValidationError, match=r"need: -1 is less than 0"):
        choose_victims(design_jobs(), -1)
    with pytest.raises(PlatformValidationError, match=r"need: 'x' is not a whole number"):
        choose_victims(design_jobs(), "x")


job_strategy = st.builds(
    job,
    name=st.text("abc", min_size=1, max_size=3),
    price=st.sampled_from([0, 0.1, 0.3, 0.5]),
    gpus=st.integers(0, 8),
    pods=st.integers(1, 4),
    minutes=st.integers(0, 300),
    namespace=st.sampled_from(["x", "y"]),
)


@given(jobs=st.lists(job_strategy, max_size=40), need=st.integers(0, 120))
def test_stop_rule_and_order_properties(jobs, need):
    held = sum(j.gpus for j in jobs)
    if held < need:
        with pytest.raises(PlatformValidationError):
            choose_victims(jobs, need)
        return
    chosen = choose_victims(jobs, need)
    freed = sum(j.gpus for j in chosen)
    assert freed >= need
    # Stop rule: without the last victim the demand would not be met.
    if chosen:
        assert freed - chosen[-1].gpus < need
    # Order: the victims are the shortest prefix of the full sorted order.
    ranked = [j for j in sorted(jobs, key=victim_order_key) if j.gpus > 0]
    assert [victim_order_key(j) for j in chosen] == [
        victim_order_key(j) for j in ranked[: len(chosen)]
    ]


def test_price_parsing():
    assert parse_price(None, "p") == 0
    assert parse_price("0.30", "p") == Decimal("0.30")
    assert parse_price(1, "p") == 1
    for bad in ("abc", "nan", "inf", float("nan"), True, [1]):
        with pytest.raises(PlatformValidationError, match="p: "):
            parse_price(bad, "p")
    with pytest.raises(PlatformValidationError, match="negative"):
        parse_price("-1", "p")


def test_time_parsing():
    assert parse_time("2026-01-01T12:00:00Z", "t") == T0
    assert parse_time("2026-01-01T20:00:00+08:00", "t") == T0
    for bad in ("yesterday", "2026-01-01", "2026-01-01T12:00:00", 5, ""):
        with pytest.raises(PlatformValidationError, match="t: "):
            parse_time(bad, "t")


def test_reclaim_need():
    assert reclaim_need(64, 40, 20) == 0  # 24 free >= 20
    assert reclaim_need(64, 56, 20) == 12  # the design: 8 free, 12 short
    assert reclaim_need(64, 70, 4) == 4  # over-allocated pool counts as 0 free
    with pytest.raises(PlatformValidationError, match="need"):
        reclaim_need(64, 0, -2)


def test_unsold_reclaim_need_counts_bought_but_unused_gpus_as_taken():
    # The case: 60 GPUs, two tenants bought 20 each and use 16, spot holds
    # the other 20 (8 of them bought). A third tenant buys 20: nothing stays unsold,
    # so every spot GPU goes, not only the 12 the free count asks for.
    assert reclaim_need(60, 52, 20) == 12
    assert unsold_reclaim_need(60, 40, 20, 52, 20) == 20
    # Spot within what stays unsold keeps its GPUs.
    assert unsold_reclaim_need(100, 40, 20, 52, 20) == 0
    # Need 0: the spot GPUs that hold sold ones now (a pool that shrank to 50).
    assert unsold_reclaim_need(50, 40, 20, 52, 0) == 10
    # Never fewer than the free count: 30 GPUs of pods outside the queues.
    assert unsold_reclaim_need(100, 40, 0, 90, 20) == 10
    with pytest.raises(PlatformValidationError, match="need"):
        unsold_reclaim_need(64, 0, 0, 0, -1)


@given(
    pool=st.integers(0, 512),
    sold=st.integers(0, 512),
    spot=st.integers(0, 512),
    other=st.integers(0, 512),
    demand=st.integers(0, 512),
)
def test_unsold_reclaim_need_leaves_the_sale_and_what_was_sold_to_the_buyers(
    pool, sold, spot, other, demand
):
    allocated = spot + other
    need = unsold_reclaim_need(pool, sold, spot, allocated, demand)
    assert need >= reclaim_need(pool, allocated, demand)
    # After reclaiming min(need, spot), spot holds no more than stays unsold, unless
    # the free count asked for more (then spot is emptied first).
    left = spot - min(need, spot)
    assert left <= max(0, pool - sold - demand) or left == 0
    # Never more than the spot held and the free count together ask for.
    assert need <= max(spot, reclaim_need(pool, allocated, demand))


def test_candidates_need_spot_queue_and_spot_label():
    jobs = [
        vcjob("ok", "alpha"),
        vcjob("no-label", "alpha", billing=None),
        vcjob("payg-label", "alpha", billing="payg"),
        vcjob("wrong-queue", "alpha", queue_type="payg"),
        vcjob("pending", "alpha", phase="Pending"),
        vcjob("no-price", "alpha", price=None),
        vcjob("bad-price", "alpha", price="cheap"),
    ]
    deleting = vcjob("deleting", "alpha")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T12:00:00Z"
    found, warnings = candidates_from_vcjobs([*jobs, deleting], ["tenant-alpha-spot"])
    assert [j.name for j in found] == ["ok", "no-price", "bad-price"]
    assert found[1].price == 0 and found[2].price == 0
    assert (
        len(warnings) == 1
        and "'cheap' is not a number" in warnings[0]
        and "counts as price 0" in warnings[0]
    )
    assert found[0].started == T0 - 600 and found[0].queue == "tenant-alpha-spot"


def test_candidate_gpus_pods_and_start_fallback():
    j = vcjob("multi", "alpha", gpus_per_pod=2, replicas=3)
    j["spec"]["tasks"].append(
        {
            "replicas": 1,
            "template": {
                "spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}]}
            },
        }
    )
    demand = job_demand(j)
    assert (demand.gpus, demand.pods) == (7, 4)
    del j["status"]["state"]["lastTransitionTime"]
    found, _unused = candidates_from_vcjobs([j], ["tenant-alpha-spot"])
    assert found[0].started == T0 - 11 * 60  # creationTimestamp
