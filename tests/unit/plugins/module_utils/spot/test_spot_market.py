# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""spot.market: the spot market view (ranks, the safe bid, a tenant's reclaim history)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot import market
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.candidates import (
    candidates_from_vcjobs,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.market import (
    PRICE_STEP,
    market_input_errors,
    market_view,
    next_price_above,
    parse_market,
    reclaim_ranks,
    safe_bid,
    tenant_history,
    unknown_tenant_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.victims import (
    SpotJob,
    choose_victims,
    victim_order_key,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.spot.test_spot_victims import (
    design_jobs,  # the design's worked example A-D
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import (
    NOW,
    queue,
    vcjob,
)

T0 = NOW.timestamp()


def job(name, price, gpus, pods, minutes, namespace="ns", queue_name=""):
    return SpotJob(namespace, name, Decimal(str(price)), gpus, pods, T0 - minutes * 60, queue_name)


# --- ranks ------------------------------------------------------------------------------


def test_ranks_follow_the_reclaim_order():
    ranks = reclaim_ranks(design_jobs())
    assert ranks == {("ns", "A"): 1, ("ns", "B"): 2, ("ns", "C"): 3, ("ns", "D"): 4}


def test_a_job_without_gpus_has_no_rank():
    ranks = reclaim_ranks([*design_jobs(), job("idle", 0, 0, 1, 1)])
    assert ("ns", "idle") not in ranks and sorted(ranks.values()) == [1, 2, 3, 4]


def test_no_jobs_no_ranks():
    assert reclaim_ranks([]) == {}


# --- the safe bid -----------------------------------------------------------------------


def test_design_example_safe_bid_for_12_gpus():
    bid = safe_bid(design_jobs(), 12)
    assert [v.name for v in bid.victims] == ["A", "B"]
    assert bid.highest_price == Decimal("0.1") and bid.bid == Decimal("0.100001")
    out = bid.as_dict()
    assert out["safe_bid"] == "0.100001" and out["victims"] == ["ns/A", "ns/B"]
    assert out["possible"] is True and out["spot_gpus"] == 24
    assert "most recently started" in out["reason"]


@pytest.mark.parametrize(
    ("gpus", "expected"), [(1, "0.100001"), (4, "0.100001"), (13, "0.300001"), (17, "0.500001")]
)
def test_safe_bid_grows_with_the_reclaim(gpus, expected):
    assert safe_bid(design_jobs(), gpus).as_dict()["safe_bid"] == expected


def test_every_gpu_of_spot_is_a_reclaim_taking_every_job():
    bid = safe_bid(design_jobs(), 24)
    assert bid.possible and bid.as_dict()["safe_bid"] == "0.500001"


@pytest.mark.parametrize("gpus", [0, -3])
def test_a_reclaim_of_no_gpu_is_refused_by_name(gpus):
    # with no job or with jobs: a reclaim of nothing takes nothing, so no price is above it
    for jobs in ([], design_jobs()):
        with pytest.raises(PlatformValidationError, match=r"reclaim_gpus.*rule spot-market-input"):
            safe_bid(jobs, gpus)


def test_a_reclaim_larger_than_spot_cannot_be_met():
    bid = safe_bid(design_jobs(), 25)
    assert not bid.possible and bid.bid is None and bid.victims == ()
    assert "cannot be met from spot" in bid.reason and "hold 24 GPUs" in bid.reason
    assert safe_bid([], 1).as_dict()["safe_bid"] is None


def test_missing_prices_count_as_zero_as_in_a_reclaim():
    jobs, warnings = candidates_from_vcjobs(
        [vcjob("free", "a", price=None), vcjob("bad", "a", price="cheap")], ["tenant-a-spot"]
    )
    assert [j.price for j in jobs] == [0, 0] and len(warnings) == 1
    assert safe_bid(jobs, 1).as_dict()["safe_bid"] == "0.000001"


def test_a_new_job_at_the_highest_price_taken_is_not_safe():
    """Tie-breaking: at equal price single-pod first, then fewer GPUs, then the newest; a
    new single-pod job of the last victim's size at its price goes before it."""
    need = 4  # takes A (0.1, 4 GPUs, single, 10 min old)
    newcomer = job("new", 0.1, 4, 1, 0)
    assert victim_order_key(newcomer) < victim_order_key(design_jobs()[0])
    assert [v.name for v in choose_victims([*design_jobs(), newcomer], need)] == ["new"]
    at_bid = job("new", safe_bid(design_jobs(), need).bid, 4, 1, 0)
    assert [v.name for v in choose_victims([*design_jobs(), at_bid], need)] == ["A"]


def test_next_price_above_is_the_next_step():
    assert next_price_above(Decimal("0.3")) == Decimal("0.300001")
    assert next_price_above(Decimal(0)) == PRICE_STEP
    assert next_price_above(Decimal(2)) == Decimal("2.000001")
    # A hand-written price finer than the step: still strictly above, on the step.
    assert next_price_above(Decimal("0.1000005")) == Decimal("0.100001")


def test_no_admissible_price_above_the_limit(monkeypatch):
    monkeypatch.setattr(market, "SPOT_PRICE_LIMIT", 1)
    bid = safe_bid([job("X", "0.9999995", 4, 1, 1)], 1)
    assert bid.possible and bid.bid is None and "limit" in bid.reason


prices = st.decimals(min_value=0, max_value=5, places=7, allow_nan=False, allow_infinity=False)
job_strategy = st.builds(
    job,
    name=st.text("abcd", min_size=1, max_size=3),
    price=st.one_of(st.sampled_from([0, "0.1", "0.3", "0.5"]), prices),
    gpus=st.integers(0, 8),
    pods=st.integers(1, 4),
    minutes=st.integers(0, 300),
    namespace=st.sampled_from(["x", "y"]),
)
jobs_strategy = st.lists(job_strategy, max_size=30, unique_by=lambda j: (j.namespace, j.name))


@settings(deadline=None)  # wall time on a busy machine is not the rule under test
@given(
    jobs=jobs_strategy,
    need=st.integers(1, 100),
    gpus=st.integers(0, 16),
    pods=st.integers(1, 4),
    minutes=st.integers(-5, 300),
)
def test_a_job_at_the_safe_bid_is_never_taken(jobs, need, gpus, pods, minutes):
    """The invariant: a job of any shape priced at safe_bid, added to the jobs, is not
    selected by rule spot-victim-stop for the same N GPUs, and the selection is unchanged."""
    bid = safe_bid(jobs, need)
    if not bid.possible:
        assert sum(j.gpus for j in jobs) < need
        return
    assert bid.bid is not None and bid.bid > max(v.price for v in bid.victims)
    newcomer = job("newcomer", bid.bid, gpus, pods, minutes, namespace="z")
    chosen = choose_victims([*jobs, newcomer], need)
    assert newcomer not in chosen
    assert chosen == list(bid.victims)


@settings(deadline=None)  # wall time on a busy machine is not the rule under test
@given(jobs=jobs_strategy, need=st.integers(1, 100))
def test_the_safe_bid_is_the_lowest_safe_step(jobs, need):
    """One step lower is the highest price taken (or below it), where a newcomer of the
    last victim's shape, started now, is taken."""
    bid = safe_bid(jobs, need)
    if not bid.possible:
        return
    lower = bid.bid - PRICE_STEP
    assert lower <= bid.highest_price
    last = bid.victims[-1]
    newcomer = job("newcomer", bid.highest_price, last.gpus, last.pods, -1, namespace="a")
    assert newcomer in choose_victims([*jobs, newcomer], need)


@settings(deadline=None)  # wall time on a busy machine is not the rule under test
@given(jobs=jobs_strategy)
def test_ranks_are_a_permutation_in_victim_order(jobs):
    ranks = reclaim_ranks(jobs)
    holding = [j for j in jobs if j.gpus > 0]
    assert sorted(ranks.values()) == list(range(1, len(holding) + 1))
    by_rank = sorted(holding, key=lambda j: ranks[(j.namespace, j.name)])
    assert by_rank == sorted(holding, key=victim_order_key)


# --- a tenant's history ---------------------------------------------------------------


def victim(name, queue_name, gpus=4, namespace="ns"):
    return {"namespace": namespace, "name": name, "queue": queue_name, "gpus": gpus}


def test_history_keeps_the_tenants_reclaims_newest_first():
    entries = [
        {"time": "t3", "freed": 8, "victims": [victim("x1", "tenant-b-spot")]},
        {
            "time": "t2",
            "freed": 12,
            "victims": [victim("a1", "tenant-a-spot"), victim("b1", "tenant-b-spot", 8)],
        },
        {"time": "t1", "freed": 4, "victims": [victim("a0", "tenant-a-spot")]},
        "not an entry",
        {"time": "t0", "victims": "broken"},
        # recorded without a queue: by the namespace
        {"time": "old", "victims": [{"namespace": "tenant-a", "name": "a-old", "gpus": 2}]},
    ]
    got = tenant_history(entries, "a")
    assert [e["time"] for e in got] == ["t2", "t1", "old"]
    assert [v["name"] for v in got[0]["victims"]] == ["a1"]
    assert got[0]["tenant_freed"] == 4 and got[0]["freed"] == 12
    assert [e["time"] for e in tenant_history(entries, "b")] == ["t3", "t2"]
    assert tenant_history(entries, "c") == []


# --- input ----------------------------------------------------------------------------


def test_input_names_field_value_and_rule():
    assert market_input_errors(None, 1) == []
    (error,) = market_input_errors(None, 0)
    assert error.field == "reclaim_gpus" and "0 is less than 1" in error.message
    assert "rule spot-market-input" in error.message
    (error,) = market_input_errors("Bad_Name", 1)
    assert error.field == "tenant" and "'Bad_Name'" in error.message
    assert "rule tenant-name" in error.message
    assert len(market_input_errors("Bad_Name", True)) == 2
    with pytest.raises(PlatformValidationError, match=r"reclaim_gpus: -3 is less than 1"):
        parse_market({"tenant": None, "reclaim_gpus": -3})
    assert parse_market({"tenant": "alpha", "reclaim_gpus": 8}) == ("alpha", 8)


def test_unknown_tenant_names_the_known_ones():
    queues = [queue("alpha", "spot"), queue("beta", "payg")]
    assert unknown_tenant_errors(None, queues) == []
    assert unknown_tenant_errors("beta", queues) == []
    (error,) = unknown_tenant_errors("gamma", queues)
    assert error.field == "tenant" and "'gamma' is not a tenant" in error.message
    assert "known tenants: alpha, beta" in error.message and "rule known-tenant" in error.message
    (error,) = unknown_tenant_errors("gamma", [])
    assert "known tenants: none" in error.message


# --- the view -------------------------------------------------------------------------


def test_view_per_tenant_with_cluster_wide_ranks():
    queues = [
        queue(
            "a",
            "spot",
            capability={"nvidia.com/gpu": 10, "cpu": "40"},
            allocated={"nvidia.com/gpu": "8"},
        ),
        queue("b", "spot", capability={"nvidia.com/gpu": 4}),
        queue("c", "subscription", deserved={"nvidia.com/gpu": 4}),
    ]
    jobs = [
        job("A", 0.1, 4, 1, 10, "tenant-a", "tenant-a-spot"),
        job("B", 0.1, 8, 2, 120, "tenant-a", "tenant-a-spot"),
        job("C", 0.3, 4, 1, 30, "tenant-b", "tenant-b-spot"),
        job("D", 0.5, 8, 2, 60, "tenant-b", "tenant-b-spot"),
    ]
    history = [{"time": "t", "victims": [victim("old", "tenant-b-spot", namespace="tenant-b")]}]
    view = market_view(None, 13, queues, jobs, history)
    assert view["safe_bid"] == "0.300001" and view["spot_jobs"] == 4
    assert view["safe_bid_detail"]["victims"] == ["tenant-a/A", "tenant-a/B", "tenant-b/C"]
    a, b, c = view["tenants"]
    assert a["queue"] == {
        "name": "tenant-a-spot",
        "exists": True,
        "capability": {"nvidia.com/gpu": 10, "cpu": "40"},
        "allocated": {"nvidia.com/gpu": 8},
        "reclaimed_jobs": 0,
    }
    assert [(j["name"], j["rank"], j["at_risk"]) for j in a["jobs"]] == [
        ("A", 1, True),
        ("B", 2, True),
    ]
    assert [(j["name"], j["rank"], j["at_risk"]) for j in b["jobs"]] == [
        ("C", 3, True),
        ("D", 4, False),
    ]
    assert b["jobs"][0]["price"] == "0.3" and a["history"] == [] and len(b["history"]) == 1
    assert c["tenant"] == "c" and c["queue"]["exists"] is False and c["jobs"] == []
    assert c["queue"]["reclaimed_jobs"] == 0

    one = market_view("b", 1, queues, jobs, history)
    assert [t["tenant"] for t in one["tenants"]] == ["b"] and one["safe_bid"] == "0.100001"


def test_the_view_shows_how_many_jobs_a_spot_queue_lost_so_far():
    spot = queue("a", "spot", capability={"nvidia.com/gpu": 4})
    spot["metadata"]["annotations"] = {"platform.io/spot-reclaimed-jobs": "12"}
    (a,) = market_view(None, 1, [spot], [], [])["tenants"]
    assert a["queue"]["reclaimed_jobs"] == 12
