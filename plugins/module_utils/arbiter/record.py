# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the queue arbiter records and reports (pure: no I/O).

* On each evicted Volcano Job an Event of reason ``ArbiterEvicted`` (Warning) naming the
  job it made room for, that job's class and GPUs, its queue, the rule and the job's place
  in the eviction order (``evicted_event``); on the job made room for an Event of reason
  ``ArbiterMadeRoom`` (Normal) naming the evicted jobs and the GPUs freed
  (``made_room_event``), both in the shape of ``common/run_event``.
* Rule arbiter-history (``common/history.push_history``, ``history_entry``,
  ``history_manifest``): one entry per run that evicted, at the head of the ConfigMap
  ``platform-system/queue-arbiter-history`` (key ``history.json``), newest first, at most
  ``history_size`` entries.
* ``kube/run_record`` writes the Events and the history, as it does the spot reclaim's.
* The result every run returns (``arbiter_result``) and its diff (``arbiter_diff``, with
  each victim queue's eviction count, rule arbiter-eviction-count in ``arbiter/count``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ..common import history as _history
from ..common.errors import Refused
from ..common.names import (
    ANNOTATION_ARBITER_EVICTED,
    EVENT_REASON_ARBITER_EVICTED,
    EVENT_REASON_ARBITER_MADE_ROOM,
    JOB_API,
    QUEUE_ARBITER_HISTORY,
)
from ..common.run_event import involved_object, run_event
from ..common.times import read_rfc3339
from ..kube.lease import seconds_time
from .model import RunningJob, WaitingJob
from .plan import NONE, PREEMPT, RECLAIM, REFUSE, Decision

# The rule whose victims each action evicts.
RULE_OF_ACTION = {PREEMPT: "preempt-victims", RECLAIM: "team-reclaim-victims"}
ANNOTATION_FOR = "platform.io/arbiter-for"
ANNOTATION_RULE = "platform.io/arbiter-rule"
ANNOTATION_ORDER = "platform.io/arbiter-order"
ANNOTATION_GPUS = "platform.io/arbiter-gpus"


def job_words(job: WaitingJob) -> str:
    """``tenant-a/big (large-job, 32 GPUs)``."""
    return f"{job.ref} ({job.priority_class or f'priority {job.priority}'}, {job.gpus} GPUs)"


def victim_dict(victim: RunningJob) -> dict[str, Any]:
    """A victim as the result and the history report it."""
    return {
        "namespace": victim.namespace,
        "name": victim.name,
        "queue": victim.queue,
        "priority_class": victim.priority_class,
        "gpus": victim.gpus,
    }


def victim_refs(victims: Iterable[Mapping[str, Any]]) -> list[str]:
    return [f"{v['namespace']}/{v['name']}" for v in victims]


def evicted_message(job: WaitingJob, action: str, order: int) -> str:
    """For example ``evicted by the platform to make room for tenant-a/big (large-job, 32
    GPUs) in tenant-a-algo: preempt-victims, order 2``."""
    return (
        f"evicted by the platform to make room for {job_words(job)} in {job.queue}: "
        f"{RULE_OF_ACTION[action]}, order {order}"
    )


def evicted_event(
    victim: RunningJob, job: WaitingJob, action: str, order: int, now: datetime
) -> dict[str, Any]:
    """The ``ArbiterEvicted`` Event (Warning) on an evicted Volcano Job; ``order`` its place
    in the eviction order (1 first)."""
    return run_event(
        involved_object(JOB_API, "Job", victim.name, victim.namespace, victim.uid),
        EVENT_REASON_ARBITER_EVICTED,
        "Warning",
        evicted_message(job, action, order),
        {
            ANNOTATION_FOR: job.ref,
            ANNOTATION_RULE: RULE_OF_ACTION[action],
            ANNOTATION_ORDER: str(order),
            ANNOTATION_GPUS: str(victim.gpus),
        },
        now,
        order,
    )


def made_room_message(job: WaitingJob, action: str, victims: Sequence[RunningJob]) -> str:
    """For example ``the platform evicted 2 job(s) holding 6 GPUs to make room for this job
    (large-job, 32 GPUs) in tenant-a-algo: tenant-a/task-d (debug-job, 4 GPUs), tenant-a/task-e
    (debug-job, 2 GPUs); preempt-victims``."""
    freed = sum(v.gpus for v in victims)
    names = ", ".join(
        f"{v.namespace}/{v.name} ({v.priority_class}, {v.gpus} GPUs)" for v in victims
    )
    return (
        f"the platform evicted {len(victims)} job(s) holding {freed} GPUs to make room for this "
        f"job ({job.priority_class or f'priority {job.priority}'}, {job.gpus} GPUs) in "
        f"{job.queue}: {names}; {RULE_OF_ACTION[action]}"
    )


def made_room_event(
    job: WaitingJob, action: str, victims: Sequence[RunningJob], now: datetime
) -> dict[str, Any]:
    """The ``ArbiterMadeRoom`` Event (Normal) on the job the arbiter made room for."""
    return run_event(
        involved_object(JOB_API, "Job", job.name, job.namespace, job.uid),
        EVENT_REASON_ARBITER_MADE_ROOM,
        "Normal",
        made_room_message(job, action, victims),
        {
            ANNOTATION_RULE: RULE_OF_ACTION[action],
            ANNOTATION_GPUS: str(sum(v.gpus for v in victims)),
        },
        now,
        len(victims) + 1,
    )


# --- the history -----------------------------------------------------------------------


def history_entry(result: Mapping[str, Any], holder: str, now: datetime) -> dict[str, Any]:
    """One run that evicted, as rule arbiter-history keeps it."""
    return {
        "time": seconds_time(now),
        "holder": holder,
        "job": result["job"],
        "action": result["decision"],
        "rule": RULE_OF_ACTION.get(result["decision"], ""),
        "need": result["need"],
        "freed": result["freed"],
        "victims": list(result["victims"]),
        "evicted_pods": len(result["evicted"]),
        "reason": result["reason"],
    }


def history_manifest(entries: list[Any]) -> dict[str, Any]:
    """The ``queue-arbiter-history`` ConfigMap (``common/history.history_manifest``)."""
    return _history.history_manifest(QUEUE_ARBITER_HISTORY, entries)


# --- the result ------------------------------------------------------------------------


def arbiter_result(
    job: WaitingJob | None,
    decision: Decision | None,
    waiting: Iterable[WaitingJob] = (),
    reason: str = "",
    after_restart: Iterable[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The run's result before anything is evicted: the job decided for (None: none), the
    decision (none when there is no job), the other candidates (``waiting``), and what
    Volcano may evict once the victims come back (``after_restart``, rule
    restart-may-preempt in ``aftermath``)."""
    return {
        "changed": False,
        "job": job.ref if job else None,
        # "decision", not "action": Ansible's own results carry the module name as "action".
        "decision": decision.action if decision else NONE,
        "need": decision.need if decision else 0,
        "freed": decision.freed if decision else 0,
        "victims": [victim_dict(v) for v in decision.victims] if decision else [],
        "reason": decision.reason if decision else reason,
        "blocked_by": decision.blocked_by if decision else None,
        "waiting": [w.ref for w in waiting],
        "may_preempt_after_restart": list(after_restart),
        "evicted": [],
        "history": [],
        "diff": arbiter_diff([]),
    }


def arbiter_diff(
    victims: Iterable[Mapping[str, Any]], counted: Mapping[str, Mapping[str, int]] | None = None
) -> dict[str, Any]:
    """The victims before (running) and after (evicted), and each victim queue's eviction
    count (``counted``: before and after, by queue; rule arbiter-eviction-count) under the
    key ``<queue> platform.io/arbiter-evicted-jobs``."""
    names = victim_refs(victims)
    before: dict[str, str] = {name: "running" for name in names}
    after: dict[str, str] = {name: "evicted" for name in names}
    for queue, count in sorted((counted or {}).items()):
        key = f"{queue} {ANNOTATION_ARBITER_EVICTED}"
        before[key], after[key] = str(count["before"]), str(count["after"])
    return {"before": before, "after": after}


def report(result: Mapping[str, Any]) -> dict[str, Any]:
    """What a failure reports with its message: the result without ``changed``/``diff``."""
    return {k: v for k, v in result.items() if k not in ("changed", "diff")}


def room_made_for(
    entries: Iterable[Any], job: str | None, now: datetime, window: float
) -> Mapping[str, Any] | None:
    """Rule refusal-while-settling, its history half: the latest run that evicted for
    ``job`` within the last ``window`` seconds, or None. Volcano reports a queue's
    ``status.allocated`` from its own cache, which keeps the victims' GPUs for a while
    after their pods are gone; a run that reads the queues then sees the subscription
    still full and would refuse the very job room was just made for."""
    if not job:
        return None
    latest = None
    for entry in entries:
        if not isinstance(entry, Mapping) or entry.get("job") != job:
            continue
        when = read_rfc3339(str(entry.get("time") or ""))
        if when is not None and 0 <= now.timestamp() - when.timestamp() <= window:
            latest = entry
    return latest


def settled_result(result: Mapping[str, Any], entry: Mapping[str, Any]) -> dict[str, Any]:
    """A refusal turned into "nothing to do": the room was made by ``entry``'s run."""
    victims = ", ".join(v.get("name", "") for v in entry.get("victims") or [])
    return {
        **result,
        "decision": NONE,
        "need": 0,
        "victims": [],
        "blocked_by": None,
        "reason": (
            f"room was made for {result['job']} at {entry.get('time')} by {entry.get('holder')} "
            f"(evicted {victims or 'nothing'}); Volcano is placing it (rule refusal-while-settling)"
        ),
    }


def settled(
    result: dict[str, Any],
    blocker: str | None,
    history: Iterable[Any] | None,
    now: datetime,
    window: float,
) -> dict[str, Any]:
    """Rule refusal-while-settling: a refusal read while another run holds the Lease, or
    within ``window`` (``lease_duration``) seconds of a run that made room for the same
    job, was read from a cluster still moving (Volcano's queue status keeps the victims'
    GPUs for a while). While the Lease is held (``blocker``, ``kube/lease.lease_blocker``)
    the run fails as a run refused the Lease does; after a run made room (``history``, the
    arbiter's history, read only when no run holds the Lease), the answer is that nothing
    is to be done. Any other result is returned as it is."""
    if result["decision"] != REFUSE:
        return result
    if blocker:
        raise Refused(blocker, **report(result))
    entry = room_made_for(history or [], result["job"], now, window)
    return settled_result(result, entry) if entry is not None else result
