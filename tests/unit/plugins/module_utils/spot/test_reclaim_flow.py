# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""spot.reclaim_flow (spot_reclaim's pure steps) as tables of (request, facts) -> plan,
with no cluster; and the contract's promise against the fake cluster: ``parsed`` of what
``gathered`` returned is the check-mode run, and a run that deletes reads and decides
again under the Lease."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot import reclaim_flow
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.reclaim import ReclaimError
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.reclaim_flow import (
    ReclaimFacts,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.service import RECLAIM_FLOW
from ansible_collections.gpucloud.platform.plugins.modules import spot_reclaim
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import (
    spot_cluster,
    spot_objects,
)


def params(**given):
    """The module's options with their defaults, as the runner passes them."""
    return {name: spec.get("default") for name, spec in spot_reclaim.OPTIONS.items()} | given


def request(**given):
    return reclaim_flow.parse_reclaim(params(holder="h", run_id="r", **given)).request


def facts(candidates=True):
    """The worked example (64 GPUs, 60 held, 48 sold, spot jobs A-D holding 24) as lists."""
    objects = spot_objects()
    kinds = {k: [o for o in objects if o.get("kind") == k] for k in ("Node", "Pod", "Queue")}
    jobs = [o for o in objects if o.get("kind") == "Job"]
    if not candidates:
        return ReclaimFacts(tuple(kinds["Node"]), tuple(kinds["Pod"]))
    return ReclaimFacts(
        tuple(kinds["Node"]), tuple(kinds["Pod"]), tuple(kinds["Queue"]), tuple(jobs), ()
    )


# --- plan: (request, facts) -> plan ---------------------------------------------------

PLANS = [
    # need, need_from, shortfall, victims
    (0, "free", 0, []),
    (4, "free", 0, []),
    (16, "free", 12, ["spot-a", "spot-b"]),
    (0, "unsold", 12, ["spot-a", "spot-b"]),
    (8, "unsold", 20, ["spot-a", "spot-b", "spot-c", "spot-d"]),
]


@pytest.mark.parametrize(("need", "need_from", "shortfall", "victims"), PLANS)
def test_plan_chooses_the_cheapest_victims_for_the_shortfall(need, need_from, shortfall, victims):
    planned = reclaim_flow.plan_reclaim(request(need=need, need_from=need_from), facts())
    assert planned.result["shortfall"] == shortfall and planned.refusal is None
    assert [v.name for v in planned.victims] == victims
    assert planned.result["freed"] == sum(v.gpus for v in planned.victims) >= shortfall


def test_a_sale_counts_the_sold_and_the_spot_gpus():
    planned = reclaim_flow.plan_reclaim(request(need=8, need_from="unsold"), facts())
    assert {k: planned.result[k] for k in ("need_from", "sold", "spot", "pool", "free")} == {
        "need_from": "unsold",
        "sold": 52,
        "spot": 24,
        "pool": 64,
        "free": 4,
    }
    assert planned.counted == {
        "tenant-alpha-spot": {"before": 0, "after": 2},
        "tenant-beta-spot": {"before": 0, "after": 2},
    }


def test_too_little_spot_is_a_refusal_with_the_numbers_not_an_exception_of_the_plan():
    planned = reclaim_flow.plan_reclaim(request(need=30, need_from="unsold"), facts())
    assert planned.victims == [] and "12 of the pool's 64 GPUs are unsold" in planned.refusal
    with pytest.raises(ReclaimError, match="26 must be reclaimed") as info:
        planned.refuse()
    assert info.value.result["shortfall"] == 26 and info.value.result["spot"] == 24


def test_allow_partial_takes_every_spot_job_instead_of_refusing():
    planned = reclaim_flow.plan_reclaim(request(need=60, allow_partial=True), facts())
    assert planned.refusal is None and len(planned.victims) == 4


@pytest.mark.parametrize(
    ("need", "need_from", "needed"),
    [(0, "free", False), (4, "free", False), (5, "free", True), (0, "unsold", True)],
)
def test_the_candidates_are_read_only_when_the_decision_needs_them(need, need_from, needed):
    req = request(need=need, need_from=need_from)
    assert reclaim_flow.needs_candidates(req, facts(candidates=False)) is needed


def test_parse_refuses_bad_input_before_any_connection():
    with pytest.raises(PlatformValidationError, match="need: -1 is negative"):
        RECLAIM_FLOW.parse(params(need=-1))


def test_parsed_needs_facts_that_are_lists():
    run = RECLAIM_FLOW.parse(params(need=1))
    with pytest.raises(PlatformValidationError, match=r"facts\.nodes: must be a list"):
        reclaim_flow.facts_in(run, {"nodes": "n0"})


# --- the contract's promise on the fake cluster -----------------------------------------


def comparable(result):
    """A result less what only the cluster or the clock holds."""
    result = copy.deepcopy(result)
    for key in ("history", "changed", "state", "requests"):
        result.pop(key, None)
    result["reclaim"].pop("time")
    return result


@pytest.mark.parametrize(
    ("need", "need_from"),
    [(0, "free"), (16, "free"), (60, "free"), (0, "unsold"), (8, "unsold"), (30, "unsold")],
)
def test_parsed_of_gathered_is_the_check_mode_run(need, need_from):
    options = params(need=need, need_from=need_from)
    cluster = spot_cluster()
    gathered = RECLAIM_FLOW.run({**options, "state": "gathered"}, cluster, False)["gathered"]
    assert cluster.real_writes == []
    try:
        check = RECLAIM_FLOW.run(options, spot_cluster(dry_run=True), True)
    except ReclaimError as exc:
        with pytest.raises(ReclaimError) as again:
            RECLAIM_FLOW.offline({**options, "state": "parsed", "facts": gathered})
        assert str(again.value) == str(exc) and again.value.result == exc.result
        return
    parsed = RECLAIM_FLOW.offline({**options, "state": "parsed", "facts": gathered})
    assert parsed is not None and parsed["state"] == "parsed" and parsed["changed"] is False
    assert comparable(parsed) == comparable(check)


def test_gathered_reads_what_the_decision_needs_and_nothing_more():
    enough = spot_cluster()
    gathered = RECLAIM_FLOW.run(params(need=2, state="gathered"), enough, False)["gathered"]
    assert sorted(gathered) == ["nodes", "pods"] and enough.lists == ["Node", "Pod"]
    sale = spot_cluster()
    gathered = RECLAIM_FLOW.run(params(need=8, need_from="unsold", state="gathered"), sale, False)
    assert sorted(gathered["gathered"]) == ["jobs", "nodes", "pods", "queues", "running_pods"]
    assert sale.lists == ["Node", "Pod", "Queue", "Job", "Pod"] and sale.requests == 5


def test_a_run_that_deletes_decides_again_under_the_lease():
    cluster = spot_cluster()
    result = RECLAIM_FLOW.run(params(need=16), cluster, False)
    # the reads without the Lease, then the same reads again under it
    assert cluster.lists == ["Node", "Pod", "Queue", "Job", "Pod"] * 2
    assert [v["name"] for v in result["victims"]] == ["spot-a", "spot-b"]
    assert cluster.requests == 20


def test_the_decision_under_the_lease_is_on_what_the_cluster_then_is():
    """A job deleted between the first plan and the Lease (another run's reclaim) is not
    deleted twice: the plan under the Lease sees its 4 GPUs free and takes only spot-b."""
    cluster = spot_cluster()
    run = RECLAIM_FLOW.parse(params(need=16))
    first = RECLAIM_FLOW.plan(run, RECLAIM_FLOW.gather(run, cluster))
    assert [v.name for v in first.victims] == ["spot-a", "spot-b"]
    cluster.delete("batch.volcano.sh/v1alpha1", "Job", "spot-a", "tenant-alpha")
    cluster.delete("v1", "Pod", "spot-a-0", "tenant-x")
    result = RECLAIM_FLOW.apply(run, first, cluster, False)
    assert "tenant-alpha/spot-a" not in [f"{v['namespace']}/{v['name']}" for v in result["victims"]]
    assert [v["name"] for v in result["victims"]] == ["spot-b"] and result["shortfall"] == 8


def test_present_connects_and_parsed_answers_without():
    assert RECLAIM_FLOW.offline(params(need=1)) is None
    assert RECLAIM_FLOW.states() == ["gathered", "parsed"]
