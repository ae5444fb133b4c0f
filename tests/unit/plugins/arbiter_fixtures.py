# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A tenant's queues, Volcano Jobs, PodGroups, Pods and Nodes for the queue arbiter's tests,
as Volcano 1.15.1 shows them: design 6.1 scenarios one and two inside a full subscription."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
GPU = "nvidia.com/gpu"
NS = "tenant-a"


def ago(seconds: float) -> str:
    return (NOW - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def node(name: str, gpus: int = 8) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {}},
        "spec": {},
        "status": {
            "allocatable": {GPU: str(gpus), "cpu": "64", "memory": "512Gi"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def queue(
    name, queue_type, parent="root", deserved=None, capability=None, allocated=0, tenant="a"
) -> dict[str, Any]:
    spec: dict[str, Any] = {"parent": parent, "reclaimable": True}
    if deserved is not None:
        spec["deserved"] = {GPU: str(deserved)}
    if capability is not None:
        spec["capability"] = {GPU: str(capability)}
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {
            "name": name,
            "labels": {
                "platform.io/tenant": tenant,
                "platform.io/queue-type": queue_type,
                "platform.io/managed-by": "gpucloud-platform",
            },
        },
        "spec": spec,
        "status": {"allocated": {GPU: str(allocated), "cpu": "10"}, "state": "Open"},
    }


def vcjob(
    name, queue_name, pc, gpus_per_pod, replicas=1, phase="Running", started=600, ns=NS
) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": f"uid-{name}",
            "creationTimestamp": ago(started + 5),
        },
        "spec": {
            "queue": queue_name,
            "priorityClassName": pc,
            "minAvailable": replicas,
            "tasks": [
                {
                    "name": "worker",
                    "replicas": replicas,
                    "template": {
                        "spec": {
                            "priorityClassName": pc,
                            "containers": [
                                {
                                    "name": "c",
                                    "resources": {"requests": {GPU: str(gpus_per_pod)}},
                                }
                            ],
                        }
                    },
                }
            ],
        },
        "status": {"state": {"phase": phase, "lastTransitionTime": ago(started)}},
    }


def podgroup(job: dict[str, Any], phase: str, created: float = 60) -> dict[str, Any]:
    meta, spec = job["metadata"], job["spec"]
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": f"{meta['name']}-{meta['uid']}",
            "namespace": meta["namespace"],
            "creationTimestamp": ago(created),
            "ownerReferences": [
                {
                    "apiVersion": "batch.volcano.sh/v1alpha1",
                    "kind": "Job",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": {
            "minMember": spec["minAvailable"],
            "queue": spec["queue"],
            "priorityClassName": spec["priorityClassName"],
        },
        "status": {
            "phase": phase,
            "running": spec["minAvailable"] if phase == "Running" else 0,
        },
    }


def pods(job: dict[str, Any], nodes: list[str]) -> list[dict[str, Any]]:
    """The job's running pods, one per replica, on ``nodes`` in turn."""
    meta, task = job["metadata"], job["spec"]["tasks"][0]
    gpus = task["template"]["spec"]["containers"][0]["resources"]["requests"][GPU]
    out = []
    for i in range(task["replicas"]):
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{meta['name']}-worker-{i}",
                    "namespace": meta["namespace"],
                    "uid": f"uid-{meta['name']}-worker-{i}",
                    "labels": {"volcano.sh/job-name": meta["name"]},
                    "ownerReferences": [
                        {
                            "apiVersion": "batch.volcano.sh/v1alpha1",
                            "kind": "Job",
                            "name": meta["name"],
                            "uid": meta["uid"],
                        }
                    ],
                },
                "spec": {
                    "nodeName": nodes[i % len(nodes)],
                    "schedulerName": "volcano",
                    "containers": [{"name": "c", "resources": {"requests": {GPU: gpus}}}],
                },
                "status": {"phase": "Running"},
            }
        )
    return out


def running(job: dict[str, Any], nodes: list[str]) -> list[dict[str, Any]]:
    """A Running job with its Running PodGroup and pods."""
    return [job, podgroup(job, "Running", created=3600), *pods(job, nodes)]


def scenario_one(waiting_pc="large-job", waiting_gpus=8, waiting_replicas=4, pending_for=60):
    """Scenario one in a subscription of 40 (deserved = capability) on 5 nodes of 8 GPUs:
    team queue tenant-a-algo uses 30 (task-a..c normal-job 8 each, task-d debug-job 4,
    task-e debug-job 2), 10 free; ``big`` (4 x 8 GPUs, large-job) waits Pending since
    ``pending_for`` seconds, as 30 + 32 exceeds the capability 40 the team inherits."""
    objects = [node(f"n{i}") for i in range(5)]
    objects += [
        queue("tenant-a-subscription", "subscription", deserved=40, capability=40, allocated=30),
        queue("tenant-a-algo", "team", "tenant-a-subscription", deserved=40, allocated=30),
    ]
    team = "tenant-a-algo"
    objects += running(vcjob("task-a", team, "normal-job", 8, started=3000), ["n0"])
    objects += running(vcjob("task-b", team, "normal-job", 8, started=2400), ["n1"])
    objects += running(vcjob("task-c", team, "normal-job", 8, started=1800), ["n2"])
    objects += running(vcjob("task-d", team, "debug-job", 4, started=600), ["n3"])
    objects += running(vcjob("task-e", team, "debug-job", 2, started=1200), ["n3"])
    big = vcjob("big", team, waiting_pc, waiting_gpus, waiting_replicas, phase="Pending")
    objects += [big, podgroup(big, "Pending", created=pending_for)]
    return objects


def scenario_two():
    """Scenario two: a subscription of 30 (deserved = capability) on 4 nodes of 8 GPUs;
    team a (deserved 20) uses 25, team b (deserved 10) uses 5; b2 (normal-job, 5 GPUs) waits
    Pending in team b: 30 + 5 exceeds the subscription's capability."""
    objects = [node(f"n{i}") for i in range(4)]
    objects += [
        queue("tenant-a-subscription", "subscription", deserved=30, capability=30, allocated=30),
        queue("tenant-a-a", "team", "tenant-a-subscription", 20, 30, allocated=25),
        queue("tenant-a-b", "team", "tenant-a-subscription", 10, 30, allocated=5),
    ]
    objects += running(vcjob("a1", "tenant-a-a", "normal-job", 8, started=3600), ["n0"])
    objects += running(vcjob("a2", "tenant-a-a", "normal-job", 8, started=3000), ["n1"])
    objects += running(vcjob("a3", "tenant-a-a", "normal-job", 4, started=2400), ["n2"])
    objects += running(vcjob("a4", "tenant-a-a", "debug-job", 3, started=1800), ["n2"])
    objects += running(vcjob("a5", "tenant-a-a", "debug-job", 2, started=1200), ["n3"])
    objects += running(vcjob("b1", "tenant-a-b", "normal-job", 5, started=600), ["n3"])
    b2 = vcjob("b2", "tenant-a-b", "normal-job", 5, phase="Pending")
    objects += [b2, podgroup(b2, "Pending", created=60)]
    return objects


def arbiter_cluster(objects=None, dry_run=False, cls=FakeCluster):
    return cls(scenario_one() if objects is None else objects, dry_run=dry_run)
