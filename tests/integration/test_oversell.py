# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The oversell guard of ``gpucloud.platform.tenant`` against the local
cluster (8 nodes x 8 GPUs): a purchase larger than the pool minus what is
already sold is refused with the numbers and nothing is written, also through
``playbooks/tenant_create.yml``, which must fail before it reclaims anything."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest

from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    remove_tenants,
    run_playbook,
    wait_until,
)

pytestmark = pytest.mark.integration

GPU = "nvidia.com/gpu"
QUEUES = ("scheduling.volcano.sh", "v1beta1", "queues")


def pool_gpus(api_client) -> int:
    """Allocatable GPUs of the Ready, schedulable nodes (worked out here
    independently of the collection's core)."""
    from kubernetes import client

    total = 0
    for node in client.CoreV1Api(api_client).list_node().items:
        ready = any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])
        if ready and not node.spec.unschedulable:
            total += int((node.status.allocatable or {}).get(GPU, 0))
    return total


def sold_gpus(api_client) -> tuple[int, int]:
    """(subscriptions, pay-as-you-go grants) in GPUs over every managed queue."""
    from kubernetes import client

    items = client.CustomObjectsApi(api_client).list_cluster_custom_object(
        *QUEUES, label_selector="platform.io/managed-by=gpucloud-platform"
    )["items"]
    subs = payg = Decimal(0)
    for q in items:
        kind = q["metadata"]["labels"].get("platform.io/queue-type")
        spec = q.get("spec") or {}
        deserved = Decimal(str((spec.get("deserved") or {}).get(GPU, 0)))
        capability = Decimal(str((spec.get("capability") or {}).get(GPU, 0)))
        if kind == "subscription":
            subs += deserved
        elif kind == "payg":
            payg += max(deserved, capability)
    return int(subs), int(payg)


def settled(api_client) -> bool:
    """No tenant of an earlier test is still being deleted: its queues would
    count as sold here and be gone by the time the module looks."""
    from kubernetes import client

    selector = "platform.io/managed-by=gpucloud-platform"
    queues = client.CustomObjectsApi(api_client).list_cluster_custom_object(
        *QUEUES, label_selector=selector
    )["items"]
    namespaces = (
        client.CoreV1Api(api_client).list_namespace(label_selector="platform.io/tenant").items
    )
    return not any(q["metadata"].get("deletionTimestamp") for q in queues) and not any(
        n.metadata.deletion_timestamp for n in namespaces
    )


def tenant_objects(api_client, tenant):
    """Names of the tenant's Queues (with generations) and Namespaces (with resourceVersions)."""
    from kubernetes import client

    selector = f"platform.io/tenant={tenant}"
    queues = client.CustomObjectsApi(api_client).list_cluster_custom_object(
        *QUEUES, label_selector=selector
    )["items"]
    namespaces = client.CoreV1Api(api_client).list_namespace(label_selector=selector).items
    # A Queue's generation moves only with its spec; its resourceVersion also
    # moves whenever Volcano's queue controller updates the status.
    return {q["metadata"]["name"]: q["metadata"]["generation"] for q in queues} | {
        n.metadata.name: n.metadata.resource_version for n in namespaces
    }


def args(name, gpus, **extra):
    return {"name": name, "subscription": {GPU: gpus, "cpu": 16, "memory": "64Gi"}, **extra}


@pytest.fixture
def names(run_module, api_client):
    """Two fresh tenant names; both tenants are removed afterwards."""
    wait_until(lambda: settled(api_client), 180, 1, "earlier tests' tenants to be gone")
    suffix = uuid.uuid4().hex[:6]
    pair = (f"ovs-{suffix}", f"ovt-{suffix}")
    yield pair
    remove_tenants(run_module, api_client, list(pair))


def test_subscription_beyond_the_pool_is_refused_and_nothing_written(names, run_module, api_client):
    holder, buyer = names
    pool = pool_gpus(api_client)
    assert pool == 64
    # Another tenant takes a large share first, so "the others" are not just leftovers.
    subs, payg = sold_gpus(api_client)
    held = (pool - subs - payg) // 2
    assert held > 0, (subs, payg)
    first = run_module("tenant", args(holder, held, payg={GPU: 2}))
    assert not first.get("failed"), first.get("msg")

    subs, payg = sold_gpus(api_client)
    left = pool - subs - payg
    asked = left + 1
    for check in (True, False):
        result = run_module("tenant", args(buyer, asked), check=check)
        assert result.get("failed") is True, result
        assert result["errors"] == [
            f"subscription.{GPU}: {asked} for the subscription of tenant '{buyer}' exceeds what "
            f"the pool has left for it ({pool} in the pool - {subs} in other tenants' "
            f"subscriptions - {payg} in other tenants' pay-as-you-go - 0 in this tenant's "
            f"pay-as-you-go = {left}); at most {left} can be granted (rule oversell-guard)"
        ]
        assert tenant_objects(api_client, buyer) == {}

    # Exactly what is left is sold; one GPU more on top of it is refused and
    # leaves the live objects as they were.
    exact = run_module("tenant", args(buyer, left))
    assert not exact.get("failed"), exact.get("msg")
    before = tenant_objects(api_client, buyer)
    assert f"tenant-{buyer}-subscription" in before
    grow = run_module("tenant", args(buyer, left + 1))
    assert grow.get("failed") is True
    assert f"= {left}); at most {left} can be granted" in grow["msg"]
    assert tenant_objects(api_client, buyer) == before
    # The other tenant's pay-as-you-go grant is guarded by the same rule.
    more_payg = run_module("tenant", args(holder, held, payg={GPU: 3}))
    assert more_payg.get("failed") is True
    assert more_payg["errors"][0].startswith(
        f"payg.{GPU}: 3 for the pay-as-you-go grant of tenant '{holder}' exceeds"
    )
    # A platform that oversells on purpose turns the guard off.
    forced = run_module("tenant", args(buyer, left + 1, oversell_check=False))
    assert not forced.get("failed"), forced.get("msg")
    assert forced["changed"] is True


def test_tenant_create_playbook_fails_before_reclaiming(names, ansible_env, api_client):
    _unused, buyer = names
    subs, payg = sold_gpus(api_client)
    asked = pool_gpus(api_client) - subs - payg + 1
    rc, tasks = run_playbook(
        ansible_env,
        "tenant_create.yml",
        {"tenant_name": buyer, "tenant_gpus": asked, "tenant_cpu": "16", "tenant_memory": "64Gi"},
    )
    assert rc != 0
    check = tasks["Check the purchase before reclaiming anything (nothing is written)"]
    assert check.get("failed") is True
    assert f"subscription.{GPU}: {asked} for the subscription of tenant '{buyer}'" in check["msg"]
    # The run stopped there: no reclaim was attempted and the tenant does not exist.
    assert (
        "Reclaim the spot GPUs the purchase sells (bought but unused GPUs count as taken)"
        not in tasks
    )
    assert tenant_objects(api_client, buyer) == {}
