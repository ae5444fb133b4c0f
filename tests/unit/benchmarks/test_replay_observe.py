# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the replay reads off the cluster (benchmarks/replay/observe.py), on LISTs made by
hand: the GPUs the replay's running pods hold per queue, the looks at the Volcano Jobs
folded into each job's record (start, finish, evictions, deletion), the platform's
eviction Events and the cause each eviction is given."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.benchmarks.replay.observe import (
    Tracked,
    attribute,
    backlog,
    cause_times,
    held_by_queue,
    look,
)
from ansible_collections.gpucloud.platform.benchmarks.replay.records import (
    CAUSE_ARBITER,
    CAUSE_SPOT,
    CAUSE_VOLCANO,
    Eviction,
    JobRecord,
)

GPU = "nvidia.com/gpu"

# --------------------------------------------------------------------------
# Fixtures: pods, Volcano Jobs, Events, tracked records
# --------------------------------------------------------------------------


def pod(
    job: str | None = "replay-0001",
    queue: str | None = "tenant-acme-payg",
    gpus: tuple[Any, ...] = (8,),
    phase: str = "Running",
    deleting: bool = False,
) -> dict[str, Any]:
    """A pod of Volcano Job ``job`` in ``queue``: one container per entry of ``gpus``, each
    with that GPU limit (None: no limits at all)."""
    labels = {}
    if job is not None:
        labels["volcano.sh/job-name"] = job
    if queue is not None:
        labels["volcano.sh/queue-name"] = queue
    meta: dict[str, Any] = {"name": f"{job}-worker-0", "labels": labels}
    if deleting:
        meta["deletionTimestamp"] = "2025-06-01T00:00:00Z"
    return {
        "metadata": meta,
        "spec": {
            "containers": [
                {"name": f"c{i}", "resources": {} if g is None else {"limits": {GPU: g}}}
                for i, g in enumerate(gpus)
            ]
        },
        "status": {"phase": phase},
    }


def vcjob(name: str, phase: str | None, retries: int = 0) -> dict[str, Any]:
    """A Volcano Job as a LIST gives it (``phase`` None: no status yet)."""
    out: dict[str, Any] = {"metadata": {"name": name}}
    if phase is not None:
        out["status"] = {"state": {"phase": phase}, "retryCount": retries}
    return out


def record(name: str = "replay-0001", at: float = 0) -> JobRecord:
    return JobRecord(
        name=name,
        tenant="acme",
        billing="payg",
        job_class="normal",
        queue="tenant-acme-payg",
        gpus=8,
        at=at,
        duration_s=600,
        within_share=True,
    )


def tracking(*names: str) -> dict[str, Tracked]:
    return {name: Tracked(record=record(name)) for name in names}


def fold(tracked: dict[str, Tracked], *looks: tuple[float, list[dict[str, Any]]]) -> None:
    """Each (time, LIST of Volcano Jobs), in order."""
    for at, jobs in looks:
        look(tracked, jobs, at)


def one_job(*looks: tuple[float, str | None, int]) -> Tracked:
    """The record of replay-0001 after looks of (time, phase, retryCount); phase None: the
    job is not in that LIST."""
    tracked = tracking("replay-0001")
    for at, phase, retries in looks:
        jobs = [] if phase is None else [vcjob("replay-0001", phase, retries)]
        look(tracked, jobs, at)
    return tracked["replay-0001"]


def event(
    name: str,
    reason: str,
    *,
    first: str | None = None,
    last: str | None = None,
    event_time: str | None = None,
    key: str = "involvedObject",
) -> dict[str, Any]:
    """An Event on Volcano Job ``name`` (``key``: involvedObject for core/v1, regarding for
    events.k8s.io/v1)."""
    out: dict[str, Any] = {
        "reason": reason,
        key: {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": name},
    }
    if first is not None:
        out["firstTimestamp"] = first
    if last is not None:
        out["lastTimestamp"] = last
    if event_time is not None:
        out["eventTime"] = event_time
    return out


# Wall-clock stamps and the traced seconds they stand for (15x, from 00:00:00).
TRACED = {
    "2025-06-01T00:00:10Z": 150.0,
    "2025-06-01T00:00:20Z": 300.0,
    "2025-06-01T00:00:30Z": 450.0,
    "2025-06-01T00:00:40Z": 600.0,
}


def to_traced(stamp: str) -> float:
    return TRACED[stamp]


# --------------------------------------------------------------------------
# held_by_queue
# --------------------------------------------------------------------------


def test_held_by_queue_sums_gpu_limits_per_queue():
    pods = [
        pod("replay-0001", "tenant-acme-payg", (8,)),
        pod("replay-0001", "tenant-acme-payg", (8,)),
        pod("replay-0002", "tenant-acme-payg", (4,)),
        pod("replay-0003", "tenant-beta-spot", (1,)),
        pod("replay-0004", "tenant-acme-algo", (2,)),
    ]
    assert held_by_queue(pods) == {
        "tenant-acme-payg": 20,
        "tenant-beta-spot": 1,
        "tenant-acme-algo": 2,
    }


@pytest.mark.parametrize(
    "left_out",
    [
        pod(phase="Pending"),
        pod(phase="Succeeded"),
        pod(phase="Failed"),
        pod(deleting=True),  # Running but being deleted
        pod(job="train-0001"),  # not the replay's
        pod(job="replay-0001-x"),
        pod(job=None),  # no Volcano Job
    ],
)
def test_held_by_queue_counts_only_running_replay_pods(left_out):
    kept = pod("replay-0002", "tenant-acme-payg", (4,))
    assert held_by_queue([left_out, kept]) == {"tenant-acme-payg": 4}


def test_held_by_queue_reads_every_containers_limits():
    # quantities as the API gives them (strings) and as a manifest may (numbers)
    assert held_by_queue([pod(gpus=("2", 1, "0"))]) == {"tenant-acme-payg": 3}


def test_held_by_queue_counts_a_running_pod_without_gpus_as_zero():
    # the ps, master, driver or head pod of a job: Running, in its queue, no GPU limit
    pods = [pod(gpus=(None,)), pod("replay-0002", "tenant-beta-spot", (None, None))]
    assert held_by_queue(pods) == {"tenant-acme-payg": 0, "tenant-beta-spot": 0}


def test_held_by_queue_takes_the_queue_annotation_without_the_label():
    p = pod(queue=None, gpus=(8,))
    p["metadata"]["annotations"] = {"volcano.sh/queue-name": "tenant-acme-subscription"}
    assert held_by_queue([p]) == {"tenant-acme-subscription": 8}


def test_held_by_queue_of_no_pods_is_empty():
    assert held_by_queue([]) == {}
    assert held_by_queue([pod(phase="Pending")]) == {}


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["tenant-a-payg", "tenant-a-spot", "tenant-b-subscription"]),
            st.integers(min_value=0, max_value=8),
            st.sampled_from(["Running", "Pending", "Succeeded"]),
            st.booleans(),
        ),
        max_size=30,
    )
)
def test_held_by_queue_is_the_running_pods_gpus(specs):
    pods = [
        pod(f"replay-{i:04d}", queue, (gpus,), phase, deleting)
        for i, (queue, gpus, phase, deleting) in enumerate(specs)
    ]
    expected: dict[str, int] = {}
    for queue, gpus, phase, deleting in specs:
        if phase == "Running" and not deleting:
            expected[queue] = expected.get(queue, 0) + gpus
    assert held_by_queue(pods) == expected


# --------------------------------------------------------------------------
# backlog
# --------------------------------------------------------------------------


def test_backlog_counts_replay_jobs_without_a_phase():
    jobs = [
        vcjob("replay-0001", None),
        vcjob("replay-0002", None),
        vcjob("replay-0003", "Pending"),
        vcjob("replay-0004", "Running"),
        vcjob("train-0001", None),  # not the replay's
    ]
    assert backlog(jobs) == 2


# --------------------------------------------------------------------------
# look: start and finish
# --------------------------------------------------------------------------


def test_look_starts_on_running_and_finishes_on_completed():
    t = one_job(
        (10, None, 0),  # not listed yet
        (20, "Pending", 0),
        (30, "Running", 0),
        (40, "Running", 0),
        (90, "Completed", 0),
    )
    assert t.record.started == 30
    assert t.record.finished == 90
    assert t.record.deleted is False
    assert t.evictions == []
    assert t.done()


def test_look_before_running_leaves_the_record_blank():
    t = one_job((10, None, 0), (20, None, 0), (30, "Pending", 0), (40, "Pending", 0))
    assert (t.record.started, t.record.finished, t.record.deleted) == (None, None, False)
    assert t.seen is True
    assert t.running_since is None
    assert not t.done()


def test_look_a_job_that_ran_and_completed_between_two_looks_starts_then():
    t = one_job((20, "Pending", 0), (30, "Completed", 0))
    assert (t.record.started, t.record.finished) == (30, 30)
    assert t.evictions == []


def test_look_a_completed_job_that_leaves_is_not_deleted():
    # ttlSecondsAfterFinished removes it: it finished, it was not reclaimed
    t = one_job((10, "Running", 0), (50, "Completed", 0), (60, None, 0), (70, None, 0))
    assert (t.record.started, t.record.finished, t.record.deleted) == (10, 50, False)
    assert t.evictions == []


def test_look_ignores_jobs_it_does_not_track():
    tracked = tracking("replay-0001")
    look(tracked, [vcjob("replay-0002", "Running"), vcjob("train-0001", "Running")], 10)
    assert list(tracked) == ["replay-0001"]
    assert tracked["replay-0001"].seen is False
    assert tracked["replay-0001"].record.started is None


def test_look_follows_each_job_on_its_own():
    tracked = tracking("replay-0001", "replay-0002", "replay-0003")
    fold(
        tracked,
        (10, [vcjob("replay-0001", "Running"), vcjob("replay-0002", "Pending")]),
        (20, [vcjob("replay-0001", "Completed"), vcjob("replay-0002", "Running")]),
        (30, [vcjob("replay-0002", "Running", retries=1)]),
    )
    first, second, third = tracked.values()
    assert (first.record.started, first.record.finished, first.record.deleted) == (10, 20, False)
    assert second.record.started == 20
    assert second.evictions == [Eviction(at=30, cause=CAUSE_VOLCANO, ran_s=10)]
    assert second.running_since == 30
    assert (third.seen, third.record.deleted, third.record.started) == (False, False, None)


# --------------------------------------------------------------------------
# look: evictions
# --------------------------------------------------------------------------


def test_look_a_higher_retry_count_while_running_is_an_eviction():
    # evicted and running again between two looks
    t = one_job((100, "Running", 0), (160, "Running", 1), (400, "Completed", 1))
    assert t.evictions == [Eviction(at=160, cause=CAUSE_VOLCANO, ran_s=60)]
    assert t.record.started == 100  # the first time, not the restart
    assert t.record.finished == 400
    assert t.retries == 1


@pytest.mark.parametrize("back", ["Restarting", "Pending"])
def test_look_sent_back_while_running_is_an_eviction(back):
    t = one_job((100, "Running", 0), (130, back, 0))
    assert t.evictions == [Eviction(at=130, cause=CAUSE_VOLCANO, ran_s=30)]
    assert t.running_since is None


def test_look_counts_each_run_that_was_sent_back():
    t = one_job(
        (100, "Running", 0),
        (130, "Restarting", 1),  # sent back and a retry more: one eviction
        (140, "Pending", 1),  # still waiting: nothing new
        (150, "Running", 1),
        (190, "Pending", 1),
        (200, "Running", 2),  # a retry more, but it was not running: nothing new
        (260, "Completed", 2),
    )
    assert t.evictions == [
        Eviction(at=130, cause=CAUSE_VOLCANO, ran_s=30),
        Eviction(at=190, cause=CAUSE_VOLCANO, ran_s=40),
    ]
    assert (t.record.started, t.record.finished) == (100, 260)


def test_look_a_retry_count_already_grown_before_it_ran_is_no_eviction():
    t = one_job((10, "Pending", 0), (20, "Pending", 1), (30, "Running", 2))
    assert t.evictions == []
    assert t.retries == 2
    assert t.record.started == 30


# --------------------------------------------------------------------------
# look: deletion
# --------------------------------------------------------------------------


def test_look_a_running_job_that_vanishes_was_deleted_and_evicted():
    t = one_job((100, "Running", 0), (145, None, 0), (200, None, 0))
    assert t.record.deleted is True
    assert t.record.finished is None
    assert t.evictions == [Eviction(at=145, cause=CAUSE_VOLCANO, ran_s=45)]
    assert t.done()


def test_look_a_waiting_job_that_vanishes_was_deleted_without_an_eviction():
    t = one_job((100, "Pending", 0), (145, None, 0))
    assert t.record.deleted is True
    assert t.record.started is None
    assert t.evictions == []


def test_look_a_job_evicted_then_deleted_while_waiting_has_one_eviction():
    t = one_job((100, "Running", 0), (130, "Restarting", 1), (160, None, 1))
    assert t.record.deleted is True
    assert t.evictions == [Eviction(at=130, cause=CAUSE_VOLCANO, ran_s=30)]


def test_look_a_job_never_seen_is_not_deleted():
    t = one_job((10, None, 0), (20, None, 0), (30, None, 0))
    assert t.seen is False
    assert t.record.deleted is False
    assert not t.done()


# --------------------------------------------------------------------------
# look: what holds whatever the phases
# --------------------------------------------------------------------------

PHASES = st.sampled_from([None, "Pending", "Running", "Restarting", "Completed"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(PHASES, st.integers(min_value=0, max_value=2)), max_size=12))
def test_look_records_are_consistent_for_any_phases(steps):
    looks = []
    retries = 0
    for i, (phase, more) in enumerate(steps):
        retries += more  # a retryCount only grows
        looks.append((10.0 * (i + 1), phase, retries))
    t = one_job(*looks)

    # the looks that counted: those before the job was done (finished or deleted)
    seen_before = False
    counted = []
    for at, phase, r in looks:
        counted.append((at, phase, r))
        if phase == "Completed" or (phase is None and seen_before):
            break
        seen_before = seen_before or phase is not None
    first_run = next((at for at, p, _unused1 in counted if p in ("Running", "Completed")), None)
    assert t.record.started == first_run
    completed = [at for at, p, _unused1 in counted if p == "Completed"]
    assert t.record.finished == (completed[0] if completed else None)
    vanished = bool(counted) and counted[-1][1] is None and seen_before
    assert t.record.deleted == vanished
    times = [at for at, _unused1, _unused2 in counted]
    for ev in t.evictions:
        assert ev.cause == CAUSE_VOLCANO
        assert ev.at in times
        assert ev.ran_s > 0
        assert first_run is not None and ev.at > first_run
    assert [ev.at for ev in t.evictions] == sorted({ev.at for ev in t.evictions})
    # a job seen Running, then sent back or gone at the next look, was evicted then
    for (_unused1, before, _unused2), (at, after, _unused3) in pairwise(counted):
        if before == "Running" and after in ("Restarting", "Pending", None):
            assert at in [ev.at for ev in t.evictions]
    # the work lost never exceeds the time since the job first ran
    if t.evictions:
        assert sum(ev.ran_s for ev in t.evictions) <= t.evictions[-1].at - first_run


# --------------------------------------------------------------------------
# cause_times
# --------------------------------------------------------------------------


def test_cause_times_keeps_the_platforms_eviction_events_on_replay_jobs():
    events = [
        event(
            "replay-0003",
            "ArbiterEvicted",
            first="2025-06-01T00:00:10Z",
            last="2025-06-01T00:00:10Z",
        ),
        event("replay-0004", "SpotReclaimed", first="2025-06-01T00:00:20Z"),
        event("replay-0003", "SpotReclaimed", last="2025-06-01T00:00:40Z"),
        event("replay-0003", "Scheduled", last="2025-06-01T00:00:20Z"),  # not an eviction
        event("train-0001", "ArbiterEvicted", last="2025-06-01T00:00:20Z"),  # not the replay's
        event("replay-0005", "ArbiterEvicted"),  # no time at all
    ]
    assert cause_times(events, to_traced) == {
        "replay-0003": [(150.0, CAUSE_ARBITER), (600.0, CAUSE_SPOT)],
        "replay-0004": [(300.0, CAUSE_SPOT)],
    }


def test_cause_times_prefers_event_time_then_last_then_first():
    events = [
        event(
            "replay-0001",
            "ArbiterEvicted",
            event_time="2025-06-01T00:00:30Z",
            last="2025-06-01T00:00:20Z",
            first="2025-06-01T00:00:10Z",
        ),
        event(
            "replay-0002",
            "ArbiterEvicted",
            last="2025-06-01T00:00:20Z",
            first="2025-06-01T00:00:10Z",
        ),
    ]
    assert cause_times(events, to_traced) == {
        "replay-0001": [(450.0, CAUSE_ARBITER)],
        "replay-0002": [(300.0, CAUSE_ARBITER)],
    }


def test_cause_times_reads_an_events_k8s_io_event():
    events = [
        event("replay-0007", "SpotReclaimed", event_time="2025-06-01T00:00:40Z", key="regarding")
    ]
    assert cause_times(events, to_traced) == {"replay-0007": [(600.0, CAUSE_SPOT)]}


def test_cause_times_of_no_events_is_empty():
    assert cause_times([], to_traced) == {}


# --------------------------------------------------------------------------
# attribute
# --------------------------------------------------------------------------


def volcano(at: float, ran_s: float = 50) -> Eviction:
    return Eviction(at=at, cause=CAUSE_VOLCANO, ran_s=ran_s)


def test_attribute_an_event_in_the_window_names_the_cause():
    out = attribute([volcano(100, ran_s=40)], [(80, CAUSE_ARBITER)], 30)
    assert out == (Eviction(at=100, cause=CAUSE_ARBITER, ran_s=40),)


@pytest.mark.parametrize(
    ("event_at", "cause"),
    [
        (69.9, CAUSE_VOLCANO),  # before the window
        (70, CAUSE_SPOT),  # the window's first second
        (100, CAUSE_SPOT),  # the eviction's own second
        (100.5, CAUSE_VOLCANO),  # after the eviction was seen
    ],
)
def test_attribute_window_bounds(event_at, cause):
    (out,) = attribute([volcano(100)], [(event_at, CAUSE_SPOT)], 30)
    assert out.cause == cause
    assert (out.at, out.ran_s) == (100, 50)


def test_attribute_without_events_keeps_volcano():
    out = attribute([volcano(100), volcano(200)], [], 30)
    assert [ev.cause for ev in out] == [CAUSE_VOLCANO, CAUSE_VOLCANO]


def test_attribute_one_event_names_one_eviction():
    out = attribute([volcano(100), volcano(110)], [(95, CAUSE_ARBITER)], 30)
    assert [ev.cause for ev in out] == [CAUSE_ARBITER, CAUSE_VOLCANO]


def test_attribute_two_events_name_two_evictions_in_time_order():
    # given out of order: the earliest Event in an eviction's window is its cause
    causes = [(190, CAUSE_SPOT), (90, CAUSE_ARBITER)]
    out = attribute([volcano(100, 10), volcano(200, 20)], causes, 30)
    assert out == (
        Eviction(at=100, cause=CAUSE_ARBITER, ran_s=10),
        Eviction(at=200, cause=CAUSE_SPOT, ran_s=20),
    )


def test_attribute_does_not_change_the_callers_causes():
    causes = [(90, CAUSE_ARBITER)]
    attribute([volcano(100)], causes, 30)
    assert causes == [(90, CAUSE_ARBITER)]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(min_value=0, max_value=1000, allow_nan=False), max_size=8),
    st.lists(
        st.tuples(
            st.floats(min_value=0, max_value=1000, allow_nan=False),
            st.sampled_from([CAUSE_ARBITER, CAUSE_SPOT]),
        ),
        max_size=8,
    ),
    st.floats(min_value=0, max_value=200, allow_nan=False),
)
def test_attribute_uses_each_event_at_most_once(ats, causes, window_s):
    evictions = [volcano(at, ran_s=i) for i, at in enumerate(sorted(ats))]
    out = attribute(evictions, causes, window_s)
    assert [(ev.at, ev.ran_s) for ev in out] == [(ev.at, ev.ran_s) for ev in evictions]
    named = [ev for ev in out if ev.cause != CAUSE_VOLCANO]
    assert len(named) <= len(causes)
    for cause in (CAUSE_ARBITER, CAUSE_SPOT):
        assert sum(ev.cause == cause for ev in named) <= sum(c == cause for _unused1, c in causes)
    # an eviction with no Event at all in its window (attribute allows 1e-9 for float
    # error) keeps Volcano's cause
    for ev in out:
        if not any(ev.at - window_s <= t <= ev.at + 1e-9 for t, _unused1 in causes):
            assert ev.cause == CAUSE_VOLCANO
    # each earlier eviction uses at most one Event: more Events in a window than evictions
    # before it leave one for it
    for i, ev in enumerate(out):
        if sum(ev.at - window_s <= t <= ev.at + 1e-9 for t, _unused1 in causes) > i:
            assert ev.cause != CAUSE_VOLCANO
