# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a replay measured, from its ``records.Run`` and the trace's busy windows. Pure: no
I/O, no cluster; every rule is one function, named after what it judges.

All times are traced seconds (the trace's own clock), as ``records`` keeps them.

- **Busy windows** (``busy_windows``): the hours (a 24th of the day, as
  ``summary.asked_by_hour`` cuts them) in which the trace asks for at least the cluster's
  GPUs, adjacent hours merged; the busiest hour alone when none does. Allocation only
  tells how well GPUs are used when there is more work than GPUs: at 05:00 an idle
  cluster is the trace's doing, not the scheduler's.
- **Allocation** (``allocation_series``, ``time_weighted_mean``): each sample's allocated
  over capacity, holding until the next sample (the last one until the end of the
  replay), averaged over the busy windows weighted by how long each value held.
- **Waits** (``wait_percentiles``, ``never_ran``): nearest-rank p50, p95 and p99 of the
  submission-to-Running time per (class, billing type); a job that never ran has no wait
  and is counted apart, so it neither hides in nor inflates the percentiles.
- **Guarantee breaches** (``guarantee_breaches``): a subscription job within its queue's
  share that waited longer than ``guarantee_bound_s``.
- **Starved large jobs** (``starved_large_jobs``): a large job that waited longer than the
  throttle window.
- **Spot goodput** (``spot_goodput_gpu_h``, ``lost_gpu_h``): GPU-hours of finished spot
  jobs against the GPU-hours evictions threw away.
- **Evictions** (``evictions_by_cause``) and **double evictions** (``double_evictions``).
- **Idle GPUs by cause** (``idle_gpu_h_by_cause``): over the busy windows, the GPU-hours
  that stood idle while a job that asked for them waited, by why it waited (rules
  waiting-cause and idle-attribution, ``idle``), and those no waiting job asked for.
- **Breaches by cause** (``breaches_by_cause``): each guarantee breach under the cause
  its job waited longest for.
- **Bills** per tenant: carried from the run as they are.

A job that never started counts as waiting until the end of the replay (``run.day_s``)
wherever a wait is judged against a bound (``waited_s``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    BILLING_TYPES,
    JOB_CLASSES,
)

from ..traces.model import Trace
from ..traces.summary import asked_by_hour
from .records import CAUSES, JobRecord, Run

# The reconcilers' period in production (one minute): the bound a guarantee is judged by
# when the replayed configuration runs no reconciler (``reconcile_period_s`` 0), so a
# configuration without them is held to what the platform promises, not let off.
PRODUCTION_RECONCILE_S = 60.0
# The targets.
TARGET_ALLOCATION = 0.88  # mean allocation over the busy windows, at least
TARGET_BREACHES = 0  # guarantee breaches
TARGET_DOUBLE_EVICTIONS = 0
PERCENTILES = (50, 95, 99)
SUBSCRIPTION = "subscription"
SPOT = "spot"
LARGE = "large"
UNOBSERVED = "unobserved"  # a job no look saw waiting

Window = tuple[float, float]
Group = tuple[str, str]  # (class, billing type)


# --------------------------------------------------------------------------
# Busy windows and allocation
# --------------------------------------------------------------------------


def merge_windows(windows: Iterable[Window]) -> list[Window]:
    """The windows in time order, those that touch or overlap made one."""
    out: list[Window] = []
    for start, end in sorted(windows):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def busy_windows(trace: Trace, hour_s: float) -> list[Window]:
    """The (start, end) spans of the hours whose asked GPUs (``asked_by_hour``, every job
    run from its submission) are at least the cluster's, adjacent hours merged; the
    busiest hour alone when none is, so that every trace has a window to judge."""
    asked = asked_by_hour(trace.jobs, hour_s)
    gpus = trace.cluster.gpus()
    hours = [h for h, held in enumerate(asked) if held >= gpus]
    if not hours:
        hours = [max(range(len(asked)), key=asked.__getitem__)]
    return merge_windows((h * hour_s, (h + 1) * hour_s) for h in hours)


def allocation_ratio(allocated: int, capacity: int) -> float:
    """Allocated over capacity; 0 without capacity (no node registered yet), where no GPU
    can be allocated either."""
    return allocated / capacity if capacity > 0 else 0.0


def allocation_series(run: Run) -> list[tuple[float, float]]:
    """(traced second, allocation ratio) of every sample, in time order."""
    samples = sorted(run.samples, key=lambda s: s.at)
    return [(s.at, allocation_ratio(s.allocated, s.capacity)) for s in samples]


def overlap(start: float, end: float, windows: Sequence[Window]) -> float:
    """How many seconds of [start, end) fall inside the windows (merged, disjoint)."""
    return sum(max(0.0, min(end, w_end) - max(start, w_start)) for w_start, w_end in windows)


def held_spans(times: Sequence[float], end: float) -> list[Window]:
    """(from, until) of each of a step series' values, its times in order: a value holds
    until the next one's time, the last until ``end`` (never before its own time)."""
    return [
        (at, times[i + 1] if i + 1 < len(times) else max(at, end)) for i, at in enumerate(times)
    ]


def time_weighted_mean(
    series: Sequence[tuple[float, float]], windows: Iterable[Window], end: float
) -> float | None:
    """The mean of a step series over the windows: each value holds from its time until
    the next one's, the last until ``end``; None when no value holds inside a window (the
    replay saw none of it). Weighting by time keeps a burst of samples around one event
    from counting more than a quiet hour sampled once."""
    merged = merge_windows(windows)
    total = weighted = 0.0
    spans = held_spans([at for at, _value in series], end)
    for (_at, value), (start, until) in zip(series, spans, strict=True):
        held = overlap(start, until, merged)
        total += held
        weighted += value * held
    return weighted / total if total > 0 else None


def busy_allocation(run: Run, busy: Iterable[Window]) -> float | None:
    """The run's time-weighted mean allocation over the busy windows."""
    return time_weighted_mean(allocation_series(run), busy, run.day_s)


# --------------------------------------------------------------------------
# Waits
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Percentiles:
    """Nearest-rank percentiles of ``count`` waits, traced seconds."""

    count: int
    p50: float
    p95: float
    p99: float


def nearest_rank(values: Sequence[float], percent: float) -> float:
    """The nearest-rank percentile: the smallest value with at least ``percent`` % of the
    values at or below it. It is always one of the waits seen, never an interpolation
    between two jobs."""
    if not values:
        raise ValueError("no values")
    if not 0 < percent <= 100:
        raise ValueError(f"percent {percent} is not in (0, 100]")
    ordered = sorted(values)
    return ordered[max(1, math.ceil(percent / 100 * len(ordered))) - 1]


def group_of(job: JobRecord) -> Group:
    return (job.job_class, job.billing)


def group_order(group: Group) -> tuple[int, int, Group]:
    """Groups in the platform's order of classes, then of billing types; unknown last."""
    job_class, billing = group
    return (
        JOB_CLASSES.index(job_class) if job_class in JOB_CLASSES else len(JOB_CLASSES),
        BILLING_TYPES.index(billing) if billing in BILLING_TYPES else len(BILLING_TYPES),
        group,
    )


def wait_percentiles(jobs: Iterable[JobRecord]) -> dict[Group, Percentiles]:
    """(class, billing) -> the percentiles of the waits of its jobs that started."""
    waits: dict[Group, list[float]] = {}
    for job in jobs:
        if job.wait_s is not None:
            waits.setdefault(group_of(job), []).append(job.wait_s)
    return {
        g: Percentiles(len(w), *(nearest_rank(w, p) for p in PERCENTILES))
        for g, w in sorted(waits.items(), key=lambda item: group_order(item[0]))
    }


def never_ran(jobs: Iterable[JobRecord]) -> dict[Group, int]:
    """(class, billing) -> how many of its jobs never started; groups with none left out."""
    counts = Counter(group_of(j) for j in jobs if j.started is None)
    return {g: counts[g] for g in sorted(counts, key=group_order)}


# --------------------------------------------------------------------------
# Bounds on waiting
# --------------------------------------------------------------------------


def reconcile_period_s(run: Run) -> float:
    """The reconcilers' period the run is judged by: its own, or the production one when
    it ran none."""
    return run.reconcile_period_s if run.reconcile_period_s > 0 else PRODUCTION_RECONCILE_S


def guarantee_bound_s(run: Run) -> float:
    """How long a job within its share may wait: two reconcile periods (one to notice the
    shortage, one for the evicted GPUs to be free) and a scheduling period to place it."""
    return 2 * reconcile_period_s(run) + run.schedule_period_s


def waited_s(job: JobRecord, run: Run) -> float:
    """Its wait; for a job that never started, from its submission to the end of the
    replay, since it waited at least that long."""
    return job.wait_s if job.wait_s is not None else run.day_s - job.at


def guarantee_breaches(run: Run) -> tuple[str, ...]:
    """The subscription jobs within their queue's share that waited longer than
    ``guarantee_bound_s``: the platform promises these a prompt start."""
    bound = guarantee_bound_s(run)
    return tuple(
        j.name
        for j in run.jobs
        if j.billing == SUBSCRIPTION and j.within_share and waited_s(j, run) > bound
    )


def starved_large_jobs(run: Run) -> tuple[str, ...]:
    """The large jobs that waited longer than the throttle window: the throttle is meant
    to clear room for them within it."""
    return tuple(
        j.name
        for j in run.jobs
        if j.job_class == LARGE and waited_s(j, run) > run.throttle_window_s
    )


def longest_cause(job: JobRecord) -> str:
    """The cause a job waited longest for; "unobserved" when no look saw it wait (it ran
    between two looks)."""
    if not job.waited_by_cause:
        return UNOBSERVED
    return max(sorted(job.waited_by_cause), key=job.waited_by_cause.__getitem__)


def breaches_by_cause(run: Run) -> dict[str, int]:
    """Cause -> guarantee breaches whose job waited longest for it, most first."""
    jobs = {j.name: j for j in run.jobs}
    counts = Counter(longest_cause(jobs[name]) for name in guarantee_breaches(run))
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


# --------------------------------------------------------------------------
# Idle GPUs
# --------------------------------------------------------------------------


def idle_gpu_h_by_cause(run: Run, windows: Iterable[Window]) -> dict[str, float]:
    """Cause -> GPU-hours idle over the busy windows: each look's idle GPUs by cause,
    holding until the next look (the last until the end of the replay), most first."""
    merged = merge_windows(windows)
    samples = sorted(run.samples, key=lambda s: s.at)
    out: dict[str, float] = {}
    spans = held_spans([s.at for s in samples], run.day_s)
    for sample, (start, until) in zip(samples, spans, strict=True):
        held = overlap(start, until, merged)
        for cause, gpus in sample.idle_by_cause.items():
            out[cause] = out.get(cause, 0.0) + gpus * held / 3600
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


# --------------------------------------------------------------------------
# Work done and lost
# --------------------------------------------------------------------------


def spot_goodput_gpu_h(jobs: Iterable[JobRecord]) -> float:
    """GPU-hours of spot jobs that finished: an evicted job starts over, so only a
    finished job's work reached its owner."""
    return (
        sum(j.gpus * j.duration_s for j in jobs if j.billing == SPOT and j.finished is not None)
        / 3600
    )


def lost_gpu_h(jobs: Iterable[JobRecord], billing: str | None = None) -> float:
    """GPU-hours thrown away by evictions (each eviction's run since the last start), of
    jobs of ``billing`` or of all."""
    return (
        sum(
            j.gpus * e.ran_s
            for j in jobs
            if billing is None or j.billing == billing
            for e in j.evictions
        )
        / 3600
    )


def goodput_share(goodput: float, lost: float) -> float | None:
    """The share of the GPU-hours spent that finished as work; None when none was spent."""
    spent = goodput + lost
    return goodput / spent if spent > 0 else None


def evictions_by_cause(jobs: Iterable[JobRecord]) -> dict[str, int]:
    """Cause -> evictions: every cause of ``records.CAUSES`` (0 when none), then any other
    the run recorded, so nothing recorded goes uncounted."""
    counts = Counter(e.cause for j in jobs for e in j.evictions)
    out = {cause: counts[cause] for cause in CAUSES}
    out |= {cause: n for cause, n in sorted(counts.items()) if cause not in out}
    return out


def double_evictions(run: Run) -> tuple[tuple[str, float], ...]:
    """(job, time of the repeat) for each eviction of a job that follows its previous one
    within ``guarantee_bound_s``.

    The records do not say which shortage an eviction answered, so "the same shortage" is
    recognised by time: a shortage is acted on and its GPUs freed within that bound (two
    reconcile periods and a scheduling period), so a job evicted again within it was
    evicted twice for one shortage, typically once by Volcano and once by a reconciler,
    whatever the causes recorded. A job evicted three times in quick succession counts
    twice."""
    bound = guarantee_bound_s(run)
    out: list[tuple[str, float]] = []
    for job in run.jobs:
        times = sorted(e.at for e in job.evictions)
        out += [(job.name, later) for earlier, later in pairwise(times) if later - earlier <= bound]
    return tuple(out)


# --------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Figures:
    """Everything measured of one run."""

    configuration: str
    jobs: int
    busy: tuple[Window, ...]  # the busy windows judged
    allocation: tuple[tuple[float, float], ...]  # (traced second, ratio), in time order
    busy_allocation: float | None  # time-weighted mean over ``busy``; None: not observed
    waits: dict[Group, Percentiles] = field(default_factory=dict)
    never_ran: dict[Group, int] = field(default_factory=dict)
    guarantee_bound_s: float = 0.0
    guarantee_breaches: tuple[str, ...] = ()  # job names
    throttle_window_s: float = 0.0
    starved_large_jobs: tuple[str, ...] = ()  # job names
    spot_goodput_gpu_h: float = 0.0
    spot_lost_gpu_h: float = 0.0
    spot_goodput_share: float | None = None
    lost_gpu_h: float = 0.0  # of every billing type
    evictions: dict[str, int] = field(default_factory=dict)  # cause -> count
    double_evictions: tuple[tuple[str, float], ...] = ()  # (job name, traced second)
    bills: dict[str, float] = field(default_factory=dict)  # tenant -> GPU-hours billed
    refused: int = 0  # jobs refused at submission
    backlog_max: int = 0  # the most Volcano Jobs awaiting the job controller at one look
    reconcile_runs: dict[str, int] = field(default_factory=dict)  # reconciler -> runs
    events: int = 0  # platform events received (platform-events only)
    idle_gpu_h: dict[str, float] = field(default_factory=dict)  # cause -> busy-window GPU-h
    breaches_by_cause: dict[str, int] = field(default_factory=dict)  # longest wait's cause


def measure(run: Run, busy: Iterable[Window]) -> Figures:
    """The figures of one run, judged over the busy windows ``busy``."""
    windows = tuple(merge_windows(busy))
    goodput = spot_goodput_gpu_h(run.jobs)
    spot_lost = lost_gpu_h(run.jobs, SPOT)
    return Figures(
        configuration=run.configuration,
        jobs=len(run.jobs),
        busy=windows,
        allocation=tuple(allocation_series(run)),
        busy_allocation=busy_allocation(run, windows),
        waits=wait_percentiles(run.jobs),
        never_ran=never_ran(run.jobs),
        guarantee_bound_s=guarantee_bound_s(run),
        guarantee_breaches=guarantee_breaches(run),
        throttle_window_s=run.throttle_window_s,
        starved_large_jobs=starved_large_jobs(run),
        spot_goodput_gpu_h=goodput,
        spot_lost_gpu_h=spot_lost,
        spot_goodput_share=goodput_share(goodput, spot_lost),
        lost_gpu_h=lost_gpu_h(run.jobs),
        evictions=evictions_by_cause(run.jobs),
        double_evictions=double_evictions(run),
        bills=dict(run.bills),
        refused=run.refused,
        backlog_max=max((sample.backlog for sample in run.samples), default=0),
        reconcile_runs=dict(run.reconcile_runs),
        events=sum(run.events.values()),
        idle_gpu_h=idle_gpu_h_by_cause(run, windows),
        breaches_by_cause=breaches_by_cause(run),
    )


def group_key(group: Group) -> str:
    """A (class, billing) group as one word, for JSON keys and table rows."""
    return "/".join(group)


def as_dict(figures: Figures) -> dict[str, Any]:
    """The figures as JSON takes them: groups as "class/billing" keys, tuples as lists."""
    return {
        "configuration": figures.configuration,
        "jobs": figures.jobs,
        "busy": [list(w) for w in figures.busy],
        "allocation": [list(point) for point in figures.allocation],
        "busy_allocation": figures.busy_allocation,
        "waits": {
            group_key(g): {"count": p.count, "p50": p.p50, "p95": p.p95, "p99": p.p99}
            for g, p in figures.waits.items()
        },
        "never_ran": {group_key(g): n for g, n in figures.never_ran.items()},
        "guarantee_bound_s": figures.guarantee_bound_s,
        "guarantee_breaches": list(figures.guarantee_breaches),
        "throttle_window_s": figures.throttle_window_s,
        "starved_large_jobs": list(figures.starved_large_jobs),
        "spot_goodput_gpu_h": figures.spot_goodput_gpu_h,
        "spot_lost_gpu_h": figures.spot_lost_gpu_h,
        "spot_goodput_share": figures.spot_goodput_share,
        "lost_gpu_h": figures.lost_gpu_h,
        "evictions": dict(figures.evictions),
        "double_evictions": [{"job": job, "at": at} for job, at in figures.double_evictions],
        "bills": dict(figures.bills),
        "refused": figures.refused,
        "backlog_max": figures.backlog_max,
        "reconcile_runs": dict(figures.reconcile_runs),
        "events": figures.events,
        "idle_gpu_h": dict(figures.idle_gpu_h),
        "breaches_by_cause": dict(figures.breaches_by_cause),
    }


# --------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------

MISSING = "-"  # a figure a configuration does not have (a group none of its jobs is in)


def percent(ratio: float | None) -> str:
    return MISSING if ratio is None else f"{100 * ratio:.1f} %"


def gpu_hours(value: float) -> str:
    return f"{value:,.1f}"


def waits_text(p: Percentiles | None) -> str:
    return MISSING if p is None else f"{p.p50:.0f} / {p.p95:.0f} / {p.p99:.0f}"


def in_order(keys: Iterable[Any], order: Callable[[Any], Any] | None = None) -> list[Any]:
    """The keys of every configuration once, in the first order seen, or sorted by
    ``order``."""
    seen = list(dict.fromkeys(keys))
    return sorted(seen, key=order) if order is not None else seen


def rows(figures_by_configuration: Mapping[str, Figures]) -> list[tuple[str, list[str]]]:
    """(figure, one cell per configuration): what both tables show."""
    all_figures = list(figures_by_configuration.values())

    def row(label: str, cell: Callable[[Figures], str]) -> tuple[str, list[str]]:
        return (label, [cell(f) for f in all_figures])

    groups = in_order((g for f in all_figures for g in f.waits), group_order)
    unstarted = in_order((g for f in all_figures for g in f.never_ran), group_order)
    causes = in_order(c for f in all_figures for c in f.evictions)
    tenants = in_order((t for f in all_figures for t in f.bills), str)
    reconcilers = in_order(r for f in all_figures for r in f.reconcile_runs)
    idle_causes = in_order(c for f in all_figures for c in f.idle_gpu_h)
    breach_causes = in_order(c for f in all_figures for c in f.breaches_by_cause)
    return [
        row("jobs", lambda f: str(f.jobs)),
        row("refused at submission", lambda f: str(f.refused)),
        row("most jobs awaiting Volcano's controller", lambda f: str(f.backlog_max)),
        row("allocation, busy-window mean", lambda f: percent(f.busy_allocation)),
        *(
            row(
                f"idle in the busy windows (GPU-h), {c}",
                lambda f, c=c: gpu_hours(f.idle_gpu_h.get(c, 0.0)),
            )
            for c in idle_causes
        ),
        *(
            row(
                f"wait p50 / p95 / p99 (s), {group_key(g)}",
                lambda f, g=g: waits_text(f.waits.get(g)),
            )
            for g in groups
        ),
        *(
            row(f"never ran, {group_key(g)}", lambda f, g=g: str(f.never_ran.get(g, 0)))
            for g in unstarted
        ),
        row("guarantee bound (s)", lambda f: f"{f.guarantee_bound_s:.0f}"),
        row("guarantee breaches", lambda f: str(len(f.guarantee_breaches))),
        *(
            row(
                f"guarantee breaches, waiting longest for: {c}",
                lambda f, c=c: str(f.breaches_by_cause.get(c, 0)),
            )
            for c in breach_causes
        ),
        row("large jobs starved", lambda f: str(len(f.starved_large_jobs))),
        row("spot goodput (GPU-h)", lambda f: gpu_hours(f.spot_goodput_gpu_h)),
        row("spot lost to evictions (GPU-h)", lambda f: gpu_hours(f.spot_lost_gpu_h)),
        row("spot goodput share", lambda f: percent(f.spot_goodput_share)),
        row("lost to evictions, all (GPU-h)", lambda f: gpu_hours(f.lost_gpu_h)),
        *(row(f"evictions, {c}", lambda f, c=c: str(f.evictions.get(c, 0))) for c in causes),
        row("double evictions", lambda f: str(len(f.double_evictions))),
        row("platform events received", lambda f: str(f.events)),
        *(row(f"runs, {r}", lambda f, r=r: str(f.reconcile_runs.get(r, 0))) for r in reconcilers),
        *(
            row(
                f"bill {t} (GPU-h)",
                lambda f, t=t: MISSING if t not in f.bills else gpu_hours(f.bills[t]),
            )
            for t in tenants
        ),
    ]


def table(figures_by_configuration: Mapping[str, Figures]) -> str:
    """A plain-text table: configurations as columns, figures as rows, numbers aligned
    right."""
    header = ["figure", *figures_by_configuration]
    body = [[label, *cells] for label, cells in rows(figures_by_configuration)]
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = (c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))
        return "  ".join([first, *rest]).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in body)])


def markdown_table(figures_by_configuration: Mapping[str, Figures]) -> str:
    """The same table in Markdown, for docs."""
    header = ["figure", *figures_by_configuration]
    lines = [
        "| " + " | ".join(header) + " |",
        "|---|" + "---:|" * len(figures_by_configuration),
    ]
    lines += [
        "| " + " | ".join([label, *cells]) + " |" for label, cells in rows(figures_by_configuration)
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------
# The targets
# --------------------------------------------------------------------------


def holds(ok: bool) -> str:
    return "holds" if ok else "misses"


def allocation_verdict(platform: Figures, static: Figures | None) -> str:
    """Mean busy-window allocation at least TARGET_ALLOCATION; static's beside it, as the
    figure the platform's borrowing and spot are there to beat."""
    value = platform.busy_allocation
    ok = value is not None and value >= TARGET_ALLOCATION
    beside = "" if static is None else f" (static: {percent(static.busy_allocation)})"
    return (
        f"{holds(ok)}: mean allocation over the busy windows {percent(value)}, "
        f"target at least {percent(TARGET_ALLOCATION)}{beside}"
    )


def count_verdict(what: str, found: int, target: int, static: int | None) -> str:
    beside = "" if static is None else f" (static: {static})"
    return f"{holds(found <= target)}: {what} {found}, target {target}{beside}"


def verdict(platform: Figures, static: Figures | None) -> list[str]:
    """One line per target of the issue: whether it holds, the figure and the target."""
    return [
        allocation_verdict(platform, static),
        count_verdict(
            f"guarantee breaches (waits over {platform.guarantee_bound_s:.0f} s)",
            len(platform.guarantee_breaches),
            TARGET_BREACHES,
            None if static is None else len(static.guarantee_breaches),
        ),
        count_verdict(
            "double evictions",
            len(platform.double_evictions),
            TARGET_DOUBLE_EVICTIONS,
            None if static is None else len(static.double_evictions),
        ),
    ]
