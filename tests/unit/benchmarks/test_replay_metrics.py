# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a trace replay measures (benchmarks/replay/metrics.py), rule by rule, on runs made
by hand: the busy windows, the allocation over them, the waits, the guarantee breaches,
the starved large jobs, the spot goodput, the evictions and double evictions, the
tables and the verdict on the issue's targets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import fields, replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.benchmarks.replay import metrics
from ansible_collections.gpucloud.platform.benchmarks.replay.metrics import (
    PRODUCTION_RECONCILE_S,
    Figures,
    Percentiles,
    allocation_series,
    as_dict,
    busy_allocation,
    busy_windows,
    double_evictions,
    evictions_by_cause,
    goodput_share,
    guarantee_bound_s,
    guarantee_breaches,
    lost_gpu_h,
    markdown_table,
    measure,
    merge_windows,
    nearest_rank,
    never_ran,
    rows,
    spot_goodput_gpu_h,
    starved_large_jobs,
    table,
    time_weighted_mean,
    verdict,
    wait_percentiles,
    waited_s,
)
from ansible_collections.gpucloud.platform.benchmarks.replay.records import (
    CAUSE_ARBITER,
    CAUSE_SPOT,
    CAUSE_VOLCANO,
    Eviction,
    JobRecord,
    Run,
    Sample,
)
from ansible_collections.gpucloud.platform.benchmarks.traces.model import (
    Cluster,
    Job,
    Nodes,
    Trace,
)

ROOT = Path(__file__).resolve().parents[3]


def job(
    name: str = "j",
    *,
    billing: str = "subscription",
    job_class: str = "normal",
    gpus: int = 1,
    at: float = 0,
    duration_s: float = 60,
    within_share: bool = True,
    started: float | None = None,
    finished: float | None = None,
    evictions: tuple[Eviction, ...] = (),
    tenant: str = "acme",
) -> JobRecord:
    return JobRecord(
        name=name,
        tenant=tenant,
        billing=billing,
        job_class=job_class,
        queue=f"tenant-{tenant}-{billing}",
        gpus=gpus,
        at=at,
        duration_s=duration_s,
        within_share=within_share,
        started=started,
        finished=finished,
        evictions=evictions,
    )


def run(
    jobs: tuple[JobRecord, ...] = (),
    samples: tuple[Sample, ...] = (),
    *,
    configuration: str = "platform",
    day_s: float = 1000,
    reconcile_period_s: float = 30,
    schedule_period_s: float = 5,
    throttle_window_s: float = 300,
    bills: dict[str, float] | None = None,
) -> Run:
    return Run(
        configuration=configuration,
        trace="day.yaml",
        factor=60,
        day_s=day_s,
        reconcile_period_s=reconcile_period_s,
        schedule_period_s=schedule_period_s,
        throttle_window_s=throttle_window_s,
        jobs=jobs,
        samples=samples,
        bills=bills or {},
        seed=7,
    )


def trace_job(at: float, gpus: int, duration_s: float) -> Job:
    return Job(
        at=at,
        tenant="acme",
        billing="payg",
        job_class="normal",
        kind="single",
        replicas=1,
        gpus_per_pod=gpus,
        duration_s=duration_s,
    )


def trace_of(*jobs: Job, gpus: int = 8) -> Trace:
    return Trace(cluster=Cluster((Nodes(1, gpus),)), jobs=jobs)


def evicted(*times: float, cause: str = CAUSE_VOLCANO, ran_s: float = 0) -> tuple[Eviction, ...]:
    return tuple(Eviction(at=t, cause=cause, ran_s=ran_s) for t in times)


# A day of 400 s sampled four times on 8 GPUs: 50 %, 100 %, 25 % from 0, 100 and 300 s.
SAMPLES = (
    Sample(at=100, allocated=8, capacity=8),
    Sample(at=0, allocated=4, capacity=8),
    Sample(at=300, allocated=2, capacity=8),
)


# --------------------------------------------------------------------------
# Busy windows
# --------------------------------------------------------------------------


def test_merge_windows_joins_touching_and_overlapping_windows_in_time_order():
    assert merge_windows([(400, 500), (0, 100), (100, 200), (150, 250)]) == [
        (0, 250),
        (400, 500),
    ]
    assert merge_windows([]) == []


def test_busy_windows_are_the_hours_asking_for_the_cluster_merged():
    # Hours of 100 s on 8 GPUs: 8 GPUs asked in hours 0 and 1, 4 in hour 3, 8 in hour 4.
    trace = trace_of(trace_job(0, 8, 200), trace_job(300, 4, 100), trace_job(400, 8, 100))
    assert busy_windows(trace, 100) == [(0, 200), (400, 500)]


def test_busy_windows_counts_an_hour_asking_exactly_the_cluster():
    trace = trace_of(trace_job(0, 4, 100), trace_job(0, 4, 100))
    assert busy_windows(trace, 100) == [(0, 100)]


def test_busy_windows_fall_back_on_the_busiest_hour():
    # 2 GPUs in hour 0, 4 in hour 1, 2 in hour 2: none reaches 8.
    trace = trace_of(trace_job(0, 2, 100), trace_job(100, 4, 100), trace_job(200, 2, 100))
    assert busy_windows(trace, 100) == [(100, 200)]


def test_busy_windows_of_an_empty_trace_is_its_first_hour():
    assert busy_windows(trace_of(), 3600) == [(0, 3600)]


# --------------------------------------------------------------------------
# Allocation
# --------------------------------------------------------------------------


def test_allocation_series_is_allocated_over_capacity_in_time_order():
    samples = (*SAMPLES, Sample(at=350, allocated=0, capacity=0))
    assert allocation_series(run(samples=samples)) == [
        (0, 0.5),
        (100, 1.0),
        (300, 0.25),
        (350, 0.0),  # no capacity: nothing allocated either
    ]


@pytest.mark.parametrize(
    ("windows", "mean"),
    [
        ([(50, 150)], 0.75),  # 50 s at 50 %, 50 s at 100 %
        ([(0, 400)], 0.6875),  # (100 x 0.5 + 200 x 1.0 + 100 x 0.25) / 400
        ([(0, 100), (300, 400)], 0.375),
        ([(0, 100), (50, 100)], 0.5),  # overlapping windows count once
        ([(350, 500)], 0.25),  # the last sample holds until the end of the day, not past
        ([(400, 500)], None),  # after the replay: nothing observed
    ],
)
def test_busy_allocation_weights_each_sample_by_how_long_it_held(windows, mean):
    assert busy_allocation(run(samples=SAMPLES, day_s=400), windows) == mean


def test_busy_allocation_before_the_first_sample_is_not_counted():
    samples = (Sample(at=200, allocated=8, capacity=8),)
    assert busy_allocation(run(samples=samples, day_s=400), [(0, 300)]) == 1.0
    assert busy_allocation(run(samples=(), day_s=400), [(0, 300)]) is None


@settings(max_examples=60, deadline=None)
@given(
    points=st.lists(
        st.tuples(
            st.floats(min_value=0, max_value=10_000),
            st.integers(min_value=1, max_value=512),
            st.floats(min_value=0, max_value=1),
        ),
        min_size=1,
        max_size=30,
    ),
    start=st.floats(min_value=0, max_value=10_000),
    length=st.floats(min_value=1, max_value=10_000),
)
def test_mean_allocation_is_a_share_of_the_capacity(points, start, length):
    samples = tuple(
        Sample(at=at, allocated=int(capacity * share), capacity=capacity)
        for at, capacity, share in points
    )
    mean = busy_allocation(run(samples=samples, day_s=20_000), [(start, start + length)])
    assert mean is None or 0 <= mean <= 1


@settings(max_examples=60, deadline=None)
@given(
    times=st.lists(st.floats(min_value=0, max_value=10_000), min_size=1, max_size=30),
    value=st.floats(min_value=0, max_value=1),
    start=st.floats(min_value=0, max_value=10_000),
    length=st.floats(min_value=1, max_value=10_000),
)
def test_mean_of_a_constant_allocation_is_that_constant(times, value, start, length):
    series = sorted((t, value) for t in times)
    mean = time_weighted_mean(series, [(start, start + length)], end=20_000)
    # The first sample may come after the window: then nothing was observed.
    if min(times) >= start + length:
        assert mean is None
    else:
        assert mean == pytest.approx(value)


# --------------------------------------------------------------------------
# Waits
# --------------------------------------------------------------------------


def test_nearest_rank_is_a_value_seen():
    assert [nearest_rank(range(1, 11), p) for p in (50, 95, 99, 100)] == [5, 10, 10, 10]
    assert [nearest_rank(range(100, 0, -1), p) for p in (1, 50, 95, 99)] == [1, 50, 95, 99]
    assert nearest_rank([7.5], 50) == 7.5


def test_nearest_rank_refuses_no_values_and_a_percent_out_of_range():
    with pytest.raises(ValueError, match="no values"):
        nearest_rank([], 50)
    with pytest.raises(ValueError, match="not in"):
        nearest_rank([1], 0)
    with pytest.raises(ValueError, match="not in"):
        nearest_rank([1], 101)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1e6), min_size=1, max_size=200))
def test_percentiles_are_monotone_and_among_the_waits(waits):
    jobs = tuple(job(f"j{i}", at=0, started=w) for i, w in enumerate(waits))
    (p,) = wait_percentiles(jobs).values()
    assert p.count == len(waits)
    assert min(waits) <= p.p50 <= p.p95 <= p.p99 <= max(waits)
    assert {p.p50, p.p95, p.p99} <= set(waits)


def test_waits_by_class_and_billing_leave_out_jobs_that_never_ran():
    jobs = (
        *(job(f"n{w}", at=100, started=100 + w) for w in (40, 10, 30, 20)),
        job("n-never", at=100),
        job("s", billing="spot", job_class="spot", at=50, started=55),
        job("d-never", job_class="debug"),
        job("c", job_class="critical", at=0, started=3),
    )
    assert wait_percentiles(jobs) == {
        ("critical", "subscription"): Percentiles(count=1, p50=3, p95=3, p99=3),
        ("normal", "subscription"): Percentiles(count=4, p50=20, p95=40, p99=40),
        ("spot", "spot"): Percentiles(count=1, p50=5, p95=5, p99=5),
    }
    assert list(wait_percentiles(jobs)) == [
        ("critical", "subscription"),
        ("normal", "subscription"),
        ("spot", "spot"),
    ]
    assert never_ran(jobs) == {("normal", "subscription"): 1, ("debug", "subscription"): 1}
    assert list(never_ran(jobs)) == [("normal", "subscription"), ("debug", "subscription")]


# --------------------------------------------------------------------------
# Guarantees and starvation
# --------------------------------------------------------------------------


def test_guarantee_bound_is_two_reconcile_periods_and_a_schedule_period():
    assert guarantee_bound_s(run(reconcile_period_s=30, schedule_period_s=5)) == 65
    assert PRODUCTION_RECONCILE_S == 60
    # Without reconcilers the production period of a minute stands in.
    assert guarantee_bound_s(run(reconcile_period_s=0, schedule_period_s=5)) == 125


def test_a_job_that_never_started_waited_until_the_end_of_the_replay():
    r = run(day_s=1000)
    assert waited_s(job(at=900), r) == 100
    assert waited_s(job(at=900, started=910), r) == 10


def test_guarantee_breaches_are_subscription_jobs_within_share_waiting_past_the_bound():
    jobs = (
        job("over", at=100, started=166),  # 66 s > 65 s
        job("at-bound", at=100, started=165),  # 65 s: not more than the bound
        job("beyond-share", at=0, started=500, within_share=False),
        job("payg", billing="payg", at=0, started=500),
        job("never-early", at=900),  # waited 100 s until the end of the day
        job("never-late", at=950),  # 50 s
    )
    r = run(jobs, day_s=1000, reconcile_period_s=30, schedule_period_s=5)
    assert guarantee_breaches(r) == ("over", "never-early")


def test_guarantee_breaches_without_reconcilers_use_the_production_period():
    jobs = (job("a", at=0, started=100), job("b", at=0, started=126))
    assert guarantee_breaches(run(jobs, reconcile_period_s=0, schedule_period_s=5)) == ("b",)
    assert guarantee_breaches(run(jobs, reconcile_period_s=30, schedule_period_s=5)) == (
        "a",
        "b",
    )


def test_starved_large_jobs_waited_past_the_throttle_window():
    jobs = (
        job("late", job_class="large", billing="payg", at=0, started=301),
        job("on-time", job_class="large", billing="payg", at=0, started=300),
        job("never", job_class="large", at=600),  # 400 s until the end of the day
        job("never-late", job_class="large", at=800),  # 200 s
        job("normal", at=0, started=1000),
    )
    assert starved_large_jobs(run(jobs, day_s=1000, throttle_window_s=300)) == ("late", "never")


# --------------------------------------------------------------------------
# Goodput, evictions
# --------------------------------------------------------------------------

GOODPUT_JOBS = (
    # Finished: 4 GPUs x 1800 s = 2 GPU-hours.
    job("s1", billing="spot", job_class="spot", gpus=4, duration_s=1800, started=0, finished=1800),
    # Evicted after 900 s on 8 GPUs, never finished: 2 GPU-hours lost.
    job(
        "s2",
        billing="spot",
        job_class="spot",
        gpus=8,
        started=0,
        evictions=evicted(900, cause=CAUSE_SPOT, ran_s=900),
    ),
    # Evicted after 1800 s on 2 GPUs (1 GPU-hour lost), then finished its hour (2).
    job(
        "s3",
        billing="spot",
        job_class="spot",
        gpus=2,
        duration_s=3600,
        started=0,
        finished=5400,
        evictions=evicted(1800, ran_s=1800),
    ),
    # Pay-as-you-go, 16 GPUs evicted after 450 s: 2 GPU-hours lost, not spot's.
    job(
        "p",
        billing="payg",
        gpus=16,
        started=0,
        evictions=evicted(450, cause=CAUSE_ARBITER, ran_s=450),
    ),
)


def test_spot_goodput_is_the_gpu_hours_of_finished_spot_jobs():
    assert spot_goodput_gpu_h(GOODPUT_JOBS) == 4.0


def test_lost_work_is_the_gpu_hours_evictions_threw_away():
    assert lost_gpu_h(GOODPUT_JOBS, "spot") == 3.0
    assert lost_gpu_h(GOODPUT_JOBS, "payg") == 2.0
    assert lost_gpu_h(GOODPUT_JOBS) == 5.0
    assert goodput_share(4.0, 3.0) == pytest.approx(4 / 7)
    assert goodput_share(0, 0) is None


def test_evictions_by_cause_count_every_cause_and_keep_unknown_ones():
    jobs = (
        job("a", evictions=evicted(10, 20, cause=CAUSE_VOLCANO)),
        job("b", evictions=(*evicted(5, cause=CAUSE_SPOT), *evicted(7, cause="oom"))),
    )
    assert evictions_by_cause(jobs) == {
        CAUSE_VOLCANO: 2,
        CAUSE_ARBITER: 0,
        CAUSE_SPOT: 1,
        "oom": 1,
    }
    assert evictions_by_cause(()) == {CAUSE_VOLCANO: 0, CAUSE_ARBITER: 0, CAUSE_SPOT: 0}


def test_double_evictions_are_a_job_evicted_again_within_the_guarantee_bound():
    jobs = (
        # Volcano, then the arbiter 50 s later: one shortage, evicted twice.
        job("x", evictions=(Eviction(150, CAUSE_ARBITER, 0), Eviction(100, CAUSE_VOLCANO, 30))),
        job("y", evictions=evicted(100, 166)),  # 66 s apart: a second shortage
        job("z", evictions=evicted(0, 60, 120)),  # three in one shortage: two repeats
        job("once", evictions=evicted(10)),
    )
    assert double_evictions(run(jobs, reconcile_period_s=30, schedule_period_s=5)) == (
        ("x", 150),
        ("z", 60),
        ("z", 120),
    )
    # Without reconcilers the bound is 2 x 60 + 5 = 125 s: y's two are one shortage too.
    assert double_evictions(run(jobs, reconcile_period_s=0, schedule_period_s=5)) == (
        ("x", 150),
        ("y", 166),
        ("z", 60),
        ("z", 120),
    )


# --------------------------------------------------------------------------
# Figures, tables, verdict
# --------------------------------------------------------------------------


def platform_run() -> Run:
    jobs = (
        *GOODPUT_JOBS,
        job("late", at=0, started=100),  # a guarantee breach (bound 65 s)
        job("big", job_class="large", billing="payg", gpus=32, at=0, started=400),  # starved
        job("twice", started=0, evictions=evicted(100, 120)),
        job("waiting", job_class="debug", at=300),  # never started: waited 100 s
    )
    return replace(
        run(jobs, SAMPLES, day_s=400, bills={"beta": 2.5, "acme": 10.0}),
        reconcile_runs={"spot_recompute": 12, "payg_reconcile": 7},
        events={"pool_changed": 3, "paying_job_blocked": 2},
    )


def static_run() -> Run:
    samples = (Sample(at=0, allocated=4, capacity=8),)
    return run((job("ok", at=0, started=10),), samples, configuration="static", day_s=400)


def test_measure_gathers_every_figure():
    f = measure(platform_run(), [(0, 100), (50, 150)])
    assert f.configuration == "platform"
    assert f.jobs == 8
    assert f.busy == ((0, 150),)
    assert f.allocation == ((0, 0.5), (100, 1.0), (300, 0.25))
    assert f.busy_allocation == pytest.approx(2 / 3)  # 100 s at 50 %, 50 s at 100 %
    assert f.waits[("normal", "subscription")] == Percentiles(count=2, p50=0, p95=100, p99=100)
    assert f.waits[("normal", "payg")] == Percentiles(count=1, p50=0, p95=0, p99=0)
    assert f.never_ran == {("debug", "subscription"): 1}
    assert f.guarantee_bound_s == 65
    assert f.guarantee_breaches == ("late", "waiting")
    assert f.starved_large_jobs == ("big",)
    assert (f.spot_goodput_gpu_h, f.spot_lost_gpu_h, f.lost_gpu_h) == (4.0, 3.0, 5.0)
    assert f.evictions == {CAUSE_VOLCANO: 3, CAUSE_ARBITER: 1, CAUSE_SPOT: 1}
    assert f.double_evictions == (("twice", 120),)
    assert f.bills == {"beta": 2.5, "acme": 10.0}
    assert f.reconcile_runs == {"spot_recompute": 12, "payg_reconcile": 7}
    assert f.events == 5


def test_as_dict_is_json():
    d = json.loads(json.dumps(as_dict(measure(platform_run(), [(0, 150)]))))
    assert d["busy"] == [[0, 150]]
    assert d["waits"]["normal/subscription"] == {"count": 2, "p50": 0, "p95": 100, "p99": 100}
    assert d["never_ran"] == {"debug/subscription": 1}
    assert d["guarantee_breaches"] == ["late", "waiting"]
    assert d["double_evictions"] == [{"job": "twice", "at": 120}]
    assert d["evictions"] == {"volcano": 3, "arbiter": 1, "spot-reclaim": 1}
    assert d["spot_goodput_share"] == pytest.approx(4 / 7)
    assert set(d) == {f.name for f in fields(Figures)}


def figures_by_configuration() -> dict[str, Figures]:
    busy = [(0, 150)]
    return {"platform": measure(platform_run(), busy), "static": measure(static_run(), busy)}


def test_rows_put_one_cell_per_configuration():
    cells = dict(rows(figures_by_configuration()))
    assert cells["jobs"] == ["8", "1"]
    assert cells["allocation, busy-window mean"] == ["66.7 %", "50.0 %"]
    assert cells["wait p50 / p95 / p99 (s), normal/subscription"] == [
        "0 / 100 / 100",
        "10 / 10 / 10",
    ]
    assert cells["wait p50 / p95 / p99 (s), large/payg"] == ["400 / 400 / 400", "-"]
    assert cells["never ran, debug/subscription"] == ["1", "0"]
    assert cells["guarantee bound (s)"] == ["65", "65"]
    assert cells["guarantee breaches"] == ["2", "0"]
    assert cells["large jobs starved"] == ["1", "0"]
    assert cells["spot goodput (GPU-h)"] == ["4.0", "0.0"]
    assert cells["spot lost to evictions (GPU-h)"] == ["3.0", "0.0"]
    assert cells["spot goodput share"] == ["57.1 %", "-"]
    assert cells["lost to evictions, all (GPU-h)"] == ["5.0", "0.0"]
    assert cells["evictions, volcano"] == ["3", "0"]
    assert cells["evictions, spot-reclaim"] == ["1", "0"]
    assert cells["double evictions"] == ["1", "0"]
    # Tenants in name order; a configuration without a bill for one shows "-".
    assert [label for label in cells if label.startswith("bill")] == [
        "bill acme (GPU-h)",
        "bill beta (GPU-h)",
    ]
    assert cells["bill beta (GPU-h)"] == ["2.5", "-"]
    # The reconcilers' runs and the events the platform-events replay received.
    assert cells["platform events received"] == ["5", "0"]
    assert cells["runs, spot_recompute"] == ["12", "0"]
    assert cells["runs, payg_reconcile"] == ["7", "0"]


def test_table_aligns_configurations_as_columns():
    lines = table(figures_by_configuration()).splitlines()
    assert lines[0].split() == ["figure", "platform", "static"]
    assert set(lines[1]) <= {"-", " "}
    breaches = next(x for x in lines if x.startswith("guarantee breaches"))
    assert breaches.split() == ["guarantee", "breaches", "2", "0"]
    # Every column is aligned right, the last included: every line is as long as the rule.
    assert {len(x) for x in lines} == {len(lines[1])}


def test_markdown_table_shows_the_same_rows():
    text = markdown_table(figures_by_configuration())
    lines = text.splitlines()
    assert lines[:2] == ["| figure | platform | static |", "|---|---:|---:|"]
    assert "| allocation, busy-window mean | 66.7 % | 50.0 % |" in lines
    assert "| double evictions | 1 | 0 |" in lines
    assert len(lines) == 2 + len(rows(figures_by_configuration()))


def test_verdict_names_each_figure_and_target():
    figures = figures_by_configuration()
    assert verdict(figures["platform"], figures["static"]) == [
        "misses: mean allocation over the busy windows 66.7 %, target at least 88.0 % "
        "(static: 50.0 %)",
        "misses: guarantee breaches (waits over 65 s) 2, target 0 (static: 0)",
        "misses: double evictions 1, target 0 (static: 0)",
    ]


def test_verdict_holds_when_every_target_is_met():
    full = (Sample(at=0, allocated=8, capacity=8), Sample(at=200, allocated=7, capacity=8))
    f = measure(run((job("ok", at=0, started=10),), full, day_s=400), [(0, 400)])
    assert verdict(f, None) == [
        "holds: mean allocation over the busy windows 93.8 %, target at least 88.0 %",
        "holds: guarantee breaches (waits over 65 s) 0, target 0",
        "holds: double evictions 0, target 0",
    ]


def test_verdict_on_an_unobserved_busy_window_misses():
    f = measure(run(day_s=400), [(0, 400)])
    assert verdict(f, None)[0] == (
        "misses: mean allocation over the busy windows -, target at least 88.0 %"
    )


def test_metrics_work_without_matplotlib():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(ROOT / ".venv" / "collections")
    code = (
        "import sys\n"
        "from ansible_collections.gpucloud.platform.benchmarks.replay import metrics, picture\n"
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert metrics.PRODUCTION_RECONCILE_S == 60
