# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why GPUs stood idle while jobs waited (benchmarks/replay/idle.py), and how the replay
adds it up (observe.waiting, metrics.idle_gpu_h_by_cause, metrics.breaches_by_cause), on
Queues and looks made by hand."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.benchmarks.replay.idle import (
    AWAITING_CONTROLLER,
    HELD_AT_SUBMISSION,
    LARGER_THAN_IDLE,
    NO_JOB_WAITING,
    NOT_ADMITTED,
    NOT_YET_PLACED,
    SPREAD_OVER_NODES,
    STAGE_CONTROLLER,
    STAGE_PENDING,
    STAGE_QUEUED,
    STAGE_SUBMITTING,
    Waiting,
    gang_fits_nodes,
    idle_by_cause,
    look_causes,
    queue_full,
    queue_rooms,
    why_waiting,
)
from ansible_collections.gpucloud.platform.benchmarks.replay.idle_picture import (
    draw_idle,
    idle_by_hour,
)
from ansible_collections.gpucloud.platform.benchmarks.replay.metrics import (
    UNOBSERVED,
    breaches_by_cause,
    held_spans,
    idle_gpu_h_by_cause,
    longest_cause,
    measure,
    rows,
)
from ansible_collections.gpucloud.platform.benchmarks.replay.observe import (
    Tracked,
    charge,
    free_by_node,
    waiting,
)
from ansible_collections.gpucloud.platform.benchmarks.replay.records import (
    JobRecord,
    Run,
    Sample,
)

GPU = "nvidia.com/gpu"


def queue(name: str, parent: str = "root", capability: int | None = None, allocated: int = 0):
    spec: dict[str, Any] = {"parent": parent}
    if capability is not None:
        spec["capability"] = {GPU: str(capability)}
    return {
        "metadata": {"name": name},
        "spec": spec,
        "status": {"allocated": {GPU: str(allocated)}},
    }


def record(name: str, *, gpus: int = 4, at: float = 0, queue_name: str = "q", **kw) -> JobRecord:
    return JobRecord(
        name=name,
        tenant="acme",
        billing=kw.pop("billing", "subscription"),
        job_class="normal",
        queue=queue_name,
        gpus=gpus,
        at=at,
        duration_s=60,
        within_share=kw.pop("within_share", True),
        **kw,
    )


def vcjob(name: str, phase: str | None) -> dict[str, Any]:
    status = {"state": {"phase": phase}} if phase else {}
    return {"metadata": {"name": name}, "status": status}


# --------------------------------------------------------------------------
# A queue's room
# --------------------------------------------------------------------------


def test_room_is_the_least_room_on_the_way_to_root():
    rooms = queue_rooms(
        [
            queue("sub", capability=16, allocated=14),
            queue("team-a", parent="sub", capability=16, allocated=10),
            queue("team-b", parent="sub", capability=8, allocated=4),
            queue("spot", capability=6, allocated=6),
            queue("free"),
        ]
    )
    # team-a has 6 of its own but its subscription only 2; the subscription's holding is
    # at least its children's (14).
    assert rooms == {"sub": 2, "team-a": 2, "team-b": 2, "spot": 0, "free": None}


def test_a_queue_over_its_capability_has_no_room_not_a_negative_one():
    assert queue_rooms([queue("q", capability=4, allocated=6)]) == {"q": 0}


# --------------------------------------------------------------------------
# Rule waiting-cause
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stage", "room", "idle", "cause"),
    [
        (STAGE_SUBMITTING, 0, 0, HELD_AT_SUBMISSION),  # the submission first, whatever else
        (STAGE_CONTROLLER, 0, 64, AWAITING_CONTROLLER),
        (STAGE_QUEUED, 3, 64, queue_full("spot")),  # 4 asked, 3 of room
        (STAGE_PENDING, 3, 64, queue_full("spot")),  # the full queue is why it is not admitted
        (STAGE_PENDING, 4, 64, NOT_ADMITTED),  # room by what runs; enqueue counts more
        (STAGE_QUEUED, 4, 3, LARGER_THAN_IDLE),  # room enough, 3 idle
        (STAGE_QUEUED, None, 3, LARGER_THAN_IDLE),  # an unlimited queue
        (STAGE_QUEUED, 4, 4, NOT_YET_PLACED),
        (STAGE_QUEUED, None, 64, NOT_YET_PLACED),
    ],
)
def test_why_a_job_waits(stage, room, idle, cause):
    assert why_waiting(Waiting("j", "q", "spot", 4, stage), room, idle) == cause


@pytest.mark.parametrize(
    ("pods", "free", "fits"),
    [
        ((8,), (4, 4), False),  # 8 idle, on no one node
        ((4, 4), (4, 4), True),
        ((8, 1), (8, 1), True),  # largest first: first fit of 1 first would take the 8
        ((2, 2, 2), (3, 3), False),
        ((), (), True),
    ],
)
def test_a_gang_fits_only_if_each_pod_finds_a_node(pods, free, fits):
    assert gang_fits_nodes(pods, free) is fits


def test_a_gang_that_fits_the_idle_gpus_but_not_the_nodes_waits_on_fragmentation():
    job = Waiting("j", "q", "subscription", 8, STAGE_QUEUED, pods=(8,))
    assert why_waiting(job, None, 8, [4, 4]) == SPREAD_OVER_NODES
    assert why_waiting(job, None, 8, [8, 0]) == NOT_YET_PLACED
    assert why_waiting(job, None, 8) == NOT_YET_PLACED  # the nodes not known


def test_free_by_node_is_allocatable_less_what_running_pods_hold():
    def p(node: str, gpus: int, phase: str = "Running") -> dict[str, Any]:
        limits = {"limits": {GPU: str(gpus)}}
        return {
            "spec": {"nodeName": node, "containers": [{"resources": limits}]},
            "status": {"phase": phase},
        }

    pods = [p("n1", 4), p("n1", 2), p("n2", 8), p("n3", 8, "Succeeded")]
    assert free_by_node({"n1": 8, "n2": 8, "n3": 8}, pods) == [2, 0, 8]


def test_each_waiting_job_gets_its_own_queues_room():
    jobs = [
        Waiting("a", "full", "payg", 2, STAGE_QUEUED),
        Waiting("b", "open", "payg", 2, STAGE_QUEUED),
    ]
    assert look_causes(jobs, {"full": 1, "open": 8}, 16) == {
        "a": queue_full("payg"),
        "b": NOT_YET_PLACED,
    }


# --------------------------------------------------------------------------
# Rule idle-attribution
# --------------------------------------------------------------------------


def test_idle_gpus_go_to_the_waiting_jobs_in_order_and_the_rest_to_nobody():
    jobs = [
        Waiting("a", "q", "spot", 4, STAGE_QUEUED),
        Waiting("b", "q", "spot", 2, STAGE_QUEUED),
        Waiting("c", "q", "spot", 8, STAGE_QUEUED),
    ]
    causes = {"a": queue_full("spot"), "b": NOT_YET_PLACED, "c": queue_full("spot")}
    assert idle_by_cause(jobs, causes, 10) == {queue_full("spot"): 8, NOT_YET_PLACED: 2}
    assert idle_by_cause(jobs[:1], causes, 10) == {queue_full("spot"): 4, NO_JOB_WAITING: 6}
    assert idle_by_cause(jobs, causes, 0) == {}
    assert idle_by_cause([], {}, 5) == {NO_JOB_WAITING: 5}


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=64), max_size=20),
    st.integers(min_value=-8, max_value=128),
)
def test_idle_attribution_accounts_for_every_idle_gpu_once(asks, idle):
    jobs = [Waiting(f"j{i}", "q", "spot", gpus, STAGE_QUEUED) for i, gpus in enumerate(asks)]
    causes = {j.name: (NOT_YET_PLACED if i % 2 else LARGER_THAN_IDLE) for i, j in enumerate(jobs)}
    out = idle_by_cause(jobs, causes, idle)
    assert sum(out.values()) == max(0, idle)
    assert all(v > 0 for v in out.values())
    assert out.get(NO_JOB_WAITING, 0) == max(0, max(0, idle) - sum(asks))


# --------------------------------------------------------------------------
# The looks: who waits, and for how long by cause
# --------------------------------------------------------------------------


def test_waiting_jobs_are_the_submitting_ones_then_the_unstarted_in_submission_order():
    tracked = {
        "late": Tracked(record=record("late", at=30)),
        "known": Tracked(record=record("known", at=10)),
        "running": Tracked(record=record("running", at=0), running_since=5),
        "done": Tracked(record=record("done", at=0, finished=9)),
    }
    out = waiting(
        tracked, [record("held", at=20)], [vcjob("known", "Pending"), vcjob("late", None)]
    )
    assert [(w.name, w.stage) for w in out] == [
        ("known", STAGE_QUEUED),
        ("held", STAGE_SUBMITTING),
        ("late", STAGE_CONTROLLER),  # no phase yet: the job controller has not reached it
    ]


def test_a_jobs_waits_add_up_by_cause():
    waited: dict[str, float] = {}
    charge(waited, NOT_YET_PLACED, 2)
    charge(waited, queue_full("spot"), 5)
    charge(waited, NOT_YET_PLACED, 1.5)
    assert waited == {NOT_YET_PLACED: 3.5, queue_full("spot"): 5}


# --------------------------------------------------------------------------
# What the run adds up to
# --------------------------------------------------------------------------


def run_of(jobs=(), samples=(), day_s: float = 400) -> Run:
    return Run(
        configuration="platform",
        trace="day.yaml",
        factor=60,
        day_s=day_s,
        reconcile_period_s=30,
        schedule_period_s=5,
        throttle_window_s=300,
        jobs=tuple(jobs),
        samples=tuple(samples),
    )


def test_idle_gpu_hours_count_only_the_busy_windows_each_look_holding_until_the_next():
    samples = (
        Sample(at=0, allocated=4, capacity=8, idle_by_cause={queue_full("spot"): 4}),
        Sample(at=3600, allocated=6, capacity=8, idle_by_cause={NO_JOB_WAITING: 2}),
        Sample(at=7200, allocated=8, capacity=8),
    )
    out = idle_gpu_h_by_cause(run_of(samples=samples, day_s=3 * 3600), [(1800, 5400)])
    # Half an hour of 4 idle GPUs, then half an hour of 2.
    assert out == {queue_full("spot"): pytest.approx(2.0), NO_JOB_WAITING: pytest.approx(1.0)}
    assert list(out) == [queue_full("spot"), NO_JOB_WAITING]  # most first


def test_a_breach_is_put_under_the_cause_its_job_waited_longest_for():
    jobs = (
        record(
            "a", started=200, waited_by_cause={queue_full("subscription"): 150, NOT_YET_PLACED: 50}
        ),
        record("b", started=200, waited_by_cause={NOT_YET_PLACED: 120, HELD_AT_SUBMISSION: 80}),
        record("c", started=200, waited_by_cause={queue_full("subscription"): 199}),
        record("d", started=200),  # ran between two looks
        record("prompt", started=10, waited_by_cause={NOT_YET_PLACED: 10}),  # no breach
        record("out", started=300, within_share=False, waited_by_cause={NOT_YET_PLACED: 300}),
    )
    r = run_of(jobs)  # bound 2 x 30 + 5 = 65 s
    assert breaches_by_cause(r) == {
        queue_full("subscription"): 2,
        NOT_YET_PLACED: 1,
        UNOBSERVED: 1,
    }
    assert longest_cause(jobs[3]) == UNOBSERVED


def test_the_tables_show_idle_hours_and_breach_causes_per_configuration():
    samples = (Sample(at=0, allocated=4, capacity=8, idle_by_cause={LARGER_THAN_IDLE: 4}),)
    jobs = (record("a", started=200, waited_by_cause={LARGER_THAN_IDLE: 200}),)
    figures = measure(run_of(jobs, samples, day_s=3600), [(0, 3600)])
    assert figures.idle_gpu_h == {LARGER_THAN_IDLE: pytest.approx(4.0)}
    assert figures.breaches_by_cause == {LARGER_THAN_IDLE: 1}
    cells = dict(rows({"platform": figures}))
    assert cells[f"idle in the busy windows (GPU-h), {LARGER_THAN_IDLE}"] == ["4.0"]
    assert cells[f"guarantee breaches, waiting longest for: {LARGER_THAN_IDLE}"] == ["1"]


# --------------------------------------------------------------------------
# The idle picture
# --------------------------------------------------------------------------


def test_idle_by_hour_is_each_hours_mean_with_nobody_waiting_last():
    samples = (
        Sample(at=0, allocated=4, capacity=8, idle_by_cause={NO_JOB_WAITING: 4}),
        Sample(at=1800, allocated=2, capacity=8, idle_by_cause={queue_full("spot"): 6}),
        Sample(at=5400, allocated=8, capacity=8),
    )
    out = idle_by_hour(run_of(samples=samples, day_s=3 * 3600))
    # Hour 0: 4 idle for half of it, 6 for the other half; hour 1: 6 for half of it.
    assert out == {queue_full("spot"): [3.0, 3.0, 0.0], NO_JOB_WAITING: [2.0, 0.0, 0.0]}
    assert list(out)[-1] == NO_JOB_WAITING


def test_draw_idle_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    samples = (Sample(at=0, allocated=4, capacity=8, idle_by_cause={LARGER_THAN_IDLE: 4}),)
    path = draw_idle(run_of(samples=samples, day_s=7200), [(0, 3600)], tmp_path / "idle.png")
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_each_value_of_a_step_series_holds_until_the_next_the_last_until_the_end():
    assert held_spans([0, 10, 30], 50) == [(0, 10), (10, 30), (30, 50)]
    assert held_spans([0, 60], 50) == [(0, 60), (60, 60)]  # a look after the end holds 0 s
    assert held_spans([], 50) == []
