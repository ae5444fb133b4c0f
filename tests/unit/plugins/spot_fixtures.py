# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Manifests and an in-memory cluster for the spot and pay-as-you-go tests."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from kubernetes.client.rest import ApiException
from kubernetes.dynamic.exceptions import ConflictError

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


def conflict() -> ConflictError:
    return ConflictError(ApiException(status=409, reason="Conflict"))


def _matches(obj, selector):
    if not selector:
        return True
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for part in selector.split(","):
        key, value = part.split("=", 1)
        if labels.get(key) != value:
            return False
    return True


class FakeCluster:
    """Enough of kube.Cluster for the spot modules: objects by kind, label
    selectors, create conflicts, resourceVersion checks, a request count."""

    def __init__(self, objects=(), dry_run=False):
        self.store: dict[tuple[str, str | None, str], dict] = {}
        self.requests = 0
        self.writes: list[tuple[str, str, str]] = []
        self.dry_run = dry_run
        self.version = 0
        for obj in objects:
            self._put(obj)

    def _key(self, kind, namespace, name):
        return (kind, namespace, name)

    def _put(self, obj):
        obj = copy.deepcopy(obj)
        self.version += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.version)
        meta = obj["metadata"]
        self.store[self._key(obj["kind"], meta.get("namespace"), meta["name"])] = obj
        return copy.deepcopy(obj)

    def objects(self, kind):
        return [copy.deepcopy(o) for (k, _unused, _unused), o in self.store.items() if k == kind]

    def list(self, api_version, kind, namespace=None, label_selector=None, field_selector=None):
        self.requests += 1
        return [
            o
            for o in self.objects(kind)
            if _matches(o, label_selector)
            and (namespace is None or o["metadata"].get("namespace") == namespace)
        ]

    def get(self, api_version, kind, name, namespace=None):
        self.requests += 1
        obj = self.store.get(self._key(kind, namespace, name))
        return copy.deepcopy(obj) if obj else None

    def create(self, manifest):
        self.requests += 1
        meta = manifest["metadata"]
        if self._key(manifest["kind"], meta.get("namespace"), meta["name"]) in self.store:
            raise conflict()
        self.writes.append(("create", manifest["kind"], meta["name"]))
        return self._put(manifest)

    def replace(self, manifest):
        self.requests += 1
        meta = manifest["metadata"]
        key = self._key(manifest["kind"], meta.get("namespace"), meta["name"])
        live = self.store.get(key)
        if live is None or live["metadata"]["resourceVersion"] != meta.get("resourceVersion"):
            raise conflict()
        self.writes.append(("replace", manifest["kind"], meta["name"]))
        return self._put(manifest)

    def apply(self, manifest, field_manager="gpucloud-platform"):
        self.requests += 1
        meta = manifest["metadata"]
        key = self._key(manifest["kind"], meta.get("namespace"), meta["name"])
        self.writes.append(("apply", manifest["kind"], meta["name"]))
        live = copy.deepcopy(
            self.store.get(key)
            or {"apiVersion": manifest["apiVersion"], "kind": manifest["kind"], "metadata": {}}
        )
        for field, value in manifest.items():
            if field == "metadata":
                live["metadata"].update({k: v for k, v in value.items() if k != "labels"})
                if "labels" in value:
                    live["metadata"].setdefault("labels", {}).update(value["labels"])
            elif isinstance(value, dict) and isinstance(live.get(field), dict):
                live[field].update(copy.deepcopy(value))
            else:
                live[field] = copy.deepcopy(value)
        return self._put(live)

    def delete(
        self, api_version, kind, name, namespace=None, propagation="Foreground", preconditions=None
    ):
        self.requests += 1
        key = self._key(kind, namespace, name)
        live = self.store.get(key)
        if live is None:
            return False
        for field, value in (preconditions or {}).items():
            if live["metadata"].get(field) != value:
                raise conflict()
        self.writes.append(("delete", kind, name))
        del self.store[key]
        return True


def spot_cluster(extra=()):
    """Eight 8-GPU nodes (64 GPUs); tenants alpha (40 subscribed) and beta (8
    subscribed, 4 PAYG); four spot jobs: the design's worked example A-D."""
    nodes = [node(f"n{i}") for i in range(8)]
    queues = [
        queue(
            "alpha",
            "subscription",
            deserved={"nvidia.com/gpu": 40},
            capability={"nvidia.com/gpu": 40},
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
    return FakeCluster([*nodes, *queues, *jobs, *pods, *extra])
