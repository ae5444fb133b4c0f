# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU health run's writes, in the plan's order (I/O; the decisions are
``quarantine``'s, ``disruption``'s and ``health``'s):

* each node's merge patch (taint and cordon, healthy-since, release) against the version
  read; on a conflict the node is read again and its step planned again from what it
  carries now, so a taint someone added meanwhile is kept;
* per job on a quarantined node: the Volcano Job deleted (spot, debug) or its pods there
  evicted through the Eviction API (``Cluster.evict``: PodDisruptionBudgets hold, and
  Volcano's PodEvicted policy restarts the job);
* each Queue's disrupted count raised (rule quarantine-count, a merge patch against the
  version read, read again on a conflict);
* best effort, not in check mode: a ``GpuQuarantined`` or ``GpuReleased`` Event on each
  node and a ``GpuQuarantined`` Event on each stopped job, and one entry at the head of
  ConfigMap ``gpu-health-history`` (``kube/run_record``).

In check mode every write is the API server's dry run; nothing is recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..common.errors import PartialWrite
from ..common.names import ANNOTATION_GPU_QUARANTINE_DISRUPTED, JOB_API
from ..kube.cluster import (
    Cluster,
    ConflictError,
    NotFoundError,
)
from ..kube.run_record import raise_stop_counts
from .disruption import DELETE, EVICT, JobAction
from .quarantine import NodeAction

WHAT = "GPU health"
ATTEMPTS = 5


def patch_node(
    cluster: Cluster, action: NodeAction, again: Callable[[Mapping[str, Any]], NodeAction]
) -> NodeAction:
    """One node's patch; on a conflict the node is read again and ``again`` plans its
    step from it. Returns the step written (a hold when, read again, nothing is due)."""
    for attempt in range(ATTEMPTS):
        if action.patch is None:
            return action
        try:
            cluster.merge_patch("v1", "Node", action.name, action.patch)
            return action
        except ConflictError:
            node = cluster.get("v1", "Node", action.name)
            if node is None or attempt == ATTEMPTS - 1:
                raise
            action = again(node)
    return action


def stop_job(cluster: Cluster, job: JobAction) -> bool:
    """Delete the Volcano Job or evict its pods on the quarantined nodes; False when all
    of it was gone already (or re-created since the list)."""
    if job.action == DELETE:
        try:
            return cluster.delete(
                JOB_API,
                "Job",
                job.name,
                job.namespace,
                propagation="Background",
                preconditions={"uid": job.uid} if job.uid else None,
            )
        except ConflictError:
            return False
    took = False
    if job.action == EVICT:
        for name, uid in job.pods:
            try:
                took = cluster.evict(name, job.namespace, uid or None) or took
            except (ConflictError, NotFoundError):
                continue
    return took


def raise_counts(
    cluster: Cluster, queues: Mapping[str, Mapping[str, Any]], per_queue: Mapping[str, int]
) -> dict[str, dict[str, int]]:
    """Raise each Queue's disrupted count (rule quarantine-count, written by
    ``kube/run_record.raise_stop_counts``): the Queue as listed is patched first, read
    again on a conflict. A count that cannot be written is warned about: the jobs are
    stopped either way."""
    return raise_stop_counts(
        cluster, ANNOTATION_GPU_QUARANTINE_DISRUPTED, per_queue, "GPU quarantine", "jobs", queues
    )


def failed(done: list[str], exc: Exception, report: Mapping[str, Any]) -> PartialWrite:
    """A write the API server refused: what was written so far."""
    said = {k: v for k, v in report.items() if k not in ("changed", "diff")}
    return PartialWrite(WHAT, done, exc, **said)
