# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The in-tenant arbiter's rules: where Volcano cannot, the platform does it.

Inside a fully used subscription Volcano 1.15.1 keeps a job's PodGroup Pending while its
queue or an ancestor queue is at its capability; sla admits it after its waiting time
(jobs/sla) and ``gangpreempt`` then preempts in its queue, but ``gangreclaim`` cannot
place a team's job while the parent queue still counts the victims' GPUs, so a team
cannot take back what a sibling borrowed (docs/scheduling-policy.md, "A full
subscription"). The arbiter decides which whole jobs the platform evicts for such a job;
these functions only decide (pure, no I/O). GPUs only; node placement and network
topology are left to the scheduler.

Rules held here:

* Rule blocked-by-capacity (``blocked_by_capacity``): the first queue, the job's own then
  its ancestors up to ``root``, whose effective capability (rule effective-capability,
  ``model.effective_capability``) the job would exceed: allocated + job GPUs > capability.
  A job larger than the pool is not blocked but impossible (None; ``plan.plan_for`` says
  so).
* Rule arbiter-need (``arbiter_need``): the GPUs that must be freed for the job to fit, the
  larger of the capacity shortfall (over the job's queue and its ancestors, the largest
  allocated + job GPUs - effective capability) and the node shortfall (job GPUs - free
  GPUs), never below 0. Evicting a job of the queue (or of a sibling) lowers every
  ancestor's allocation and frees its GPUs on the nodes by the same amount, so freeing
  ``need`` GPUs covers both.
* Rule preempt-victims (``preempt_victims``, ``preempt_refusal``): running jobs of the
  same queue with a lower priority than the waiting job's, preemptable, never
  critical-job; a debug-job never preempts. Order (rule arbiter-victim-order,
  ``victim_order_key``): lowest priority first, then newest first, then namespace/name.
  Whole jobs are taken in that order until the freed GPUs reach the need; when all of
  them together hold fewer, nothing is evicted.
* Rule team-reclaim-victims (``team_reclaim_victims``, ``team_reclaim_refusal``): a team
  queue below its deserved takes back what sibling teams (same parent) borrowed above
  theirs. Candidates: running jobs of siblings above their deserved, preemptable, never
  critical-job, of any other priority (reclaim returns what was borrowed; design 6.3), in
  the same order merged across siblings; a debug-job takes nothing back; a job is taken only when its sibling stays at or above its deserved
  after losing it (design 6.2: reclaim never takes a queue below its deserved), counted
  as victims are taken. Stop as soon as the need is covered; otherwise nothing is
  evicted.

The decision made of them for one waiting job (rules volcano-preempts,
volcano-can-preempt and arbiter-plan, ``Decision``) is ``arbiter/plan``.

Every refusal text ends with "nothing is evicted".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..common.names import QUEUE_TYPE_TEAM
from .model import (
    CRITICAL_CLASS,
    DEBUG_CLASS,
    QueueState,
    RunningJob,
    WaitingJob,
    ancestry,
    class_preempts,
    effective_capability,
)

NOTHING_EVICTED = "nothing is evicted"


def class_words(job: WaitingJob) -> str:
    """The job's PriorityClass, or ``priority <n>`` when it names none."""
    return job.priority_class or f"priority {job.priority}"


def capacity_shortfall(job: WaitingJob, states: Mapping[str, QueueState], queue: str) -> int:
    """How far ``job`` would take ``queue`` past its effective capability: allocated + job
    GPUs - effective capability, 0 when within it or unlimited (or the queue is unknown)."""
    state = states.get(queue)
    cap = effective_capability(states, queue)
    if state is None or cap is None:
        return 0
    return max(0, state.allocated_gpus + job.gpus - cap)


def blocked_by_capacity(
    job: WaitingJob, states: Mapping[str, QueueState], free_gpus: int, pool_gpus: int
) -> str | None:
    """Rule blocked-by-capacity: the name of the queue, the job's own or the first ancestor
    walking up to ``root``, whose effective capability the job's GPUs would exceed
    (allocated + job GPUs > capability), or None. A job larger than the pool
    (``pool_gpus``) is not blocked by capacity but impossible: None, the caller says so.
    ``free_gpus`` does not change the answer (Volcano's enqueue with this policy judges the
    queues' capability only); it is taken so that every rule reads the same view."""
    if job.gpus > pool_gpus:
        return None
    for queue in ancestry(states, job.queue):
        if capacity_shortfall(job, states, queue) > 0:
            return queue
    return None


def arbiter_need(job: WaitingJob, states: Mapping[str, QueueState], free_gpus: int) -> int:
    """Rule arbiter-need: the GPUs to free so that ``job`` fits, never below 0:

    max(capacity shortfall, node shortfall), where the capacity shortfall is the largest
    ``allocated + job.gpus - effective capability`` over the job's queue and its ancestors
    (an unlimited queue contributes 0) and the node shortfall is ``job.gpus - free_gpus``.
    Evicting a job of the same queue lowers that queue's and every ancestor's allocation
    and adds its GPUs to the free ones, each by its GPUs, so ``need`` freed GPUs close
    every shortfall at once. (A sibling's job lowers the ancestors' allocation, not the
    job's own queue's: see ``plan.plan_for``.)"""
    capacity = max(
        (capacity_shortfall(job, states, q) for q in ancestry(states, job.queue)), default=0
    )
    return max(0, capacity, job.gpus - free_gpus)


def victim_order_key(job: RunningJob) -> tuple[int, float, str, str]:
    """Rule arbiter-victim-order: lowest priority first, then the newest (latest started)
    first, then namespace/name; smallest key goes first."""
    return (job.priority, -job.started, job.namespace, job.name)


def evictable(victim: RunningJob) -> bool:
    """What preempt, team reclaim and rule restart-may-preempt share: preemptable, never
    critical-job, holding GPUs (evicting a job without GPUs frees nothing)."""
    return victim.preemptable and victim.priority_class != CRITICAL_CLASS and victim.gpus > 0


def _evictable(job: WaitingJob, victim: RunningJob) -> bool:
    """``evictable``, and not the waiting job itself."""
    return evictable(victim) and not (job.uid and victim.uid == job.uid)


def _may_be_taken(job: WaitingJob, victim: RunningJob) -> bool:
    """Preemption (rule preempt-victims): an evictable job of lower priority than the
    waiting job's."""
    return victim.priority < job.priority and _evictable(job, victim)


def preempt_candidates(job: WaitingJob, running: Iterable[RunningJob]) -> list[RunningJob]:
    """The running jobs rule preempt-victims may take for ``job``, in victim order: the same
    queue, a lower priority, preemptable, not critical-job. A debug-job has none (its
    PriorityClass never preempts, ``model.class_preempts``)."""
    if not class_preempts(job.priority_class):
        return []
    return sorted(
        (r for r in running if r.queue == job.queue and _may_be_taken(job, r)),
        key=victim_order_key,
    )


def _take(candidates: Iterable[RunningJob], need: int) -> list[RunningJob]:
    taken, freed = [], 0
    for victim in candidates:
        if freed >= need:
            break
        taken.append(victim)
        freed += victim.gpus
    return taken


def preempt_victims(job: WaitingJob, running: Sequence[RunningJob], need: int) -> list[RunningJob]:
    """Rule preempt-victims: whole jobs of ``job``'s queue to evict, in eviction order,
    freeing at least ``need`` GPUs and stopping as soon as they do; [] when ``need`` is 0,
    when ``job`` is a debug-job (it never preempts), or when all candidates together hold
    fewer than ``need`` GPUs (no whole-job set covers it: nothing is evicted; the reason is
    ``preempt_refusal``). Candidates and order: ``preempt_candidates``."""
    if need <= 0:
        return []
    candidates = preempt_candidates(job, running)
    if sum(c.gpus for c in candidates) < need:
        return []
    return _take(candidates, need)


def preempt_problem(
    job: WaitingJob,
    running: Sequence[RunningJob],
    need: int,
    preempting_classes: Sequence[str] | None,
) -> str:
    if not class_preempts(job.priority_class):
        return f"queue {job.queue}: {job.ref} is a {job.priority_class}, which never preempts"
    if preempting_classes is not None and job.priority_class not in preempting_classes:
        return (
            f"queue {job.queue}: {job.ref} is a {class_words(job)}, and only "
            f"{' and '.join(preempting_classes)} preempt in their queue"
        )
    held = sum(c.gpus for c in preempt_candidates(job, running))
    return (
        f"queue {job.queue}: the running jobs below {class_words(job)} hold {held} GPUs, "
        f"{need} are needed"
    )


def preempt_refusal(
    job: WaitingJob,
    running: Sequence[RunningJob],
    need: int,
    preempting_classes: Sequence[str] | None = None,
) -> str:
    """Why rule preempt-victims evicts nothing for ``job``, for example ``queue
    tenant-alpha-algo: the running jobs below large-job hold 8 GPUs, 16 are needed; nothing
    is evicted``. With ``preempting_classes``, a class outside it is the reason."""
    return f"{preempt_problem(job, running, need, preempting_classes)}; {NOTHING_EVICTED}"


def team_reclaim_applies(job: WaitingJob, states: Mapping[str, QueueState]) -> bool:
    """The job's queue is a team queue below its deserved (allocated < deserved)."""
    own = states.get(job.queue)
    return (
        own is not None and own.queue_type == QUEUE_TYPE_TEAM and own.allocated_gpus < own.deserved
    )


def borrowing_siblings(job: WaitingJob, states: Mapping[str, QueueState]) -> list[QueueState]:
    """The sibling team queues of ``job``'s queue (same parent) above their deserved, by name."""
    own = states.get(job.queue)
    if own is None:
        return []
    return sorted(
        (
            s
            for s in states.values()
            if s.parent == own.parent
            and s.name != own.name
            and s.queue_type == QUEUE_TYPE_TEAM
            and s.allocated_gpus > s.deserved
        ),
        key=lambda s: s.name,
    )


def reclaim_candidates(
    job: WaitingJob, states: Mapping[str, QueueState], running: Iterable[RunningJob]
) -> list[RunningJob]:
    """The running jobs of the borrowing siblings that rule team-reclaim-victims may take,
    merged into one victim order (before the deserved check). Reclaim returns what was
    borrowed whatever the borrower's priority (design 6.2/6.3: P50, then P100, then P800;
    P1000 never), so any evictable job counts; a debug-job takes nothing back (it never
    takes GPUs from other jobs, rule sla-wait-by-class)."""
    if job.priority_class == DEBUG_CLASS:
        return []
    siblings = {s.name for s in borrowing_siblings(job, states)}
    return sorted(
        (r for r in running if r.queue in siblings and _evictable(job, r)),
        key=victim_order_key,
    )


def _reclaim_take(
    job: WaitingJob,
    states: Mapping[str, QueueState],
    running: Iterable[RunningJob],
    need: int | None,
) -> list[RunningJob]:
    """Candidates in order, each taken only when its sibling stays at or above its
    deserved after losing it (the sibling's allocation counted down as jobs are taken);
    stops once ``need`` is covered (None: takes every job that can go)."""
    left = {s.name: s.allocated_gpus for s in borrowing_siblings(job, states)}
    taken, freed = [], 0
    for victim in reclaim_candidates(job, states, running):
        if need is not None and freed >= need:
            break
        if left[victim.queue] - victim.gpus < states[victim.queue].deserved:
            continue
        left[victim.queue] -= victim.gpus
        taken.append(victim)
        freed += victim.gpus
    return taken


def team_reclaim_victims(
    job: WaitingJob,
    states: Mapping[str, QueueState],
    running: Sequence[RunningJob],
    need: int,
) -> list[RunningJob]:
    """Rule team-reclaim-victims: whole jobs of sibling team queues to evict, in eviction
    order, freeing at least ``need`` GPUs (as the caller computes it) and stopping as soon
    as they do. Only for a team queue below its deserved; only jobs of siblings above
    their deserved, and only while the sibling stays at or above its deserved after
    losing the job; preemptable, not critical-job, lower priority than ``job``; lowest
    priority, then newest, then namespace/name, across the siblings. [] when ``need`` is 0
    or when no such set covers ``need`` (nothing is evicted; the reason is
    ``team_reclaim_refusal``)."""
    if need <= 0 or not team_reclaim_applies(job, states):
        return []
    taken = _reclaim_take(job, states, running, need)
    return taken if sum(v.gpus for v in taken) >= need else []


def reclaim_problem(
    job: WaitingJob, states: Mapping[str, QueueState], running: Sequence[RunningJob], need: int
) -> str:
    own = states.get(job.queue)
    if own is None:
        return f"queue {job.queue} is not known"
    if own.queue_type != QUEUE_TYPE_TEAM:
        return (
            f"queue {own.name} is a {own.queue_type or 'untyped'} queue, not a team queue: only a "
            "team takes back what its sibling teams borrowed"
        )
    if own.allocated_gpus >= own.deserved:
        return (
            f"queue {own.name} uses {own.allocated_gpus} GPUs of its deserved {own.deserved}: it "
            "is not below its deserved share, so it takes nothing back from its siblings"
        )
    if job.priority_class == DEBUG_CLASS:
        return f"{job.ref} is a {DEBUG_CLASS}, which never takes GPUs from other jobs"
    siblings = borrowing_siblings(job, states)
    if not siblings:
        return f"queue {own.name}: no sibling team under {own.parent} uses more than its deserved"
    given: dict[str, int] = {s.name: 0 for s in siblings}
    for victim in _reclaim_take(job, states, running, None):
        given[victim.queue] += victim.gpus
    parts = ", ".join(
        f"{s.name} {given[s.name]} (uses {s.allocated_gpus}, deserved {s.deserved})"
        for s in siblings
    )
    return (
        f"queue {own.name}: without going below their deserved, its sibling teams can give back "
        f"{sum(given.values())} GPUs of running jobs that may be evicted, {need} are "
        f"needed ({parts})"
    )


def team_reclaim_refusal(
    job: WaitingJob,
    states: Mapping[str, QueueState],
    running: Sequence[RunningJob],
    need: int,
) -> str:
    """Why rule team-reclaim-victims evicts nothing for ``job``, naming each borrowing
    sibling and what it could give without going below its deserved, for example
    ``queue tenant-alpha-b: without going below their deserved, its sibling teams can give
    back 3 GPUs of running jobs that may be evicted, 5 are needed (tenant-alpha-a 3 (uses
    25, deserved 20)); nothing is evicted``."""
    return f"{reclaim_problem(job, states, running, need)}; {NOTHING_EVICTED}"
