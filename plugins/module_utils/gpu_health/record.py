# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a GPU health run records (pure: no I/O): the Events on the nodes it quarantined
or released and on the jobs it stopped (``common/run_event``), and its entry in
ConfigMap ``gpu-health-history`` (``common/history``, rule reclaim-history's shape)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ..common.names import (
    EVENT_REASON_GPU_QUARANTINED,
    EVENT_REASON_GPU_RELEASED,
    JOB_API,
)
from ..common.run_event import involved_object, run_event
from ..common.times import write_rfc3339
from .disruption import DELETE, JobAction
from .quarantine import QUARANTINE, NodeAction

# Kubernetes records a Node's Events in namespace default (a Node has none).
NODE_EVENT_NAMESPACE = "default"


def node_event(action: NodeAction, now: datetime, order: int) -> dict[str, Any]:
    """``GpuQuarantined`` (Warning) or ``GpuReleased`` (Normal) on the node."""
    involved = involved_object("v1", "Node", action.name, NODE_EVENT_NAMESPACE)
    if action.action == QUARANTINE:
        reason, kind = EVENT_REASON_GPU_QUARANTINED, "Warning"
        how = (
            "tainted and cordoned" if action.cordoned_by_platform else "tainted (cordoned already)"
        )
        message = f"GPU quarantine: {how}: {'; '.join(action.reasons)}"
    else:
        reason, kind = EVENT_REASON_GPU_RELEASED, "Normal"
        how = "taint removed and uncordoned" if action.cordoned_by_platform else "taint removed"
        message = f"GPU quarantine ended: healthy since {action.healthy_since}; {how}"
    event = run_event(involved, reason, kind, message, {}, now, order)
    event["involvedObject"].pop("namespace")
    return event


def job_event(job: JobAction, now: datetime, order: int) -> dict[str, Any]:
    """``GpuQuarantined`` (Warning) on a Volcano Job the run deleted or evicted."""
    involved = involved_object(JOB_API, "Job", job.name, job.namespace, job.uid)
    what = "deleted" if job.action == DELETE else f"its pods on {', '.join(job.nodes)} evicted"
    message = (
        f"{what}: the GPUs of node(s) {', '.join(job.nodes)} failed and the nodes are "
        f"quarantined ({job.job_class} job)"
    )
    return run_event(involved, EVENT_REASON_GPU_QUARANTINED, "Warning", message, {}, now, order)


def history_entry(result: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """The run's entry: when, the nodes quarantined and released, the jobs stopped."""
    return {
        "time": write_rfc3339(now),
        "quarantined": list(result.get("quarantined") or []),
        "released": list(result.get("released") or []),
        "jobs": [j for j in result.get("jobs") or [] if j.get("action") != "left running"],
    }
