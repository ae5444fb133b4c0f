# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the in-tenant arbiter decides for one waiting job (pure, no I/O): the
``Decision``, made of the need and victim rules of ``arbiter/rules``.

Rules held here:

* Rule volcano-preempts (``volcano_preempts``): Volcano's gangpreempt preempts for a job
  that is admitted (Inqueue) or that sla will admit (it has a waiting time); the arbiter
  preempts only for a Pending job without one, so it never evicts what Volcano still
  would. Team reclaim, which Volcano cannot do in a full subscription, is for every
  waiting job.
* Rule volcano-can-preempt (``volcano_preempt_text``): a verdict names Volcano as the
  actor only when gangpreempt can free the GPUs (lower-priority jobs in the job's queue
  hold enough); otherwise it says that no one frees them.
* Rule arbiter-plan (``plan_for``): a job that can never run (rule job-never-runs:
  a missing PVC, more GPUs than its nodes or than a capability above it) is refused; need 0: nothing to do; a team queue below its
  deserved with a borrowing sibling takes back first (team reclaim; only when its own
  queue is not at its capability, which sibling GPUs cannot relieve); otherwise, for the
  classes that preempt (``DEFAULT_PREEMPTING_CLASSES``, large-job and critical-job),
  preemption in its queue; when neither covers the need, refuse with every reason.

Every refusal text ends with "nothing is evicted" (``rules.NOTHING_EVICTED``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..jobs.feasibility import Supply, never_runs
from .model import (
    CRITICAL_CLASS,
    LARGE_CLASS,
    QueueState,
    RunningJob,
    WaitingJob,
    ancestry,
    class_preempts,
    effective_capability,
    limits_of,
)
from .rules import (
    NOTHING_EVICTED,
    arbiter_need,
    blocked_by_capacity,
    borrowing_siblings,
    capacity_shortfall,
    class_words,
    preempt_candidates,
    preempt_problem,
    preempt_victims,
    reclaim_problem,
    team_reclaim_applies,
    team_reclaim_victims,
)

NONE, PREEMPT, RECLAIM, REFUSE = "none", "preempt", "reclaim", "refuse"
ACTIONS = (NONE, PREEMPT, RECLAIM, REFUSE)
# The waiting classes for which the arbiter preempts in their queue ("large jobs preempt
# in their queue"); normal-job gets no preemption from the arbiter.
DEFAULT_PREEMPTING_CLASSES = (LARGE_CLASS, CRITICAL_CLASS)


@dataclass(frozen=True)
class Decision:
    """What the arbiter does for one waiting job: ``action`` one of ``ACTIONS``, the
    ``victims`` in eviction order (empty unless preempt or reclaim), the GPUs to free
    (rule arbiter-need), why, and the queue whose capability holds the job (if any)."""

    action: str
    victims: tuple[RunningJob, ...]
    need: int
    reason: str
    blocked_by: str | None = None

    @property
    def freed(self) -> int:
        return sum(v.gpus for v in self.victims)

    def as_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "victims": [v.as_dict() for v in self.victims],
            "need": self.need,
            "freed": self.freed,
            "reason": self.reason,
            "blocked_by": self.blocked_by,
        }


def _need_reason(
    job: WaitingJob, states: Mapping[str, QueueState], free_gpus: int, need: int
) -> str:
    parts = []
    for queue in ancestry(states, job.queue):
        short = capacity_shortfall(job, states, queue)
        if short > 0:
            state = states[queue]
            parts.append(
                f"queue {queue}: {state.allocated_gpus} allocated + {job.gpus} > capability "
                f"{effective_capability(states, queue)}"
            )
    if job.gpus > free_gpus:
        parts.append(f"{free_gpus} GPUs free, {job.gpus} asked")
    return f"{job.ref} needs {need} GPUs freed ({'; '.join(parts)})"


def _names(victims: Iterable[RunningJob]) -> str:
    return ", ".join(f"{v.namespace}/{v.name} ({v.priority_class}, {v.gpus})" for v in victims)


def volcano_preempt_text(job: WaitingJob, running: Sequence[RunningJob], need: int) -> str:
    """Rule volcano-can-preempt: who acts for an admitted job, said only when it can.
    Volcano's gangpreempt takes jobs of lower priority in the job's queue (the candidates
    of rule preempt-victims); when they hold ``need`` GPUs it preempts for the job,
    otherwise no one frees them: Volcano cannot, and the arbiter leaves admitted jobs to
    Volcano (rule volcano-preempts)."""
    held = sum(c.gpus for c in preempt_candidates(job, running))
    if class_preempts(job.priority_class) and held >= need:
        return (
            f"Volcano's gangpreempt preempts in queue {job.queue} for it ({held} GPUs of lower "
            "priority there); the arbiter only takes back from sibling teams"
        )
    why = (
        f"{job.priority_class} never preempts"
        if not class_preempts(job.priority_class)
        else f"the jobs below {class_words(job)} in queue {job.queue} hold {held} GPUs, "
        f"{need} are needed"
    )
    return (
        f"Volcano's gangpreempt cannot free them ({why}) and the arbiter leaves an admitted "
        "job to Volcano: it waits until running jobs end"
    )


def volcano_preempts(job: WaitingJob) -> bool:
    """Rule volcano-preempts (see the module docstring)."""
    return job.podgroup_phase != "Pending" or job.sla_wait is not None


def _team_reclaim(
    job: WaitingJob,
    states: Mapping[str, QueueState],
    running: Sequence[RunningJob],
    need: int,
    why: str,
    blocked: str | None,
) -> Decision | str | None:
    """Step 3 of rule arbiter-plan: the ``reclaim`` Decision; or, when team reclaim
    applies but cannot cover the need, why not; None when it does not apply."""
    if not (team_reclaim_applies(job, states) and borrowing_siblings(job, states)):
        return None
    own = capacity_shortfall(job, states, job.queue)
    if own > 0:
        return (
            f"queue {job.queue} itself would exceed its capability by {own} GPUs, which "
            "taking back from its sibling teams does not change"
        )
    victims = team_reclaim_victims(job, states, running, need)
    if not victims:
        return reclaim_problem(job, states, running, need)
    return Decision(
        RECLAIM,
        tuple(victims),
        need,
        f"{why}; taking back {sum(v.gpus for v in victims)} GPUs from sibling "
        f"teams: {_names(victims)}",
        blocked,
    )


def _left_to_volcano(
    job: WaitingJob,
    running: Sequence[RunningJob],
    need: int,
    why: str,
    blocked: str | None,
    problems: Sequence[str],
) -> Decision:
    """Step 4 of rule arbiter-plan: Volcano preempts for the job (rule volcano-preempts):
    ``none``, or ``refuse`` with the reclaim's reason (``problems``) when team reclaim
    applied but could not cover the need."""
    admitted = (
        "it is admitted"
        if job.podgroup_phase != "Pending"
        else f"sla admits it after its waiting time of {job.sla_wait:g} s"
    )
    left = f"{admitted}; {volcano_preempt_text(job, running, need)}"
    if problems:
        return Decision(
            REFUSE,
            (),
            need,
            f"{why}: {'; '.join(problems)}; {left}; {NOTHING_EVICTED}",
            blocked,
        )
    return Decision(NONE, (), need, f"{why}: {left}; {NOTHING_EVICTED}", blocked)


def plan_for(
    job: WaitingJob,
    states: Mapping[str, QueueState],
    running: Sequence[RunningJob],
    free_gpus: int,
    pool_gpus: int,
    preempting_classes: Sequence[str] = DEFAULT_PREEMPTING_CLASSES,
    supply: Supply | None = None,
) -> Decision:
    """Rule arbiter-plan: what the arbiter does for one waiting job.

    1. ``refuse`` a job that can never run (rule job-never-runs, ``jobs/feasibility``,
       the rule ``vcjob`` and the throttle use, in its words: a missing PVC, more GPUs
       than its nodes, or than the capability of its queue or an ancestor): no eviction
       makes it run. ``supply`` is what that rule reads; without it, the queues in
       ``states`` and the pool.
    2. ``none`` when rule arbiter-need asks for 0 GPUs.
    3. ``reclaim`` (rule team-reclaim-victims) when its queue is a team queue below its
       deserved and a sibling team borrows (design 6.2: teams take back what siblings
       borrowed), provided its own queue is not at its capability: a sibling's GPUs lower
       the parent's allocation and free nodes, never the job's own queue's allocation.
    4. ``none`` when rule volcano-preempts leaves preemption to Volcano (and team reclaim
       did not apply), ``refuse`` with the reclaim's reason when it applied but could
       not cover the need.
    5. ``preempt`` (rule preempt-victims) when its class is in ``preempting_classes``.
    6. ``refuse`` otherwise, with the reason of every rule that was tried.
    """
    impossible = never_runs(
        job.gang, supply or Supply(chain=limits_of(states, job.queue), node_gpus=pool_gpus)
    )
    if impossible is not None:
        return Decision(REFUSE, (), 0, f"{impossible}; {NOTHING_EVICTED}")
    need = arbiter_need(job, states, free_gpus)
    blocked = blocked_by_capacity(job, states, free_gpus, pool_gpus)
    if need == 0:
        return Decision(
            NONE, (), 0, f"{job.ref} fits its queues and the free GPUs: nothing to free", blocked
        )
    why = _need_reason(job, states, free_gpus, need)
    reclaimed = _team_reclaim(job, states, running, need, why, blocked)
    if isinstance(reclaimed, Decision):
        return reclaimed
    problems = [reclaimed] if reclaimed else []
    if volcano_preempts(job):
        return _left_to_volcano(job, running, need, why, blocked, problems)
    if job.priority_class in preempting_classes:
        victims = preempt_victims(job, running, need)
        if victims:
            return Decision(
                PREEMPT,
                tuple(victims),
                need,
                f"{why}; preempting {sum(v.gpus for v in victims)} GPUs in queue {job.queue}: "
                f"{_names(victims)}",
                blocked,
            )
    problems.append(preempt_problem(job, running, need, preempting_classes))
    return Decision(REFUSE, (), need, f"{why}: {'; '.join(problems)}; {NOTHING_EVICTED}", blocked)
