# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Nodes, pods, Volcano Jobs, Queues and dcgm-exporter series for the GPU health tests."""

from __future__ import annotations

from typing import Any

from ansible_collections.gpucloud.platform.plugins.module_utils.common import names

PARAMS: dict[str, Any] = {
    "prometheus_url": None,
    "timeout": 30,
    "unhealthy_conditions": ["GpuUnhealthy"],
    "fatal_xids": [48, 63, 64, 74, 79, 92, 94, 95, 119, 120],
    "xid_window": "10m",
    "max_quarantine": 2,
    "healthy_period": "30m",
    "node_selector": {},
    "history_size": 50,
    "state": "present",
    "facts": None,
}


def node(
    name: str,
    gpus: int = 8,
    sick: bool = False,
    annotations: dict[str, str] | None = None,
    unschedulable: bool = False,
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": "True"}]
    if sick:
        conditions.append(
            {"type": "GpuUnhealthy", "status": "True", "message": "nvidia-smi failed"}
        )
    spec: dict[str, Any] = {}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = taints
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {}, "annotations": dict(annotations or {})},
        "spec": spec,
        "status": {
            "allocatable": {"nvidia.com/gpu": str(gpus)},
            "conditions": conditions,
        },
    }


def quarantined(
    name: str,
    sick: bool = False,
    cordoned: str = "true",
    healthy_since: str | None = None,
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    notes = {
        names.ANNOTATION_GPU_QUARANTINED_AT: "2026-01-01T00:00:00Z",
        names.ANNOTATION_GPU_QUARANTINE_REASON: "GPU 0 XID 79",
        names.ANNOTATION_GPU_QUARANTINE_CORDONED: cordoned,
    }
    if healthy_since:
        notes[names.ANNOTATION_GPU_HEALTHY_SINCE] = healthy_since
    ours = {"key": names.TAINT_GPU_UNHEALTHY, "value": "true", "effect": "NoSchedule"}
    return node(
        name, sick=sick, annotations=notes, unschedulable=True, taints=[*(taints or []), ours]
    )


def queue(name: str, tenant: str, queue_type: str, disrupted: str | None = None) -> dict[str, Any]:
    notes = {names.ANNOTATION_GPU_QUARANTINE_DISRUPTED: disrupted} if disrupted else {}
    return {
        "apiVersion": names.QUEUE_API,
        "kind": "Queue",
        "metadata": {
            "name": name,
            "labels": {
                names.LABEL_TENANT: tenant,
                names.LABEL_QUEUE_TYPE: queue_type,
                names.LABEL_MANAGED_BY: names.MANAGED_BY,
            },
            "annotations": notes,
        },
        "spec": {},
    }


def vcjob(name: str, namespace: str, queue_name: str, job_class: str) -> dict[str, Any]:
    return {
        "apiVersion": names.JOB_API,
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "labels": {names.LABEL_JOB_CLASS: job_class},
        },
        "spec": {"queue": queue_name, "priorityClassName": f"{job_class}-job"},
        "status": {"state": {"phase": "Running"}},
    }


def pod(name: str, namespace: str, node_name: str, job: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}"}
    if job:
        meta["ownerReferences"] = [
            {"apiVersion": names.JOB_API, "kind": "Job", "name": job, "uid": f"uid-{job}"}
        ]
        meta["labels"] = {"volcano.sh/job-name": job}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"nodeName": node_name},
        "status": {"phase": "Running"},
    }


def xid(node_name: str, code: int, gpu: str = "0", label: str = "Hostname") -> dict[str, Any]:
    return {"metric": {label: node_name, "gpu": gpu}, "values": [[1767225600, str(code)]]}


def tenant_workload() -> list[dict[str, Any]]:
    """On node n1: a spot job, a debug job, a critical job, a large job, a normal job and
    a pod of no Volcano Job; on n2 another pod of the large job."""
    ns = "tenant-alpha"
    return [
        queue("tenant-alpha-subscription", "alpha", "subscription", disrupted="3"),
        queue("tenant-alpha-spot", "alpha", "spot"),
        vcjob("cheap", ns, "tenant-alpha-spot", "spot"),
        vcjob("poke", ns, "tenant-alpha-subscription", "debug"),
        vcjob("serve", ns, "tenant-alpha-subscription", "critical"),
        vcjob("train", ns, "tenant-alpha-subscription", "large"),
        vcjob("tune", ns, "tenant-alpha-subscription", "normal"),
        pod("cheap-0", ns, "n1", "cheap"),
        pod("poke-0", ns, "n1", "poke"),
        pod("serve-0", ns, "n1", "serve"),
        pod("train-0", ns, "n1", "train"),
        pod("train-1", ns, "n2", "train"),
        pod("tune-0", ns, "n1", "tune"),
        pod("lonely", ns, "n1"),
    ]
