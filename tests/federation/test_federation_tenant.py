# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module federation_tenant on the real local federation (``conftest.federation``: members
``fed-idc`` and ``fed-cloud``, joined as idc and cloud). The module runs as a playbook runs
it (``ansible -m``) against the Karmada API server.

The cloud member has the platform's ``cloud-burst`` queue (the burst leaf's parent; the
module does not make it) from ``federation_platform`` (``conftest.federation_platform``,
once per suite run). Then: a check-mode run writes nothing in Karmada or
either member; a run puts the tenant's namespace, subscription, team, spot and
pay-as-you-go queues (the IDC part of its GPUs) in the IDC member, and its namespace,
pay-as-you-go queue (the cloud part) and burst leaf in the cloud member, without its
subscription, team or spot queues; a second run changes nothing (no resourceVersion in
Karmada moves); a check-mode change writes nothing; ``absent`` takes it out of both
members.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.federation.tenant_federation import (
    FEDERATION_KINDS,
)
from ansible_collections.gpucloud.platform.tests.federation.federation_helpers import (
    PLATFORM_ARGS,
    raw_job,
)
from ansible_collections.gpucloud.platform.tests.integration.conftest import (
    ansible_environment,
    run_module_in,
)
from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    wait_until,
)

pytestmark = pytest.mark.federation

IDC, CLOUD = "fed-idc", "fed-cloud"
QUEUE_API = "scheduling.volcano.sh/v1beta1"
GPU = "nvidia.com/gpu"
TENANT = "fedt"
SELECTOR = f"platform.io/tenant={TENANT}"
ARGS = {
    "name": TENANT,
    "subscription": {GPU: 4, "cpu": 16, "memory": "64Gi"},
    "teams": [{"name": "algo", "deserved": {GPU: 2}}],
    "payg": {GPU: 3},
    "payg_cloud_gpus": 2,
    "burst_gpus": 2,
    "pod_cidr": "10.0.0.0/8",
    "service_cidr": "172.16.0.0/12",
}
SUBSCRIPTION_QUEUES = {f"tenant-{TENANT}-{q}" for q in ("subscription", "algo", "spot")}
PAYG, BURST = f"tenant-{TENANT}-payg", f"tenant-{TENANT}-burst"
SUBSCRIPTION = f"tenant-{TENANT}-subscription"


@pytest.fixture(scope="module")
def fedt(federation, federation_platform) -> dict[str, Any]:
    """The suite's federation as ``Cluster`` clients, ``cloud-burst`` in the cloud member
    (``federation_platform`` waited for it)."""
    return {
        **federation,
        "karmada": federation_platform["karmada"],
        "members": federation_platform["members"],
        "env": ansible_environment(federation["kubeconfig"]),
    }


def karmada_versions(karmada) -> dict[str, str]:
    """Every object of the tenant in Karmada, ``Kind/name`` -> resourceVersion."""
    found = {}
    for api_version, kind in FEDERATION_KINDS:
        for obj in karmada.list(api_version, kind, label_selector=SELECTOR):
            found[f"{kind}/{obj['metadata']['name']}"] = obj["metadata"]["resourceVersion"]
    return found


def karmada_parent_queues(karmada) -> list[str]:
    """The queues the federation's leaf admission policy calls parents."""
    cm = karmada.get("v1", "ConfigMap", "platform-parent-queues", "platform-system") or {}
    return [q for q in ((cm.get("data") or {}).get("queues") or "").split(",") if q]


def refusal_of_a_job_in(kubeconfig: str, queue: str) -> str:
    """What Karmada's API server says to a Volcano Job of the tenant naming ``queue``,
    written straight to it (as ``kubectl`` would)."""
    from kubernetes import client, config
    from kubernetes.client.rest import ApiException

    job = raw_job(f"tenant-{TENANT}", "to-a-parent", queue)
    api = client.CustomObjectsApi(config.new_client_from_config(config_file=kubeconfig))
    with pytest.raises(ApiException) as refused:
        api.create_namespaced_custom_object(
            "batch.volcano.sh", "v1alpha1", f"tenant-{TENANT}", "jobs", job
        )
    assert refused.value.status == 403
    return json.loads(refused.value.body)["message"]


def member_state(cluster) -> dict[str, Any]:
    """The tenant's namespace (or None) and queues (name -> capability GPUs) in a member."""
    namespaces = cluster.list("v1", "Namespace", label_selector=SELECTOR)
    queues = cluster.list(QUEUE_API, "Queue", label_selector=SELECTOR)
    return {
        "namespace": [n["metadata"]["name"] for n in namespaces],
        "queues": {
            q["metadata"]["name"]: str(((q.get("spec") or {}).get("capability") or {}).get(GPU))
            for q in queues
        },
    }


def test_federation_tenant_places_the_tenant_per_location(fedt):
    started = time.monotonic()
    karmada, members = fedt["karmada"], fedt["members"]

    def module(args, check=False, diff=False):
        out = run_module_in(fedt["env"], "federation_tenant", args, check, diff)
        assert not out.get("failed"), out.get("msg")
        return out

    # check mode on nothing: nothing written in Karmada or in either member
    would = module(ARGS, check=True)
    # 20 objects of the tenant, and the federation's parent-queues list
    assert would["changed"] and len(would["objects"]) == 21
    time.sleep(5)  # what Karmada would push, it has pushed by now
    assert karmada_versions(karmada) == {}
    assert SUBSCRIPTION not in karmada_parent_queues(karmada)
    for cluster in members.values():
        assert member_state(cluster) == {"namespace": [], "queues": {}}

    # present
    done = module(ARGS, diff=True)
    assert done["changed"] and done["objects"] == would["objects"]
    assert done["summary"] == [
        f"tenant {TENANT} in the federation: created 20 objects, updated 1 object "
        "(payg cloud part 2 GPUs, burst leaf 2 GPUs)"
    ]
    # its subscription queue, parent of its team's, is a parent at the federation's
    # admission too (rule parent-queues-list)
    assert SUBSCRIPTION in karmada_parent_queues(karmada)
    # Refused at once, by the leaf policy or by the queue-tenant policy (a parent is not in
    # the tenant's queue list): the API server says the first denial of the policies it
    # evaluates, in an order of its own. With queue-tenant switched off, as a site may
    # switch it off, the leaf policy alone refuses it, by the list just written.
    assert "to-a-parent" in refusal_of_a_job_in(fedt["kubeconfig"], SUBSCRIPTION)
    off = run_module_in(
        fedt["env"], "federation_platform", {**PLATFORM_ARGS, "admission": {"queue_tenant": False}}
    )
    assert not off.get("failed"), off.get("msg")
    try:
        wait_until(
            lambda: (
                "has team sub-queues and takes no jobs"
                in refusal_of_a_job_in(fedt["kubeconfig"], SUBSCRIPTION)
            ),
            30,
            1,
            "a job to the parent queue refused as a parent queue's",
        )
    finally:
        back = run_module_in(fedt["env"], "federation_platform", PLATFORM_ARGS)
        assert not back.get("failed"), back.get("msg")
    idc_wanted = {
        "namespace": [f"tenant-{TENANT}"],
        "queues": {
            f"tenant-{TENANT}-subscription": "4",
            f"tenant-{TENANT}-algo": "None",
            f"tenant-{TENANT}-spot": "0",
            PAYG: "1",
        },
    }
    cloud_wanted = {"namespace": [f"tenant-{TENANT}"], "queues": {PAYG: "2", BURST: "2"}}
    wait_until(lambda: member_state(members[IDC]) == idc_wanted, 120, 1, "the tenant in the IDC")
    wait_until(
        lambda: member_state(members[CLOUD]) == cloud_wanted, 120, 1, "the tenant in the cloud"
    )
    for name in SUBSCRIPTION_QUEUES:
        assert members[CLOUD].get(QUEUE_API, "Queue", name) is None
    assert members[IDC].get(QUEUE_API, "Queue", BURST) is None
    # the namespaced objects went to both
    for cluster in members.values():
        assert cluster.get("v1", "ConfigMap", "platform-queues", f"tenant-{TENANT}") is not None

    # a second run writes nothing
    before = karmada_versions(karmada)
    assert len(before) == 20
    again = module(ARGS)
    assert again["changed"] is False and again["objects"] == []
    assert karmada_versions(karmada) == before

    # a change in check mode writes nothing, in Karmada or the members
    changed = {**ARGS, "payg_cloud_gpus": 3, "burst_gpus": 4}
    would = module(changed, check=True, diff=True)
    assert {(o["kind"], o["name"]) for o in would["objects"]} == {
        ("ClusterOverridePolicy", f"tenant-{TENANT}-payg"),
        ("Queue", BURST),
    }
    time.sleep(5)
    assert karmada_versions(karmada) == before
    assert member_state(members[IDC]) == idc_wanted
    assert member_state(members[CLOUD]) == cloud_wanted

    # absent: Karmada takes it out of both members
    gone = module({"name": TENANT, "state": "absent"})
    assert gone["changed"] and len(gone["objects"]) == 21
    assert SUBSCRIPTION not in karmada_parent_queues(karmada)
    for name, cluster in members.items():
        wait_until(
            lambda c=cluster: member_state(c) == {"namespace": [], "queues": {}},
            180,
            1,
            f"the tenant gone from {name}",
        )
    wait_until(lambda: karmada_versions(karmada) == {}, 60, 1, "the tenant gone from Karmada")
    assert module({"name": TENANT, "state": "absent"})["changed"] is False
    print(
        f"federation up {fedt['up_seconds']:.1f}s; "
        f"module runs and checks {time.monotonic() - started:.1f}s"
    )
