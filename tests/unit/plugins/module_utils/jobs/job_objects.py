# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The objects the jobs tests start from: a tenant with four queues, four 8-GPU nodes, a
large job and its PodGroup, a throttle ConfigMap, and the fake cluster with Volcano's job
controller."""

from __future__ import annotations

import json

from ansible_collections.gpucloud.platform.plugins.modules import vcjob as vcjob_module
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster

NS = "tenant-alpha"
CM_KEY = ("ConfigMap", NS, "platform-throttle")


class JobController(FakeCluster):
    """The fake cluster plus what Volcano's job controller does to a new Job: it reports
    ``phase`` in ``status.state`` and creates the Job's PodGroup, owned by the Job, in
    ``podgroup_phase`` (Inqueue: admitted by enqueue, waiting for its pods to be bound)."""

    def __init__(self, objects=(), phase="Pending", podgroup_phase="Inqueue"):
        super().__init__(objects)
        self.phase = phase
        self.podgroup_phase = podgroup_phase

    def create(self, manifest):
        created = super().create(manifest)
        if created["kind"] == "Job" and not self.dry_run:
            meta = created["metadata"]
            status = {"state": {"phase": self.phase}}
            self.store[self.key("Job", meta.get("namespace"), meta["name"])]["status"] = status
            created["status"] = status
            self.put(self._podgroup_of(created))
        return created

    def _podgroup_of(self, job):
        meta, spec = job["metadata"], job["spec"]
        pg_spec = {
            "minMember": spec.get("minAvailable", 1),
            "queue": spec.get("queue"),
            "priorityClassName": spec.get("priorityClassName"),
        }
        if spec.get("networkTopology"):
            pg_spec["networkTopology"] = spec["networkTopology"]
        return {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {
                "name": f"{meta['name']}-{meta['uid']}",
                "namespace": meta["namespace"],
                "ownerReferences": [
                    {
                        "apiVersion": "batch.volcano.sh/v1alpha1",
                        "kind": "Job",
                        "name": meta["name"],
                        "uid": meta["uid"],
                    }
                ],
            },
            "spec": pg_spec,
            "status": {"phase": self.podgroup_phase, "running": 0},
        }


def queue(name, qtype, parent="root", tenant="alpha", capability=None):
    spec = {"parent": parent}
    if capability is not None:
        spec["capability"] = capability
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {
            "name": name,
            "labels": {"platform.io/tenant": tenant, "platform.io/queue-type": qtype},
        },
        "spec": spec,
    }


def gpu_node(name, gpus=8, ready=True):
    """A Node with ``gpus`` allocatable GPUs (rule pool counts it when Ready)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {}},
        "spec": {},
        "status": {
            "allocatable": {"nvidia.com/gpu": str(gpus), "cpu": "64", "memory": "512Gi"},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


# The GPU pool of cluster(): 4 nodes x 8 GPUs, exactly what LARGE asks for.
NODES = tuple(gpu_node(f"gpu-{i}") for i in range(4))


# The tenant's leaf queues as the tenant module lists them (ConfigMap platform-queues).
LEAVES = {"tenant-alpha-algo": "team", "tenant-alpha-payg": "payg", "tenant-alpha-spot": "spot"}


def queue_list(leaves=None):
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "platform-queues",
            "namespace": NS,
            "labels": {
                "platform.io/tenant": "alpha",
                "platform.io/managed-by": "gpucloud-platform",
            },
        },
        "data": dict(LEAVES if leaves is None else leaves),
    }


def cluster(phase="Pending", extra=(), nodes=NODES):
    return JobController(
        [
            *nodes,
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": NS, "labels": {"platform.io/tenant": "alpha"}},
            },
            queue_list(),
            # 8 of its 32 GPUs in use: a large job of 32 waits for GPUs (rule
            # job-waits-for), which is when the throttle holds the queue for it.
            {
                **queue(
                    "tenant-alpha-subscription", "subscription", capability={"nvidia.com/gpu": 32}
                ),
                "status": {"allocated": {"nvidia.com/gpu": 8}},
            },
            queue("tenant-alpha-algo", "team", parent="tenant-alpha-subscription"),
            queue("tenant-alpha-payg", "payg"),
            queue("tenant-alpha-spot", "spot"),
            *extra,
        ],
        phase,
    )


def big_job(replicas=4, gpus=8):
    """The Volcano Job that owns large_pg(): ``replicas`` x ``gpus`` GPUs (uid uid-big)."""
    container = {"name": "main", "resources": {"requests": {"nvidia.com/gpu": gpus}}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "big", "namespace": NS},
        "spec": {
            "queue": "tenant-alpha-algo",
            "priorityClassName": "large-job",
            "tasks": [
                {
                    "name": "worker",
                    "replicas": replicas,
                    "template": {"spec": {"containers": [container]}},
                }
            ],
        },
    }


def large_pg(phase="Inqueue", running=0, owner="big"):
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": f"{owner}-pg",
            "namespace": NS,
            "uid": f"pg-{owner}",
            "ownerReferences": [
                {
                    "apiVersion": "batch.volcano.sh/v1alpha1",
                    "kind": "Job",
                    "name": owner,
                    "uid": f"uid-{owner}",
                }
            ],
        },
        "spec": {
            "minMember": 4,
            "queue": "tenant-alpha-algo",
            "priorityClassName": "large-job",
            # Not what the throttle counts: it counts the owning Job's demand.
            "minResources": {"nvidia.com/gpu": "99"},
        },
        "status": {
            "phase": phase,
            "running": running,
            "conditions": [
                {
                    "type": "Unschedulable",
                    "status": "True",
                    "reason": "NotEnoughResources",
                    "message": "0/8 nodes are available",
                }
            ],
        },
    }


SINGLE = {
    "tenant": "alpha",
    "name": "eval",
    "queue": "tenant-alpha-algo",
    "kind": "single",
    "image": "i",
    "command": ["python", "e.py"],
    "gpus_per_pod": 1,
}
LARGE = {
    "tenant": "alpha",
    "name": "big",
    "queue": "tenant-alpha-algo",
    "kind": "pytorch_ddp",
    "job_class": "large",
    "image": "i",
    "command": ["train.py"],
    "replicas": 4,
    "gpus_per_pod": 8,
}


def throttle_cm(queues="tenant-alpha-algo"):
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "platform-throttle",
            "namespace": NS,
            "labels": {"platform.io/managed-by": "gpucloud-platform"},
        },
        "data": {
            "queues": queues,
            "until": "2999-01-01T00:00:00Z",
            "reason": "large job tenant-alpha/big (32 GPUs) is waiting",
            "entries.json": json.dumps(
                [
                    {
                        "uid": "uid-big",
                        "queue": "tenant-alpha-algo",
                        "job": "big",
                        "gpus": 32,
                        "engaged_at": "2998-12-31T23:55:00Z",
                        "until": "2999-01-01T00:00:00Z",
                        "state": "engaged",
                    }
                ]
            ),
        },
    }


def throttled(phase="Pending"):
    return cluster(phase=phase, extra=[throttle_cm(), large_pg(), big_job()])


def vcjob_params(**kw):
    """vcjob's parameters as the module passes them to the service: every option, at its
    default unless given."""
    defaults = {name: option.get("default") for name, option in vcjob_module.OPTIONS.items()}
    return {**defaults, **kw}
