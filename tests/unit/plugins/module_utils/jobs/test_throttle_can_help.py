# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule throttle-can-help: the throttle holds a queue only when preemption can give the
waiting large job its GPUs, and otherwise says why it did not."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.jobs import service
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.large_job import (
    LargeJob,
    Room,
    cannot_help,
    hard_tier,
    large_jobs,
    largest_domains,
    pod_fits_no_node,
    preemptible_gpus,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.throttle import reconcile
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.tree import (
    NodeInfo,
    nodes_under,
    switch,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.jobs.job_objects import (
    NS,
    big_job,
    cluster,
    large_pg,
    throttled,
)

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
QUEUE = "tenant-alpha-algo"
GPU = "nvidia.com/gpu"


def job(gpus=32, admitted=True, tier=None, uid="u1", created=""):
    return LargeJob(uid, NS, QUEUE, "big", "big-pg", gpus, True, admitted, tier, created)


def running(name, gpus, priority="normal-job", queue=QUEUE, phase="Running"):
    container = {"name": "c", "resources": {"requests": {"nvidia.com/gpu": gpus}}}
    return {
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "queue": queue,
            "priorityClassName": priority,
            "tasks": [
                {"name": "t", "replicas": 1, "template": {"spec": {"containers": [container]}}}
            ],
        },
        "status": {"state": {"phase": phase}},
    }


def test_a_podgroup_pending_past_the_settle_time_is_turned_away_whatever_the_room():
    old = job(admitted=False, created="2026-01-01T11:59:30Z")
    assert cannot_help(old, Room(64, 64, {QUEUE: 64}), T0) == (
        "its PodGroup has been Pending for 30 s: Volcano's enqueue has not admitted it (its "
        "queue or the cluster has no room for it, and it has no sla waiting time), and "
        "preemption acts only for admitted jobs"
    )
    # Decided without the room: nothing needs to be read.
    assert cannot_help(old, None, T0) is not None
    # An unknown creation time counts as long ago.
    assert "Pending for 10 s" in cannot_help(job(admitted=False), None, T0)


def test_a_pending_podgroup_with_a_waiting_time_settles_after_it():
    """sla admits a PodGroup once its waiting time has passed: until that plus the settle
    time it is judged by its GPUs; after it, it is turned away and the reason says so."""
    waiting = replace(job(admitted=False, created="2026-01-01T11:59:45Z"), sla_wait=10.0)
    assert cannot_help(waiting, Room(64, 64, {QUEUE: 64}), T0) is None  # 15 s < 10 + 10
    late = replace(waiting, created="2026-01-01T11:59:30Z")
    assert cannot_help(late, Room(64, 64, {QUEUE: 64}), T0) == (
        "its PodGroup has been Pending for 30 s: Volcano's enqueue has not admitted it, not "
        "even past its sla waiting time of 10 s, and preemption acts only for admitted jobs"
    )


def test_a_large_job_reads_its_waiting_time_from_the_podgroup():
    pg = large_pg("Pending")
    vcjob = big_job()
    vcjob["metadata"]["uid"] = "uid-big"
    (found,) = large_jobs([pg], [NS], [vcjob])
    assert found.sla_wait is None and found.admitted is False
    pg["metadata"]["annotations"] = {"volcano.sh/sla-waiting-time": "5s"}
    (found,) = large_jobs([pg], [NS], [vcjob])
    assert found.sla_wait == 5


def test_a_new_pending_podgroup_is_judged_by_its_gpus():
    # Enqueue admits it within a scheduling period or two, in the cycle whose preemption
    # frees its GPUs: the throttle has to be in place before that.
    new = job(admitted=False, created="2026-01-01T11:59:55Z")
    assert cannot_help(new, Room(64, 0, {QUEUE: 32}), T0) is None
    assert cannot_help(new, Room(64, 0, {QUEUE: 16}), T0).startswith("it asks for 32 GPUs")
    assert cannot_help(new, None, T0) is None


def test_a_job_larger_than_the_pool():
    assert cannot_help(job(gpus=80), Room(64, 64), T0) == "it asks for 80 GPUs and the pool has 64"


def test_free_plus_preemptible_must_cover_the_job():
    room = Room(64, 8, {QUEUE: 16, "other-queue": 40})
    assert cannot_help(job(gpus=24), room, T0) is None
    assert cannot_help(job(gpus=32), room, T0) == (
        "it asks for 32 GPUs; 8 are free and the running jobs below large-job in "
        f"{QUEUE} hold 16, so preemption cannot free enough"
    )


def test_a_hard_topology_needs_one_hypernode_that_large():
    room = Room(64, 64, {}, {1: 16, 2: 64})
    assert cannot_help(job(gpus=32, tier=2), room, T0) is None
    assert cannot_help(job(gpus=32, tier=1), room, T0) == (
        "its hard network topology (tier 1 or below) places at most 16 GPUs in one "
        "HyperNode, and it asks for 32"
    )
    # No HyperNode at all (or not read): the topology is not judged.
    assert cannot_help(job(gpus=32, tier=1), Room(64, 64, {}, {}), T0) is None
    assert cannot_help(job(gpus=32, tier=1), Room(64, 64, {}, None), T0) is None


@given(
    gpus=st.integers(1, 128),
    pool=st.integers(0, 128),
    free=st.integers(0, 128),
    freeable=st.integers(0, 128),
)
def test_engages_exactly_when_the_gpus_can_be_had(gpus, pool, free, freeable):
    free = min(free, pool)
    why = cannot_help(job(gpus=gpus), Room(pool, free, {QUEUE: freeable}), T0)
    assert (why is None) == (gpus <= pool and gpus <= free + freeable)


def test_a_pod_no_node_can_hold():
    pods = (("master", {"cpu": Decimal(4)}), ("worker", {"cpu": Decimal(100), GPU: Decimal(8)}))
    nodes = [{"cpu": Decimal(64), GPU: Decimal(8)}, {"cpu": Decimal(128), GPU: Decimal(0)}]
    assert pod_fits_no_node(pods, nodes) == "worker"  # cpu and GPUs on one node, not two
    assert pod_fits_no_node(pods[:1], nodes) is None
    big = LargeJob("u", NS, QUEUE, "big", "pg", 8, True, pods=pods)
    assert cannot_help(big, Room(64, 64, {}, None, nodes), T0) == (
        "a pod of its task 'worker' asks for cpu 100, nvidia.com/gpu 8, more than any node of "
        "the pool holds"
    )
    assert cannot_help(big, Room(64, 64, {}, None, None), T0) is None  # nodes not read


def test_preemptible_counts_running_jobs_below_large_job_per_queue():
    jobs = [
        running("a", 4),
        running("b", 8, priority="debug-job"),
        running("c", 8, priority="critical-job"),
        running("d", 8, priority="large-job"),
        running("e", 8, phase="Pending"),
        running("f", 2, queue="other"),
    ]
    assert preemptible_gpus(jobs) == {QUEUE: 12, "other": 2}


def test_hard_tier_reads_only_a_hard_constraint():
    assert hard_tier({"networkTopology": {"mode": "hard", "highestTierAllowed": 1}}) == 1
    assert hard_tier({"networkTopology": {"mode": "soft", "highestTierAllowed": 1}}) is None
    assert hard_tier({"networkTopology": {"mode": "hard", "highestTierName": "spine"}}) is None
    assert hard_tier({}) is None


def test_largest_domains_by_tier_through_the_tree():
    tree = {
        "tor-0": switch("tor-0", 1, nodes=["n0", "n1"]),
        "tor-1": switch("tor-1", 1, nodes=["n2"]),
        "spine": switch("spine", 2, children=["tor-0", "tor-1"]),
    }
    nodes = [NodeInfo(n) for n in ("n0", "n1", "n2")]
    assert sorted(nodes_under(tree, "spine", nodes)) == ["n0", "n1", "n2"]
    assert nodes_under(tree, "tor-0", nodes) == ["n0", "n1"]
    assert nodes_under(tree, "missing", nodes) == []
    gpus = {"n0": 8, "n1": 8, "n2": 8}
    assert largest_domains(tree, nodes, gpus) == {1: 16, 2: 24}
    assert largest_domains({}, nodes, gpus) == {}


def test_reconcile_engages_no_job_it_is_told_cannot_be_helped():
    entries = reconcile([], [job(uid="u1"), job(uid="u2")], T0, 300, {"u2": "why"})
    assert [e.uid for e in entries] == ["u1"]


def test_the_reconcile_reports_a_pending_large_job_and_engages_nothing():
    fake = cluster(extra=[large_pg(phase="Pending"), big_job()])
    result = service.run_throttle({"timeout": 300, "namespaces": []}, fake, check_mode=False)
    assert result["engaged"] == [] and result["changed"] is False
    (away,) = result["not_engaged"]
    assert away["job"] == f"{NS}/big" and away["queue"] == QUEUE
    assert away["reason"].startswith("its PodGroup has been Pending for 10 s")
    # Rule job-never-runs is judged first, so the Nodes and Queues are read (no PVCs: the
    # job mounts none); nothing is written.
    assert {"Node", "Queue"} <= set(fake.lists) and "PersistentVolumeClaim" not in fake.lists
    assert fake.writes == []


def test_the_scheduled_reconcile_releases_an_engaged_job_enqueue_never_admitted():
    # vcjob engaged it while its PodGroup was new; it stayed Pending.
    fake = throttled()
    fake.put(large_pg(phase="Pending"))
    result = service.run_throttle({"timeout": 300, "namespaces": []}, fake, check_mode=False)
    assert result["released"] == [f"{NS}/big"] and result["throttles"] == {}
    assert [j["job"] for j in result["not_engaged"]] == [f"{NS}/big"]
    assert ("ConfigMap", NS, "platform-throttle") not in fake.store


def test_the_reconcile_turns_away_a_job_the_queue_cannot_make_room_for():
    # 32 GPUs in the pool, 24 held by a job of another tenant's queue, none below
    # large-job in the large job's own queue: preemption cannot free 32.
    other = running("other", 24, queue="tenant-beta-algo")
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p{i}", "namespace": "tenant-beta"},
            "spec": {
                "nodeName": f"gpu-{i}",
                "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8"}}}],
            },
            "status": {"phase": "Running"},
        }
        for i in range(3)
    ]
    fake = cluster(
        extra=[
            large_pg(),
            big_job(),
            {**other, "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job"},
            *pods,
        ]
    )
    result = service.run_throttle({"timeout": 300, "namespaces": []}, fake, check_mode=False)
    assert result["engaged"] == []
    (away,) = result["not_engaged"]
    assert away["reason"] == (
        f"it asks for 32 GPUs; 8 are free and the running jobs below large-job in {QUEUE} "
        "hold 0, so preemption cannot free enough"
    )


def test_a_job_whose_gpus_are_free_is_not_held_for():
    """Rule job-waits-for inside throttle-can-help: an admitted large job whose queues have
    room and whose GPUs are free waits for something other than GPUs (an unbound volume,
    its placement); holding its team's submissions gives it nothing."""
    from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.feasibility import (
        Limit,
        Supply,
    )

    big = job(gpus=32)
    roomy = Supply(chain=(Limit(big.queue, 64, 8),), node_gpus=64)
    full = Supply(chain=(Limit(big.queue, 32, 8),), node_gpus=64)
    free = Room(pool_gpus=64, free_gpus=40, supplies={big.uid: roomy})
    assert cannot_help(big, free, T0) == (
        "its queues have room and 40 GPUs are free for its 32: it waits for something other "
        "than GPUs (its volumes or its placement), which holding its team's submissions does "
        "not give it"
    )
    # Its queue at its capability: GPUs are what it waits for, and preemption frees them.
    assert cannot_help(big, replace(free, supplies={big.uid: full}), T0) is None
