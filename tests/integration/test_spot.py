# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Spot reclaim and spot capacity against the local cluster (kwok nodes, real
vc-scheduler and vc-controller-manager).

Two tenants run four spot jobs, the design's worked example (prices 0.1/0.1/
0.3/0.5; 4 GPUs single, 8 GPUs on 2 pods, 4 single, 8 on 2 pods). A demand of
(free GPUs + 12) must delete exactly A then B, record SpotReclaimed Events on
both, add them to the history, leave C and D running; a new tenant's 12-GPU
job in its new subscription queue then runs; spot capabilities are recomputed
to the tenants' shares of the idle pool.

Assumes no other running spot jobs in managed spot queues (they would take
part in the victim order).
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpucloud.platform.plugins.modules import spot_capacity as capacity_module
from ansible_collections.gpucloud.platform.plugins.modules import spot_reclaim as reclaim_module

pytestmark = pytest.mark.integration

GPU = "nvidia.com/gpu"
VOLCANO = ("scheduling.volcano.sh", "v1beta1", "queues")
VCJOBS = ("batch.volcano.sh", "v1alpha1", "jobs")


def run_module(module, kubeconfig, capsys, **args):
    args = {"kubeconfig": str(kubeconfig), **args}
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    out = json.loads(capsys.readouterr().out)
    assert not out.get("failed"), out.get("msg")
    return out


def queue_body(tenant, queue_type, gpus_deserved, gpus_capability):
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {
            "name": f"tenant-{tenant}-{queue_type}",
            "labels": {
                "platform.io/tenant": tenant,
                "platform.io/queue-type": queue_type,
                "platform.io/managed-by": "gpucloud-platform",
            },
        },
        "spec": {
            "parent": "root",
            "reclaimable": True,
            "deserved": {GPU: gpus_deserved},
            "capability": {GPU: gpus_capability},
        },
    }


def job_body(name, namespace, queue, gpus_per_pod, replicas, price=None, billing="spot"):
    meta = {"name": name, "namespace": namespace, "labels": {"platform.io/billing-type": billing}}
    if price is not None:
        meta["annotations"] = {"platform.io/spot-price": price}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": meta,
        "spec": {
            "schedulerName": "volcano",
            "queue": queue,
            "minAvailable": replicas,
            "tasks": [
                {
                    "name": "worker",
                    "replicas": replicas,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "tolerations": [{"operator": "Exists"}],
                            "containers": [
                                {
                                    "name": "worker",
                                    "image": "busybox",
                                    "resources": {
                                        "requests": {GPU: gpus_per_pod, "cpu": "100m"},
                                        "limits": {GPU: gpus_per_pod, "cpu": "100m"},
                                    },
                                }
                            ],
                        }
                    },
                }
            ],
        },
    }


def wait_for(predicate, timeout=120, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def job_phase(custom, namespace, name):
    from kubernetes.client.rest import ApiException

    try:
        job = custom.get_namespaced_custom_object(*VCJOBS[:2], namespace, VCJOBS[2], name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return ((job.get("status") or {}).get("state") or {}).get("phase")


@pytest.fixture
def tenants(api_client):
    """Two spot tenants and one buyer, with unique names; removed afterwards."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    core = client.CoreV1Api(api_client)
    try:
        core.create_namespace({"metadata": {"name": "platform-system"}})
    except ApiException as exc:
        if exc.status != 409:
            raise
    suffix = uuid.uuid4().hex[:6]
    names = {"a": f"spa{suffix}", "b": f"spb{suffix}", "buyer": f"buy{suffix}"}
    custom = client.CustomObjectsApi(api_client)
    created = []
    for key in ("a", "b"):
        for queue_type, deserved, capability in (
            ("subscription", 2, 2),
            ("payg", 0, 0),
            ("spot", 0, 64),
        ):
            body = queue_body(names[key], queue_type, deserved, capability)
            custom.create_cluster_custom_object(*VOLCANO, body)
            created.append(body["metadata"]["name"])
    yield names, created
    for name in reversed(created):
        with contextlib.suppress(ApiException):
            custom.delete_cluster_custom_object(*VOLCANO, name)


def test_reclaim_deletes_the_expected_jobs_in_order(
    kubeconfig, api_client, namespace, tenants, capsys
):
    from kubernetes import client

    names, created = tenants
    custom = client.CustomObjectsApi(api_client)
    core = client.CoreV1Api(api_client)
    spot_a, spot_b = f"tenant-{names['a']}-spot", f"tenant-{names['b']}-spot"
    jobs = {
        "spot-a": job_body("spot-a", namespace, spot_a, 4, 1, "0.1"),
        "spot-b": job_body("spot-b", namespace, spot_a, 4, 2, "0.1"),
        "spot-c": job_body("spot-c", namespace, spot_b, 4, 1, "0.3"),
        "spot-d": job_body("spot-d", namespace, spot_b, 4, 2, "0.5"),
    }
    # B and D started earlier than A and C (the design's "2 h" and "1 h").
    for name in ("spot-b", "spot-d", "spot-c", "spot-a"):
        custom.create_namespaced_custom_object(*VCJOBS[:2], namespace, VCJOBS[2], jobs[name])
        wait_for(
            lambda name=name: job_phase(custom, namespace, name) == "Running",
            what=f"{name} Running",
        )
        time.sleep(1.1)  # distinct start times (seconds resolution)

    preview = run_module(reclaim_module, kubeconfig, capsys, need=0, _ansible_check_mode=True)
    free = preview["free"]
    need = free + 12

    check = run_module(reclaim_module, kubeconfig, capsys, need=need, _ansible_check_mode=True)
    assert [v["name"] for v in check["victims"]] == ["spot-a", "spot-b"]
    assert all(
        job_phase(custom, namespace, n) == "Running" for n in jobs
    )  # check mode deleted nothing

    reason = f"subscription of tenant {names['buyer']}"
    done = run_module(
        reclaim_module,
        kubeconfig,
        capsys,
        need=need,
        demand_reason=reason,
        wait=True,
        wait_timeout=180,
    )
    assert done["shortfall"] == 12 and done["freed"] == 12
    assert [v["name"] for v in done["victims"]] == ["spot-a", "spot-b"]
    assert done["free_after"] >= need
    wait_for(lambda: job_phase(custom, namespace, "spot-a") is None, what="spot-a gone")
    wait_for(lambda: job_phase(custom, namespace, "spot-b") is None, what="spot-b gone")
    assert job_phase(custom, namespace, "spot-c") == "Running"
    assert job_phase(custom, namespace, "spot-d") == "Running"

    events = core.list_namespaced_event(namespace, field_selector="reason=SpotReclaimed").items
    by_job = {e.involved_object.name: e for e in events}
    assert set(by_job) == {"spot-a", "spot-b"}
    assert "price 0.1, 8 GPUs" in by_job["spot-b"].message and reason in by_job["spot-b"].message
    assert (
        by_job["spot-a"].metadata.name.split(".")[-1]
        < by_job["spot-b"].metadata.name.split(".")[-1]
    )

    history = json.loads(
        core.read_namespaced_config_map("spot-reclaim-history", "platform-system").data[
            "history.json"
        ]
    )
    assert [v["name"] for v in history[0]["victims"]] == ["spot-a", "spot-b"] and history[0][
        "reason"
    ] == reason

    # The buyer's subscription fits now; its job runs under the real scheduler.
    buyer = queue_body(names["buyer"], "subscription", 12, 12)
    custom.create_cluster_custom_object(*VOLCANO, buyer)
    created.append(buyer["metadata"]["name"])
    custom.create_namespaced_custom_object(
        *VCJOBS[:2],
        namespace,
        VCJOBS[2],
        job_body("bought", namespace, buyer["metadata"]["name"], 4, 3, billing="subscription"),
    )
    wait_for(
        lambda: job_phase(custom, namespace, "bought") == "Running", what="the buyer's job Running"
    )

    capacity = run_module(capacity_module, kubeconfig, capsys)
    rows = {r["tenant"]: r for r in capacity["tenants"]}
    spot_rows = [r for r in capacity["tenants"] if r["queue"]]
    assert sum(r["new"][GPU] for r in spot_rows) <= capacity["idle"][GPU]
    for key in ("a", "b"):
        live = custom.get_cluster_custom_object(*VOLCANO, f"tenant-{names[key]}-spot")
        assert int(live["spec"]["capability"][GPU]) == rows[names[key]]["new"][GPU]
        assert int(live["spec"]["deserved"][GPU]) == 0
        assert (
            live["metadata"]["labels"]["platform.io/queue-type"] == "spot"
        )  # the partial apply kept them
        assert live["spec"]["parent"] == "root"
    # Equal subscriptions: equal shares, at most one GPU apart.
    assert abs(rows[names["a"]]["new"][GPU] - rows[names["b"]]["new"][GPU]) <= 1
    again = run_module(capacity_module, kubeconfig, capsys)
    assert again["changed"] is False
