# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Queues, PodGroups, Nodes and ConfigMaps as the API server returns them, for the event
source's tests."""

from __future__ import annotations

from typing import Any

from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    LABEL_MANAGED_BY,
    LABEL_QUEUE_TYPE,
    LABEL_TENANT,
    MANAGED_BY,
)

GPU = "nvidia.com/gpu"
AT = "2026-01-01T12:00:00Z"


def queue(
    name: str,
    queue_type: str | None = None,
    tenant: str | None = None,
    managed: bool = True,
    allocated: Any = None,
    deserved: Any = None,
    capability: Any = None,
    parent: str | None = None,
    uid: str | None = None,
    version: str = "1",
) -> dict[str, Any]:
    labels = {}
    if managed:
        labels[LABEL_MANAGED_BY] = MANAGED_BY
    if queue_type:
        labels[LABEL_QUEUE_TYPE] = queue_type
    if tenant:
        labels[LABEL_TENANT] = tenant
    spec: dict[str, Any] = {"reclaimable": True, "weight": 1}
    if parent:
        spec["parent"] = parent
    if deserved is not None:
        spec["deserved"] = {GPU: deserved, "cpu": "64"}
    if capability is not None:
        spec["capability"] = {GPU: capability, "cpu": "128"}
    status: dict[str, Any] = {"state": "Open"}
    if allocated is not None:
        status["allocated"] = {GPU: allocated, "cpu": "4"}
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {
            "name": name,
            "uid": uid or f"uid-{name}",
            "resourceVersion": version,
            "labels": labels,
        },
        "spec": spec,
        "status": status,
    }


def tenant_queue(tenant: str, queue_type: str, **kw: Any) -> dict[str, Any]:
    return queue(f"tenant-{tenant}-{queue_type}", queue_type, tenant, **kw)


def podgroup(
    name: str,
    namespace: str = "tenant-a",
    queue_name: str = "tenant-a-subscription",
    phase: str | None = "Pending",
    unschedulable: bool = False,
    priority_class: str = "normal-job",
    labels: dict[str, str] | None = None,
    uid: str | None = None,
    version: str = "1",
    message: str = "3/4 tasks in gang unschedulable",
) -> dict[str, Any]:
    conditions = [
        {
            "type": "Scheduled",
            "status": "False",
            "lastTransitionTime": "2026-01-01T11:00:00Z",
        }
    ]
    if unschedulable:
        conditions.append(
            {
                "type": "Unschedulable",
                "status": "True",
                "reason": "NotEnoughResources",
                "message": message,
                "lastTransitionTime": "2026-01-01T11:00:00Z",
                "transitionID": "t-1",
            }
        )
    out: dict[str, Any] = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-{namespace}-{name}",
            "resourceVersion": version,
            "labels": labels or {},
        },
        "spec": {
            "minMember": 4,
            "queue": queue_name,
            "priorityClassName": priority_class,
            "minResources": {GPU: "32"},
        },
    }
    if phase is not None:
        out["status"] = {"phase": phase, "conditions": conditions, "running": 0}
    return out


def node(
    name: str,
    gpus: Any = 8,
    ready: bool | None = True,
    unschedulable: bool = False,
    uid: str | None = None,
    version: str = "1",
    heartbeat: str = "2026-01-01T12:00:00Z",
    gpu_conditions: dict[str, str] | None = None,
    taints: tuple[str, ...] = (),
    message: str = "nvidia-smi failed",
) -> dict[str, Any]:
    """A node; ``gpu_conditions``: condition type -> status (a node-problem-detector's
    GPU conditions), ``taints``: the keys of its taints (effect NoSchedule)."""
    allocatable: dict[str, Any] = {"cpu": "96", "memory": "1Ti", "pods": "110"}
    if gpus is not None:
        allocatable[GPU] = gpus
    conditions = [
        {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": heartbeat},
    ]
    if ready is not None:
        conditions.append(
            {
                "type": "Ready",
                "status": "True" if ready else "False",
                "lastHeartbeatTime": heartbeat,
                "reason": "KubeletReady",
            }
        )
    for kind, status in (gpu_conditions or {}).items():
        conditions.append(
            {
                "type": kind,
                "status": status,
                "reason": "GpuCheckFailed" if status == "True" else "GpuCheckPassed",
                "message": message,
                "lastHeartbeatTime": heartbeat,
            }
        )
    spec: dict[str, Any] = {"podCIDR": "10.0.0.0/24"}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = [{"key": k, "value": "true", "effect": "NoSchedule"} for k in taints]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": uid or f"uid-{name}",
            "resourceVersion": version,
            "labels": {"kubernetes.io/hostname": name},
        },
        "spec": spec,
        "status": {
            "allocatable": allocatable,
            "capacity": dict(allocatable),
            "conditions": conditions,
            "images": [{"names": ["registry/cuda:12"], "sizeBytes": 1}],
        },
    }


def configmap(
    name: str = "platform-queues",
    namespace: str = "tenant-a",
    data: dict[str, str] | None = None,
    managed: bool = True,
    uid: str | None = None,
) -> dict[str, Any]:
    labels = {LABEL_TENANT: namespace.removeprefix("tenant-")}
    if managed:
        labels[LABEL_MANAGED_BY] = MANAGED_BY
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-{namespace}-{name}",
            "labels": labels,
        },
        "data": {"tenant-a-algo": "team"} if data is None else data,
    }
