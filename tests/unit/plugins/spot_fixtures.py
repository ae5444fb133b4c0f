# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Manifests and a populated fake cluster for the spot and pay-as-you-go tests."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from kubernetes.client.rest import ApiException

from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster, conflict

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def ago(minutes: float) -> str:
    return (NOW - timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def node(name, gpus=8, cpu="64", memory="512Gi", ready=True, unschedulable=False, labels=None):
    return {
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {"unschedulable": True} if unschedulable else {},
        "status": {
            "allocatable": {"nvidia.com/gpu": str(gpus), "cpu": cpu, "memory": memory},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def queue(tenant, queue_type, deserved=None, capability=None, allocated=None):
    labels = {
        "platform.io/tenant": tenant,
        "platform.io/queue-type": queue_type,
        "platform.io/managed-by": "gpucloud-platform",
    }
    spec: dict[str, Any] = {"parent": "root", "reclaimable": True}
    if deserved is not None:
        spec["deserved"] = deserved
    if capability is not None:
        spec["capability"] = capability
    obj = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": f"tenant-{tenant}-{queue_type}", "labels": labels},
        "spec": spec,
    }
    if allocated is not None:
        obj["status"] = {"allocated": allocated}
    return obj


def vcjob(
    name,
    tenant,
    gpus_per_pod=4,
    replicas=1,
    price="0.1",
    minutes=10,
    queue_type="spot",
    billing="spot",
    phase="Running",
    cpu=None,
):
    annotations = {} if price is None else {"platform.io/spot-price": price}
    labels = {} if billing is None else {"platform.io/billing-type": billing}
    requests = {"nvidia.com/gpu": gpus_per_pod}
    if cpu is not None:
        requests["cpu"] = cpu
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": f"tenant-{tenant}",
            "labels": labels,
            "annotations": annotations,
            "creationTimestamp": ago(minutes + 1),
            "uid": f"uid-{name}",
        },
        "spec": {
            "queue": f"tenant-{tenant}-{queue_type}",
            "tasks": [
                {
                    "name": "worker",
                    "replicas": replicas,
                    "template": {
                        "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}]}
                    },
                }
            ],
        },
        "status": {"state": {"phase": phase, "lastTransitionTime": ago(minutes)}},
    }


def pod(name, node_name, gpus, namespace="tenant-x", phase="Running", deleting=False):
    meta = {"name": name, "namespace": namespace}
    if deleting:
        meta["deletionTimestamp"] = ago(0)
    return {
        "metadata": meta,
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}],
        },
        "status": {"phase": phase},
    }


class SpotCluster(FakeCluster):
    """The shared FakeCluster plus one answer of the API server the reclaim relies
    on: a ``resourceVersion`` delete precondition (the reclaim gives its Lease back
    only if unchanged)."""

    def delete(
        self, api_version, kind, name, namespace=None, propagation="Foreground", preconditions=None
    ):
        want = (preconditions or {}).get("resourceVersion")
        live = self.store.get(self.key(kind, namespace, name))
        if want and live is not None and live["metadata"].get("resourceVersion") != want:
            self.requests += 1
            raise conflict()
        return super().delete(api_version, kind, name, namespace, propagation, preconditions)


def spot_objects(extra=(), alpha_subscription=40):
    """Eight 8-GPU nodes (64 GPUs); tenants alpha (40 subscribed) and beta (8
    subscribed, 4 PAYG); four spot jobs: the design's worked example A-D.

    With 40 the spot jobs' 24 GPUs are more than the 12 unsold; with
    ``alpha_subscription=28`` they are exactly the 24 unsold (a recomputed pool)."""
    nodes = [node(f"n{i}") for i in range(8)]
    queues = [
        queue(
            "alpha",
            "subscription",
            deserved={"nvidia.com/gpu": alpha_subscription},
            capability={"nvidia.com/gpu": alpha_subscription},
        ),
        queue("alpha", "payg", deserved={"nvidia.com/gpu": 0}, capability={"nvidia.com/gpu": 0}),
        queue("alpha", "spot", deserved={"nvidia.com/gpu": 0}, capability={"nvidia.com/gpu": 0}),
        queue(
            "beta", "subscription", deserved={"nvidia.com/gpu": 8}, capability={"nvidia.com/gpu": 8}
        ),
        queue(
            "beta",
            "payg",
            deserved={"nvidia.com/gpu": 4},
            capability={"nvidia.com/gpu": 4},
            allocated={"nvidia.com/gpu": "4"},
        ),
        queue("beta", "spot", deserved={"nvidia.com/gpu": 0}, capability={"nvidia.com/gpu": 0}),
    ]
    jobs = [
        vcjob("spot-a", "alpha", 4, 1, "0.1", 10),
        vcjob("spot-b", "alpha", 4, 2, "0.1", 120),
        vcjob("spot-c", "beta", 4, 1, "0.3", 30),
        vcjob("spot-d", "beta", 4, 2, "0.5", 60),
    ]
    # Pods: the spot jobs' 24 GPUs plus 36 GPUs of other work = 60 of 64.
    pods = [pod("spot-a-0", "n0", 4), pod("spot-b-0", "n1", 4), pod("spot-b-1", "n1", 4)]
    pods += [pod("spot-c-0", "n2", 4), pod("spot-d-0", "n3", 4), pod("spot-d-1", "n3", 4)]
    pods += [pod(f"other-{i}", f"n{4 + i % 4}", 4) for i in range(9)]
    for p in pods:
        p["apiVersion"], p["kind"] = "v1", "Pod"
    for n in nodes:
        n["apiVersion"], n["kind"] = "v1", "Node"
    return [*nodes, *queues, *jobs, *pods, *extra]


def spot_cluster(extra=(), dry_run=False, alpha_subscription=40):
    """``spot_objects`` in a SpotCluster (``dry_run`` as the cluster is in check mode)."""
    return SpotCluster(spot_objects(extra, alpha_subscription), dry_run=dry_run)


def api_error(status: int = 422, message: str = "spec.capability: Invalid value") -> ApiException:
    """An API server's refusal, its message in the body as the server sends it."""
    exc = ApiException(status=status, reason="Refused")
    exc.body = json.dumps({"message": message})
    return exc


class RefusingCluster(SpotCluster):
    """A SpotCluster whose API server refuses chosen writes: ``refuse`` maps
    (verb, kind, name) to the ApiException it answers with. A refused request
    still counts, as ``kube.cluster.Cluster`` counts it."""

    def __init__(self, objects=(), dry_run=False, refuse=None):
        super().__init__(objects, dry_run=dry_run)
        self.refuse = dict(refuse or {})

    def _answer(self, verb, kind, name):
        exc = self.refuse.get((verb, kind, name))
        if exc is not None:
            self.requests += 1
            raise exc

    def apply(self, manifest, field_manager="gpucloud-platform"):
        self._answer("apply", manifest["kind"], manifest["metadata"]["name"])
        return super().apply(manifest, field_manager=field_manager)

    def delete(
        self, api_version, kind, name, namespace=None, propagation="Foreground", preconditions=None
    ):
        self._answer("delete", kind, name)
        return super().delete(api_version, kind, name, namespace, propagation, preconditions)


def hybrid_queues(leaves=("alpha", "beta"), leaf_gpus: int = 8) -> list:
    """Node groups as node_groups writes them: ``cloud-burst`` capping the cloud at 16 GPUs
    (group ``cloud-hz``) and a burst leaf of ``leaf_gpus`` per tenant of ``leaves``; plus
    the affinity the tenant's PAYG queue gets (IDC first, then the cloud), to merge in."""
    from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.burst import burst_leaf
    from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.nodegroups import (
        NodeGroup,
    )
    from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.queues import (
        burst_queue,
        elastic_affinity,
    )

    groups = [NodeGroup("idc-main", "idc"), NodeGroup("cloud-hz", "cloud", "aliyun", "cn-hz")]
    made = [burst_queue(groups, 16), *(burst_leaf(t, leaf_gpus, "cloud-burst") for t in leaves)]
    return [*made, {"spec": {"affinity": elastic_affinity(groups)}}]
