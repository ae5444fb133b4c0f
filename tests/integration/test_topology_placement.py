# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hard network-topology placement by the real vc-scheduler.

The collection's default scheduler configuration (it has the
``network-topology-aware`` plugin) is loaded through the ConfigMap, and the
HyperNodes are synced from the node labels by ``gpucloud.platform.topology``.
On the default fabric (2 spines x 2 ToRs x 2 nodes, 8 GPUs each) a 4-pod,
8-GPU-per-pod job with ``{mode: hard, highestTierAllowed: 2}`` must land on
the 4 nodes under one spine, every time, and the same job with
``highestTierAllowed: 1`` must stay Pending, since no ToR has 4 nodes.
Teardown restores the scheduler ConfigMap and deletes the HyperNodes the sync
created.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_builder import (
    render_scheduler_conf,
)
from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    load_scheduler_conf,
    restore_scheduler_conf,
    scheduler_conf,
    wait_until,
)

pytestmark = pytest.mark.integration

GPU = "nvidia.com/gpu"
TOR, SPINE = "topology.volcano.sh/tor", "topology.volcano.sh/spine"
HN = ("topology.volcano.sh", "v1alpha1", "hypernodes")
QUEUES = ("scheduling.volcano.sh", "v1beta1", "queues")
JOBS = ("batch.volcano.sh", "v1alpha1")
PODS, GPUS_PER_POD = 4, 8
TRIALS = 10
PENDING_SECONDS = 8  # 8 scheduling periods of 1 s


# -- HyperNodes ------------------------------------------------------------------


def _hypernodes(custom) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in custom.list_cluster_custom_object(*HN)["items"]}


def _spine_of_nodes(hypernodes: dict[str, dict[str, Any]]) -> dict[str, str]:
    """{node: tier-2 HyperNode above it}, from the live exactMatch tree."""
    parent: dict[tuple[str, str], str] = {}
    for name, obj in hypernodes.items():
        for member in obj["spec"]["members"]:
            parent[(member["type"], member["selector"]["exactMatch"]["name"])] = name
    tier = {name: obj["spec"]["tier"] for name, obj in hypernodes.items()}
    out = {}
    for (kind, node), tor in parent.items():
        if kind == "Node" and tier[tor] == 1:
            out[node] = parent[("HyperNode", tor)]
    return out


def _delete_hypernode(custom, name: str) -> bool:
    from kubernetes.client.exceptions import ApiException

    try:
        custom.delete_cluster_custom_object(*HN, name)
    except ApiException as exc:
        return exc.status == 404
    return False


# -- queue, jobs, pods -------------------------------------------------------------


def _delete_queue(custom, name: str) -> bool:
    from kubernetes.client.exceptions import ApiException

    try:
        custom.delete_cluster_custom_object(*QUEUES, name)
    except ApiException as exc:
        return exc.status == 404
    return False


def _job(name: str, queue: str, highest_tier: int) -> dict[str, Any]:
    pod_spec = {
        "restartPolicy": "Never",
        "tolerations": [{"operator": "Exists"}],
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "resources": {
                    "requests": {GPU: str(GPUS_PER_POD)},
                    "limits": {GPU: str(GPUS_PER_POD)},
                },
            }
        ],
    }
    return {
        "apiVersion": "/".join(JOBS),
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": "volcano",
            "queue": queue,
            "minAvailable": PODS,
            "networkTopology": {"mode": "hard", "highestTierAllowed": highest_tier},
            "tasks": [{"name": "worker", "replicas": PODS, "template": {"spec": pod_spec}}],
        },
    }


def _pods(core, ns: str, job: str) -> list:
    return core.list_namespaced_pod(ns, label_selector=f"volcano.sh/job-name={job}").items


def _placed(core, ns: str, job: str) -> list[str] | None:
    pods = _pods(core, ns, job)
    if len(pods) == PODS and all(p.status.phase == "Running" and p.spec.node_name for p in pods):
        return [p.spec.node_name for p in pods]
    return None


def _delete_job_and_wait(custom, core, ns: str, job: str) -> None:
    from kubernetes.client.exceptions import ApiException

    try:
        custom.delete_namespaced_custom_object(
            *JOBS, ns, "jobs", job, body={"propagationPolicy": "Foreground"}
        )
    except ApiException as exc:
        if exc.status != 404:
            raise
    wait_until(lambda: not _pods(core, ns, job), 60, 0.5, f"the pods of {ns}/{job} to be gone")


def _pod_group(custom, ns: str, job: str) -> dict[str, Any] | None:
    for pg in custom.list_namespaced_custom_object(
        "scheduling.volcano.sh", "v1beta1", ns, "podgroups"
    )["items"]:
        if any(o.get("name") == job for o in pg["metadata"].get("ownerReferences") or []):
            return pg
    return None


# -- fixtures ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def fabric(api_client, run_module) -> Iterator[dict[str, Any]]:
    """The default scheduler configuration loaded, the HyperNodes synced, an open queue.

    Yields {"spine_of": {node: spine}, "spines": {spine: [nodes]}, "queue": name}."""
    from kubernetes import client

    custom = client.CustomObjectsApi(api_client)
    original_conf = scheduler_conf(api_client)
    created: list[str] = []
    queue = f"topo-{uuid.uuid4().hex[:6]}"
    try:
        load_scheduler_conf(api_client, render_scheduler_conf())
        sync = run_module("topology", {"tier_labels": [TOR, SPINE], "prune": False})
        assert not sync.get("failed"), sync.get("msg")
        created = list(sync["created"])
        # The module creates lowest tier first; let vc-scheduler's HyperNode informer see the
        # whole tree before the first job (with only the ToRs in its cache, its virtual
        # cluster-top HyperNode would be tier 2).
        time.sleep(2)

        custom.create_cluster_custom_object(
            *QUEUES,
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": queue},
                "spec": {"parent": "root", "reclaimable": True, "weight": 1},
            },
        )
        wait_until(
            lambda: (
                (custom.get_cluster_custom_object(*QUEUES, queue).get("status") or {}).get("state")
                == "Open"
            ),
            60,
            0.5,
            f"queue {queue} to be Open",
        )
        spine_of = _spine_of_nodes(_hypernodes(custom))
        spines: dict[str, list[str]] = {}
        for node, spine in sorted(spine_of.items()):
            spines.setdefault(spine, []).append(node)
        yield {"spine_of": spine_of, "spines": spines, "queue": queue}
    finally:
        wait_until(lambda: _delete_queue(custom, queue), 120, 1, f"queue {queue} to be deleted")
        live = _hypernodes(custom)
        for name in sorted(created, key=lambda n: -live.get(n, {}).get("spec", {}).get("tier", 0)):
            wait_until(lambda n=name: _delete_hypernode(custom, n), 30, 1, f"HyperNode {name} gone")
        restore_scheduler_conf(api_client, original_conf)


def _gpus(pod) -> int:
    return sum(
        int(((c.resources and c.resources.requests) or {}).get("nvidia.com/gpu", 0))
        for c in pod.spec.containers
    )


# -- tests -------------------------------------------------------------------------


def test_fabric_is_two_spines_of_four_free_nodes(api_client, fabric):
    from kubernetes import client

    assert sorted(len(nodes) for nodes in fabric["spines"].values()) == [4, 4]
    # DaemonSet pods (an RDMA device plugin, say) may sit on the nodes; only
    # pods holding GPUs take the room the trials need.
    busy = {
        p.spec.node_name
        for p in client.CoreV1Api(api_client).list_pod_for_all_namespaces().items
        if p.spec.node_name in fabric["spine_of"]
        and p.status.phase in ("Pending", "Running")
        and _gpus(p)
    }
    assert busy == set(), "the trials need every GPU free"


def test_hard_tier_2_lands_under_one_spine_every_time(api_client, namespace, fabric):
    from kubernetes import client

    core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
    chosen: list[str] = []
    for trial in range(TRIALS):
        name = f"hard2-{trial}"
        custom.create_namespaced_custom_object(
            *JOBS, namespace, "jobs", _job(name, fabric["queue"], 2)
        )
        try:
            nodes = wait_until(
                lambda n=name: _placed(core, namespace, n), 60, 0.5, f"{name} Running"
            )
            assert len(set(nodes)) == PODS, f"trial {trial}: pods share a node: {nodes}"
            spines = {fabric["spine_of"][node] for node in nodes}
            assert len(spines) == 1, f"trial {trial}: {nodes} straddle spines {sorted(spines)}"
            spine = spines.pop()
            assert sorted(nodes) == fabric["spines"][spine]
            chosen.append(spine)
        finally:
            _delete_job_and_wait(custom, core, namespace, name)
    assert len(chosen) == TRIALS


def test_hard_tier_1_stays_pending_without_a_tor_of_four(api_client, namespace, fabric):
    from kubernetes import client

    core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
    hypernodes = _hypernodes(custom)
    tor_sizes = [len(o["spec"]["members"]) for o in hypernodes.values() if o["spec"]["tier"] == 1]
    assert max(tor_sizes) < PODS  # no single ToR can hold the job

    name = "hard1"
    custom.create_namespaced_custom_object(*JOBS, namespace, "jobs", _job(name, fabric["queue"], 1))
    try:
        wait_until(
            lambda: len(_pods(core, namespace, name)) == PODS, 60, 0.5, f"the pods of {name}"
        )
        time.sleep(PENDING_SECONDS)
        pods = _pods(core, namespace, name)
        assert [p.spec.node_name for p in pods] == [None] * PODS
        assert {p.status.phase for p in pods} == {"Pending"}
        pg = _pod_group(custom, namespace, name)
        assert pg is not None
        # Measured on Volcano 1.15.1: enqueue admits the group (the cluster has the GPUs), and
        # allocate marks it Unschedulable with the generic gang reason; nothing names topology.
        assert pg["status"]["phase"] == "Inqueue"
        assert not pg["status"].get("running")
        unschedulable = [
            c for c in pg["status"].get("conditions", []) if c["type"] == "Unschedulable"
        ]
        assert [c["reason"] for c in unschedulable] == ["NotEnoughResources"]
        assert f"{PODS}/{PODS} tasks in gang unschedulable" in unschedulable[0]["message"]
    finally:
        _delete_job_and_wait(custom, core, namespace, name)
