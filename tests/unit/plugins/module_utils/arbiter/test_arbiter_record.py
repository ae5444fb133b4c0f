# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The arbiter's pure parts around the rules: the shared Lease rule under its own name,
candidates (rule arbiter-settle, rule arbiter-candidates), input checks, records."""

from __future__ import annotations

from datetime import timedelta

from ansible_collections.gpucloud.platform.plugins.module_utils.arbiter import candidates, record
from ansible_collections.gpucloud.platform.plugins.module_utils.arbiter.inputs import (
    arbiter_input_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.arbiter.model import (
    QueueState,
    WaitingJob,
    priority_of,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.history import (
    push_history,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.lease import (
    QUEUE_ARBITER,
    SPOT_RECLAIM,
    lease_blocker,
    lease_manifest,
    lease_race,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot import reclaim as spot
from ansible_collections.gpucloud.platform.tests.unit.plugins.arbiter_fixtures import (
    NOW,
    podgroup,
    vcjob,
)

TEAM = "tenant-a-algo"


def test_one_lease_rule_under_two_names():
    held = lease_manifest(QUEUE_ARBITER, "awx/run-1", 60, NOW - timedelta(seconds=30))
    assert held["metadata"]["name"] == "queue-arbiter"
    assert lease_blocker(QUEUE_ARBITER, held, "awx/run-2", NOW) == (
        "Lease platform-system/queue-arbiter is held by 'awx/run-1' until 2026-01-01T12:00:30Z; "
        "another queue arbiter is running, try again after it ends"
    )
    assert lease_blocker(QUEUE_ARBITER, held, "awx/run-1", NOW) is None
    assert lease_race(QUEUE_ARBITER) == (
        "Lease platform-system/queue-arbiter was taken by another queue arbiter at the same "
        "time; try again"
    )
    # the spot reclaim's texts stay what they were
    assert (
        spot.LEASE_RACE
        == lease_race(SPOT_RECLAIM)
        == (
            "Lease platform-system/spot-reclaim was taken by another spot reclaim at the same time; "
            "try again"
        )
    )
    assert spot.lease_manifest("x", 60, NOW) == lease_manifest(SPOT_RECLAIM, "x", 60, NOW)


def test_settled_waiting_takes_pending_and_inqueue_podgroups_old_enough():
    job = vcjob("big", TEAM, "large-job", 8, 4, phase="Pending")
    fresh, old = podgroup(job, "Pending", created=5), podgroup(job, "Pending", created=60)
    inqueue, running = podgroup(job, "Inqueue", created=600), podgroup(job, "Running", created=600)
    now = NOW.timestamp()
    assert candidates.settled_waiting([fresh, old, inqueue, running], now, 10) == [old, inqueue]
    assert candidates.settled_waiting([fresh], now, 0) == [fresh]
    leaving = podgroup(job, "Pending", created=60)
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T12:00:00Z"
    assert candidates.settled_waiting([leaving], now, 0) == []


def wait(name, pc, gpus, queue=TEAM):
    return WaitingJob("tenant-a", name, f"uid-{name}", queue, pc, priority_of(pc), gpus, "Pending")


def test_candidates_are_the_blocked_jobs_highest_priority_then_oldest():
    states = {
        TEAM: QueueState(TEAM, "root", 40, 40, 30, "team", "a"),
        "tenant-a-free": QueueState("tenant-a-free", "root", 40, None, 0, "team", "a"),
    }
    jobs = [
        wait("n-new", "normal-job", 16),
        wait("n-old", "normal-job", 16),
        wait("big", "large-job", 32),
        wait("fits", "large-job", 8),  # 30 + 8 <= 40
        wait("elsewhere", "large-job", 32, "tenant-a-free"),  # no capability holds it
        wait("huge", "large-job", 64),  # larger than the pool: impossible, not blocked
    ]
    created = {("tenant-a", f"uid-{j.name}"): 100.0 for j in jobs}
    created[("tenant-a", "uid-n-old")] = 50.0
    out = candidates.arbiter_candidates(jobs, created, states, free_gpus=10, pool_gpus=40)
    assert [j.name for j in out] == ["big", "n-old", "n-new"]


def test_input_errors_name_each_field():
    ok = {"tenant": "alpha", "job": "train.v2", "settle_seconds": 0, "lease_duration": 1}
    assert arbiter_input_errors({**ok, "history_size": 0}) == []
    errors = arbiter_input_errors({"tenant": None, "job": "x" * 254, "settle_seconds": 10})
    assert [e.field for e in errors] == ["job", "job"]
    assert "at most 253" in errors[0].message


def test_history_entry_and_bounded_history():
    job = wait("big", "large-job", 32)
    result = {
        "job": job.ref,
        "decision": "reclaim",
        "need": 5,
        "freed": 5,
        "victims": [{"namespace": "tenant-a", "name": "a5", "gpus": 2}],
        "evicted": ["tenant-a/a5-worker-0"],
        "reason": "why",
    }
    entry = record.history_entry(result, "awx/r1", NOW)
    assert entry["rule"] == "team-reclaim-victims" and entry["evicted_pods"] == 1
    entries = []
    for i in range(4):
        entries = push_history(entries, {**entry, "n": i}, 3)
    assert [e["n"] for e in entries] == [3, 2, 1]
    manifest = record.history_manifest(entries)
    assert manifest["metadata"] == {
        "name": "queue-arbiter-history",
        "namespace": "platform-system",
        "labels": {"platform.io/managed-by": "gpucloud-platform"},
    }
