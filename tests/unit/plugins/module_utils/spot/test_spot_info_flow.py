# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``spot_info`` through the flow contract: the market as a table of cases over
facts (no cluster, no fake), and ``parsed`` of ``gathered`` against the normal run on the
fake cluster."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot import info
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.reclaim import (
    history_manifest,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.service import MARKET_FLOW
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.victims import SpotJob
from ansible_collections.gpucloud.platform.plugins.modules import spot_info
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster
from ansible_collections.gpucloud.platform.tests.unit.flow_checks import assert_parsed_is_the_run
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import (
    queue,
    spot_objects,
    vcjob,
)

RECLAIMED = "platform.io/spot-reclaimed-jobs"


def params(**given):
    return {n: s.get("default") for n, s in spot_info.OPTIONS.items()} | given


def job(name, tenant, price, gpus, pods=1, started=1000.0):
    return SpotJob(
        f"tenant-{tenant}", name, Decimal(price), gpus, pods, started, f"tenant-{tenant}-spot"
    )


def counted(obj, count):
    obj["metadata"]["annotations"] = {RECLAIMED: count}
    return obj


QUEUES = (queue("alpha", "spot"), queue("beta", "spot"))
JOBS = (job("a", "alpha", "0.1", 4), job("b", "alpha", "0.1", 8, 2), job("c", "beta", "0.3", 4))
HISTORY = (
    {"time": "t", "victims": [{"namespace": "x", "name": "a0", "queue": "tenant-beta-spot"}]},
)

# (case, options, facts, tenants shown, safe bid, jobs of the first tenant by rank)
CASES = [
    ("every tenant", {}, info.MarketFacts(QUEUES, JOBS), ["alpha", "beta"], "0.100001", ["a", "b"]),
    (
        "one tenant, the bid cluster-wide",
        {"tenant": "beta"},
        info.MarketFacts(QUEUES, JOBS),
        ["beta"],
        "0.100001",
        ["c"],
    ),
    (
        "a reclaim larger than every spot job",
        {"reclaim_gpus": 17},
        info.MarketFacts(QUEUES, JOBS),
        ["alpha", "beta"],
        None,
        ["a", "b"],
    ),
    (
        "a reclaim that takes alpha's jobs",
        {"reclaim_gpus": 12},
        info.MarketFacts(QUEUES, JOBS),
        ["alpha", "beta"],
        "0.100001",
        ["a", "b"],
    ),
    (
        "a reclaim that reaches beta",
        {"reclaim_gpus": 13},
        info.MarketFacts(QUEUES, JOBS),
        ["alpha", "beta"],
        "0.300001",
        ["a", "b"],
    ),
    ("no spot job", {}, info.MarketFacts(QUEUES, ()), ["alpha", "beta"], None, []),
]


@pytest.mark.parametrize(
    "options,facts,tenants,bid,jobs", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_market_over_facts(options, facts, tenants, bid, jobs):
    request = info.parse_info(params(**options))
    said = info.report_info(request, info.plan_info(request, facts))
    assert [t["tenant"] for t in said["tenants"]] == tenants
    assert said["safe_bid"] == bid
    assert [j["name"] for j in said["tenants"][0]["jobs"]] == jobs


def test_the_reclaim_count_and_history_come_from_the_facts():
    facts = info.facts_in(
        None, info.facts_out(info.MarketFacts((counted(queue("beta", "spot"), "3"),), (), HISTORY))
    )
    request = info.parse_info(params(tenant="beta"))
    (beta,) = info.plan_info(request, facts)["tenants"]
    assert beta["queue"]["reclaimed_jobs"] == 3 and [e["time"] for e in beta["history"]] == ["t"]


def test_an_unknown_tenant_is_refused_by_the_plan_too():
    request = info.parse_info(params(tenant="gamma"))
    with pytest.raises(PlatformValidationError, match="known tenants: alpha, beta"):
        info.plan_info(request, info.MarketFacts(QUEUES, JOBS))


def test_parsed_candidates_that_are_not_spot_jobs_are_refused_naming_the_entry():
    with pytest.raises(PlatformValidationError, match=r"facts\.candidates\[1\]"):
        info.facts_in(None, {"candidates": [info.candidate_fact(JOBS[0]), {"name": "x"}]})


PRICES = st.sampled_from(["0.1", "0.2", "0.25", "1", "not-a-number"])


@settings(max_examples=40, deadline=None)
@given(
    prices=st.lists(PRICES, min_size=4, max_size=4),
    minutes=st.lists(st.integers(1, 300), min_size=4, max_size=4),
    tenant=st.sampled_from([None, "alpha", "beta", "gamma"]),
    reclaim_gpus=st.integers(1, 30),
    count=st.sampled_from([None, "2", "x"]),
    history=st.booleans(),
)
def test_parsed_of_gathered_is_the_normal_run(
    prices, minutes, tenant, reclaim_gpus, count, history
):
    objects = spot_objects()
    jobs = [o for o in objects if o["kind"] == "Job"]
    for obj, price, age in zip(jobs, prices, minutes, strict=True):
        tenant_of = obj["metadata"]["namespace"].removeprefix("tenant-")
        replicas = obj["spec"]["tasks"][0]["replicas"]
        obj.update(vcjob(obj["metadata"]["name"], tenant_of, 4, replicas, price, age))
    if count is not None:
        counted(next(o for o in objects if o["metadata"]["name"] == "tenant-beta-spot"), count)
    if history:
        objects.append(history_manifest(list(HISTORY)))
    options = {"tenant": tenant, "reclaim_gpus": reclaim_gpus}
    # The facts do not depend on the tenant (gathered for an unknown one is refused).
    gathered = MARKET_FLOW.run(params(state="gathered"), FakeCluster(objects), False)["gathered"]
    assert_parsed_is_the_run(
        MARKET_FLOW,
        lambda: MARKET_FLOW.run(params(**options), FakeCluster(objects), False),
        params(state="parsed", facts=gathered, **options),
    )


def test_gathered_makes_the_normal_run_s_requests():
    cluster = FakeCluster(spot_objects())
    gathered = MARKET_FLOW.run(params(state="gathered"), cluster, False)["gathered"]
    assert cluster.requests == 4 and cluster.lists == ["Queue", "Job", "Pod"]
    assert [c["name"] for c in gathered["candidates"]] == ["spot-a", "spot-b", "spot-c", "spot-d"]
    assert sorted(gathered) == ["candidates", "history", "queues"]
