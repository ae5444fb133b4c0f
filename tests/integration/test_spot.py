# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Spot reclaim and spot capacity against the local cluster (kwok nodes, real
vc-scheduler and vc-controller-manager), through the purchase flow
``playbooks/tenant_create.yml`` exactly as AWX runs it.

Two tenants run the design's worked example as spot jobs (prices 0.1/0.1/
0.3/0.5; 4 GPUs single, 8 GPUs on 2 pods, 4 single, 8 on 2 pods) and a
0.9-priced spot job fills the rest of the cluster, so no GPU is free. A new
tenant buys 12 GPUs. A purchase is a sale (rule unsold-reclaim-need): the 4
GPUs the two tenants bought and do not use count as taken, so the playbook
reclaims exactly A, B then C, 16 GPUs (SpotReclaimed Events on each, the
reclaim in the history), leaves D and the filler running, creates the
tenant, and recomputes the spot capabilities to the tenants' shares of the
idle pool; the new tenant's 12-GPU job then runs. A 4-GPU pay-as-you-go
grant added with ``playbooks/tenant_update.yml`` then reclaims the cheapest
spot job left, D, although 4 GPUs (bought by others) are free.

Needs the cluster's GPUs free of other jobs (it skips otherwise).
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from pathlib import Path

import pytest

from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    run_playbook as playbook_run,
)
from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import wait_until

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

GPU = "nvidia.com/gpu"
VOLCANO = ("scheduling.volcano.sh", "v1beta1", "queues")
VCJOBS = ("batch.volcano.sh", "v1alpha1", "jobs")


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
    """A Volcano Job as the admission policies of a tenant namespace accept it: a platform
    PriorityClass for its billing type, its billing label, no toleration of every taint."""
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
            "priorityClassName": "spot-job" if billing == "spot" else "normal-job",
            "minAvailable": replicas,
            "tasks": [
                {
                    "name": "worker",
                    "replicas": replicas,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
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


def job_phase(custom, namespace, name):
    from kubernetes.client.rest import ApiException

    try:
        job = custom.get_namespaced_custom_object(*VCJOBS[:2], namespace, VCJOBS[2], name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return ((job.get("status") or {}).get("state") or {}).get("phase")


def start_one_by_one(custom, namespace, jobs):
    """Create each Volcano Job of ``jobs`` (name -> body) in turn and wait until it is
    Running, a second apart, so that their start times differ (seconds resolution)."""
    for name, body in jobs.items():
        custom.create_namespaced_custom_object(*VCJOBS[:2], namespace, VCJOBS[2], body)
        wait_until(
            lambda name=name: job_phase(custom, namespace, name) == "Running",
            what=f"{name} Running",
        )
        time.sleep(1.1)


@pytest.fixture
def tenants(api_client, priority_classes):
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
    created = create_queues(custom, [names["a"], names["b"]])
    yield names, created
    remove_queues(custom, created)


def create_queues(custom, tenants):
    """Each tenant's three queues (subscription 2 GPUs, no PAYG, spot capability 64),
    made directly; returns their names in creation order."""
    created = []
    for tenant in tenants:
        for queue_type, deserved, capability in (
            ("subscription", 2, 2),
            ("payg", 0, 0),
            ("spot", 0, 64),
        ):
            body = queue_body(tenant, queue_type, deserved, capability)
            custom.create_cluster_custom_object(*VOLCANO, body)
            created.append(body["metadata"]["name"])
    return created


def remove_queues(custom, created):
    """Delete the Volcano Jobs in the queues ``created``, then the queues (in reverse):
    Volcano keeps a queue that still has pod groups."""
    from kubernetes.client.rest import ApiException

    for job in custom.list_cluster_custom_object(*VCJOBS)["items"]:
        if job["spec"].get("queue") in created:
            meta = job["metadata"]
            with contextlib.suppress(ApiException):
                custom.delete_namespaced_custom_object(
                    *VCJOBS[:2], meta["namespace"], VCJOBS[2], meta["name"]
                )
    for name in reversed(created):
        wait_until(lambda name=name: _queue_deleted(custom, name), 90, what=f"queue {name} deleted")


def _queue_deleted(custom, name):
    from kubernetes.client.rest import ApiException

    try:
        custom.delete_cluster_custom_object(*VOLCANO, name)
    except ApiException as exc:
        return exc.status == 404
    return False


def run_playbook(ansible_env, playbook, extra_vars):
    """Run a playbook of the collection that must succeed; its task results by task name."""
    rc, tasks = playbook_run(ansible_env, playbook, extra_vars)
    assert rc == 0, json.dumps(
        {n: r.get("msg") for n, r in tasks.items() if r.get("failed")}, indent=1
    )
    return tasks


def test_purchase_reclaims_spot_jobs_in_order_and_recomputes_capacity(
    api_client, namespace, tenants, ansible_env, run_module
):
    from kubernetes import client

    names, _unused = tenants
    custom = client.CustomObjectsApi(api_client)
    core = client.CoreV1Api(api_client)
    spot_a, spot_b = f"tenant-{names['a']}-spot", f"tenant-{names['b']}-spot"
    buyer = names["buyer"]

    idle = run_module("spot_reclaim", {"need": 0}, check=True)
    assert not idle.get("failed"), idle.get("msg")
    if idle["free"] != idle["pool"] or idle["pool"] % 8 or idle["pool"] < 32:
        pytest.skip(f"needs an idle cluster of 8-GPU nodes; {idle['free']} of {idle['pool']} free")
    filler_pods = (idle["pool"] - 24) // 8
    # The filler first, on whole nodes; the design's four jobs then pair up on
    # the three nodes left, so that no GPU is free.
    jobs = {
        "spot-fill": job_body("spot-fill", namespace, spot_b, 8, filler_pods, "0.9"),
        "spot-b": job_body("spot-b", namespace, spot_a, 4, 2, "0.1"),
        "spot-d": job_body("spot-d", namespace, spot_b, 4, 2, "0.5"),
        "spot-c": job_body("spot-c", namespace, spot_b, 4, 1, "0.3"),
        "spot-a": job_body("spot-a", namespace, spot_a, 4, 1, "0.1"),
    }
    # B and D start earlier than A and C (the design's "2 h" and "1 h").
    start_one_by_one(custom, namespace, jobs)

    preview = run_module("spot_reclaim", {"need": 12}, check=True)
    assert not preview.get("failed"), preview.get("msg")
    assert preview["free"] == 0 and preview["shortfall"] == 12
    assert [v["name"] for v in preview["victims"]] == ["spot-a", "spot-b"]
    assert all(job_phase(custom, namespace, n) == "Running" for n in jobs)  # nothing deleted
    # Check mode reads the victims' queue and says what its reclaim count would become.
    ((spot_queue, count),) = preview["counted"].items()
    assert count["after"] == count["before"] + 2

    reason = f"subscription order 4711 of tenant {buyer}"
    try:
        tasks = run_playbook(
            ansible_env,
            "tenant_create.yml",
            {
                "tenant_name": buyer,
                "tenant_gpus": 12,
                "tenant_cpu": "48",
                "tenant_memory": "192Gi",
                "tenant_demand_reason": reason,
            },
        )
        reclaim = tasks[
            "Reclaim the spot GPUs the purchase sells (bought but unused GPUs count as taken)"
        ]
        # A sale (rule unsold-reclaim-need): the 4 GPUs tenants a and b bought and do not
        # use are not free, so spot keeps pool - 4 - 12 and 16 go: A, B, then C.
        assert reclaim["demand"] == 12 and reclaim["need_from"] == "unsold"
        assert reclaim["sold"] == 4 and reclaim["spot"] == idle["pool"]
        assert reclaim["shortfall"] == 16 and reclaim["freed"] == 16
        assert [v["name"] for v in reclaim["victims"]] == ["spot-a", "spot-b", "spot-c"]
        assert reclaim["free_after"] >= 12
        # A and B from the queue check mode read, as it said; C from its own tenant's.
        assert reclaim["counted"][spot_queue] == count
        assert sum(c["after"] - c["before"] for c in reclaim["counted"].values()) == 3
        for name, counted in reclaim["counted"].items():
            queue = custom.get_cluster_custom_object(*VOLCANO, name)
            annotations = queue["metadata"]["annotations"]
            assert annotations["platform.io/spot-reclaimed-jobs"] == str(counted["after"])
        for name in ("spot-a", "spot-b", "spot-c"):
            assert job_phase(custom, namespace, name) is None
        for name in ("spot-d", "spot-fill"):
            assert job_phase(custom, namespace, name) == "Running"

        events = core.list_namespaced_event(namespace, field_selector="reason=SpotReclaimed").items
        by_job = {e.involved_object.name: e for e in events}
        assert set(by_job) == {"spot-a", "spot-b", "spot-c"}
        assert "price 0.1, 8 GPUs" in by_job["spot-b"].message
        assert reason in by_job["spot-b"].message
        # Both Events carry the run's time; the kill order is recorded and orders their names.
        assert by_job["spot-a"].metadata.annotations["platform.io/reclaim-order"] == "1"
        assert by_job["spot-b"].metadata.annotations["platform.io/reclaim-order"] == "2"
        assert by_job["spot-c"].metadata.annotations["platform.io/reclaim-order"] == "3"
        suffix = [by_job[j].metadata.name.rsplit(".", 1)[1] for j in ("spot-a", "spot-b", "spot-c")]
        assert int(suffix[0], 16) < int(suffix[1], 16) < int(suffix[2], 16)

        history = json.loads(
            core.read_namespaced_config_map("spot-reclaim-history", "platform-system").data[
                "history.json"
            ]
        )
        assert [v["name"] for v in history[0]["victims"]] == ["spot-a", "spot-b", "spot-c"]
        assert history[0]["reason"] == reason

        # The buyer's queues exist; its 12-GPU job runs under the real scheduler.
        sub = custom.get_cluster_custom_object(*VOLCANO, f"tenant-{buyer}-subscription")
        assert int(sub["spec"]["deserved"][GPU]) == 12
        wait_until(
            lambda: (
                custom.get_cluster_custom_object(*VOLCANO, f"tenant-{buyer}-subscription")
                .get("status", {})
                .get("state")
                == "Open"
            ),
            what="the buyer's queue Open",
        )
        buyer_ns = f"tenant-{buyer}"
        custom.create_namespaced_custom_object(
            *VCJOBS[:2],
            buyer_ns,
            VCJOBS[2],
            job_body("bought", buyer_ns, sub["metadata"]["name"], 4, 3, billing="subscription"),
        )
        wait_until(
            lambda: job_phase(custom, buyer_ns, "bought") == "Running",
            what="the buyer's job Running",
        )

        # Spot capabilities were recomputed: idle = pool - subscriptions (2 + 2 + 12),
        # apportioned by subscription.
        capacity = tasks["Recompute spot capacity"]
        # only the tenants whose capability changed are listed; the counts cover them all
        rows = {r["tenant"]: r for r in capacity["tenants"]}
        assert all(r["changed"] for r in rows.values())
        assert capacity["counts"]["changed"] == len(rows) >= 3
        idle_gpus = idle["pool"] - 16
        assert capacity["idle"][GPU] == idle_gpus
        expected = {names["a"]: idle_gpus // 8, names["b"]: idle_gpus // 8}
        expected[buyer] = idle_gpus - 2 * (idle_gpus // 8)
        for tenant, gpus in expected.items():
            assert rows[tenant]["new"][GPU] == gpus, rows[tenant]
            live = custom.get_cluster_custom_object(*VOLCANO, f"tenant-{tenant}-spot")
            assert int(live["spec"]["capability"][GPU]) == gpus
            assert int(live["spec"]["deserved"][GPU]) == 0
            assert live["metadata"]["labels"]["platform.io/queue-type"] == "spot"
            assert live["spec"]["parent"] == "root"  # the partial apply kept them
        again = run_module("spot_capacity", {})
        assert not again.get("failed"), again.get("msg")
        assert again["changed"] is False
        assert again["tenants"] == [] and again["counts"]["unchanged"] >= 3

        # The buyer adds a 4-GPU pay-as-you-go grant through tenant_update.yml. 4 GPUs are
        # free, but they are the ones tenants a and b bought: the grant's 4 come from the
        # cheapest spot job left, D (8 GPUs), and the filler stays.
        update = run_playbook(
            ansible_env,
            "tenant_update.yml",
            {
                "tenant_name": buyer,
                "tenant_gpus": 12,
                "tenant_cpu": "48",
                "tenant_memory": "192Gi",
                "tenant_payg_gpus": 4,
            },
        )
        reclaim = update[
            "Reclaim the spot GPUs the purchase sells (bought but unused GPUs count as taken)"
        ]
        assert reclaim["demand"] == 4 and [v["name"] for v in reclaim["victims"]] == ["spot-d"]
        assert reclaim["shortfall"] == 4 and reclaim["sold"] == 16
        assert job_phase(custom, namespace, "spot-d") is None
        assert job_phase(custom, namespace, "spot-fill") == "Running"
        payg = custom.get_cluster_custom_object(*VOLCANO, f"tenant-{buyer}-payg")
        assert int(payg["spec"]["capability"][GPU]) == 4
    finally:
        run_playbook(
            ansible_env,
            "tenant_delete.yml",
            {"tenant_name": buyer, "tenant_confirm": buyer, "tenant_force": True},
        )


def test_two_reclaims_with_one_holder_identity_exclude_each_other(api_client, run_module):
    """An AWX template launched twice gives both runs the same holder_identity; the Lease is
    still one run's (rule reclaim-lease-holder), so the second run is refused, not let in."""
    from datetime import UTC, datetime

    from kubernetes import client
    from kubernetes.client.rest import ApiException

    from ansible_collections.gpucloud.platform.plugins.module_utils.spot.reclaim import (
        lease_manifest,
        run_holder,
    )

    with contextlib.suppress(ApiException):  # 409: it exists
        client.CoreV1Api(api_client).create_namespace({"metadata": {"name": "platform-system"}})
    coordination = client.CoordinationV1Api(api_client)
    first_run = run_holder("awx-tenant-create", "first-run")
    lease = lease_manifest(first_run, 120, datetime.now(tz=UTC))
    try:
        coordination.create_namespaced_lease("platform-system", lease)
        second = run_module(
            "spot_reclaim", {"need": 100000, "holder_identity": "awx-tenant-create"}
        )
        assert second.get("failed") and f"held by {first_run!r}" in second["msg"], second
        assert second["changed"] is False
    finally:
        coordination.delete_namespaced_lease("spot-reclaim", "platform-system")
