# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a replay records, in traced seconds (seconds of the trace's day, the replay's
wall-clock seconds times the compression factor). Pure: the replayer fills these in,
``metrics`` reads them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# The configurations a trace is replayed under (docs/trace-replay.md).
PLATFORM = "platform"  # the platform's scheduler configuration and its reconcilers
# The same, the reconcilers started by the cluster's events (the rulebook's rules) and
# their schedules kept at the safety net's period.
PLATFORM_EVENTS = "platform-events"
STATIC = "static"  # each tenant exactly its subscription, fixed: no spot, no borrowing
VOLCANO = "volcano"  # the same queues, Volcano's chart default configuration, no reconcilers
CONFIGURATIONS = (PLATFORM, PLATFORM_EVENTS, STATIC, VOLCANO)
DEFAULT_CONFIGURATIONS = (PLATFORM, STATIC, VOLCANO)
PLATFORMS = (PLATFORM, PLATFORM_EVENTS)  # the platform's submission path and reconcilers

# Who took a running job's GPUs away.
CAUSE_VOLCANO = "volcano"  # Volcano's own preempt or reclaim: the job restarts
CAUSE_ARBITER = "arbiter"  # arbiter_reconcile deleted it
CAUSE_SPOT = "spot-reclaim"  # spot_recompute (or a purchase) deleted it
CAUSES = (CAUSE_VOLCANO, CAUSE_ARBITER, CAUSE_SPOT)


@dataclass(frozen=True)
class Eviction:
    """A running job that lost its GPUs."""

    at: float  # when, traced seconds from the start
    cause: str  # one of CAUSES
    ran_s: float  # traced seconds it had run since it last started: the work lost


@dataclass(frozen=True)
class JobRecord:
    """One job of the trace, as the replay saw it."""

    name: str
    tenant: str
    billing: str  # subscription, payg or spot
    job_class: str  # critical, large, normal, debug or spot
    queue: str
    gpus: int
    at: float  # submitted
    duration_s: float  # how long it runs once all its pods run
    # Whether its queue (the team's, or the subscription's) held no more than its
    # deserved GPUs, this job's included, when it was submitted: only such a job is
    # promised a prompt start (a guarantee breach is judged on these alone).
    within_share: bool
    started: float | None = None  # all its pods Running, the first time
    finished: float | None = None  # completed
    evictions: tuple[Eviction, ...] = ()
    deleted: bool = False  # deleted by an eviction (arbiter, spot reclaim): it never finishes
    # Traced seconds it spent waiting, by the cause the looks gave (``idle.why_waiting``).
    waited_by_cause: dict[str, float] = field(default_factory=dict)

    @property
    def wait_s(self) -> float | None:
        """Submission to Running, or None when it never ran."""
        return None if self.started is None else self.started - self.at


@dataclass(frozen=True)
class Sample:
    """The GPUs held by running pods at one moment."""

    at: float
    allocated: int  # GPUs requested by Running pods on nodes
    capacity: int  # the GPUs of the cluster's nodes then
    by_billing: dict[str, int] = field(default_factory=dict)  # subscription/payg/spot -> GPUs
    # The replay's Volcano Jobs that Volcano's job controller has not given a status yet:
    # a backlog that grows says the machine cannot keep up with the compression factor.
    backlog: int = 0
    # The idle GPUs (capacity less allocated) by why the jobs that asked for them waited
    # (``idle.idle_by_cause``); "no job waiting" for those nobody asked for.
    idle_by_cause: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Mark:
    """A moment worth marking on the picture: a purchase, a resize, a deletion."""

    at: float
    label: str


@dataclass(frozen=True)
class Run:
    """One configuration's replay of one trace."""

    configuration: str  # one of CONFIGURATIONS
    trace: str  # the trace file's name
    factor: float  # time compression: traced seconds per wall-clock second
    day_s: float  # the traced length replayed
    # The periods a guarantee is judged by, in traced seconds: the reconcilers' period
    # as it was measured (0 when none runs) and Volcano's scheduling period.
    reconcile_period_s: float
    schedule_period_s: float
    throttle_window_s: float  # how long a large job may wait before it counts as starved
    jobs: tuple[JobRecord, ...]
    samples: tuple[Sample, ...]
    marks: tuple[Mark, ...] = ()
    bills: dict[str, float] = field(default_factory=dict)  # tenant -> GPU-hours billed
    seed: int | None = None  # the generator's seed, when the trace says it
    refused: int = 0  # jobs the platform refused at submission (never in ``jobs``)
    refusals: tuple[str, ...] = ()  # why, one line per refused job
    reconcile_runs: dict[str, int] = field(default_factory=dict)  # reconciler -> runs
    events: dict[str, int] = field(default_factory=dict)  # platform event -> times received
