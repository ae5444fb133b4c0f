# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU health on the local cluster: a node whose GPUs fail is taken out of service and
brought back, with the real API server, Volcano, kube-state-metrics, Prometheus and
Alertmanager.

A tenant runs a spot job and a gang (normal) job on one kwok GPU node. The node then
reports a GPU fault the way node-problem-detector would (a ``GpuUnhealthy`` condition)
and a DCGM exporter reports a fatal XID for it in Prometheus:

* a run asked to quarantine more nodes than its guard allows refuses and writes nothing;
* ``gpu_health.yml`` taints and cordons the node, deletes the spot job with an Event,
  evicts the gang job's pods there (Volcano restarts the job on the other node);
* ``spot_recompute.yml`` then offers the node's GPUs no longer;
* the tenant's alert receiver hears ``GpuQuarantineStoppedJobs`` through Alertmanager;
* once healthy for the healthy period, the node is released.

kwok runs no containers and no GPUs: the fault is a condition and a served metric, not
hardware, and the evicted pods "restart" as kwok pods.
"""

from __future__ import annotations

import contextlib
import time
import uuid

import pytest

from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    DcgmExporter,
    notified_alerts,
    prometheus_url,
    remove_tenants,
    route_tenant_alerts,
    run_playbook,
    wait_until,
)

pytestmark = pytest.mark.integration

GPU = "nvidia.com/gpu"
VCJOBS = ("batch.volcano.sh", "v1alpha1", "jobs")
QUEUES = ("scheduling.volcano.sh", "v1beta1", "queues")
TAINT = "platform.io/gpu-unhealthy"
# The job's nodes: a label of this test's own, so nothing else lands there.
RUN_LABEL = "gpu-health-test.gpucloud.local/run"
SICK, SPARE, OTHER = "gpu-node-6", "gpu-node-7", "gpu-node-5"


def condition(core, node: str, status: str | None) -> None:
    """Set (or with None remove) the node's GpuUnhealthy condition, as a node-problem-
    detector plugin would."""
    if status is None:
        item = {"type": "GpuUnhealthy", "$patch": "delete"}
    else:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        item = {
            "type": "GpuUnhealthy",
            "status": status,
            "reason": "XidError",
            "message": "XID 79: GPU has fallen off the bus",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }
    core.patch_node_status(node, {"status": {"conditions": [item]}})


def label(core, node: str, value: str | None) -> None:
    core.patch_node(node, {"metadata": {"labels": {RUN_LABEL: value}}})


def job(run_module, tenant: str, name: str, queue: str, replicas: int, run: str, **extra) -> None:
    manifest = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "minAvailable": replicas,
            "tasks": [
                {
                    "name": "worker",
                    "replicas": replicas,
                    "template": {
                        "spec": {
                            "nodeSelector": {RUN_LABEL: run},
                            "containers": [
                                {
                                    "name": "worker",
                                    "image": "trainer:1",
                                    "command": ["train"],
                                    "resources": {
                                        "requests": {GPU: 2, "cpu": "1", "memory": "1Gi"},
                                        "limits": {GPU: 2, "cpu": "1", "memory": "1Gi"},
                                    },
                                }
                            ],
                        }
                    },
                }
            ],
        },
    }
    out = run_module(
        "vcjob", {"tenant": tenant, "name": name, "queue": queue, "manifest": manifest, **extra}
    )
    assert not out.get("failed"), out.get("msg")


def pods_of(core, namespace: str, job_name: str) -> list:
    pods = core.list_namespaced_pod(namespace, label_selector=f"volcano.sh/job-name={job_name}")
    return [p for p in pods.items if p.metadata.deletion_timestamp is None]


def running_on(core, namespace: str, job_name: str, replicas: int) -> set[str] | None:
    pods = pods_of(core, namespace, job_name)
    if len(pods) == replicas and all(p.status.phase == "Running" for p in pods):
        return {p.spec.node_name for p in pods}
    return None


def xid_scraped(node: str) -> bool:
    import json
    import urllib.parse
    import urllib.request

    query = urllib.parse.urlencode({"query": f'DCGM_FI_DEV_XID_ERRORS{{Hostname="{node}"}}'})
    with urllib.request.urlopen(f"{prometheus_url()}/api/v1/query?{query}", timeout=10) as answer:
        return bool(json.load(answer)["data"]["result"])


def spot_capability(custom) -> int:
    """The spot GPUs offered to every tenant: the sum of the spot queues' capabilities."""
    queues = custom.list_cluster_custom_object(
        *QUEUES, label_selector="platform.io/queue-type=spot"
    )
    return sum(int((q["spec"].get("capability") or {}).get(GPU, 0)) for q in queues["items"])


@pytest.fixture
def tenant(run_module, priority_classes, api_client):
    name = f"gh{uuid.uuid4().hex[:6]}"
    made = run_module(
        "tenant",
        {
            "name": name,
            "subscription": {GPU: 8, "cpu": "32", "memory": "128Gi"},
            "teams": [{"name": "train", "deserved": {GPU: 8}}],
        },
    )
    assert not made.get("failed"), made.get("msg")
    yield name
    remove_tenants(run_module, api_client, [name])


@pytest.fixture
def nodes(api_client):
    """The three nodes this test marks, put back as they were afterwards."""
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    busy = [
        p.metadata.name
        for node in (SICK, SPARE)
        for p in core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}").items
    ]
    if busy:
        pytest.skip(f"{SICK} and {SPARE} must be free of pods; they hold {busy}")
    yield core
    for node in (SICK, SPARE, OTHER):
        with contextlib.suppress(Exception):
            condition(core, node, None)
        with contextlib.suppress(Exception):
            label(core, node, None)
        current = core.read_node(node)
        taints = [t for t in current.spec.taints or [] if t.key != TAINT]
        annotations = {
            key: None
            for key in (current.metadata.annotations or {})
            if key.startswith("platform.io/gpu-")
        }
        core.patch_node(
            node,
            {
                "spec": {"unschedulable": None, "taints": [t.to_dict() for t in taints] or None},
                "metadata": {"annotations": annotations},
            },
        )


def test_a_failing_node_is_quarantined_its_jobs_handled_and_released(
    api_client, nodes, tenant, run_module, ansible_env
):
    from kubernetes import client

    core, custom = nodes, client.CustomObjectsApi(api_client)
    ns, run = f"tenant-{tenant}", uuid.uuid4().hex[:8]
    route_tenant_alerts(tenant)
    # Both jobs on the sick node first; the spare node joins them once they run.
    label(core, SICK, run)
    rc, tasks = run_playbook(ansible_env, "spot_recompute.yml", {})
    assert rc == 0, tasks
    job(run_module, tenant, "cheap", f"{ns}-spot", 1, run, job_class="spot", spot_price="0.2")
    job(run_module, tenant, "gang", f"{ns}-train", 2, run, job_class="normal")
    for name, replicas in (("cheap", 1), ("gang", 2)):
        on = wait_until(
            lambda n=name, r=replicas: running_on(core, ns, n, r), 90, 1, f"{name} Running"
        )
        assert on == {SICK}, (name, on)
    label(core, SPARE, run)
    offered = spot_capability(custom)

    xid = f'DCGM_FI_DEV_XID_ERRORS{{gpu="3",Hostname="{SICK}",UUID="GPU-3"}} 79\n'
    with DcgmExporter(xid):
        condition(core, SICK, "True")
        condition(core, OTHER, "True")
        # The guard: two new quarantines asked of a run that allows one.
        refused = run_module("gpu_health", {"max_quarantine": 1})
        assert refused.get("failed") and "max_quarantine" in refused["msg"], refused
        assert SICK in refused["msg"] and OTHER in refused["msg"]
        assert not core.read_node(SICK).spec.unschedulable
        assert running_on(core, ns, "cheap", 1) == {SICK}
        condition(core, OTHER, None)

        # The XID reaches Prometheus as a real exporter's series; the run reads both signals.
        wait_until(lambda: xid_scraped(SICK), 30, 1, "the exporter's XID in Prometheus")
        rc, tasks = run_playbook(
            ansible_env, "gpu_health.yml", {"gpu_health_prometheus_url": prometheus_url()}
        )
        assert rc == 0, tasks
        done = tasks["Quarantine the nodes whose GPUs fail, release those healthy again"]
        (quarantined,) = done["quarantined"]
        assert quarantined["node"] == SICK
        assert any("79" in reason for reason in quarantined["reasons"]), quarantined

    sick = core.read_node(SICK)
    assert sick.spec.unschedulable is True
    assert [(t.key, t.effect) for t in sick.spec.taints if t.key == TAINT] == [
        (TAINT, "NoSchedule")
    ]
    assert sick.metadata.annotations["platform.io/gpu-quarantine-cordoned"] == "true"
    assert "GpuUnhealthy" in sick.metadata.annotations["platform.io/gpu-quarantine-reason"]
    # The spot job is deleted with an Event; the gang job restarts on the spare node.
    wait_until(
        lambda: (
            not custom.list_namespaced_custom_object(
                *VCJOBS[:2], ns, VCJOBS[2], field_selector="metadata.name=cheap"
            )["items"]
        ),
        60,
        1,
        "the spot job deleted",
    )
    events = core.list_namespaced_event(ns, field_selector="reason=GpuQuarantined").items
    assert any(e.involved_object.name == "cheap" for e in events), events
    assert wait_until(lambda: running_on(core, ns, "gang", 2), 120, 1, "gang restarted") == {SPARE}
    # The next spot recompute no longer offers the quarantined node's 8 GPUs.
    rc, tasks = run_playbook(ansible_env, "spot_recompute.yml", {})
    assert rc == 0, tasks
    assert spot_capability(custom) == offered - 8
    # The tenant hears of its stopped jobs on its own route.
    (notice,) = wait_until(
        lambda: notified_alerts(f"tenant/{tenant}", "GpuQuarantineStoppedJobs")[-1:],
        60,
        1,
        "GpuQuarantineStoppedJobs at the tenant's receiver",
    )
    assert notice["labels"]["tenant"] == tenant

    # Healthy again: the first run starts the healthy period, a run after it releases.
    condition(core, SICK, None)
    period = {"gpu_health_healthy_period": "3s"}
    rc, tasks = run_playbook(ansible_env, "gpu_health.yml", period)
    assert rc == 0, tasks
    assert core.read_node(SICK).spec.unschedulable is True
    time.sleep(4)
    rc, tasks = run_playbook(ansible_env, "gpu_health.yml", period)
    assert rc == 0, tasks
    back = core.read_node(SICK)
    assert not back.spec.unschedulable
    assert TAINT not in [t.key for t in back.spec.taints or []]
    assert not [k for k in back.metadata.annotations or {} if k.startswith("platform.io/gpu-")]
