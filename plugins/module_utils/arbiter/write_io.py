# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The queue arbiter's writes under its Lease (I/O through a ``Cluster``).

* Every pod of each victim Volcano Job evicted through the Eviction API, in victim order,
  then an ``ArbiterEvicted`` Event on the victim (``evict_victims``; the Event through
  ``kube/run_record``, best effort);
* each victim queue's eviction count raised by the jobs evicted from it (rule
  arbiter-eviction-count, ``count_evictions``: a merge patch against the version just
  read, as the spot reclaim raises its count);
* for a team reclaim, rule reclaim-hold (``arbiter/hold``): each victim queue's GPU
  capability set to what it keeps while the waiting job starts
  (``hold_victim_queues``), then put back (``release_victim_queues``), with the wait
  between them (``wait_until_running``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ..common.errors import PartialWrite, Refused
from ..common.names import (
    ANNOTATION_ARBITER_EVICTED,
    EVENT_REASON_ARBITER_EVICTED,
    JOB_API,
    QUEUE_API,
)
from ..kube.cluster import (
    ApiException,
    Cluster,
    ConflictError,
    NotFoundError,
    TransportError,
)
from ..kube.run_record import raise_stop_counts, record_event
from .arbitrate import ArbiterPlan as Plan
from .count import evictions_per_queue
from .hold import gpu_capability, held_capability, hold_text, taken_by_queue, with_gpu_capability
from .model import RunningJob, WaitingJob, pods_of
from .record import evicted_event, report, victim_dict

WHAT = "evicting jobs for the queue arbiter"


# --- evicting ----------------------------------------------------------------------


def _pods_to_evict(plan: Plan, victim: RunningJob) -> list[Mapping[str, Any]]:
    """The victim Job's pods (owned by its uid, or carrying its job-name label), not being
    deleted already, by name."""
    vcjob = next(
        (j for j in plan.vcjobs if (j.get("metadata") or {}).get("uid") == victim.uid), None
    )
    if vcjob is None:
        return []
    pods = [
        p
        for p in pods_of(vcjob, plan.pods)
        if not (p.get("metadata") or {}).get("deletionTimestamp")
    ]
    return sorted(pods, key=lambda p: str((p.get("metadata") or {}).get("name")))


def evict_victims(
    cluster: Cluster, plan: Plan, result: dict[str, Any], now: datetime
) -> tuple[list[RunningJob], list[str]]:
    """Evict every pod of each victim, in victim order, then record an Event on the victim.
    A pod gone or re-created since the list (NotFound, a uid Conflict) is not evicted and
    the run goes on; any other refusal stops it: PartialWrite names the pods evicted."""
    evicted_jobs: list[RunningJob] = []
    evicted_pods: list[str] = []
    for order, victim in enumerate(plan.decision.victims, start=1):
        took = False
        for pod in _pods_to_evict(plan, victim):
            meta = pod.get("metadata") or {}
            name, namespace = str(meta.get("name")), str(meta.get("namespace"))
            try:
                gone = not cluster.evict(name, namespace, meta.get("uid"))
            except (ApiException, TransportError) as exc:
                if not isinstance(exc, ConflictError | NotFoundError):
                    jobs = [*evicted_jobs, victim] if took else evicted_jobs
                    raise PartialWrite(
                        WHAT, evicted_pods, exc, **_so_far(result, jobs, evicted_pods)
                    ) from exc
                gone = True
            if gone:
                continue
            took = True
            evicted_pods.append(f"{namespace}/{name}")
        if took:
            evicted_jobs.append(victim)
            # The pods are gone either way: a refused Event is only warned about.
            record_event(
                cluster,
                evicted_event(victim, plan.job, plan.decision.action, order, now),
                f"{victim.namespace}/{victim.name} was evicted but its {EVENT_REASON_ARBITER_EVICTED}",
            )
    return evicted_jobs, evicted_pods


def _so_far(
    result: Mapping[str, Any], jobs: Sequence[RunningJob], pods: list[str]
) -> dict[str, Any]:
    out = report(result)
    out.update(
        victims=[victim_dict(v) for v in jobs], freed=sum(v.gpus for v in jobs), evicted=list(pods)
    )
    return out


# --- counting (rule arbiter-eviction-count) -----------------------------------------


def count_evictions(
    cluster: Cluster, evicted: Iterable[Mapping[str, Any]]
) -> dict[str, dict[str, int]]:
    """Raise each victim queue's eviction count by the jobs evicted from it (rule
    arbiter-eviction-count, written by ``kube/run_record.raise_stop_counts``); returns the
    counts written, before and after, by queue. Under the arbiter's Lease no other run
    counts at the same time; Volcano or a hold may change the queue in between, which the
    patch's resourceVersion turns into a conflict and another read."""
    return raise_stop_counts(
        cluster, ANNOTATION_ARBITER_EVICTED, evictions_per_queue(evicted), "eviction", "evictions"
    )


# --- holding the room (rule reclaim-hold) --------------------------------------------


def _set_gpu_capability(
    cluster: Cluster, name: str, gpus: int | str | None, hold_for: str | None = None
) -> tuple[bool, str | None]:
    """Set one Queue's GPU capability (and the hold annotation when ``hold_for`` names the
    waiting job), re-reading it on a conflict (Volcano writes its status); (whether the
    Queue exists, the capability it had)."""
    for _attempt in range(3):
        queue = cluster.get(QUEUE_API, "Queue", name)
        if queue is None:
            return False, None
        before = gpu_capability(queue)
        hold = hold_text(hold_for, before) if hold_for else None
        try:
            cluster.replace(with_gpu_capability(queue, gpus, hold))
            return True, before
        except ConflictError:
            continue
    raise Refused(f"Queue {name} kept changing while its GPU capability was set; try again")


def hold_victim_queues(cluster: Cluster, plan: Plan) -> list[tuple[str, str | None]]:
    """Rule reclaim-hold (``arbiter/hold``): set each victim queue's GPU capability to what
    it keeps; returns (queue, capability before) for ``release_victim_queues``."""
    held: list[tuple[str, str | None]] = []
    try:
        for name, taken in sorted(taken_by_queue(plan.decision.victims).items()):
            if name not in plan.states:
                continue
            found, before = _set_gpu_capability(
                cluster, name, held_capability(plan.states[name], taken), plan.job.ref
            )
            if found:
                held.append((name, before))
    except BaseException:
        release_victim_queues(cluster, held)
        raise
    return held


def release_victim_queues(cluster: Cluster, held: Sequence[tuple[str, str | None]]) -> None:
    """Put each held queue's GPU capability back and drop the hold annotation."""
    for name, before in held:
        _set_gpu_capability(cluster, name, before)


def wait_until_running(cluster: Cluster, job: WaitingJob, seconds: int) -> int:
    """Wait, reading the waiting Volcano Job once a second, until it runs or ``seconds``
    have passed; the seconds waited."""
    for waited in range(seconds):
        vcjob = cluster.get(JOB_API, "Job", job.name, job.namespace) or {}
        if ((vcjob.get("status") or {}).get("state") or {}).get("phase") == "Running":
            return waited
        time.sleep(1)
    return seconds
