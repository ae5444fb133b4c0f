# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``queue_arbiter`` through the flow contract: the decision planned over facts with
no cluster (what is read next, every decision and refusal), and ``parsed`` of what
``gathered`` returned equal to the check-mode run on that cluster."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.arbiter import service
from ansible_collections.gpucloud.platform.plugins.module_utils.arbiter.arbitrate import (
    KINDS,
    ArbiterFacts,
    ArbiterRequest,
    next_read,
    parse_arbiter,
    plan_arbiter,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.arbiter.service import (
    ARBITER_FLOW,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
    Refused,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.lease import (
    QUEUE_ARBITER,
    lease_manifest,
)
from ansible_collections.gpucloud.platform.plugins.modules import queue_arbiter
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster
from ansible_collections.gpucloud.platform.tests.unit.outcomes import outcome
from ansible_collections.gpucloud.platform.tests.unit.plugins.arbiter_fixtures import (
    NOW,
    ago,
    podgroup,
    queue,
    scenario_one,
    scenario_two,
    vcjob,
)

HOLDER = "awx/0123456789ab"
# The kind of each fact list, as the fake cluster names it.
OF_KIND = {
    "PodGroup": "podgroups",
    "Queue": "queues",
    "Job": "vcjobs",
    "Pod": "pods",
    "Node": "nodes",
    "PersistentVolumeClaim": "pvcs",
    "Lease": "leases",
}


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch):
    monkeypatch.setattr(service, "utc_now", lambda: NOW)


def params(**given):
    return {n: s.get("default") for n, s in queue_arbiter.OPTIONS.items()} | given


def request(**given):
    return parse_arbiter(params(**given))


def facts_of(objects, entries=(), **read):
    """Every kind of ``objects`` as read (``read``: kinds replaced, None: not read)."""
    lists: dict[str, list] = {kind: [] for kind in KINDS}
    for obj in objects:
        kind = OF_KIND.get(obj["kind"])
        if kind:
            lists[kind].append(obj)
    lists["history"] = list(entries)
    lists.update(read)
    return ArbiterFacts(
        now=NOW,
        holder=HOLDER,
        **{k: None if v is None else tuple(v) for k, v in lists.items()},
    )


def refused_objects():
    return scenario_one(waiting_pc="normal-job", waiting_replicas=2)


def held_lease(seconds_ago=10):
    return lease_manifest(QUEUE_ARBITER, "other-run/4f1c", 60, NOW - timedelta(seconds=seconds_ago))


def made_room(job="tenant-a/big", seconds_ago=20):
    return {
        "time": ago(seconds_ago),
        "holder": "awx/1",
        "job": job,
        "action": "reclaim",
        "victims": [{"name": "task-e"}],
    }


def stray_objects():
    objects = scenario_one()
    objects.append(queue("tenant-b-algo", "team", "root", 8, 8, allocated=8, tenant="b"))
    stray = vcjob("stray", "tenant-b-algo", "large-job", 8, phase="Pending")
    return [*objects, stray, podgroup(stray, "Pending")]


def without_big():
    return [o for o in scenario_one() if o["metadata"]["name"] not in ("big", "big-uid-big")]


# -- what is read next: the kinds in the order the decision needs them -------------------------

# (case, request, objects, history, the kinds read in order)
READS = [
    ("nothing waiting", {}, without_big(), (), ["podgroups"]),
    ("one waits", {}, scenario_one(), (), ["podgroups", "vcjobs", "pods", "queues", "nodes"]),
    (
        "a scoped run reads the queues first",
        {"tenant": "a", "job": "big"},
        scenario_one(),
        (),
        ["podgroups", "queues", "vcjobs", "pods", "nodes"],
    ),
    (
        "a queue out of scope stops at the queues",
        {"tenant": "a", "queue": "tenant-a-nope"},
        scenario_one(),
        (),
        ["podgroups", "queues"],
    ),
    (
        "a refusal reads the Lease, then the history",
        {},
        refused_objects(),
        (),
        ["podgroups", "vcjobs", "pods", "queues", "nodes", "leases", "history"],
    ),
    (
        "a refusal while another run holds the Lease reads no history",
        {},
        [*refused_objects(), held_lease()],
        (),
        ["podgroups", "vcjobs", "pods", "queues", "nodes", "leases"],
    ),
]


@pytest.mark.parametrize(
    ("given", "objects", "history", "expected"),
    [case[1:] for case in READS],
    ids=[case[0] for case in READS],
)
def test_the_kinds_are_read_in_the_order_the_decision_needs_them(given, objects, history, expected):
    req, everything = request(**given), facts_of(objects, history)
    facts = facts_of((), **dict.fromkeys(KINDS))
    read = []
    while (needed := next_read(req, facts)) is not None:
        kind, _namespace = needed
        read.append(kind)
        facts = ArbiterFacts(
            **{**facts.__dict__, kind: getattr(everything, kind)},
        )
    assert read == expected


def claiming_objects():
    """Scenario one, its waiting job mounting the PVC ``data`` its namespace lacks."""
    objects = scenario_one()
    (big,) = [o for o in objects if o["kind"] == "Job" and o["metadata"]["name"] == "big"]
    template = big["spec"]["tasks"][0]["template"]
    template.setdefault("spec", {})["volumes"] = [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}
    ]
    return objects


def test_the_pvcs_are_read_in_the_namespace_of_the_job_decided_for():
    facts = facts_of(claiming_objects(), pvcs=None)
    assert next_read(request(), facts) == ("pvcs", "tenant-a")


# -- the decision: (request, facts) -> plan ------------------------------------------------------

# (case, request, objects, history, decision, job, victims, reason starts with)
DECISIONS = [
    ("nothing waiting", {}, without_big(), (), "none", None, [], "no job has been waiting"),
    (
        "a large job preempts in its queue",
        {},
        scenario_one(),
        (),
        "preempt",
        "tenant-a/big",
        ["task-d", "task-e", "task-c", "task-b"],
        "tenant-a/big needs 22 GPUs freed",
    ),
    (
        "a team takes back what its sibling borrowed",
        {"tenant": "a"},
        scenario_two(),
        (),
        "reclaim",
        "tenant-a/b2",
        ["a5", "a4"],
        "tenant-a/b2 needs 5 GPUs freed",
    ),
    (
        "a normal job cannot preempt",
        {},
        refused_objects(),
        (),
        "refuse",
        "tenant-a/big",
        [],
        "tenant-a/big needs 6 GPUs freed",
    ),
    (
        "a refusal right after a run made room is nothing to do",
        {},
        refused_objects(),
        (made_room(),),
        "none",
        "tenant-a/big",
        [],
        "room was made for tenant-a/big at",
    ),
    (
        "an old history leaves the refusal",
        {},
        refused_objects(),
        (made_room(seconds_ago=600),),
        "refuse",
        "tenant-a/big",
        [],
        "tenant-a/big needs 6 GPUs freed",
    ),
    (
        "a job settling is not decided for",
        {"tenant": "a", "job": "big", "settle_seconds": 120},
        scenario_one(),
        (),
        "none",
        None,
        [],
        "tenant-a/big has been waiting for 60 s, less than settle_seconds (120)",
    ),
]


@pytest.mark.parametrize(
    ("given", "objects", "history", "decision", "job", "victims", "reason"),
    [case[1:] for case in DECISIONS],
    ids=[case[0] for case in DECISIONS],
)
def test_the_plan_decides_from_the_facts(given, objects, history, decision, job, victims, reason):
    planned = plan_arbiter(request(**given), facts_of(objects, history))
    result = planned.result
    assert (result["decision"], result["job"]) == (decision, job)
    assert [v["name"] for v in result["victims"]] == victims
    assert result["reason"].startswith(reason), result["reason"]
    assert planned.evicts is (decision in ("preempt", "reclaim"))


# (case, request, objects, the refusal's message starts with)
REFUSALS = [
    (
        "a job that does not exist",
        {"tenant": "a", "job": "nope"},
        scenario_one(),
        "job: 'nope' is not a Volcano Job in namespace tenant-a",
    ),
    (
        "a job in another tenant's queue",
        {"tenant": "a", "job": "stray"},
        stray_objects(),
        "job: tenant-a/stray is in queue tenant-b-algo, which belongs to tenant 'b'",
    ),
    (
        "a queue the platform does not manage",
        {"tenant": "a", "queue": "tenant-a-nope"},
        scenario_one(),
        "queue: 'tenant-a-nope' is no queue the platform manages;",
    ),
    (
        "a refusal while another run holds the Lease",
        {},
        [*refused_objects(), held_lease()],
        "Lease platform-system/queue-arbiter is held by 'other-run/4f1c'",
    ),
]


@pytest.mark.parametrize(
    ("given", "objects", "message"),
    [case[1:] for case in REFUSALS],
    ids=[case[0] for case in REFUSALS],
)
def test_the_plan_refuses_from_the_facts(given, objects, message):
    with pytest.raises(Refused) as refused:
        plan_arbiter(request(**given), facts_of(objects))
    assert str(refused.value).startswith(message)


def test_the_request_is_refused_before_any_fact():
    with pytest.raises(PlatformValidationError, match="needs tenant"):
        parse_arbiter(params(job="big"))
    assert request(tenant="a", settle_seconds=0) == ArbiterRequest(tenant="a", settle_seconds=0)


def test_parsed_facts_need_their_time_and_lists():
    for facts, field in (
        ({"podgroups": []}, "facts.now"),
        ({"now": NOW.isoformat(), "pods": {}}, "facts.pods"),
    ):
        with pytest.raises(PlatformValidationError, match=field):
            ARBITER_FLOW.offline(params(state="parsed", facts=facts))


# -- the contract's promise: parsed of gathered is the check-mode run ---------------------------


def gathered_from(objects, **given):
    cluster = FakeCluster(objects)
    answer = ARBITER_FLOW.run(params(state="gathered", **given), cluster, False)
    assert cluster.writes == []
    return json.loads(json.dumps(answer["gathered"]))  # as Ansible hands it back


def history_map(entries):
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "queue-arbiter-history", "namespace": "platform-system"},
        "data": {"history.json": json.dumps(entries)},
    }


# (case, request, objects)
CLUSTERS = [
    ("nothing waiting", {}, without_big()),
    ("preempt", {}, scenario_one()),
    ("preempt for one job", {"tenant": "a", "job": "big"}, scenario_one()),
    ("reclaim", {"tenant": "a"}, scenario_two()),
    ("reclaim for one queue", {"tenant": "a", "queue": "tenant-a-b"}, scenario_two()),
    ("refuse", {}, refused_objects()),
    ("refusal settled", {}, [*refused_objects(), history_map([made_room()])]),
    ("refusal while held", {}, [*refused_objects(), held_lease()]),
    ("a job not found", {"tenant": "a", "job": "nope"}, scenario_one()),
    ("a stray job", {"tenant": "a", "job": "stray"}, stray_objects()),
    ("a parent queue", {"tenant": "a", "queue": "tenant-a-subscription"}, scenario_one()),
    ("settling", {"tenant": "a", "job": "big", "settle_seconds": 120}, scenario_one()),
    ("a claim the namespace lacks", {}, claiming_objects()),
]


def _without_changed(answer):
    answer = dict(answer)
    answer.pop("changed")
    return dict(sorted(answer.items()))


@pytest.mark.parametrize(
    ("given", "objects"), [case[1:] for case in CLUSTERS], ids=[case[0] for case in CLUSTERS]
)
def test_parsed_of_gathered_is_the_check_mode_run(given, objects):
    def check():
        return _without_changed(
            ARBITER_FLOW.run(params(**given), FakeCluster(objects, dry_run=True), True)
        )

    def parsed():
        facts = gathered_from(objects, **given)
        answer = ARBITER_FLOW.offline(params(state="parsed", facts=facts, **given))
        assert answer is not None and answer.pop("state") == "parsed"
        assert answer["changed"] is False
        return _without_changed(answer)

    assert outcome(parsed) == outcome(check)


def test_gathered_holds_only_the_kinds_read():
    facts = gathered_from(without_big())
    assert sorted(facts) == ["holder", "now", "podgroups"]
    assert facts["now"] == NOW.isoformat()


def test_the_module_decides_parsed_facts_with_no_request(run_module):
    cluster = FakeCluster(scenario_one())
    gathered = run_module(queue_arbiter, cluster, state="gathered")
    assert gathered["requests"] == 5 and cluster.writes == [] and gathered["changed"] is False
    assert gathered["summary"] == [
        "gathered holder, nodes, now, podgroups, pods, queues, vcjobs from the cluster; "
        "nothing was written"
    ]
    offline = FakeCluster()
    out = run_module(queue_arbiter, offline, state="parsed", facts=gathered["gathered"])
    assert out["requests"] == 0 and offline.lists == [] and out["changed"] is False
    assert out["decision"] == "preempt" and len(out["victims"]) == 4
    assert out["summary"][0].startswith("queue arbiter: would preempt for tenant-a/big")
    refused = run_module(
        queue_arbiter,
        offline,
        state="parsed",
        tenant="a",
        job="nope",
        facts=gathered["gathered"],
    )
    assert refused["failed"] is True and refused["requests"] == 0
    assert refused["msg"].startswith("job: 'nope' is not a Volcano Job")


def test_a_claim_the_namespace_lacks_is_read_and_refused():
    facts = gathered_from(claiming_objects())
    assert facts["pvcs"] == [] and "leases" in facts and "history" in facts
    answer = ARBITER_FLOW.offline(params(state="parsed", facts=facts))
    assert answer is not None and answer["decision"] == "refuse"
    assert "data" in answer["reason"]
