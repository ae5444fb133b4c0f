# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the tenant tests build: a cluster as the tenant modules see a real one (nodes
with their pod CIDRs and addresses, the API server's ``ServiceCIDR``), a tenant's
input, and the workloads and ConfigMaps the tests put next to it.

Like the local cluster: each node gets a /24 of the pod network ``10.244.0.0/16`` and
an InternalIP in ``172.18.0.0/16``; the services are in ``10.96.0.0/12``.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.network import (
    ClusterNetworks,
    discovered_networks,
)
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster

GPU = "nvidia.com/gpu"
POD_CIDR = "10.244.0.0/16"
SERVICE_CIDR = "10.96.0.0/12"
METADATA = "169.254.169.254/32"
# A queue's vGPU capability, as written, for a tenant without a vGPU purchase whose pods
# hold none (rule vgpu-queue-capability).
NO_VGPU_RENDERED = {
    "volcano.sh/vgpu-number": "0",
    "volcano.sh/vgpu-memory": "0",
    "volcano.sh/vgpu-cores": "0",
}


def node_pod_cidr(index: int) -> str:
    return f"10.244.{index}.0/24"


def node_ip(index: int) -> str:
    return f"172.18.0.{index + 2}"


def node(
    name: str,
    index: int = 0,
    gpus: int = 8,
    labels: dict[str, str] | None = None,
    ready: bool = True,
) -> dict[str, Any]:
    """A node as the API server shows it: its pod CIDR (``spec.podCIDR`` and
    ``spec.podCIDRs``), its addresses, what it can run and whether it is Ready."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {"podCIDR": node_pod_cidr(index), "podCIDRs": [node_pod_cidr(index)]},
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": node_ip(index)},
                {"type": "Hostname", "address": name},
            ],
            "allocatable": {GPU: str(gpus), "cpu": "128", "memory": "1Ti"},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def service_cidr(cidrs: tuple[str, ...] = (SERVICE_CIDR,), name: str = "kubernetes") -> dict:
    """The ``ServiceCIDR`` the API server makes from its ``--service-cluster-ip-range``."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "ServiceCIDR",
        "metadata": {"name": name},
        "spec": {"cidrs": list(cidrs)},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def gpu_nodes(count: int = 8, first: int = 0, **over: Any) -> list[dict[str, Any]]:
    """``count`` GPU nodes ``gpu-node-<i>``, the i-th with the i-th /24 of the pod network."""
    return [node(f"gpu-node-{i}", index=i, **over) for i in range(first, first + count)]


def pool(nodes=8, objects=(), dry_run=False, cluster_class=FakeCluster):
    """A fake cluster with a pool like the local cluster's (8 nodes x 8 GPUs) and its
    ServiceCIDR."""
    return cluster_class([*gpu_nodes(nodes), service_cidr(), *objects], dry_run)


def control_plane() -> list[dict[str, Any]]:
    """The smallest cluster that tells its networks: one node without GPUs, and the
    ServiceCIDR (for tests that switch the oversell guard off)."""
    return [node("control-plane", index=0, gpus=0), service_cidr()]


def networks_of(objects) -> ClusterNetworks:
    """What rule cluster-networks reads from these objects' Nodes and ServiceCIDRs."""
    return discovered_networks(
        [o for o in objects if o["kind"] == "Node"],
        [o for o in objects if o["kind"] == "ServiceCIDR"],
    )


def tenant_params(**over: Any) -> dict[str, Any]:
    """The ``tenant`` module's options for tenant ``a`` with three teams; the pod and
    service CIDRs are read from the cluster."""
    p = {
        "name": "a",
        "state": "present",
        "subscription": {GPU: 40, "cpu": 160, "memory": "640Gi"},
        "teams": [
            {"name": "algo", "deserved": {GPU: 20}, "capability": {GPU: 40}, "guarantee": None},
            {"name": "eng", "deserved": {GPU: 10}, "capability": None, "guarantee": None},
            {"name": "data", "deserved": {GPU: 10}, "capability": None, "guarantee": None},
        ],
        "subjects": None,
        "egress_cidrs": ["0.0.0.0/0"],
        "pod_cidr": None,
        "service_cidr": None,
        "egress_to_nodes": False,
        "egress_to_metadata": False,
        "allow_critical": False,
        "node_selector": {},
        "oversell_check": True,
        "force": False,
        "wait": False,
        "wait_timeout": 120,
    }
    p.update(over)
    return p


def podgroup(queue: str, phase: str = "Running", namespace: str = "tenant-a") -> dict:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": f"pg-{queue}", "namespace": namespace},
        "spec": {"queue": queue},
        "status": {"phase": phase},
    }


def vcjob(phase: str = "Running", name: str = "train", queue: str = "tenant-a-algo") -> dict:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "tenant-a"},
        "spec": {"queue": queue},
        "status": {"state": {"phase": phase}},
    }


def parent_list(queues: str) -> dict:
    """The parent-queues ConfigMap as another run left it."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "platform-parent-queues",
            "namespace": "platform-system",
            "resourceVersion": "7",
        },
        "data": {"queues": queues},
    }


def foreign_queue(name: str, tenant: str | None) -> dict:
    """A queue someone else has: another tenant's (labelled) or no tenant's."""
    labels = {"platform.io/tenant": tenant} if tenant else {}
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name, "labels": labels},
        "spec": {"parent": "root"},
    }
