# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What kube-state-metrics must export for the platform's rules: the pod, namespace and
node labels and the pod annotations allow-listed, and the Volcano Queues' and Jobs' state
as custom resource state (``platform_queue_*``, ``platform_vcjob_info``), with the chart
values that set all of it. Pure and stdlib only (the local cluster loads the
observability package by path).
"""

from __future__ import annotations

from typing import Any

GPU_RESOURCE_KSM = "nvidia_com_gpu"
# HAMi's vGPU resources as kube-state-metrics names them (volcano.sh/vgpu-number, -memory).
VGPU_NUMBER_KSM = "volcano_sh_vgpu_number"
VGPU_MEMORY_KSM = "volcano_sh_vgpu_memory"

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


# Exported by kube-state-metrics from every Queue and Volcano Job (ksm_custom_resource_state).
SPOT_RECLAIMED_JOBS = "platform_queue_spot_reclaimed_jobs"
ARBITER_EVICTED_JOBS = "platform_queue_arbiter_evicted_jobs"
GPU_QUARANTINE_DISRUPTED_JOBS = "platform_queue_gpu_quarantine_disrupted_jobs"
QUEUE_INFO = "platform_queue_info"
QUEUE_CAPABILITY_GPUS = "platform_queue_capability_gpus"
VCJOB_INFO = "platform_vcjob_info"
ANNOTATION_SPOT_RECLAIMED = (
    "platform.io/spot-reclaimed-jobs"  # common/names.py (this file is stdlib only)
)
ANNOTATION_SPOT_PRICE = "platform.io/spot-price"  # common/names.py
ANNOTATION_ARBITER_EVICTED = "platform.io/arbiter-evicted-jobs"  # common/names.py
ANNOTATION_GPU_QUARANTINE_DISRUPTED = "platform.io/gpu-quarantine-disrupted-jobs"  # common/names.py


def _info(name: str, help_text: str, labels: dict[str, list[str]]) -> dict[str, Any]:
    return {
        "name": name,
        "help": help_text,
        "each": {"type": "Info", "info": {"labelsFromPath": labels}},
    }


def _count(name: str, help_text: str, annotation: str) -> dict[str, Any]:
    """A count the platform keeps in a Queue's annotation, 0 while it has none. It only
    grows; kube-state-metrics' custom resource state has no counter type, so a gauge."""
    return {
        "name": name,
        "help": help_text,
        "each": {
            "type": "Gauge",
            "gauge": {"path": ["metadata", "annotations", annotation], "nilIsZero": True},
        },
    }


def ksm_custom_resource_state() -> dict[str, Any]:
    """kube-state-metrics' ``--custom-resource-state-config``.

    From every Volcano Queue (platform state: cluster-scoped, no tenant can write one):
    ``platform_queue_spot_reclaimed_jobs{queue, tenant, queue_type}`` (0 until a job is
    reclaimed from it, read from the annotation rule spot-reclaim-count keeps),
    ``platform_queue_arbiter_evicted_jobs`` and ``platform_queue_gpu_quarantine_disrupted_jobs``
    (the same labels, 0 until the arbiter evicts a job of it or a GPU quarantine stops one:
    rules arbiter-eviction-count and disruption-count) and
    ``platform_queue_info{queue, tenant, queue_type}`` (rule billing-follows-queue: the
    queue's tenant and type) and ``platform_queue_capability_gpus`` (its GPU capability,
    the subscription's size over time). From every Volcano Job: ``platform_vcjob_info{namespace, job_name, queue,
    spot_price}``, the bid admission checked (rule billing-fits-queue). kube-state-metrics
    finds both kinds by discovery; they are not among its ``--resources``."""
    return {
        "kind": "CustomResourceStateMetrics",
        "spec": {"resources": [_queue_resource(), _vcjob_resource()]},
    }


def _queue_resource() -> dict[str, Any]:
    """Every Volcano Queue's stop counts, tenant and type, and GPU capability."""
    return {
        "groupVersionKind": {
            "group": "scheduling.volcano.sh",
            "version": "v1beta1",
            "kind": "Queue",
        },
        "metricNamePrefix": "platform_queue",
        "labelsFromPath": {
            "queue": ["metadata", "name"],
            "tenant": ["metadata", "labels", "platform.io/tenant"],
            "queue_type": ["metadata", "labels", "platform.io/queue-type"],
        },
        "metrics": [
            _count(
                "spot_reclaimed_jobs",
                "Jobs the platform has reclaimed from this spot queue, ever.",
                ANNOTATION_SPOT_RECLAIMED,
            ),
            _count(
                "arbiter_evicted_jobs",
                "Jobs of this queue the queue arbiter has evicted, ever.",
                ANNOTATION_ARBITER_EVICTED,
            ),
            _count(
                "gpu_quarantine_disrupted_jobs",
                "Jobs of this queue stopped by a GPU node's quarantine, ever.",
                ANNOTATION_GPU_QUARANTINE_DISRUPTED,
            ),
            # An Info metric is left out for an object that lacks one of its own label
            # paths (and has no sample without one), so it names a path every Queue has,
            # and the capability is a gauge of its own.
            _info("info", "A queue's tenant and type.", {"name": ["metadata", "name"]}),
            {
                "name": "capability_gpus",
                "help": "A queue's GPU capability (0 without one).",
                "each": {
                    "type": "Gauge",
                    "gauge": {"path": ["spec", "capability", "nvidia.com/gpu"], "nilIsZero": True},
                },
            },
        ],
    }


def _vcjob_resource() -> dict[str, Any]:
    """Every Volcano Job's queue and bid."""
    return {
        "groupVersionKind": {"group": "batch.volcano.sh", "version": "v1alpha1", "kind": "Job"},
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
