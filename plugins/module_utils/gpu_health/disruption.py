# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What happens to the jobs on a quarantined node, and the count each tenant's Queue
keeps of them (pure: no I/O).

Volcano Jobs built by the platform restart as a whole when one of their pods is evicted
or fails (policies PodEvicted and PodFailed -> RestartJob, ``jobs/manifest``); with the
node cordoned and tainted, the restarted pods land on healthy nodes.

* Rule quarantine-jobs (``quarantine_action``, applied by ``jobs_on_nodes``).
* Rule quarantine-count (``disrupted_jobs``; the count itself is rule stop-count).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..common import stop_counts
from ..common.names import (
    ANNOTATION_GPU_QUARANTINE_DISRUPTED,
    BILLING_TYPE_OF_QUEUE_TYPE,
    JOB_CLASSES,
    LABEL_BILLING_TYPE,
    LABEL_JOB_CLASS,
    LABEL_QUEUE_TYPE,
    LABEL_TENANT,
    POD_TERMINAL_PHASES,
)

DELETE = "delete"
EVICT = "evict"
LEFT_RUNNING = "left running"
# Volcano's label on the pods of a Job (with the Job's name).
LABEL_VOLCANO_JOB_NAME = "volcano.sh/job-name"
# The platform's PriorityClasses, by class (common/names.PRIORITY_CLASSES).
CLASS_OF_PRIORITY = {f"{c}-job": c for c in JOB_CLASSES}


@dataclass(frozen=True)
class JobAction:
    """One Volcano Job with pods on quarantined nodes, and what the run does to it."""

    namespace: str
    name: str
    uid: str
    job_class: str
    billing: str
    tenant: str
    queue: str
    action: str
    pods: tuple[tuple[str, str], ...]  # (name, uid) of its pods on the quarantined nodes
    nodes: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "class": self.job_class,
            "billing": self.billing,
            "tenant": self.tenant,
            "queue": self.queue,
            "action": self.action,
            "pods": [name for name, _uid in self.pods],
            "nodes": list(self.nodes),
        }

    @property
    def stopped(self) -> bool:
        return self.action in (DELETE, EVICT)


def quarantine_action(job_class: str, billing: str) -> str:
    """Rule quarantine-jobs: what a Volcano Job with pods on a quarantined node gets. A
    spot job (spot billing or class spot) or a debug job is deleted (nothing is owed to
    it, as in a spot reclaim); a critical job is left running (said in a warning and the
    result, for a person to move); every other job (large, normal, subscription or
    pay-as-you-go) has its pods on the node evicted, and Volcano restarts it elsewhere."""
    if billing == "spot" or job_class in ("spot", "debug"):
        return DELETE
    if job_class == "critical":
        return LEFT_RUNNING
    return EVICT


def job_class(job: Mapping[str, Any]) -> str:
    """A Job's class: its ``platform.io/job-class`` label, else its PriorityClass's, else
    normal."""
    label = ((job.get("metadata") or {}).get("labels") or {}).get(LABEL_JOB_CLASS)
    if label in JOB_CLASSES:
        return str(label)
    priority = (job.get("spec") or {}).get("priorityClassName")
    return CLASS_OF_PRIORITY.get(str(priority), "normal")


def _live(obj: Mapping[str, Any]) -> bool:
    return not (obj.get("metadata") or {}).get("deletionTimestamp")


def pods_on(pods: Iterable[Mapping[str, Any]], nodes: Iterable[str]) -> list[Mapping[str, Any]]:
    """The pods bound to ``nodes`` that have not ended and are not being deleted."""
    wanted = set(nodes)
    return [
        p
        for p in pods
        if (p.get("spec") or {}).get("nodeName") in wanted
        and (p.get("status") or {}).get("phase") not in POD_TERMINAL_PHASES
        and _live(p)
    ]


def _owner(pod: Mapping[str, Any], by_uid: Mapping[str, Any], by_name: Mapping[Any, Any]) -> Any:
    meta = pod.get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        if ref.get("kind") == "Job" and str(ref.get("apiVersion", "")).startswith(
            "batch.volcano.sh/"
        ):
            return by_uid.get(ref.get("uid"), False)
    name = (meta.get("labels") or {}).get(LABEL_VOLCANO_JOB_NAME)
    return by_name.get((meta.get("namespace"), name), False) if name else None


def _job_action(
    job: Mapping[str, Any], pods: list[Mapping[str, Any]], queues: Mapping[str, Any]
) -> JobAction:
    meta = job.get("metadata") or {}
    queue_name = str((job.get("spec") or {}).get("queue") or "")
    qlabels = ((queues.get(queue_name) or {}).get("metadata") or {}).get("labels") or {}
    jlabels = meta.get("labels") or {}
    billing = str(
        jlabels.get(LABEL_BILLING_TYPE)
        or BILLING_TYPE_OF_QUEUE_TYPE.get(str(qlabels.get(LABEL_QUEUE_TYPE)), "")
    )
    kind = job_class(job)
    pod_metas = sorted(
        (
            str(p["metadata"]["name"]),
            str(p["metadata"].get("uid") or ""),
            str(p["spec"]["nodeName"]),
        )
        for p in pods
    )
    return JobAction(
        namespace=str(meta.get("namespace")),
        name=str(meta.get("name")),
        uid=str(meta.get("uid") or ""),
        job_class=kind,
        billing=billing,
        tenant=str(qlabels.get(LABEL_TENANT) or jlabels.get(LABEL_TENANT) or ""),
        queue=queue_name,
        action=quarantine_action(kind, billing),
        pods=tuple((n, u) for n, u, _node in pod_metas),
        nodes=tuple(sorted({node for _n, _u, node in pod_metas})),
    )


def jobs_on_nodes(
    pods: Iterable[Mapping[str, Any]],
    vcjobs: Iterable[Mapping[str, Any]],
    queues: Iterable[Mapping[str, Any]],
    nodes: Iterable[str],
) -> tuple[list[JobAction], list[str]]:
    """Rule quarantine-jobs over the pods on ``nodes``: each Volcano Job with pods there
    and its action, by namespace and name; and the pods left alone, as
    ``namespace/name on node (why)``: not owned by a Volcano Job, or whose Job is gone or
    being deleted."""
    live_jobs = [j for j in vcjobs if _live(j)]
    by_uid = {(j.get("metadata") or {}).get("uid"): j for j in live_jobs}
    by_name = {
        ((j.get("metadata") or {}).get("namespace"), (j.get("metadata") or {}).get("name")): j
        for j in live_jobs
    }
    by_queue = {str((q.get("metadata") or {}).get("name")): q for q in queues}
    grouped: dict[tuple[str, str], tuple[Mapping[str, Any], list[Mapping[str, Any]]]] = {}
    alone: list[str] = []
    for pod in pods_on(pods, nodes):
        meta = pod.get("metadata") or {}
        where = f"{meta.get('namespace')}/{meta.get('name')} on {pod['spec']['nodeName']}"
        job = _owner(pod, by_uid, by_name)
        if not job:
            why = "not owned by a Volcano Job" if job is None else "its Volcano Job is gone"
            alone.append(f"{where} ({why})")
            continue
        jmeta = job.get("metadata") or {}
        key = (str(jmeta.get("namespace")), str(jmeta.get("name")))
        grouped.setdefault(key, (job, []))[1].append(pod)
    actions = [_job_action(job, ps, by_queue) for _key, (job, ps) in sorted(grouped.items())]
    return actions, sorted(alone)


def disrupted_jobs(queue: Mapping[str, Any]) -> int:
    """Rule quarantine-count: the jobs a GPU quarantine stopped in this Queue so far, its
    ``platform.io/gpu-quarantine-disrupted-jobs`` annotation (rule stop-count)."""
    return stop_counts.stopped_jobs(queue, ANNOTATION_GPU_QUARANTINE_DISRUPTED)


def stopped_per_queue(actions: Iterable[JobAction]) -> dict[str, int]:
    """Rule quarantine-count: how many stopped (deleted or evicted) jobs each Queue
    counts, by name."""
    return stop_counts.per_queue(a.queue for a in actions if a.stopped)
