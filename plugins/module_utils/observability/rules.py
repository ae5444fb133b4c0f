# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The platform's Prometheus recording and alerting rules, as code.

One builder, ``rule_groups``, makes the ``groups`` of a Prometheus rule file.
The monitoring role wraps them in the PrometheusRule ``gpucloud-platform``
(filter ``prometheus_rule_groups``), the local cluster's Prometheus loads the
same groups from a file, and ``tests/unit/promtool/`` tests every rule with
``promtool test rules`` on series named as the exporters name them.

Where the series come from (the names are the exporters' own):

* kube-state-metrics: ``kube_pod_container_resource_requests`` (resource
  ``nvidia_com_gpu``), ``kube_pod_status_phase``, ``kube_pod_labels`` and
  ``kube_pod_annotations`` (the platform's labels and the spot price must be
  allow-listed: ``KSM_LABELS_ALLOWLIST`` and ``KSM_ANNOTATIONS_ALLOWLIST``),
  ``kube_node_status_allocatable``;
* vc-scheduler: ``volcano_queue_*_scalar_resources`` (rule gpu-milli-units),
  ``volcano_e2e_job_scheduling_*``, ``volcano_e2e_scheduling_latency_milliseconds``;
* vc-controller-manager: ``volcano_queue_pod_group_*_count``,
  ``volcano_job_{completed,failed}_phase_count``;
* dcgm-exporter (4.x labels: ``hostname``, ``gpu``, ``namespace``, ``pod``):
  ``DCGM_FI_DEV_*``;
* kube-state-metrics' custom resource state (``ksm_custom_resource_state``):
  ``platform_queue_spot_reclaimed_jobs``, each spot Queue's count of reclaimed
  jobs (the annotation rule spot-reclaim-count keeps).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from difflib import get_close_matches
from typing import Any

GPU_RESOURCE_KSM = "nvidia_com_gpu"
# HAMi's vGPU resources as kube-state-metrics names them (volcano.sh/vgpu-number, -memory).
VGPU_NUMBER_KSM = "volcano_sh_vgpu_number"
VGPU_MEMORY_KSM = "volcano_sh_vgpu_memory"
# The memory of one physical GPU of the shared nodes, MiB (an H100's 80 GiB): a vGPU of
# M MiB counts M / this of a GPU (rule vgpu-metered-by-memory).
DEFAULT_VGPU_GPU_MEMORY_MIB = 81920
GPU_RESOURCE_VOLCANO = "nvidia.com/gpu"

# Rule gpu-milli-units: Volcano reports scalar resources, GPUs included, in
# milli-units (api.NewResource keeps rQuant.MilliValue()): 1 GPU = 1000.
VOLCANO_MILLI = 1000

# Labels and annotations kube-state-metrics must export for these rules, per kind.
# Billing needs only what the platform or Volcano writes: a pod's queue (the job
# controller's label, or the annotation vc-controller-manager reads for other
# workloads), its job's name, the namespace's tenant and the node's location. The
# tenant and billing type come from the Queue, never from a label a tenant writes.
KSM_LABELS_ALLOWLIST = (
    "platform.io/tenant",
    "platform.io/billing-type",
    "platform.io/job-class",
    "volcano.sh/job-name",
    "volcano.sh/queue-name",
)
KSM_ANNOTATIONS_ALLOWLIST = ("platform.io/spot-price", "scheduling.volcano.sh/queue-name")
KSM_NAMESPACE_LABELS_ALLOWLIST = ("platform.io/tenant",)
KSM_NODE_LABELS_ALLOWLIST = ("platform.io/node-location",)


def ksm_labels_allowlist_entries() -> list[str]:
    """The labels allow-list, one ``kind=[keys]`` entry per kind: pods, namespaces, nodes."""
    return [
        f"{kind}=[{','.join(keys)}]"
        for kind, keys in (
            ("pods", KSM_LABELS_ALLOWLIST),
            ("namespaces", KSM_NAMESPACE_LABELS_ALLOWLIST),
            ("nodes", KSM_NODE_LABELS_ALLOWLIST),
        )
    ]


def ksm_labels_allowlist() -> str:
    """``--metric-labels-allowlist``: every entry, comma-separated."""
    return ",".join(ksm_labels_allowlist_entries())


def ksm_annotations_allowlist() -> str:
    """``--metric-annotations-allowlist``: pods."""
    return f"pods=[{','.join(KSM_ANNOTATIONS_ALLOWLIST)}]"


# Recording rules other parts of the collection read (usage_report, hybrid scaling).
TENANT_BILLING_GPUS = "platform:tenant_billing_gpus:allocated"
JOB_GPUS = "platform:job_gpus:allocated"
TENANT_SUBSCRIPTION = "platform:tenant_subscription_gpus:info"
UNCLAIMED_POD_GPUS = "platform:pod_gpus:unclaimed"
QUEUE_OLDEST_PENDING = "platform:queue_oldest_pending_job:age_seconds"
QUEUE_DEPTH = "platform:queue_depth:jobs"
SPOT_RECLAIMS_1H = "platform:spot_reclaims:count1h"
METERING_GROUP = "platform-metering"

# Exported by kube-state-metrics from every Queue and Volcano Job (ksm_custom_resource_state).
SPOT_RECLAIMED_JOBS = "platform_queue_spot_reclaimed_jobs"
QUEUE_INFO = "platform_queue_info"
QUEUE_CAPABILITY_GPUS = "platform_queue_capability_gpus"
VCJOB_INFO = "platform_vcjob_info"
ANNOTATION_SPOT_RECLAIMED = (
    "platform.io/spot-reclaimed-jobs"  # common/names.py (this file is stdlib only)
)
ANNOTATION_SPOT_PRICE = "platform.io/spot-price"  # common/names.py


def _info(name: str, help_text: str, labels: dict[str, list[str]]) -> dict[str, Any]:
    return {
        "name": name,
        "help": help_text,
        "each": {"type": "Info", "info": {"labelsFromPath": labels}},
    }


def ksm_custom_resource_state() -> dict[str, Any]:
    """kube-state-metrics' ``--custom-resource-state-config``.

    From every Volcano Queue (platform state: cluster-scoped, no tenant can write one):
    ``platform_queue_spot_reclaimed_jobs{queue, tenant, queue_type}`` (0 until a job is
    reclaimed from it, read from the annotation rule spot-reclaim-count keeps) and
    ``platform_queue_info{queue, tenant, queue_type}`` (rule billing-follows-queue: the
    queue's tenant and type) and ``platform_queue_capability_gpus`` (its GPU capability,
    the subscription's size over time). From every Volcano Job: ``platform_vcjob_info{namespace, job_name, queue,
    spot_price}``, the bid admission checked (rule billing-fits-queue). kube-state-metrics
    finds both kinds by discovery; they are not among its ``--resources``."""
    queue_labels = {
        "queue": ["metadata", "name"],
        "tenant": ["metadata", "labels", "platform.io/tenant"],
        "queue_type": ["metadata", "labels", "platform.io/queue-type"],
    }
    return {
        "kind": "CustomResourceStateMetrics",
        "spec": {
            "resources": [
                {
                    "groupVersionKind": {
                        "group": "scheduling.volcano.sh",
                        "version": "v1beta1",
                        "kind": "Queue",
                    },
                    "metricNamePrefix": "platform_queue",
                    "labelsFromPath": queue_labels,
                    "metrics": [
                        {
                            "name": "spot_reclaimed_jobs",
                            "help": "Jobs the platform has reclaimed from this spot queue, ever.",
                            "each": {
                                "type": "Gauge",
                                "gauge": {
                                    "path": ["metadata", "annotations", ANNOTATION_SPOT_RECLAIMED],
                                    "nilIsZero": True,
                                },
                            },
                        },
                        # An Info metric is left out for an object that lacks one of its
                        # own label paths (and has no sample without one), so it names a
                        # path every Queue has, and the capability is a gauge of its own.
                        _info("info", "A queue's tenant and type.", {"name": ["metadata", "name"]}),
                        {
                            "name": "capability_gpus",
                            "help": "A queue's GPU capability (0 without one).",
                            "each": {
                                "type": "Gauge",
                                "gauge": {
                                    "path": ["spec", "capability", "nvidia.com/gpu"],
                                    "nilIsZero": True,
                                },
                            },
                        },
                    ],
                },
                {
                    "groupVersionKind": {
                        "group": "batch.volcano.sh",
                        "version": "v1alpha1",
                        "kind": "Job",
                    },
                    "metricNamePrefix": "platform_vcjob",
                    "labelsFromPath": {
                        "namespace": ["metadata", "namespace"],
                        "job_name": ["metadata", "name"],
                        "queue": ["spec", "queue"],
                    },
                    "metrics": [
                        _info(
                            "info",
                            "A Volcano Job's queue and, for a spot job, its bid per GPU-hour.",
                            {"spot_price": ["metadata", "annotations", ANNOTATION_SPOT_PRICE]},
                        )
                    ],
                },
            ]
        },
    }


def ksm_chart_values() -> dict[str, Any]:
    """The kube-state-metrics chart's values (kube-prometheus-stack's
    ``kube-state-metrics:``) these rules need: the pod labels and annotations they
    read, allow-listed, and the Queues' and Volcano Jobs' state (custom resource state,
    with the RBAC to list and watch them and to discover their CRDs)."""
    return {
        "metricLabelsAllowlist": ksm_labels_allowlist_entries(),
        # The chart spells this key with a capital L, the labels' key without.
        "metricAnnotationsAllowList": [ksm_annotations_allowlist()],
        "customResourceState": {"enabled": True, "config": ksm_custom_resource_state()},
        "rbac": {
            "extraRules": [
                {
                    "apiGroups": ["scheduling.volcano.sh"],
                    "resources": ["queues"],
                    "verbs": ["list", "watch"],
                },
                {
                    "apiGroups": ["batch.volcano.sh"],
                    "resources": ["jobs"],
                    "verbs": ["list", "watch"],
                },
                {
                    "apiGroups": ["apiextensions.k8s.io"],
                    "resources": ["customresourcedefinitions"],
                    "verbs": ["list", "watch"],
                },
            ]
        },
    }


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


# Intermediate series of the metering group (evaluated in order, so each rule reads the
# ones above it at the same instant).
POD_GPUS_RUNNING = "platform:pod_gpus:running"
POD_QUEUE = "platform:pod_queue:info"
QUEUE_BILLING = "platform:queue_billing:info"
NAMESPACE_TENANT = "platform:namespace_tenant:info"
NODE_LOCATION = "platform:node_location:info"
POD_GPUS_BILLED = "platform:pod_gpus:billed"

# Rule billing-type-of-queue: the billing type a queue type bills as (a stdlib-only copy
# of common/names.py's map, tested equal). A team queue is a
# part of its tenant's subscription; the burst leaf is cloud quota bought by the hour.
BILLING_TYPE_OF_QUEUE_TYPE = {
    "subscription": "subscription",
    "team": "subscription",
    "payg": "payg",
    "spot": "spot",
    "burst": "payg",
}
CLOUD_LOCATION = "cloud"  # common/names.py NODE_LOCATIONS; every other node is "idc"


def _relabel(expr: str, target: str, source: str) -> str:
    return f'label_replace({expr}, "{target}", "$1", "{source}", "(.+)")'


def _billing_type_of_queue() -> str:
    """Rule billing-type-of-queue, as label_replace over each queue type."""
    expr = f'{QUEUE_INFO}{{tenant!=""}}'
    for queue_type, billing_type in BILLING_TYPE_OF_QUEUE_TYPE.items():
        expr = (
            f'label_replace({expr}, "billing_type", "{billing_type}", "queue_type", "{queue_type}")'
        )
    return f"max by (queue, tenant, billing_type) ({expr})"


def _running_gpu_equivalents(gpu_memory_mib: int) -> str:
    """Rule vgpu-metered-by-memory, per container: whole GPUs as requested; N vGPUs of M
    MiB each count N x M / ``gpu_memory_mib`` GPUs; N vGPUs without a memory request
    take their GPUs' whole memory (HAMi's default), so count N."""
    requests = "kube_pod_container_resource_requests"
    on_container = "on (namespace, pod, container)"
    return (
        f'{requests}{{resource="{GPU_RESOURCE_KSM}"}}\n'
        f'or ({requests}{{resource="{VGPU_NUMBER_KSM}"}}\n'
        f'    * {on_container} group_left () {requests}{{resource="{VGPU_MEMORY_KSM}"}}\n'
        f"    / {gpu_memory_mib})\n"
        f'or ({requests}{{resource="{VGPU_NUMBER_KSM}"}}\n'
        f'    unless {on_container} {requests}{{resource="{VGPU_MEMORY_KSM}"}})'
    )


def metering_rules(vgpu_gpu_memory_mib: int = DEFAULT_VGPU_GPU_MEMORY_MIB) -> list[dict[str, Any]]:
    """Rule billing-follows-queue: every Running GPU pod is billed to the tenant and billing
    type of the queue it runs in, and only when that tenant is its namespace's. The pod's
    queue is the one Volcano wrote on it (the job controller's label ``volcano.sh/queue-name``,
    else the annotation ``scheduling.volcano.sh/queue-name`` that admission checked on the
    workload); the queue's tenant and type are platform state. No label a tenant writes
    takes part. A GPU pod in a tenant namespace that no queue of the tenant claims is
    ``platform:pod_gpus:unclaimed`` (rule unclaimed-gpus). A pod's GPUs count its vGPUs by
    their memory share (rule vgpu-metered-by-memory)."""
    queue_label = _relabel(
        'kube_pod_labels{label_volcano_sh_queue_name!=""}', "queue", "label_volcano_sh_queue_name"
    )
    queue_annotation = _relabel(
        'kube_pod_annotations{annotation_scheduling_volcano_sh_queue_name!=""}',
        "queue",
        "annotation_scheduling_volcano_sh_queue_name",
    )
    namespace_tenant = _relabel(
        'kube_namespace_labels{label_platform_io_tenant!=""}', "tenant", "label_platform_io_tenant"
    )
    location = (
        f'label_replace(label_replace(kube_node_labels, "location", "idc", "node", ".*"), '
        f'"location", "{CLOUD_LOCATION}", "label_platform_io_node_location", "{CLOUD_LOCATION}")'
    )
    job_name = _relabel("kube_pod_labels", "job_name", "label_volcano_sh_job_name")
    with_job = (
        f"{POD_GPUS_BILLED}\n"
        f"  * on (namespace, pod) group_left (job_name) max by (namespace, pod, job_name) ({job_name})"
    )
    # The bid is the Job's (admission checked it and keeps its pods' equal); a pod whose
    # Job is already gone (a reclaim's victim while it stops) keeps its own copy.
    job_bid = f'max by (namespace, job_name, spot_price) ({VCJOB_INFO}{{spot_price!=""}})'
    pod_bid = (
        "max by (namespace, pod, spot_price) ("
        + _relabel(
            'kube_pod_annotations{annotation_platform_io_spot_price!=""}',
            "spot_price",
            "annotation_platform_io_spot_price",
        )
        + ")"
    )
    priced = (
        f"(\n  {with_job}\n  * on (namespace, job_name) group_left (spot_price) {job_bid}\n)\n"
        f"or on (namespace, pod)\n(\n  {with_job}\n  * on (namespace, pod) group_left (spot_price) {pod_bid}\n)\n"
        f"or on (namespace, pod)\n(\n  {with_job}\n)"
    )
    return [
        # Rule running-pod-gpus, per pod and the node it runs on.
        {
            "record": POD_GPUS_RUNNING,
            "expr": f"sum by (namespace, pod, node) (\n{_running_gpu_equivalents(vgpu_gpu_memory_mib)}\n)\n"
            "  * on (namespace, pod) group_left ()\n"
            '  (max by (namespace, pod) (kube_pod_status_phase{phase="Running"}) == 1)',
        },
        {
            "record": POD_QUEUE,
            "expr": f"max by (namespace, pod, queue) ({queue_label})\n"
            f"or on (namespace, pod)\nmax by (namespace, pod, queue) ({queue_annotation})",
        },
        {"record": QUEUE_BILLING, "expr": _billing_type_of_queue()},
        {"record": NAMESPACE_TENANT, "expr": f"max by (namespace, tenant) ({namespace_tenant})"},
        {"record": NODE_LOCATION, "expr": f"max by (node, location) ({location})"},
        {
            "record": POD_GPUS_BILLED,
            "expr": "sum by (namespace, pod, queue, tenant, billing_type, location) (\n"
            f"  (\n    {POD_GPUS_RUNNING}\n"
            f"    * on (namespace, pod) group_left (queue) {POD_QUEUE}\n"
            f'    * on (queue) group_left (tenant, billing_type) {QUEUE_BILLING}{{billing_type!=""}}\n'
            f"    * on (node) group_left (location) {NODE_LOCATION}\n"
            f"  )\n  and on (namespace, tenant) {NAMESPACE_TENANT}\n)",
        },
        # Rule gpu-hours-source: GPUs held per tenant, billing type and location, the
        # integrand of the ledger's GPU-hours (usage_report integrates it).
        {
            "record": TENANT_BILLING_GPUS,
            "expr": f"sum by (tenant, billing_type, location) ({POD_GPUS_BILLED})",
        },
        # The same per Volcano Job, with the spot job's bid for the ledger's spot lines.
        {
            "record": JOB_GPUS,
            "expr": "sum by (namespace, tenant, billing_type, location, job_name, spot_price) (\n"
            f"{priced}\n)",
        },
        # Rule subscription-over-time: a tenant's subscription size while its Queue exists,
        # as the label ``gpus`` (count_values makes a label of the value; usage_report
        # counts the samples of each size and prorates by them).
        {
            "record": TENANT_SUBSCRIPTION,
            "expr": 'count_values by (tenant) ("gpus", '
            f'{QUEUE_CAPABILITY_GPUS}{{queue_type="subscription",tenant!=""}})',
        },
        # Rule unclaimed-gpus: GPUs held in a tenant namespace that no billing line claims.
        {
            "record": UNCLAIMED_POD_GPUS,
            "expr": f"sum by (namespace, pod) ({POD_GPUS_RUNNING} and on (namespace) {NAMESPACE_TENANT})\n"
            f"unless on (namespace, pod) {POD_GPUS_BILLED}",
        },
    ]


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


_DURATION = re.compile(r"^[1-9][0-9]*(ms|s|m|h)$")


def interval_errors(interval: Any) -> list[str]:
    """Rule metering-interval: a Prometheus duration of one unit, such as 30s or 1m."""
    if interval is None or (isinstance(interval, str) and _DURATION.match(interval)):
        return []
    return [f"metering_interval: {interval!r} is not a duration such as 30s or 1m"]


def rule_groups(
    t: Thresholds | None = None,
    metering_interval: str | None = None,
    vgpu_gpu_memory_mib: int = DEFAULT_VGPU_GPU_MEMORY_MIB,
) -> list[dict[str, Any]]:
    """The ``groups`` of the platform's rule file. ``metering_interval`` is the metering
    group's evaluation interval, the ledger's resolution (Prometheus's global evaluation
    interval when None); usage_report reads it back from Prometheus.
    ``vgpu_gpu_memory_mib`` is one shared GPU's memory (rule vgpu-metered-by-memory)."""
    t = t or Thresholds()
    metering: dict[str, Any] = {"name": METERING_GROUP}
    if metering_interval:
        metering["interval"] = metering_interval
    metering["rules"] = metering_rules(vgpu_gpu_memory_mib)
    return [
        {"name": "platform-gpu", "rules": gpu_rules(t)},
        metering,
        {"name": "platform-queues", "rules": queue_rules(t)},
        {"name": "platform-spot", "rules": spot_rules(t)},
    ]


def rule_names(groups: list[dict[str, Any]]) -> list[str]:
    """Every record and alert name, in order."""
    return [rule.get("record") or rule["alert"] for group in groups for rule in group["rules"]]
