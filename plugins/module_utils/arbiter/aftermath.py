# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What Volcano may do once the arbiter's victims come back (pure).

The arbiter evicts through the Eviction API, so a victim's own policies apply: the
platform's jobs restart on ``PodEvicted`` (jobs/manifest), and a Volcano Job without a
policy for it gets its missing pods recreated by the job controller. Back in its queue at
its priority, a victim whose PriorityClass preempts is preempted for by Volcano's
gangpreempt like any other job of that queue (normal-job preempts debug-job in its own
queue; design 5.2's PriorityClasses, 6.4.1: an evicted job queues again). Measured in
design 6.2's example: the arbiter took task-e and task-c, and Volcano then evicted team
a's debug job task-d for the restarted task-c. That is the team's own priority order,
not the arbiter's choice, but a caller should know it before the eviction, in check mode
too.

Rules held here:

* Rule victim-returns (``returns_after_eviction``): a Volcano Job comes back after an
  eviction unless, for every task, the first policy for ``PodEvicted`` (or any event,
  ``*``) ends the job: ``AbortJob``, ``TerminateJob`` or ``CompleteJob``; the task's own
  policies are read before the job's.
* Rule restart-may-preempt (``restart_may_preempt``): for each victim that returns and
  whose PriorityClass preempts (``preemptionPolicy`` not Never), the jobs left running in
  its queue that gangpreempt may take for it: not victims, lower priority, preemptable,
  never critical-job. Victims are taken lowest priority first (rule arbiter-victim-order),
  so this is non-empty only where a lower-priority job was skipped, in team reclaim
  because taking it would have left its team below its deserved.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .model import RunningJob, class_preempts
from .rules import evictable

EVICTED_EVENTS = ("PodEvicted", "*")
ENDING_ACTIONS = ("AbortJob", "TerminateJob", "CompleteJob")


def _eviction_action(policies: Iterable[Mapping[str, Any]]) -> str | None:
    """The action of the first policy that names PodEvicted or any event; None: none does."""
    for policy in policies:
        events = [policy.get("event"), *(policy.get("events") or [])]
        if any(event in EVICTED_EVENTS for event in events):
            return str(policy.get("action") or "")
    return None


def returns_after_eviction(vcjob: Mapping[str, Any]) -> bool:
    """Rule victim-returns (see the module docstring)."""
    spec = vcjob.get("spec") or {}
    job_action = _eviction_action(spec.get("policies") or [])
    tasks = spec.get("tasks") or [{}]
    for task in tasks:
        action = _eviction_action(task.get("policies") or []) or job_action
        if action not in ENDING_ACTIONS:
            return True
    return False


def restart_may_preempt(
    victims: Sequence[RunningJob],
    running: Iterable[RunningJob],
    returning: Mapping[str, bool],
) -> list[tuple[RunningJob, list[RunningJob]]]:
    """Rule restart-may-preempt: (victim, the jobs gangpreempt may take for it once it is
    back), for each victim with any, in victim order. ``returning`` maps a victim's uid to
    rule victim-returns (missing: it returns)."""
    taken = {v.uid for v in victims}
    staying = [r for r in running if r.uid not in taken]
    out = []
    for victim in victims:
        if not returning.get(victim.uid, True) or not class_preempts(victim.priority_class):
            continue
        exposed = [
            r
            for r in staying
            if r.queue == victim.queue and r.priority < victim.priority and evictable(r)
        ]
        if exposed:
            out.append((victim, sorted(exposed, key=lambda r: (r.namespace, r.name))))
    return out


def aftermath_dicts(
    pairs: Iterable[tuple[RunningJob, Sequence[RunningJob]]],
) -> list[dict[str, Any]]:
    """The result's ``may_preempt_after_restart``: each victim, its class and queue, and
    the jobs gangpreempt may take for it, as namespace/name."""
    return [
        {
            "victim": f"{victim.namespace}/{victim.name}",
            "priority_class": victim.priority_class,
            "queue": victim.queue,
            "may_preempt": [f"{r.namespace}/{r.name}" for r in exposed],
        }
        for victim, exposed in pairs
    ]


def aftermath_warning(after: Iterable[Mapping[str, Any]]) -> str:
    """One sentence per ``aftermath_dicts`` entry, for the run's warnings; empty when there
    is nothing to say."""
    return " ".join(
        f"{a['victim']} restarts at {a['priority_class']} and Volcano's gangpreempt may then "
        f"evict {', '.join(a['may_preempt'])} of queue {a['queue']} for it (that queue's own "
        "priority order)."
        for a in after
    )


def aftermath_said(result: Mapping[str, Any]) -> str | None:
    """Rule restart-may-preempt, said before (check mode) or after the eviction: the
    warning for the result's ``may_preempt_after_restart``, or None when it is empty."""
    after = result["may_preempt_after_restart"]
    return aftermath_warning(after) if after else None
