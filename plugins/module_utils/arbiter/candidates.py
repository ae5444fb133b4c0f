# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which waiting jobs the arbiter acts for, and in which order (pure: no I/O).

* Rule arbiter-settle (``settled_waiting``): a PodGroup counts once it waits (Pending, or
  Inqueue: admitted by sla past a full queue, jobs/sla) and was created at least
  ``settle_seconds`` ago (a new PodGroup is Pending until the scheduler's next enqueue,
  and Volcano's own actions get their cycles first). A Pending PodGroup with an sla
  waiting time counts only ``settle_seconds`` after that time (``admission_due``): until
  sla admits it, its victims' restarted pods would be admitted before it and take the
  GPUs back (measured); once admitted it is placed first. A PodGroup without a
  ``creationTimestamp`` counts as settled; one being deleted never counts. Which of them
  the arbiter may preempt for is rule volcano-preempts (``plan.volcano_preempts``).
* Rule arbiter-candidates (``arbiter_candidates``): of the waiting jobs (``model.
  waiting_jobs``) built from those PodGroups, the ones that rule blocked-by-capacity holds
  back; highest priority first, then the oldest PodGroup, then namespace/name. The
  arbiter decides for the first only in a run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..jobs.large_job import owner_job
from ..jobs.sla import waiting_seconds
from ..spot.victims import parse_time
from .model import QueueState, WaitingJob
from .rules import NOTHING_EVICTED, blocked_by_capacity

PENDING = "Pending"
INQUEUE = "Inqueue"
WAITING_PHASES = (PENDING, INQUEUE)


def podgroup_key(podgroup: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, uid of the owning Volcano Job): how a WaitingJob finds its PodGroup."""
    meta = podgroup.get("metadata") or {}
    return str(meta.get("namespace") or ""), owner_job(podgroup)[1]


def podgroup_created(podgroup: Mapping[str, Any]) -> float | None:
    """``metadata.creationTimestamp`` in seconds since the epoch, None when not set."""
    meta = podgroup.get("metadata") or {}
    created = meta.get("creationTimestamp")
    if not created:
        return None
    where = f"{meta.get('namespace')}/{meta.get('name')}.metadata.creationTimestamp"
    return parse_time(created, where)


def podgroup_phase(podgroup: Mapping[str, Any] | None) -> str:
    return str(((podgroup or {}).get("status") or {}).get("phase") or "")


# sla permits in the first enqueue after the waiting time; Volcano's enqueue runs every
# scheduling period (1 s by default): three of them.
SLA_ADMISSION_MARGIN = 3


def admission_due(podgroup: Mapping[str, Any], now: float, settle_seconds: int) -> float:
    """Seconds until a Pending PodGroup with an sla waiting time counts (rule
    arbiter-settle: its waiting time, then the larger of ``settle_seconds`` and
    SLA_ADMISSION_MARGIN); 0 for any other PodGroup."""
    if podgroup_phase(podgroup) != PENDING:
        return 0.0
    wait = waiting_seconds((podgroup.get("metadata") or {}).get("annotations"))
    created = podgroup_created(podgroup)
    if wait is None or created is None:
        return 0.0
    return max(0.0, created + wait + max(settle_seconds, SLA_ADMISSION_MARGIN) - now)


def settled_waiting(
    podgroups: Iterable[Mapping[str, Any]], now: float, settle_seconds: int
) -> list[Mapping[str, Any]]:
    """Rule arbiter-settle: the PodGroups Pending or Inqueue, created at least
    ``settle_seconds`` ago."""
    out = []
    for pg in podgroups:
        meta = pg.get("metadata") or {}
        if meta.get("deletionTimestamp") or podgroup_phase(pg) not in WAITING_PHASES:
            continue
        created = podgroup_created(pg)
        if admission_due(pg, now, settle_seconds) > 0:
            continue
        if created is None or now - created >= settle_seconds:
            out.append(pg)
    return out


def arbiter_candidates(
    waiting: Iterable[WaitingJob],
    created: Mapping[tuple[str, str], float | None],
    states: Mapping[str, QueueState],
    free_gpus: int,
    pool_gpus: int,
) -> list[WaitingJob]:
    """Rule arbiter-candidates: the waiting jobs that rule blocked-by-capacity holds
    back (``created``: each PodGroup's creation time by ``podgroup_key``), highest priority
    first, then the oldest, then namespace/name."""

    def key(job: WaitingJob) -> tuple[int, float, str, str]:
        return (
            -job.priority,
            created.get((job.namespace, job.uid)) or 0.0,
            job.namespace,
            job.name,
        )

    return sorted(
        (
            job
            for job in waiting
            if blocked_by_capacity(job, states, free_gpus, pool_gpus) is not None
        ),
        key=key,
    )


def not_a_candidate(
    ref: str, podgroup: Mapping[str, Any] | None, now: float, settle_seconds: int
) -> str:
    """Why the job ``ref`` (option ``job``) is not arbitrated for, from its PodGroup."""
    if podgroup is None:
        return f"{ref} has no PodGroup: it is not waiting; nothing is evicted"
    phase = podgroup_phase(podgroup)
    if phase not in WAITING_PHASES:
        return (
            f"{ref} is {phase or 'without a phase'}, neither Pending nor Inqueue: it is not "
            "waiting for GPUs; nothing is evicted"
        )
    due = admission_due(podgroup, now, settle_seconds)
    if due > 0:
        return (
            f"{ref} is Pending until sla admits it (in {due:.0f} s at most); the arbiter acts "
            "for it once it is admitted, so that it, and not its victims' restarted pods, gets "
            f"the GPUs; {NOTHING_EVICTED}"
        )
    created = podgroup_created(podgroup)
    if created is not None and now - created < settle_seconds:
        return (
            f"{ref} has been waiting for {int(now - created)} s, less than settle_seconds "
            f"({settle_seconds}); nothing is evicted"
        )
    return f"{ref} is {phase} but no queue's capability holds it back; nothing is evicted"


def refs(jobs: Sequence[WaitingJob]) -> list[str]:
    return [j.ref for j in jobs]
