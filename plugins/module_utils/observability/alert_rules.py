# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU, queue and spot groups: the platform's alerts with their thresholds (rule
alert-thresholds) and the recording rules they, hybrid scaling and the dashboards read
(rules gpu-milli-units, oldest-pending-job, queue-starving). Pure and stdlib only (the
local cluster loads the observability package by path).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from difflib import get_close_matches
from typing import Any

from .kube_state_metrics import GPU_RESOURCE_KSM, SPOT_RECLAIMED_JOBS

GPU_RESOURCE_VOLCANO = "nvidia.com/gpu"

# Rule gpu-milli-units: Volcano reports scalar resources, GPUs included, in
# milli-units (api.NewResource keeps rQuant.MilliValue()): 1 GPU = 1000.
VOLCANO_MILLI = 1000

# Recording rules other parts of the collection read (hybrid scaling).
QUEUE_OLDEST_PENDING = "platform:queue_oldest_pending_job:age_seconds"
QUEUE_DEPTH = "platform:queue_depth:jobs"
SPOT_RECLAIMS_1H = "platform:spot_reclaims:count1h"


@dataclass(frozen=True)
class Thresholds:
    """Alert thresholds; the defaults are the monitoring role's defaults (tested)."""

    gpu_util_low_percent: float = 10
    gpu_memory_ratio: float = 0.95
    gpu_temperature_celsius: float = 85
    queue_pending_jobs: int = 10
    queue_wait_minutes: float = 30
    queue_starving_minutes: float = 10
    job_failure_ratio: float = 0.2
    spot_reclaims_per_hour: int = 20
    gpu_watermark_ratio: float = 0.9
    inference_p99_seconds: float = 5
    inference_error_ratio: float = 0.05


def threshold_errors(values: Any) -> list[str]:
    """Rule alert-thresholds: known names only, each a number of 0 or more."""
    if not isinstance(values, dict):
        return [f"thresholds: {values!r} must be a mapping of threshold name to number"]
    known = asdict(Thresholds())
    errors = []
    for name, value in values.items():
        if name not in known:
            close = get_close_matches(str(name), known, n=1)
            hint = f"; did you mean {close[0]}?" if close else f"; known: {', '.join(known)}"
            errors.append(f"thresholds.{name}: not a threshold{hint}")
        elif _number(value) is None or _number(value) < 0:
            errors.append(f"thresholds.{name}: {value!r} must be a number, 0 or more")
    return errors


def _number(value: Any) -> float | int | None:
    """A threshold as a number; text such as ``-e name=80`` gives is read as one."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value if isinstance(value, (int, float)) else str(value))
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    return int(number) if number.is_integer() else number


def thresholds_of(values: dict[str, Any]) -> Thresholds:
    """Thresholds from a checked mapping (threshold_errors), defaults for the rest."""
    return Thresholds(**{name: _number(value) for name, value in values.items()})


def _running_pod_gpus() -> str:  # the watermark's; metering has its per-pod rule
    """GPUs requested by each Running pod (rule running-pod-gpus).

    A pod holds its GPUs from the moment it runs until it ends; requests are
    what the scheduler allocated (for extended resources requests = limits).
    """
    return (
        f'sum by (namespace, pod) (kube_pod_container_resource_requests{{resource="{GPU_RESOURCE_KSM}"}})\n'
        "  * on (namespace, pod) group_left()\n"
        '  (max by (namespace, pod) (kube_pod_status_phase{phase="Running"}) == 1)'
    )


def gpu_rules(t: Thresholds) -> list[dict[str, Any]]:
    return [
        {
            "alert": "GpuAllocatedButIdle",
            "expr": 'avg by (hostname, gpu, namespace, pod) (avg_over_time(DCGM_FI_DEV_GPU_UTIL{pod!=""}[1h])) '
            f"< {t.gpu_util_low_percent}",
            "for": "15m",
            "labels": {"severity": "info"},
            "annotations": {
                "summary": "GPU {{ $labels.gpu }} on {{ $labels.hostname }} used by {{ $labels.namespace }}/"
                "{{ $labels.pod }} averaged {{ $value | humanize }}% over an hour"
            },
        },
        {
            "alert": "GpuMemoryNearlyFull",
            "expr": "DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE) "
            f"> {t.gpu_memory_ratio}",
            "for": "10m",
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "GPU {{ $labels.gpu }} on {{ $labels.hostname }} uses "
                "{{ $value | humanizePercentage }} of its memory"
            },
        },
        {
            "alert": "GpuTemperatureHigh",
            "expr": f"DCGM_FI_DEV_GPU_TEMP > {t.gpu_temperature_celsius}",
            "for": "5m",
            "labels": {"severity": "critical"},
            "annotations": {
                "summary": "GPU {{ $labels.gpu }} on {{ $labels.hostname }} is at {{ $value }} C"
            },
        },
        {
            # DCGM_FI_DEV_XID_ERRORS holds the last XID code seen (0 = none),
            # so any non-zero value within the window is an error to look at.
            "alert": "GpuXidError",
            "expr": "max by (hostname, gpu) (max_over_time(DCGM_FI_DEV_XID_ERRORS[5m])) > 0",
            "labels": {"severity": "critical"},
            "annotations": {
                "summary": "GPU {{ $labels.gpu }} on {{ $labels.hostname }} reported XID {{ $value }}"
            },
        },
        {
            "record": "platform:cluster_gpu_allocation:ratio",
            "expr": f"sum({_running_pod_gpus()})\n"
            f'/ sum(kube_node_status_allocatable{{resource="{GPU_RESOURCE_KSM}"}})',
        },
        {
            "alert": "ClusterGpuWatermarkHigh",
            "expr": f"platform:cluster_gpu_allocation:ratio > {t.gpu_watermark_ratio}",
            "for": "15m",
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "{{ $value | humanizePercentage }} of the cluster's GPUs are allocated"
            },
        },
    ]


def _queue_gpus(kind: str) -> dict[str, Any]:
    """Rule gpu-milli-units: a queue's GPUs in whole GPUs."""
    return {
        "record": f"platform:queue_gpus:{kind}",
        "expr": f'volcano_queue_{kind}_scalar_resources{{resource="{GPU_RESOURCE_VOLCANO}"}} / {VOLCANO_MILLI}',
    }


def queue_rules(t: Thresholds) -> list[dict[str, Any]]:
    return [
        _queue_gpus("allocated"),
        _queue_gpus("deserved"),
        _queue_gpus("capacity"),
        {
            # Depth: pod groups not running yet, whether admitted (Inqueue) or not.
            "record": QUEUE_DEPTH,
            "expr": "sum by (queue_name) (volcano_queue_pod_group_pending_count)\n"
            "+ sum by (queue_name) (volcano_queue_pod_group_inqueue_count)",
        },
        {
            "alert": "QueuePendingJobs",
            "expr": f"volcano_queue_pod_group_pending_count > {t.queue_pending_jobs}",
            "for": "30m",
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "Queue {{ $labels.queue_name }} has {{ $value }} pending jobs"
            },
        },
        {
            # Rule oldest-pending-job: a job whose scheduling started (the
            # PodGroup was seen) and was never allocated has no last_time.
            # Volcano deletes both series with the job. Volcano 1.15.1 has no
            # volcano_queue_pending_jobs_duration_seconds (design-differences).
            "record": QUEUE_OLDEST_PENDING,
            "expr": "max by (queue) (time() - (volcano_e2e_job_scheduling_start_time\n"
            "  unless on (job_name, queue, job_namespace) volcano_e2e_job_scheduling_last_time))",
        },
        {
            # volcano_e2e_job_scheduling_duration is in milliseconds.
            "record": "platform:queue_job_wait_seconds:max",
            "expr": "max by (queue) (volcano_e2e_job_scheduling_duration) / 1000",
        },
        {
            "alert": "QueueWaitLong",
            "expr": f"platform:queue_job_wait_seconds:max > {t.queue_wait_minutes * 60:g}",
            "for": "5m",
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "A job in queue {{ $labels.queue }} waited {{ $value | humanizeDuration }} to be scheduled"
            },
        },
        {
            # Rule queue-starving: jobs wait while the queue holds less than
            # its deserved GPUs, i.e. reclaim is not giving it its share.
            "alert": "QueueStarving",
            "expr": f"({QUEUE_DEPTH} > 0)\n"
            "and on (queue_name) (platform:queue_gpus:allocated < platform:queue_gpus:deserved)",
            "for": f"{t.queue_starving_minutes:g}m",
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "Queue {{ $labels.queue_name }} has waiting jobs while below its deserved GPUs"
            },
        },
        {
            "record": "platform:scheduling_e2e_latency_milliseconds:p99",
            "expr": "histogram_quantile(0.99, sum by (le) "
            "(rate(volcano_e2e_scheduling_latency_milliseconds_bucket[5m])))",
        },
        {
            "record": "platform:queue_job_failure:ratio1h",
            "expr": "sum by (queue_name) (increase(volcano_job_failed_phase_count[1h]))\n"
            "/ (sum by (queue_name) (increase(volcano_job_failed_phase_count[1h]))"
            " + sum by (queue_name) (increase(volcano_job_completed_phase_count[1h])))",
        },
        {
            "alert": "JobFailureRateHigh",
            "expr": f"platform:queue_job_failure:ratio1h > {t.job_failure_ratio}",
            "for": "10m",
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "{{ $value | humanizePercentage }} of the jobs that finished in queue "
                "{{ $labels.queue_name }} in the last hour failed"
            },
        },
    ]


def spot_rules(t: Thresholds) -> list[dict[str, Any]]:
    return [
        {
            # A queue's count only grows (a recreated queue starts again at 0, which
            # increase() reads as a reset).
            "record": SPOT_RECLAIMS_1H,
            "expr": f'sum by (tenant) (increase({SPOT_RECLAIMED_JOBS}{{queue_type="spot"}}[1h]))',
        },
        {
            "alert": "SpotReclaimBurst",
            "expr": f"sum({SPOT_RECLAIMS_1H}) > {t.spot_reclaims_per_hour}",
            "for": "5m",
            "labels": {"severity": "info"},
            "annotations": {"summary": "{{ $value }} spot jobs were reclaimed in the last hour"},
        },
    ]
