# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A tenant catalog run that sells GPUs sells like a purchase (rule catalog-sale) on the
local cluster: once for the run, the spot jobs holding more than stays unsold are
reclaimed before its writes and every spot queue's capability is recomputed after them,
so spot never offers more than the unsold GPUs; a second, unchanged run changes nothing.

The cluster is shared with the other test files: every catalog here is the live fleet
gathered right before the run (``state: gathered``) plus this file's tenants, and the
GPUs sold are few, so a spot job of another file is reclaimed only when spot already
holds nearly every unsold GPU."""

from __future__ import annotations

import copy
import json
from decimal import Decimal

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.workload.pool import (
    commitments_from_queues,
    committed_total,
    pool_from_nodes,
)
from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    remove_tenants,
    run_playbook,
)
from ansible_collections.gpucloud.platform.tests.integration.test_tenant import custom

pytestmark = pytest.mark.integration

GPU = "nvidia.com/gpu"
OURS = ("sale-a", "sale-b")
SUB = {"cpu": 2, "memory": "4Gi"}


def ours():
    return [
        {"name": "sale-a", "subscription": {GPU: 2, **SUB}},
        {"name": "sale-b", "subscription": {GPU: 1, **SUB}},
    ]


@pytest.fixture(scope="module")
def clean(run_module, api_client):
    def remove():
        remove_tenants(run_module, api_client, list(OURS))

    remove()
    yield
    remove()


def catalog(run_module):
    """Every other tenant as the cluster holds it now, then this file's."""
    gathered = run_module("tenant_catalog", {"state": "gathered"})
    assert not gathered.get("failed"), gathered.get("msg")
    others = [t for t in gathered["tenants"] if t["name"] not in OURS]
    return [*copy.deepcopy(others), *ours()]


def spot_and_unsold(api_client):
    """Every spot queue's GPU capability, and the GPUs nobody bought (the pool less every
    subscription and pay-as-you-go grant), read from the live Queues and Nodes."""
    from kubernetes import client

    listed = client.CoreV1Api(api_client).list_node(_preload_content=False)
    pool, _members = pool_from_nodes(json.loads(listed.data)["items"], {})
    queues = custom(api_client).list_cluster_custom_object(
        "scheduling.volcano.sh",
        "v1beta1",
        "queues",
        label_selector="platform.io/managed-by=gpucloud-platform",
    )["items"]
    spot = {
        q["metadata"]["name"]: Decimal(str((q["spec"].get("capability") or {}).get(GPU, 0)))
        for q in queues
        if q["metadata"]["labels"].get("platform.io/queue-type") == "spot"
    }
    sold = committed_total(commitments_from_queues(queues).values())[GPU]
    return spot, max(Decimal(0), pool[GPU] - sold)


def test_check_mode_writes_nothing_and_says_what_the_sale_would_leave_to_spot(
    clean, run_module, api_client
):
    spot_before, _unsold = spot_and_unsold(api_client)
    result = run_module("tenant_catalog", {"tenants": catalog(run_module)}, check=True)
    assert not result.get("failed"), result.get("msg")
    assert result["sale"]["added"] == 3 and result["sale"]["reclaims"] is True
    assert result["spot"]["recomputed"] is False
    assert result["spot"]["gpus"] == result["sale"]["unsold_after"]
    assert "spot capacity after: would be at most" in result["sale"]["summary"]
    spot_after, _unsold = spot_and_unsold(api_client)
    assert spot_after == spot_before
    assert not any(
        q
        for name in OURS
        for q in custom(api_client).list_cluster_custom_object(
            "scheduling.volcano.sh",
            "v1beta1",
            "queues",
            label_selector=f"platform.io/tenant={name}",
        )["items"]
    )


def test_a_run_that_sells_leaves_spot_at_most_the_unsold_gpus_and_a_second_run_changes_nothing(
    clean, run_module, api_client, ansible_env
):
    rc, tasks = run_playbook(
        ansible_env, "tenant_catalog.yml", {"tenant_catalog": catalog(run_module)}
    )
    converge = tasks["Converge every tenant to the catalog"]
    assert rc == 0, converge.get("msg")
    assert converge["sale"]["added"] == 3
    assert converge["spot"]["recomputed"] is True
    spot, unsold = spot_and_unsold(api_client)
    assert {"tenant-sale-a-spot", "tenant-sale-b-spot"} <= set(spot)
    assert sum(spot.values()) <= unsold, (spot, unsold)
    assert converge["spot"]["gpus"] == converge["sale"]["unsold_after"]
    # The human summary says what was sold, what was reclaimed and the spot capacity after.
    shown = tasks["Say what the run did"]["msg"]
    assert shown[-1] == f"sale: {converge['sale']['summary']}"
    assert "spot capacity after: " in shown[-1] and "GPUs sold (+3)" in shown[-1]

    again = run_module("tenant_catalog", {"tenants": catalog(run_module)})
    assert not again.get("failed"), again.get("msg")
    assert again["changed"] is False and again["objects"] == []
    assert again["sale"]["recomputes"] is False and again["reclaim"] == {}
    assert again["spot"]["updated"] == []
    assert again["requests"] == 15  # the fleet's reads only: no reclaim, no recompute
    assert spot_and_unsold(api_client) == (spot, unsold)
