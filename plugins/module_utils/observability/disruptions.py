# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tenant's notices: an alert, labelled with the tenant, each time the platform stops
some of its jobs (rule disruption-count): a spot reclaim, an arbiter eviction, a GPU
quarantine; and one when a GPU node is quarantined. The ``platform-disruptions`` group.
Pure and stdlib only (the local cluster loads the observability package by path).

Each cause is a count the platform keeps on the job's Queue, as an annotation
kube-state-metrics exports from every Queue (``kube_state_metrics``): the spot reclaim's
``platform.io/spot-reclaimed-jobs`` (rule spot-reclaim-count), the arbiter's
``platform.io/arbiter-evicted-jobs`` (rule arbiter-eviction-count) and the GPU quarantine's
``platform.io/gpu-quarantine-disrupted-jobs``. The quarantine taints the node
``platform.io/gpu-unhealthy``, which kube-state-metrics exports as ``kube_node_spec_taint``.
"""

from __future__ import annotations

from typing import Any

from .kube_state_metrics import (
    ARBITER_EVICTED_JOBS,
    GPU_QUARANTINE_DISRUPTED_JOBS,
    SPOT_RECLAIMED_JOBS,
)

DISRUPTIONS_GROUP = "platform-disruptions"
TAINT_GPU_UNHEALTHY = "platform.io/gpu-unhealthy"  # common/names.py (this file is stdlib only)
# How far back a count's growth is looked for; the alert fires for as long.
WINDOW = "10m"

# alert -> (cause, count, extra selector, what happened, in the tenant's words)
CAUSES: dict[str, tuple[str, str, str, str]] = {
    "SpotJobsReclaimed": (
        "spot-reclaim",
        SPOT_RECLAIMED_JOBS,
        'queue_type="spot"',
        "were stopped: the platform reclaimed their spot GPUs for jobs that pay the full price",
    ),
    "ArbiterJobsEvicted": (
        "arbiter-eviction",
        ARBITER_EVICTED_JOBS,
        "",
        "were evicted by the queue arbiter to make room for a job of higher priority",
    ),
    "GpuQuarantineStoppedJobs": (
        "gpu-quarantine",
        GPU_QUARANTINE_DISRUPTED_JOBS,
        "",
        "were stopped because a GPU node they ran on failed its health check and was quarantined",
    ),
}


def grown(metric: str, selector: str = "") -> str:
    """Rule disruption-count: by how much a Queue's count grew in the last ``WINDOW``,
    per tenant and queue; only the queues whose count grew. The count only grows, so the
    growth is the count now less the count then, exact (``increase`` would extrapolate
    a whole number of jobs into a fraction). A series that had no sample then (a Queue
    created since, or kube-state-metrics back after a gap longer than the window) counts
    from 0: a count that appears at 1 is one job stopped. A Queue deleted and created
    again under its name starts again at 0 and is not reported until it passes its old
    count's window."""
    labels = ",".join(part for part in ('tenant!=""', selector) if part)
    series = f"{metric}{{{labels}}}"
    return (
        f"sum by (tenant, queue) (\n"
        f"  ({series} - {series} offset {WINDOW} > 0)\n"
        f"  or ({series} > 0 unless {series} offset {WINDOW})\n"
        ")"
    )


def _disruption_alert(alert: str) -> dict[str, Any]:
    cause, metric, selector, what = CAUSES[alert]
    return {
        "alert": alert,
        "expr": grown(metric, selector),
        "labels": {"severity": "warning", "cause": cause},
        "annotations": {
            "summary": "{{ $value }} job(s) of tenant {{ $labels.tenant }} in queue "
            f"{{{{ $labels.queue }}}} {what}, in the last {WINDOW}"
        },
    }


def disruption_rules() -> list[dict[str, Any]]:
    """The ``platform-disruptions`` group's rules: one alert per cause, each labelled
    ``tenant`` (so it reaches the tenant's alert route) and ``cause``, and
    ``GpuNodeQuarantined`` labelled ``node``."""
    return [
        *(_disruption_alert(alert) for alert in CAUSES),
        {
            "alert": "GpuNodeQuarantined",
            "expr": f'max by (node) (kube_node_spec_taint{{key="{TAINT_GPU_UNHEALTHY}"}}) > 0',
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "Node {{ $labels.node }} is quarantined: its GPUs failed a health check "
                "and it takes no new jobs"
            },
        },
    ]
