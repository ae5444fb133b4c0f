# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Smoke tests of the local cluster itself, on its real components."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    CLUSTER,
    ROOT,
    load_scheduler_conf,
    restore_scheduler_conf,
    scheduler_conf,
    state_dir,
    wait_until,
)

pytestmark = pytest.mark.integration

GROUP, VERSION = "batch.volcano.sh", "v1alpha1"


def _queue(name: str, gpus: int | None = None, deserved: int | None = None) -> dict:
    spec: dict = {"parent": "root", "reclaimable": True, "weight": 1}
    if gpus is not None:
        spec["capability"] = {"nvidia.com/gpu": gpus}
    if deserved is not None:
        spec["deserved"] = {"nvidia.com/gpu": deserved}
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


def _job(name: str, ns: str, queue: str, pods: int, gpus: int, priority: str | None = None) -> dict:
    pod_spec: dict = {
        "restartPolicy": "Never",
        "tolerations": [{"operator": "Exists"}],
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "resources": {
                    "limits": {"nvidia.com/gpu": gpus},
                    "requests": {"nvidia.com/gpu": gpus},
                },
            }
        ],
    }
    if priority:
        pod_spec["priorityClassName"] = priority
    spec: dict = {
        "schedulerName": "volcano",
        "queue": queue,
        "minAvailable": pods,
        "tasks": [{"name": "worker", "replicas": pods, "template": {"spec": pod_spec}}],
    }
    if priority:
        spec["priorityClassName"] = priority
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


@pytest.fixture
def custom(api_client):
    from kubernetes import client

    return client.CustomObjectsApi(api_client)


@pytest.fixture
def queue(custom):
    made: list[str] = []

    def make(gpus: int | None = None, deserved: int | None = None) -> str:
        name = f"smoke-{uuid.uuid4().hex[:6]}"
        custom.create_cluster_custom_object(
            "scheduling.volcano.sh", "v1beta1", "queues", _queue(name, gpus, deserved)
        )
        made.append(name)
        # The job webhook only admits jobs into a queue the controller has opened.
        wait_until(
            lambda: (
                (
                    custom.get_cluster_custom_object(
                        "scheduling.volcano.sh", "v1beta1", "queues", name
                    ).get("status")
                    or {}
                ).get("state")
                == "Open"
            ),
            60,
            0.5,
            f"queue {name} to be Open",
        )
        return name

    yield make
    for name in made:
        wait_until(lambda n=name: _delete_queue(custom, n), 120, 2, f"queue {name} to be deleted")


def _delete_queue(custom, name: str) -> bool:
    from kubernetes.client.exceptions import ApiException

    try:
        custom.delete_cluster_custom_object("scheduling.volcano.sh", "v1beta1", "queues", name)
    except ApiException as exc:
        return exc.status == 404
    return False


def _pods(api_client, ns: str, job: str) -> list:
    from kubernetes import client

    return (
        client.CoreV1Api(api_client)
        .list_namespaced_pod(ns, label_selector=f"volcano.sh/job-name={job}")
        .items
    )


def _running(api_client, ns: str, job: str, count: int) -> bool:
    pods = _pods(api_client, ns, job)
    return len(pods) == count and all(
        p.status.phase == "Running" and p.spec.node_name for p in pods
    )


def test_gang_job_of_four_by_eight_gpus_runs_on_four_nodes(api_client, custom, namespace, queue):
    q = queue()
    custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, "jobs", _job("gang", namespace, q, 4, 8)
    )
    wait_until(lambda: _running(api_client, namespace, "gang", 4), 120, 1, "4 pods Running")
    nodes = {p.spec.node_name for p in _pods(api_client, namespace, "gang")}
    assert len(nodes) == 4, nodes
    assert all(p.spec.scheduler_name == "volcano" for p in _pods(api_client, namespace, "gang"))


def test_job_larger_than_the_cluster_stays_pending(api_client, custom, namespace, queue):
    q = queue()
    # 9 pods x 8 GPUs = 72 GPUs; the default topology has 64.
    custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, "jobs", _job("huge", namespace, q, 9, 8)
    )
    wait_until(
        lambda: (
            (
                custom.get_namespaced_custom_object(GROUP, VERSION, namespace, "jobs", "huge").get(
                    "status"
                )
                or {}
            )
            .get("state", {})
            .get("phase")
        ),
        60,
        1,
        "the job controller to report a phase",
    )
    import time

    time.sleep(10)  # several scheduling cycles (schedule period 1s)
    phase = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, "jobs", "huge")[
        "status"
    ]["state"]["phase"]
    assert phase == "Pending"
    assert not [p for p in _pods(api_client, namespace, "huge") if p.spec.node_name]


PREEMPTING_CONF = """actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""


@pytest.fixture
def preempting_scheduler(api_client):
    """Volcano's default conf has no preempt action: load one that has, through
    the ConfigMap the launcher syncs into vc-scheduler's file, then restore it."""
    before = scheduler_conf(api_client)
    load_scheduler_conf(api_client, PREEMPTING_CONF)
    yield
    restore_scheduler_conf(api_client, before)


def _free_node(api_client) -> str:
    """A fake node with all 8 GPUs free right now (other tests may still be cleaning up)."""
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    used: dict[str, int] = {}
    for pod in core.list_pod_for_all_namespaces(field_selector="status.phase=Running").items:
        for c in pod.spec.containers:
            gpus = int(((c.resources and c.resources.requests) or {}).get("nvidia.com/gpu", 0))
            used[pod.spec.node_name] = used.get(pod.spec.node_name, 0) + gpus
    nodes = core.list_node(label_selector="gpucloud.localcluster/fake-node=true").items
    free = sorted(n.metadata.name for n in nodes if used.get(n.metadata.name, 0) == 0)
    assert free, f"no fake node is free: {used}"
    return free[-1]


def test_higher_priority_job_preempts_lower_in_same_queue(
    api_client, custom, namespace, queue, preempting_scheduler
):
    from kubernetes import client

    sched = client.SchedulingV1Api(api_client)
    low, high = f"smoke-low-{uuid.uuid4().hex[:4]}", f"smoke-high-{uuid.uuid4().hex[:4]}"
    sched.create_priority_class({"metadata": {"name": low}, "value": 10})
    sched.create_priority_class({"metadata": {"name": high}, "value": 1000})
    try:
        # No capability on the queue: enqueue admits both jobs, and both want
        # the same node, so the only way in for the second is preemption.
        q = queue()
        node = _free_node(api_client)
        for name, prio in (("low", low), ("high", high)):
            body = _job(name, namespace, q, 1, 8, prio)
            body["spec"]["tasks"][0]["template"]["spec"]["nodeSelector"] = {
                "kubernetes.io/hostname": node
            }
            custom.create_namespaced_custom_object(GROUP, VERSION, namespace, "jobs", body)
            if name == "low":
                wait_until(
                    lambda: _running(api_client, namespace, "low", 1),
                    120,
                    1,
                    "the low-priority job to run",
                )
        wait_until(
            lambda: _running(api_client, namespace, "high", 1),
            180,
            2,
            "the high-priority job to run",
        )
        low_running = [
            p
            for p in _pods(api_client, namespace, "low")
            if p.status.phase == "Running" and not p.metadata.deletion_timestamp
        ]
        assert low_running == [], "the low-priority pod should have been evicted to make room"
    finally:
        sched.delete_priority_class(low)
        sched.delete_priority_class(high)


def test_webhook_rejects_queue_with_deserved_above_capability(custom):
    from kubernetes.client.exceptions import ApiException

    body = _queue(f"smoke-bad-{uuid.uuid4().hex[:6]}", gpus=4, deserved=8)
    with pytest.raises(ApiException) as err:
        custom.create_cluster_custom_object("scheduling.volcano.sh", "v1beta1", "queues", body)
    assert err.value.status in (400, 422)
    assert "deserved" in err.value.body.lower()


def test_rbac_denies_an_identity_without_rights(kubeconfig):
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException

    out = subprocess.run(
        [sys.executable, str(CLUSTER), "kubeconfig", "--user", "nobody", "--group", "smoke:nobody"],
        check=True,
        capture_output=True,
        text=True,
    )
    api = config.new_client_from_config(config_file=out.stdout.strip())
    with pytest.raises(ApiException) as err:
        client.CoreV1Api(api).list_namespace()
    assert err.value.status == 403


def test_up_again_is_a_no_op():
    out = subprocess.run(
        [sys.executable, str(CLUSTER), "up"],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "already running, nothing to start" in out.stdout


def test_bad_topology_is_rejected_before_anything_starts(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("spines:\n  - name: s0\n    tors:\n      - name: t0\n        nodes: [a, a]\n")
    out = subprocess.run(
        [sys.executable, str(CLUSTER), "--name", "never-started", "up", "--topology", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 2
    assert "node 'a' is already under ToR 't0'" in out.stderr
    assert not state_dir("never-started").exists()


def test_nodes_can_be_added_and_removed_while_running(api_client, tmp_path):
    import yaml as _yaml
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    default = ROOT / "tools" / "localcluster" / "topologies" / "default.yaml"
    topo = _yaml.safe_load(default.read_text())
    topo["spines"][0]["tors"][0]["nodes"].append({"name": "gpu-node-extra", "gpus": 4})
    bigger = tmp_path / "bigger.yaml"
    bigger.write_text(_yaml.safe_dump(topo))

    def up(path):
        return subprocess.run(
            [sys.executable, str(CLUSTER), "up", "--topology", str(path)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    try:
        out = up(bigger)
        assert out.returncode == 0, out.stderr
        node = core.read_node("gpu-node-extra")
        assert node.status.allocatable["nvidia.com/gpu"] == "4"
        assert node.metadata.labels["topology.volcano.sh/tor"] == "tor-0"
        assert any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)
    finally:
        out = up(default)
    assert out.returncode == 0, out.stderr
    names = {
        n.metadata.name
        for n in core.list_node(label_selector="gpucloud.localcluster/fake-node=true").items
    }
    assert "gpu-node-extra" not in names
    assert len(names) == 8


def test_large_topology_starts_and_down_leaves_no_process_running():
    """A second cluster of its own (other ports) on the shipped large topology (128 nodes,
    1,024 GPUs) is started, checked and stopped."""
    import json
    import os

    from kubernetes import client, config

    env = dict(
        os.environ, GPUCLOUD_LOCALCLUSTER="smoke-down", GPUCLOUD_LOCALCLUSTER_PORT_OFFSET="700"
    )
    large = ROOT / "tools" / "localcluster" / "topologies" / "large.yaml"
    up = subprocess.run(
        [sys.executable, str(CLUSTER), "up", "--topology", str(large)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    state = state_dir("smoke-down")
    try:
        assert up.returncode == 0, up.stderr
        pids = json.loads((state / "pids.json").read_text())
        # the control plane, kwok, Volcano's three, KServe's controller, the conf sync,
        # kube-state-metrics, the alert receiver, Alertmanager, the S3 server, Prometheus
        assert len(pids) == 15
        assert {"kserve-controller", "alertmanager", "alert-sink", "object-store"} <= set(pids)
        assert all(Path(f"/proc/{pid}").exists() for pid in pids.values())
        api = config.new_client_from_config(str(state / "admin.kubeconfig"))
        nodes = client.CoreV1Api(api).list_node().items
        assert len(nodes) == 128
        assert sum(int(n.status.allocatable["nvidia.com/gpu"]) for n in nodes) == 1024
        assert all(
            any(c.type == "Ready" and c.status == "True" for c in n.status.conditions)
            for n in nodes
        )
        tors = {n.metadata.labels["topology.volcano.sh/tor"] for n in nodes}
        spines = {n.metadata.labels["topology.volcano.sh/spine"] for n in nodes}
        assert (len(tors), len(spines)) == (16, 4)
    finally:
        down = subprocess.run(
            [sys.executable, str(CLUSTER), "down", "--wipe"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert down.returncode == 0, down.stderr
    alive = [
        pid
        for pid in pids.values()
        if Path(f"/proc/{pid}").exists()
        and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]
    ]
    assert alive == []
    assert not state.exists()
