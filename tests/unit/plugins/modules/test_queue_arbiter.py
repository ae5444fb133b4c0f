# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""queue_arbiter against the fake cluster: design 6.1 scenarios one and two inside a full
subscription, where Volcano keeps the waiting job Pending and the platform makes room."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.arbiter import service
from ansible_collections.gpucloud.platform.plugins.module_utils.kube import (
    flow,
    lease_io,
    run_record,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.lease import (
    QUEUE_ARBITER,
    lease_manifest,
)
from ansible_collections.gpucloud.platform.plugins.modules import queue_arbiter
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster, conflict
from ansible_collections.gpucloud.platform.tests.unit.plugins.arbiter_fixtures import (
    NOW,
    NS,
    ago,
    arbiter_cluster,
    node,
    podgroup,
    queue,
    running,
    scenario_one,
    scenario_two,
    vcjob,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import api_error

SCENARIO_ONE_VICTIMS = ["task-d", "task-e", "task-c", "task-b"]
# The run's time in nanoseconds: each Event's name ends in it plus its place in the order.
STAMP = int(NOW.timestamp() * 1_000_000_000)


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch):
    monkeypatch.setattr(service, "utc_now", lambda: NOW)


@pytest.fixture(autouse=True)
def naps(monkeypatch):
    """The seconds the run slept (nothing in the fake cluster moves while it does)."""
    slept = []
    monkeypatch.setattr(service.time, "sleep", slept.append)
    return slept


@pytest.fixture
def warnings(monkeypatch):
    """The warnings the run gives (Ansible's own collector depends on whether controller
    code was imported into the test process)."""
    seen = []
    monkeypatch.setattr(service, "warn", seen.append)
    monkeypatch.setattr(flow, "warn", seen.append)
    monkeypatch.setattr(lease_io, "warn", seen.append)
    monkeypatch.setattr(run_record, "warn", seen.append)
    return seen


def evictions(cluster):
    return [w[2] for w in cluster.real_writes if w[0] == "evict"]


def events(cluster):
    """The Events in the order the run recorded them (by their name's suffix)."""
    return sorted(
        cluster.objects("Event"), key=lambda e: int(e["metadata"]["name"].rsplit(".")[-1], 16)
    )


def history(cluster):
    cm = cluster.store[("ConfigMap", "platform-system", "queue-arbiter-history")]
    return json.loads(cm["data"]["history.json"])


def held_lease(holder="other-run/4f1c", seconds_ago=10):
    return lease_manifest(QUEUE_ARBITER, holder, 60, NOW - timedelta(seconds=seconds_ago))


# -- scenario 1: a large job preempts in its full team queue -----------------------------------


def test_scenario_one_preempts_debug_then_normal_jobs_newest_first(run_module):
    cluster = arbiter_cluster()
    out = run_module(queue_arbiter, cluster, holder_identity="awx")
    assert out["changed"] is True and out["decision"] == "preempt"
    assert out["job"] == "tenant-a/big" and out["blocked_by"] == "tenant-a-algo"
    assert (out["need"], out["freed"]) == (22, 22)
    assert [v["name"] for v in out["victims"]] == SCENARIO_ONE_VICTIMS
    assert out["victims"][0] == {
        "namespace": NS,
        "name": "task-d",
        "queue": "tenant-a-algo",
        "priority_class": "debug-job",
        "gpus": 4,
    }
    pods = [f"{NS}/{name}-worker-0" for name in SCENARIO_ONE_VICTIMS]
    assert out["evicted"] == pods and out["waiting"] == []
    # rule arbiter-eviction-count: the victims' queue counts the four jobs it lost
    count = "tenant-a-algo platform.io/arbiter-evicted-jobs"
    assert out["counted"] == {"tenant-a-algo": {"before": 0, "after": 4}}
    assert out["diff"] == {
        "before": {**{f"{NS}/{n}": "running" for n in SCENARIO_ONE_VICTIMS}, count: "0"},
        "after": {**{f"{NS}/{n}": "evicted" for n in SCENARIO_ONE_VICTIMS}, count: "4"},
    }
    queue = cluster.get("scheduling.volcano.sh/v1beta1", "Queue", "tenant-a-algo")
    assert queue["metadata"]["annotations"]["platform.io/arbiter-evicted-jobs"] == "4"
    # the Lease first, each victim's pods then its Event, the victim queue's count, the
    # waiting job's Event, the history, the Lease given back; task-a keeps running
    assert cluster.real_writes == [
        ("create", "Lease", "queue-arbiter"),
        ("evict", "Pod", "task-d-worker-0"),
        ("create", "Event", f"task-d.{STAMP + 1:x}"),
        ("evict", "Pod", "task-e-worker-0"),
        ("create", "Event", f"task-e.{STAMP + 2:x}"),
        ("evict", "Pod", "task-c-worker-0"),
        ("create", "Event", f"task-c.{STAMP + 3:x}"),
        ("evict", "Pod", "task-b-worker-0"),
        ("create", "Event", f"task-b.{STAMP + 4:x}"),
        ("merge-patch", "Queue", "tenant-a-algo"),
        ("create", "Event", f"big.{STAMP + 5:x}"),
        ("apply", "ConfigMap", "queue-arbiter-history"),
        ("delete", "Lease", "queue-arbiter"),
    ]
    assert ("Pod", NS, "task-a-worker-0") in cluster.store
    assert cluster.objects("Lease") == []
    # five lists before the Lease and five under it
    assert cluster.lists == ["PodGroup", "Job", "Pod", "Queue", "Node"] * 2
    # ... and the victim queue's count: a GET and a merge patch
    assert out["requests"] == 25


def test_scenario_one_records_events_and_history(run_module):
    cluster = arbiter_cluster()
    out = run_module(queue_arbiter, cluster, holder_identity="awx")
    evicted = [e for e in events(cluster) if e["reason"] == "ArbiterEvicted"]
    assert [e["involvedObject"]["name"] for e in evicted] == SCENARIO_ONE_VICTIMS
    assert evicted[1]["type"] == "Warning"
    assert evicted[1]["involvedObject"] == {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": "task-e",
        "namespace": NS,
        "uid": "uid-task-e",
    }
    assert evicted[1]["message"] == (
        "evicted by the platform to make room for tenant-a/big (large-job, 32 GPUs) in "
        "tenant-a-algo: preempt-victims, order 2"
    )
    assert evicted[1]["metadata"]["annotations"] == {
        "platform.io/arbiter-for": "tenant-a/big",
        "platform.io/arbiter-rule": "preempt-victims",
        "platform.io/arbiter-order": "2",
        "platform.io/arbiter-gpus": "2",
    }
    (made_room,) = [e for e in events(cluster) if e["reason"] == "ArbiterMadeRoom"]
    assert made_room["type"] == "Normal" and made_room["involvedObject"]["uid"] == "uid-big"
    assert made_room["message"] == (
        "the platform evicted 4 job(s) holding 22 GPUs to make room for this job (large-job, "
        "32 GPUs) in tenant-a-algo: tenant-a/task-d (debug-job, 4 GPUs), tenant-a/task-e "
        "(debug-job, 2 GPUs), tenant-a/task-c (normal-job, 8 GPUs), tenant-a/task-b "
        "(normal-job, 8 GPUs); preempt-victims"
    )
    (entry,) = history(cluster)
    assert out["history"] == [entry]
    assert entry["holder"].startswith("awx/") and len(entry["holder"]) == len("awx/") + 12
    assert {k: entry[k] for k in ("time", "job", "action", "rule", "need", "freed")} == {
        "time": "2026-01-01T12:00:00Z",
        "job": "tenant-a/big",
        "action": "preempt",
        "rule": "preempt-victims",
        "need": 22,
        "freed": 22,
    }
    assert entry["evicted_pods"] == 4 and entry["victims"] == out["victims"]


def test_history_is_newest_first_and_bounded(run_module):
    cluster = arbiter_cluster()
    old = [{"time": f"2025-12-31T0{i}:00:00Z"} for i in range(3)]
    cluster.put(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "queue-arbiter-history", "namespace": "platform-system"},
            "data": {"history.json": json.dumps(old)},
        }
    )
    run_module(queue_arbiter, cluster, history_size=2)
    entries = history(cluster)
    assert [e["time"] for e in entries] == ["2026-01-01T12:00:00Z", "2025-12-31T00:00:00Z"]


def test_a_second_run_after_the_evictions_has_nothing_to_do(run_module):
    cluster = arbiter_cluster()
    run_module(queue_arbiter, cluster)
    writes = list(cluster.writes)
    # Volcano admits big once the queue's allocation drops: its PodGroup leaves Pending,
    # and Volcano's own preemption is what acts for an admitted job (rule volcano-preempts)
    cluster.store[("PodGroup", NS, "big-uid-big")]["status"]["phase"] = "Inqueue"
    again = run_module(queue_arbiter, cluster)
    assert again["changed"] is False and again["decision"] == "none" and again["evicted"] == []
    assert cluster.writes == writes  # lists only
    assert "Volcano's gangpreempt preempts in queue tenant-a-algo" in again["reason"]


# -- scenario 2: team b takes back what team a borrowed ----------------------------------------


def test_scenario_two_team_b_takes_back_what_team_a_borrowed(run_module):
    cluster = FakeCluster(scenario_two())
    out = run_module(queue_arbiter, cluster, tenant="a")
    assert out["changed"] is True and out["decision"] == "reclaim"
    assert out["job"] == "tenant-a/b2" and out["blocked_by"] == "tenant-a-subscription"
    assert [v["name"] for v in out["victims"]] == ["a5", "a4"]
    assert (out["need"], out["freed"]) == (5, 5)
    assert evictions(cluster) == ["a5-worker-0", "a4-worker-0"]
    assert out["reason"].endswith(
        "taking back 5 GPUs from sibling teams: tenant-a/a5 (debug-job, 2), "
        "tenant-a/a4 (debug-job, 3)"
    )
    (a5_event,) = [e for e in events(cluster) if e["involvedObject"]["name"] == "a5"]
    assert a5_event["message"] == (
        "evicted by the platform to make room for tenant-a/b2 (normal-job, 5 GPUs) in "
        "tenant-a-b: team-reclaim-victims, order 1"
    )
    # namespace-scoped lists for the tenant's PodGroups and Jobs
    assert cluster.lists[:4] == ["PodGroup", "Job", "Pod", "Queue"]


# -- refusals and nothing to do ----------------------------------------------------------------


def test_a_normal_job_that_cannot_preempt_is_refused_and_nothing_is_evicted(run_module, warnings):
    cluster = arbiter_cluster(scenario_one(waiting_pc="normal-job", waiting_replicas=2))
    out = run_module(queue_arbiter, cluster)
    assert out["changed"] is False and out["decision"] == "refuse" and out["victims"] == []
    assert out["reason"] == (
        "tenant-a/big needs 6 GPUs freed (queue tenant-a-algo: 30 allocated + 16 > capability "
        "40; queue tenant-a-subscription: 30 allocated + 16 > capability 40; 10 GPUs free, 16 "
        "asked): queue tenant-a-algo: tenant-a/big is a normal-job, and only large-job and "
        "critical-job preempt in their queue; nothing is evicted"
    )
    assert warnings == [out["reason"]]
    assert cluster.writes == []  # no Lease either


def refused_cluster():
    return arbiter_cluster(scenario_one(waiting_pc="normal-job", waiting_replicas=2))


def test_a_refusal_read_while_another_run_holds_the_lease_fails_as_held(run_module):
    """Rule refusal-while-settling: the other run may be evicting for this very job."""
    cluster = refused_cluster()
    cluster.put(held_lease())
    out = run_module(queue_arbiter, cluster)
    assert out["failed"] and "is held by 'other-run/4f1c'" in out["msg"]
    assert out["decision"] == "refuse" and cluster.writes == []


def made_room(job, seconds_ago):
    entry = {"time": ago(seconds_ago), "holder": "awx/1", "job": job, "action": "reclaim"}
    entry["victims"] = [{"name": "task-e"}, {"name": "task-c"}]
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "queue-arbiter-history", "namespace": "platform-system"},
        "data": {"history.json": json.dumps([entry])},
    }


def test_a_refusal_right_after_a_run_made_room_for_the_same_job_is_nothing_to_do(run_module):
    cluster = refused_cluster()
    cluster.put(made_room("tenant-a/big", seconds_ago=20))
    out = run_module(queue_arbiter, cluster)
    assert not out.get("failed") and out["decision"] == "none" and out["victims"] == []
    assert out["reason"] == (
        "room was made for tenant-a/big at " + ago(20) + " by awx/1 (evicted task-e, task-c); "
        "Volcano is placing it (rule refusal-while-settling)"
    )
    assert cluster.writes == []


@pytest.mark.parametrize(
    ("job", "seconds_ago"), [("tenant-a/other", 20), ("tenant-a/big", 600)], ids=["other", "old"]
)
def test_an_old_or_other_jobs_history_leaves_the_refusal(run_module, job, seconds_ago):
    cluster = refused_cluster()
    cluster.put(made_room(job, seconds_ago))
    out = run_module(queue_arbiter, cluster)
    assert out["decision"] == "refuse" and "nothing is evicted" in out["reason"]


def test_a_job_larger_than_its_capability_is_refused(run_module):
    # 48 GPUs fit the pool of 7 nodes, not the capability of 40 the team inherits
    cluster = arbiter_cluster([*scenario_one(waiting_replicas=6), node("n5"), node("n6")])
    out = run_module(queue_arbiter, cluster)
    assert out["decision"] == "refuse" and cluster.writes == []
    assert out["reason"] == (
        "tenant-a/big asks for 48 GPUs and queue tenant-a-subscription has a capability of 40: "
        "it can never run there; nothing is evicted"
    )


def test_nothing_pending_makes_one_list_and_nothing_else(run_module):
    objects = [o for o in scenario_one() if o["metadata"]["name"] not in ("big", "big-uid-big")]
    cluster = FakeCluster(objects)
    out = run_module(queue_arbiter, cluster)
    assert out["changed"] is False and out["decision"] == "none" and out["job"] is None
    assert out["reason"] == (
        "no job has been waiting for 10 s or more behind a queue at its capability; "
        "nothing is evicted"
    )
    assert out["requests"] == 1 and cluster.lists == ["PodGroup"] and cluster.writes == []
    assert out["history"] == [] and out["diff"] == {"before": {}, "after": {}}


def test_a_job_pending_for_less_than_settle_seconds_waits_for_the_next_run(run_module):
    cluster = arbiter_cluster(scenario_one(pending_for=5))
    out = run_module(queue_arbiter, cluster)
    assert out["decision"] == "none" and out["requests"] == 1 and cluster.writes == []
    scoped = run_module(queue_arbiter, cluster, tenant="a", job="big")
    assert scoped["reason"] == (
        "tenant-a/big has been waiting for 5 s, less than settle_seconds (10); nothing is evicted"
    )
    now = run_module(queue_arbiter, cluster, settle_seconds=0)
    assert now["decision"] == "preempt" and now["changed"] is True


def test_preemption_for_an_inqueue_job_is_left_to_volcano(run_module):
    """Rule volcano-preempts: gangpreempt acts for an admitted job."""
    cluster = arbiter_cluster()
    cluster.store[("PodGroup", NS, "big-uid-big")]["status"]["phase"] = "Inqueue"
    out = run_module(queue_arbiter, cluster, tenant="a", job="big")
    assert out["decision"] == "none" and cluster.writes == []
    assert out["reason"].endswith(
        "it is admitted; Volcano's gangpreempt preempts in queue tenant-a-algo for it (30 GPUs "
        "of lower priority there); the arbiter only takes back from sibling teams; nothing is "
        "evicted"
    )


def test_an_admitted_job_volcano_cannot_help_is_not_left_to_it_in_words(run_module):
    """Rule volcano-can-preempt: Volcano is named as the actor only when it can act."""
    cluster = arbiter_cluster()
    cluster.store[("PodGroup", NS, "big-uid-big")]["status"]["phase"] = "Inqueue"
    cluster.store[("Job", NS, "big")]["spec"]["priorityClassName"] = "normal-job"
    out = run_module(queue_arbiter, cluster, tenant="a", job="big")
    assert out["decision"] == "none" and cluster.writes == []
    assert "preempts in queue" not in out["reason"]
    assert out["reason"].endswith(
        "it is admitted; Volcano's gangpreempt cannot free them (the jobs below normal-job in "
        "queue tenant-a-algo hold 6 GPUs, 22 are needed) and the arbiter leaves an admitted job "
        "to Volcano: it waits until running jobs end; nothing is evicted"
    )


def test_preemption_for_a_job_sla_will_admit_is_left_to_volcano(run_module):
    cluster = arbiter_cluster()
    pg = cluster.store[("PodGroup", NS, "big-uid-big")]
    pg["metadata"]["annotations"] = {"volcano.sh/sla-waiting-time": "5s"}
    out = run_module(queue_arbiter, cluster, tenant="a", job="big")
    assert out["decision"] == "none" and cluster.writes == []
    assert "sla admits it after its waiting time of 5 s" in out["reason"]


def test_an_inqueue_team_job_takes_back_from_its_sibling(run_module):
    """Volcano's gangreclaim cannot place it in a full subscription; the arbiter does."""
    cluster = FakeCluster(scenario_two())
    cluster.store[("PodGroup", NS, "b2-uid-b2")]["status"]["phase"] = "Inqueue"
    out = run_module(queue_arbiter, cluster, tenant="a")
    assert out["decision"] == "reclaim" and [v["name"] for v in out["victims"]] == ["a5", "a4"]


def test_the_highest_priority_job_goes_first_and_the_others_wait(run_module):
    objects = scenario_one()
    small = vcjob("small", "tenant-a-algo", "normal-job", 8, 2, phase="Pending")
    objects += [small, podgroup(small, "Pending", created=600)]  # older, lower priority
    cluster = FakeCluster(objects)
    out = run_module(queue_arbiter, cluster, _ansible_check_mode=True)
    assert out["job"] == "tenant-a/big" and out["waiting"] == ["tenant-a/small"]
    only_small = run_module(
        queue_arbiter, cluster, tenant="a", job="small", _ansible_check_mode=True
    )
    assert only_small["job"] == "tenant-a/small" and only_small["decision"] == "refuse"


# -- check mode --------------------------------------------------------------------------------


def test_check_mode_reports_the_victims_and_writes_nothing(run_module):
    cluster = arbiter_cluster(dry_run=True)
    out = run_module(queue_arbiter, cluster, _ansible_check_mode=True)
    assert out["changed"] is True and out["decision"] == "preempt"
    assert [v["name"] for v in out["victims"]] == SCENARIO_ONE_VICTIMS
    assert out["evicted"] == [] and out["history"] == []
    assert cluster.writes == []
    assert len(cluster.objects("Pod")) == 5 and cluster.objects("Lease") == []


def test_check_mode_reports_the_counts_it_would_raise_from_the_queues_read(run_module):
    """Rule arbiter-eviction-count in check mode: the counts now and after, read from the
    Queues the decision read (no other request), nothing written."""
    counted = queue("tenant-a-algo", "team", "tenant-a-subscription", deserved=40, allocated=30)
    counted["metadata"]["annotations"] = {"platform.io/arbiter-evicted-jobs": "3"}
    objects = [o for o in scenario_one() if o["metadata"]["name"] != "tenant-a-algo"]
    cluster = arbiter_cluster([*objects, counted], dry_run=True)
    out = run_module(queue_arbiter, cluster, _ansible_check_mode=True)
    assert out["counted"] == {"tenant-a-algo": {"before": 3, "after": 7}}
    key = "tenant-a-algo platform.io/arbiter-evicted-jobs"
    assert (out["diff"]["before"][key], out["diff"]["after"][key]) == ("3", "7")
    assert cluster.writes == [] and cluster.lists == ["PodGroup", "Job", "Pod", "Queue", "Node"]


def test_the_count_goes_on_from_the_queues_annotation(run_module):
    counted = queue("tenant-a-algo", "team", "tenant-a-subscription", deserved=40, allocated=30)
    counted["metadata"]["annotations"] = {"platform.io/arbiter-evicted-jobs": "3"}
    objects = [o for o in scenario_one() if o["metadata"]["name"] != "tenant-a-algo"]
    cluster = arbiter_cluster([*objects, counted])
    out = run_module(queue_arbiter, cluster)
    assert out["counted"] == {"tenant-a-algo": {"before": 3, "after": 7}}
    live = cluster.get("scheduling.volcano.sh/v1beta1", "Queue", "tenant-a-algo")
    assert live["metadata"]["annotations"]["platform.io/arbiter-evicted-jobs"] == "7"


class CountConflictOnce(FakeCluster):
    """Volcano writes the queue's status between the count's read and its patch, once."""

    conflicts = 0

    def merge_patch(self, api_version, kind, name, body, namespace=None):
        if kind == "Queue" and not self.conflicts:
            self.conflicts += 1
            live = self.store[self.key("Queue", None, name)]
            live["metadata"]["resourceVersion"] = str(int(live["metadata"]["resourceVersion"]) + 1)
        return super().merge_patch(api_version, kind, name, body, namespace)


def test_a_count_changed_under_the_patch_is_read_again_not_lost(run_module):
    cluster = arbiter_cluster(cls=CountConflictOnce)
    out = run_module(queue_arbiter, cluster)
    assert cluster.conflicts == 1 and out["counted"] == {"tenant-a-algo": {"before": 0, "after": 4}}
    live = cluster.get("scheduling.volcano.sh/v1beta1", "Queue", "tenant-a-algo")
    assert live["metadata"]["annotations"]["platform.io/arbiter-evicted-jobs"] == "4"


class RefusingCount(FakeCluster):
    def merge_patch(self, api_version, kind, name, body, namespace=None):
        self.requests += 1
        raise api_error(403, "forbidden")


def test_a_count_that_cannot_be_written_is_warned_about_and_the_evictions_stand(
    run_module, warnings
):
    out = run_module(queue_arbiter, arbiter_cluster(cls=RefusingCount))
    assert out["changed"] is True and len(out["evicted"]) == 4
    assert out["counted"] == {}
    assert any(
        "eviction count of queue tenant-a-algo could not be raised by 4" in w for w in warnings
    )


def test_check_mode_warns_about_a_held_lease(run_module, warnings):
    cluster = arbiter_cluster([*scenario_one(), held_lease()], dry_run=True)
    out = run_module(queue_arbiter, cluster, _ansible_check_mode=True)
    assert out["changed"] is True and cluster.writes == []
    assert warnings == [
        "Lease platform-system/queue-arbiter is held by 'other-run/4f1c' until "
        "2026-01-01T12:00:50Z; another queue arbiter is running, try again after it ends"
    ]


# -- the Lease ---------------------------------------------------------------------------------


def test_a_lease_held_by_another_run_refuses_naming_the_holder(run_module):
    cluster = arbiter_cluster([*scenario_one(), held_lease()])
    out = run_module(queue_arbiter, cluster)
    assert out["failed"] is True and out["changed"] is False
    assert out["msg"] == (
        "Lease platform-system/queue-arbiter is held by 'other-run/4f1c' until "
        "2026-01-01T12:00:50Z; another queue arbiter is running, try again after it ends"
    )
    assert out["job"] == "tenant-a/big" and len(out["victims"]) == 4  # what it would evict
    assert evictions(cluster) == [] and cluster.objects("Event") == []
    assert cluster.objects("Lease")[0]["spec"]["holderIdentity"] == "other-run/4f1c"


def test_an_expired_lease_is_taken_over(run_module):
    cluster = arbiter_cluster([*scenario_one(), held_lease("dead-run", seconds_ago=61)])
    out = run_module(queue_arbiter, cluster)
    assert out["changed"] is True and len(evictions(cluster)) == 4
    assert cluster.real_writes[0] == ("replace", "Lease", "queue-arbiter")
    assert cluster.objects("Lease") == []


class MovingCluster(FakeCluster):
    """task-d ends between the first read and the Lease (another scheduler cycle)."""

    def create(self, manifest):
        out = super().create(manifest)
        if manifest["kind"] == "Lease":
            self.store[("Job", NS, "task-d")]["status"]["state"]["phase"] = "Completed"
            self.store.pop(("Pod", NS, "task-d-worker-0"))
            queue_ = self.store[("Queue", "", "tenant-a-algo")]
            queue_["status"]["allocated"]["nvidia.com/gpu"] = "26"
            self.store[("Queue", "", "tenant-a-subscription")]["status"]["allocated"][
                "nvidia.com/gpu"
            ] = "26"
        return out


def test_the_plan_is_made_again_under_the_lease(run_module):
    cluster = MovingCluster(scenario_one())
    out = run_module(queue_arbiter, cluster)
    # 26 + 32 - 40 = 18 to free with 14 free: task-e, task-c, task-b (18)
    assert out["need"] == 18 and [v["name"] for v in out["victims"]] == [
        "task-e",
        "task-c",
        "task-b",
    ]
    assert evictions(cluster) == ["task-e-worker-0", "task-c-worker-0", "task-b-worker-0"]


# -- failures part-way -------------------------------------------------------------------------


class EvictionRefusingCluster(FakeCluster):
    """The API server refuses the eviction of chosen pods (``refuse``: name -> exception)."""

    def __init__(self, objects, refuse):
        super().__init__(objects)
        self.refuse = refuse

    def evict(self, name, namespace, uid=None):
        if name in self.refuse:
            self.requests += 1
            raise self.refuse[name]
        return super().evict(name, namespace, uid)


def test_a_failed_eviction_part_way_names_what_was_evicted(run_module):
    refusal = api_error(429, "Cannot evict pod as it would violate the pod's disruption budget.")
    cluster = EvictionRefusingCluster(scenario_one(), {"task-c-worker-0": refusal})
    out = run_module(queue_arbiter, cluster)
    assert out["failed"] is True and out["changed"] is True
    assert out["msg"] == (
        "evicting jobs for the queue arbiter failed after 2 change(s): Cannot evict pod as it "
        "would violate the pod's disruption budget.; every write is idempotent, so running "
        "again finishes the change"
    )
    assert out["done"] == [f"{NS}/task-d-worker-0", f"{NS}/task-e-worker-0"]
    assert [v["name"] for v in out["victims"]] == ["task-d", "task-e"] and out["freed"] == 6
    assert [e["involvedObject"]["name"] for e in events(cluster)] == ["task-d", "task-e"]
    assert cluster.objects("Lease") == []  # given back in the finally
    assert ("Pod", NS, "task-b-worker-0") in cluster.store


def test_a_pod_recreated_or_gone_since_the_list_is_skipped(run_module):
    cluster = EvictionRefusingCluster(
        scenario_one(), {"task-d-worker-0": conflict(), "task-e-worker-0": conflict()}
    )
    out = run_module(queue_arbiter, cluster)
    assert out["changed"] is True
    assert [v["name"] for v in out["victims"]] == ["task-c", "task-b"] and out["freed"] == 16
    assert evictions(cluster) == ["task-c-worker-0", "task-b-worker-0"]
    # the Events keep each job's place in the decided order
    orders = {
        e["involvedObject"]["name"]: e["metadata"]["annotations"].get("platform.io/arbiter-order")
        for e in events(cluster)
    }
    assert orders == {"task-c": "3", "task-b": "4", "big": None}


def test_a_refused_event_is_only_warned_about(run_module, warnings):
    class NoEvents(FakeCluster):
        def create(self, manifest):
            if manifest["kind"] == "Event":
                self.requests += 1
                raise api_error(403, "events is forbidden")
            return super().create(manifest)

    out = run_module(queue_arbiter, NoEvents(scenario_one()))
    assert out["changed"] is True and len(out["evicted"]) == 4
    assert (
        "tenant-a/task-d was evicted but its ArbiterEvicted Event could not be recorded: "
        "events is forbidden"
    ) in warnings
    assert (
        "room was made for tenant-a/big but its ArbiterMadeRoom Event could not be recorded: "
        "events is forbidden"
    ) in warnings


# -- the job option and bad input --------------------------------------------------------------


def test_a_job_that_does_not_exist_is_refused_before_any_eviction(run_module):
    cluster = arbiter_cluster()
    out = run_module(queue_arbiter, cluster, tenant="a", job="nope")
    assert out["failed"] is True and out["changed"] is False
    assert out["msg"] == (
        "job: 'nope' is not a Volcano Job in namespace tenant-a; nothing is evicted"
    )
    assert cluster.writes == []


def test_a_job_in_another_tenants_queue_is_refused(run_module):
    objects = scenario_one()
    objects.append(queue("tenant-b-algo", "team", "root", 8, 8, allocated=8, tenant="b"))
    stray = vcjob("stray", "tenant-b-algo", "large-job", 8, phase="Pending")
    objects += [stray, podgroup(stray, "Pending")]
    cluster = FakeCluster(objects)
    out = run_module(queue_arbiter, cluster, tenant="a", job="stray")
    assert out["failed"] is True and cluster.writes == []
    assert out["msg"] == (
        "job: tenant-a/stray is in queue tenant-b-algo, which belongs to tenant 'b', not 'a'; "
        "nothing is evicted"
    )


def test_bad_input_is_refused_before_any_request(run_module):
    cluster = arbiter_cluster()
    out = run_module(
        queue_arbiter,
        cluster,
        tenant="Tenant_A",
        job="Big_Job",
        settle_seconds=-1,
        lease_duration=0,
        history_size=-1,
    )
    assert out["failed"] is True and out["requests"] == 0 and cluster.requests == 0
    fields = [e.split(":", 1)[0] for e in out["errors"]]
    assert fields == ["tenant", "job", "settle_seconds", "lease_duration", "history_size"]
    assert out["errors"][2] == "settle_seconds: -1 is too small; 0 or more is accepted"
    assert out["errors"][3] == "lease_duration: 0 is too small; 1 or more is accepted"
    alone = run_module(queue_arbiter, cluster, job="big")
    assert alone["errors"] == [
        "job: 'big' needs tenant: a job is named within its tenant's namespace (tenant-<tenant>)"
    ]
    assert cluster.requests == 0


def test_a_queue_is_checked_before_any_eviction(run_module):
    """Rule arbiter-queue-scope (leaf-queue-of-tenant): another tenant's queue before any
    request; a queue that does not exist and a parent queue once the queues are read; a
    leaf queue of the tenant scopes the run."""
    cluster = arbiter_cluster()
    other = run_module(queue_arbiter, cluster, tenant="a", queue="tenant-b-algo")
    assert other["errors"] == [
        "queue: 'tenant-b-algo' is another tenant's queue name; expected a leaf queue of tenant a "
        "(tenant-a-<team>, -payg or -spot) (rule leaf-queue-of-tenant)"
    ]
    assert cluster.requests == 0
    alone = run_module(queue_arbiter, cluster, queue="tenant-a-algo")
    assert alone["errors"] == [
        "queue: 'tenant-a-algo' needs tenant: the arbiter acts for one tenant's queue at a time"
    ]
    missing = run_module(queue_arbiter, cluster, tenant="a", queue="tenant-a-nope")
    assert missing["failed"] is True and cluster.writes == []
    assert missing["msg"].startswith("queue: 'tenant-a-nope' is no queue the platform manages;")
    assert missing["msg"].endswith("(rule leaf-queue-of-tenant); nothing is evicted")
    # A parent queue holds no job: refused, where it used to end in "nothing waiting".
    parent = run_module(queue_arbiter, cluster, tenant="a", queue="tenant-a-subscription")
    assert parent["failed"] is True and cluster.writes == []
    assert parent["msg"].startswith(
        "queue: 'tenant-a-subscription' is this tenant's subscription queue, a parent with team "
        "queues under it"
    )
    assert "expected one of tenant a's leaf queues (tenant-a-algo" in parent["msg"]
    scoped = run_module(queue_arbiter, cluster, tenant="a", queue="tenant-a-algo")
    assert scoped["decision"] == "preempt" and scoped["job"] == "tenant-a/big"


def test_critical_and_non_preemptable_jobs_are_never_evicted(run_module):
    objects = [o for o in scenario_one() if o["metadata"]["name"] not in ("task-b",)]
    critical = vcjob("task-b", "tenant-a-algo", "critical-job", 8, started=2400)
    critical["spec"]["tasks"][0]["template"]["metadata"] = {
        "annotations": {"volcano.sh/preemptable": "false"}
    }
    objects += running(critical, ["n1"])[:1]  # its PodGroup and pod are already in objects
    cluster = FakeCluster(objects)
    out = run_module(queue_arbiter, cluster)
    assert out["decision"] == "preempt"
    assert [v["name"] for v in out["victims"]] == ["task-d", "task-e", "task-c", "task-a"]
    assert ("Pod", NS, "task-b-worker-0") in cluster.store


# -- rule arbiter-settle: a Pending job sla will admit ------------------------------------------


def _sla_b2(cluster, created=5, wait="10s"):
    pg = cluster.store[("PodGroup", NS, "b2-uid-b2")]
    pg["metadata"]["annotations"] = {"volcano.sh/sla-waiting-time": wait}
    pg["metadata"]["creationTimestamp"] = ago(created)
    return pg


def test_a_pending_job_sla_will_admit_is_not_a_candidate_until_it_is_due(run_module):
    """Evicting before sla admits it would let the victims' restarted pods take the GPUs."""
    cluster = FakeCluster(scenario_two())
    _sla_b2(cluster, created=5)
    out = run_module(queue_arbiter, cluster, tenant="a", job="b2", settle_seconds=0)
    assert out["decision"] == "none" and cluster.writes == []
    assert out["reason"] == (
        "tenant-a/b2 is Pending until sla admits it (in 8 s at most); the arbiter acts for it "
        "once it is admitted, so that it, and not its victims' restarted pods, gets the GPUs; "
        "nothing is evicted"
    )
    # Past its waiting time and the settle time, still Pending: it counts.
    _sla_b2(cluster, created=30)
    late = run_module(queue_arbiter, cluster, tenant="a", settle_seconds=10)
    assert late["decision"] == "reclaim" and late["job"] == "tenant-a/b2"


def test_wait_for_admission_reads_until_sla_admits_the_job(run_module, monkeypatch):
    cluster = FakeCluster(scenario_two())
    pg = _sla_b2(cluster, created=5)
    naps = []

    def nap(seconds):
        naps.append(seconds)
        if len(naps) == 3:
            pg["status"]["phase"] = "Inqueue"  # sla admitted it

    monkeypatch.setattr(service.time, "sleep", nap)
    out = run_module(
        queue_arbiter,
        cluster,
        tenant="a",
        job="b2",
        settle_seconds=0,
        wait_for_admission=True,
        hold_seconds=0,
    )
    assert naps == [1.0, 1.0, 1.0]
    assert out["decision"] == "reclaim" and [v["name"] for v in out["victims"]] == ["a5", "a4"]
    assert cluster.lists.count("PodGroup") >= 4


def test_wait_for_admission_waits_for_the_podgroup_volcano_has_not_made_yet(
    run_module, monkeypatch
):
    """On a busy machine Volcano's controller makes the job's PodGroup after the run starts:
    deciding then would say the job is not waiting. The run waits for it, and its phase."""
    cluster = FakeCluster(scenario_two())
    key = ("PodGroup", NS, "b2-uid-b2")
    made = cluster.store.pop(key)
    naps = []

    def nap(seconds):
        naps.append(seconds)
        if len(naps) == 2:
            cluster.store[key] = made  # Volcano made it, Inqueue (sla admitted it at once)

    monkeypatch.setattr(service.time, "sleep", nap)
    out = run_module(
        queue_arbiter,
        cluster,
        tenant="a",
        job="b2",
        settle_seconds=0,
        wait_for_admission=True,
        hold_seconds=0,
    )
    assert naps == [1.0, 1.0]
    assert out["decision"] == "reclaim" and out["job"] == "tenant-a/b2"


# -- rule reclaim-hold --------------------------------------------------------------------------


def _gpu_capability(cluster, name):
    (queue,) = [q for q in cluster.objects("Queue") if q["metadata"]["name"] == name]
    return str(queue["spec"]["capability"]["nvidia.com/gpu"])


def test_the_victims_queue_is_held_until_the_job_runs_then_put_back(run_module, naps, monkeypatch):
    """Team a (deserved 20) keeps 20 of its 25: its GPU capability is 20 while b2 waits, and
    what it was (30) once b2 runs."""
    cluster = FakeCluster(scenario_two())
    seen = []
    real_replace = cluster.replace

    def replace(manifest):
        if manifest["kind"] == "Queue":
            seen.append(
                (
                    manifest["metadata"]["name"],
                    manifest["spec"]["capability"].get("nvidia.com/gpu"),
                    (manifest["metadata"].get("annotations") or {}).get("platform.io/arbiter-hold"),
                )
            )
        return real_replace(manifest)

    monkeypatch.setattr(cluster, "replace", replace)

    def b2_runs(_seconds):
        naps.append(_seconds)
        cluster.store[("Job", NS, "b2")].setdefault("status", {})["state"] = {"phase": "Running"}

    monkeypatch.setattr(service.time, "sleep", b2_runs)
    out = run_module(queue_arbiter, cluster, tenant="a")
    assert out["decision"] == "reclaim" and out["held_seconds"] == 1
    assert seen == [
        ("tenant-a-a", "20", "held for tenant-a/b2; GPU capability before: 30"),
        ("tenant-a-a", "30", None),
    ]
    assert _gpu_capability(cluster, "tenant-a-a") == "30"


def test_the_hold_ends_after_hold_seconds(run_module, naps):
    cluster = FakeCluster(scenario_two())
    out = run_module(queue_arbiter, cluster, tenant="a", hold_seconds=3)
    assert out["decision"] == "reclaim" and out["held_seconds"] == 3 and naps == [1, 1, 1]
    assert _gpu_capability(cluster, "tenant-a-a") == "30"


def test_hold_seconds_must_be_shorter_than_the_lease(run_module):
    cluster = arbiter_cluster()
    out = run_module(queue_arbiter, cluster, hold_seconds=60, lease_duration=60)
    assert out["errors"] == [
        "hold_seconds: 60 must be less than lease_duration (60): the run holds its Lease while "
        "it holds the queues"
    ]
