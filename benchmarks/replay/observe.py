# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one look at the cluster says about the replay's jobs, and how the looks add up
to each job's record. Pure: the replayer LISTs the Pods and Volcano Jobs and hands them
here; times are traced seconds.

A job starts when Volcano says Running (its gang is bound); it ends Completed. A running
job that Volcano sends back (Restarting or Pending again, or a higher ``retryCount``) was
evicted and restarts; one that vanishes before it completed was deleted (a spot reclaim).
Who evicted it is settled afterwards from the platform's Events (``attribute``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ansible_collections.gpucloud.platform.benchmarks.replay.idle import (
    STAGE_CONTROLLER,
    STAGE_PENDING,
    STAGE_QUEUED,
    STAGE_SUBMITTING,
    Waiting,
)
from ansible_collections.gpucloud.platform.benchmarks.replay.jobs import index_of
from ansible_collections.gpucloud.platform.benchmarks.replay.records import (
    CAUSE_ARBITER,
    CAUSE_SPOT,
    CAUSE_VOLCANO,
    Eviction,
    JobRecord,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    EVENT_REASON_ARBITER_EVICTED,
    EVENT_REASON_SPOT_RECLAIMED,
    pod_queue,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.quantity import GPU

POD_JOB_KEY = "volcano.sh/job-name"
RUNNING = "Running"
GROUP_PENDING = "Pending"  # a PodGroup Volcano's enqueue action has not admitted
COMPLETED = "Completed"
# Volcano's phases of a job sent back to wait, after an eviction.
SENT_BACK = ("Restarting", "Pending")
# An Event this close (traced seconds) before an eviction was seen names its cause.
CAUSE_REASONS = {
    EVENT_REASON_ARBITER_EVICTED: CAUSE_ARBITER,
    EVENT_REASON_SPOT_RECLAIMED: CAUSE_SPOT,
}


def pod_gpus(pod: Mapping[str, Any]) -> int:
    total = 0
    for container in (pod.get("spec") or {}).get("containers") or []:
        limits = (container.get("resources") or {}).get("limits") or {}
        total += int(limits.get(GPU, 0) or 0)
    return total


def held_by_queue(pods: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """GPUs held by the replay's Running pods, per queue."""
    out: dict[str, int] = {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        if index_of(str(labels.get(POD_JOB_KEY, ""))) is None:
            continue
        if (pod.get("status") or {}).get("phase") != RUNNING or meta.get("deletionTimestamp"):
            continue
        queue = pod_queue(meta)
        out[queue] = out.get(queue, 0) + pod_gpus(pod)
    return out


def backlog(jobs: Iterable[Mapping[str, Any]]) -> int:
    """The replay's Volcano Jobs with no phase yet: Volcano's job controller has not
    reached them."""
    return sum(
        1
        for job in jobs
        if index_of(str((job.get("metadata") or {}).get("name", ""))) is not None
        and not _phase(job)
    )


@dataclass
class Tracked:
    """What the looks have said so far about one submitted job."""

    record: JobRecord
    running_since: float | None = None
    retries: int = 0
    seen: bool = False
    evictions: list[Eviction] = field(default_factory=list)
    waited: dict[str, float] = field(default_factory=dict)  # cause -> traced seconds

    def done(self) -> bool:
        return self.record.finished is not None or self.record.deleted


def waiting(
    tracked: Mapping[str, Tracked],
    submitting: Iterable[JobRecord],
    jobs: Iterable[Mapping[str, Any]],
    pods_of: Mapping[str, tuple[int, ...]] | None = None,
    groups: Mapping[str, str] | None = None,
) -> list[Waiting]:
    """The replay's jobs that have not run, in submission order: those the platform's
    submission holds, those Volcano's job controller has not reached, those Volcano's
    enqueue has not admitted (in ``groups``, PodGroup phases by job name: Pending, no
    phase yet, or no PodGroup yet), the rest queued; ``pods_of`` the GPUs of each job's
    pods, by job name, when known. Without ``groups`` every job Volcano knows is queued."""
    phases = {str((j.get("metadata") or {}).get("name")): _phase(j) for j in jobs}
    out = [(r, STAGE_SUBMITTING) for r in submitting]
    for name, t in tracked.items():
        if t.done() or t.running_since is not None:
            continue
        if not phases.get(name):
            stage = STAGE_CONTROLLER
        elif groups is not None and groups.get(name, "") in ("", GROUP_PENDING):
            stage = STAGE_PENDING
        else:
            stage = STAGE_QUEUED
        out.append((t.record, stage))
    out.sort(key=lambda pair: (pair[0].at, pair[0].name))
    shapes = pods_of or {}
    return [
        Waiting(r.name, r.queue, r.billing, r.gpus, stage, shapes.get(r.name, ()))
        for r, stage in out
    ]


def group_phases(podgroups: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """The phase of each Volcano Job's PodGroup, by the job's name (the PodGroup's owner)."""
    out: dict[str, str] = {}
    for group in podgroups:
        meta = group.get("metadata") or {}
        owner = next((o for o in meta.get("ownerReferences") or [] if o.get("kind") == "Job"), None)
        if owner is not None:
            out[str(owner.get("name"))] = str((group.get("status") or {}).get("phase") or "")
    return out


def free_by_node(node_gpus: Mapping[str, int], pods: Iterable[Mapping[str, Any]]) -> list[int]:
    """Each node's idle GPUs: its allocatable less what its Running pods hold, whoever's."""
    held: dict[str, int] = {}
    for pod in pods:
        if (pod.get("status") or {}).get("phase") != RUNNING:
            continue
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        held[node] = held.get(node, 0) + pod_gpus(pod)
    return [max(0, gpus - held.get(node, 0)) for node, gpus in sorted(node_gpus.items())]


def charge(waited: dict[str, float], cause: str, seconds: float) -> None:
    """Add ``seconds`` of waiting for ``cause`` to a job's tally."""
    waited[cause] = waited.get(cause, 0.0) + seconds


def _phase(job: Mapping[str, Any]) -> str:
    return str(((job.get("status") or {}).get("state") or {}).get("phase") or "")


def _retries(job: Mapping[str, Any]) -> int:
    return int((job.get("status") or {}).get("retryCount") or 0)


def _evicted(t: Tracked, at: float) -> None:
    ran = 0.0 if t.running_since is None else at - t.running_since
    t.evictions.append(Eviction(at=at, cause=CAUSE_VOLCANO, ran_s=ran))
    t.running_since = None


def look(tracked: Mapping[str, Tracked], jobs: Iterable[Mapping[str, Any]], at: float) -> None:
    """Fold one LIST of Volcano Jobs, taken at ``at``, into the tracked jobs."""
    live = {str((j.get("metadata") or {}).get("name")): j for j in jobs}
    for name, t in tracked.items():
        if t.done():
            continue
        job = live.get(name)
        if job is None:
            if t.seen:  # deleted before it completed: a reclaim, never resubmitted
                if t.running_since is not None:
                    _evicted(t, at)
                t.record = replace(t.record, deleted=True)
            continue
        t.seen = True
        phase, retries = _phase(job), _retries(job)
        if retries > t.retries and t.running_since is not None:
            _evicted(t, at)
        t.retries = max(t.retries, retries)
        if phase in SENT_BACK and t.running_since is not None:
            _evicted(t, at)
        if phase == RUNNING and t.running_since is None:
            t.running_since = at
            if t.record.started is None:
                t.record = replace(t.record, started=at)
        if phase == COMPLETED:
            if t.record.started is None:  # ran and ended between two looks
                t.record = replace(t.record, started=at)
            t.record = replace(t.record, finished=at)


def cause_times(
    events: Iterable[Mapping[str, Any]], to_traced: Any
) -> dict[str, list[tuple[float, str]]]:
    """Job name -> (traced time, cause) of the platform's eviction Events."""
    out: dict[str, list[tuple[float, str]]] = {}
    for event in events:
        cause = CAUSE_REASONS.get(str(event.get("reason")))
        obj = event.get("involvedObject") or event.get("regarding") or {}
        if cause is None or index_of(str(obj.get("name", ""))) is None:
            continue
        when = event.get("eventTime") or event.get("lastTimestamp") or event.get("firstTimestamp")
        if not when:
            continue
        out.setdefault(str(obj["name"]), []).append((to_traced(when), cause))
    return out


def attribute(
    evictions: Iterable[Eviction], causes: list[tuple[float, str]], window_s: float
) -> tuple[Eviction, ...]:
    """Each eviction's cause: the platform's Event on the job within ``window_s`` before it
    was seen (one Event names one eviction), else Volcano's own preempt or reclaim."""
    left = sorted(causes)
    out = []
    for ev in evictions:
        match = next((c for c in left if ev.at - window_s <= c[0] <= ev.at + 1e-9), None)
        if match is not None:
            left.remove(match)
            ev = replace(ev, cause=match[1])
        out.append(ev)
    return tuple(out)
