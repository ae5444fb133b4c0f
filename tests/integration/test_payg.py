# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A pay-as-you-go grant on the local cluster keeps through its grace (rule payg-grace):
the scheduled ``payg_reconcile.yml`` leaves an unused grant made a moment ago alone and
says until when, and shrinks it once the grace is over."""

from __future__ import annotations

import uuid

import pytest

from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    remove_tenants,
    run_playbook,
)

pytestmark = pytest.mark.integration

GPU = "nvidia.com/gpu"
TENANT = f"pg{uuid.uuid4().hex[:5]}"
QUEUE = f"tenant-{TENANT}-payg"


@pytest.fixture(scope="module")
def tenant(run_module, api_client):
    made = run_module(
        "tenant",
        {"name": TENANT, "subscription": {GPU: 1, "cpu": 4, "memory": "8Gi"}, "payg": {GPU: 0}},
    )
    assert not made.get("failed"), made.get("msg")
    yield TENANT
    remove_tenants(run_module, api_client, [TENANT])


def granted(api_client) -> dict:
    from kubernetes import client

    queue = client.CustomObjectsApi(api_client).get_cluster_custom_object(
        "scheduling.volcano.sh", "v1beta1", "queues", QUEUE
    )
    return queue


def test_an_unused_grant_is_kept_through_its_grace_then_shrunk(
    tenant, run_module, ansible_env, api_client
):
    grown = run_module("payg_capacity", {"tenant": TENANT, "capability": {GPU: 2}})
    assert not grown.get("failed"), grown.get("msg")
    (row,) = [r for r in grown["queues"] if r["queue"] == QUEUE]
    queue = granted(api_client)
    stamp = queue["metadata"]["annotations"]["platform.io/payg-granted-at"]
    assert queue["spec"]["capability"][GPU] == 2 and row["kept_until"] > stamp

    rc, tasks = run_playbook(ansible_env, "payg_reconcile.yml", {}, inventory="inventories/local")
    assert rc == 0, {n: r.get("msg") for n, r in tasks.items() if r.get("failed")}
    assert granted(api_client)["spec"]["capability"][GPU] == 2
    said = tasks["Say what changed"]["msg"]
    assert f"{QUEUE} until {row['kept_until']}" in said and "kept unused through its grace" in said

    rc, tasks = run_playbook(
        ansible_env, "payg_reconcile.yml", {"payg_grace_minutes": 0}, inventory="inventories/local"
    )
    assert rc == 0, {n: r.get("msg") for n, r in tasks.items() if r.get("failed")}
    assert granted(api_client)["spec"]["capability"][GPU] == 0
    assert QUEUE in tasks["Say what changed"]["msg"].split(" shrank")[0]


def test_a_grant_bought_with_the_tenant_is_kept_through_its_grace(
    tenant, run_module, ansible_env, api_client
):
    """Rule payg-grant-stamped: a grant bought through ``tenant`` (``tenant_payg_gpus`` of
    tenant_update.yml) is a grant like payg_capacity's, so the next reconcile keeps it."""
    bought = run_module(
        "tenant",
        {"name": TENANT, "subscription": {GPU: 1, "cpu": 4, "memory": "8Gi"}, "payg": {GPU: 3}},
    )
    assert not bought.get("failed"), bought.get("msg")
    queue = granted(api_client)
    assert queue["spec"]["capability"][GPU] == 3
    assert "platform.io/payg-granted-at" in queue["metadata"]["annotations"]

    rc, tasks = run_playbook(ansible_env, "payg_reconcile.yml", {}, inventory="inventories/local")
    assert rc == 0, {n: r.get("msg") for n, r in tasks.items() if r.get("failed")}
    assert granted(api_client)["spec"]["capability"][GPU] == 3
    assert f"{QUEUE} until" in tasks["Say what changed"]["msg"]

    # A later purchase that changes the grant without growing its GPUs keeps the stamp
    # (the same field manager's apply without it would remove it, and the next reconcile
    # would shrink the grant before its grace ends).
    stamp = queue["metadata"]["annotations"]["platform.io/payg-granted-at"]
    again = run_module(
        "tenant",
        {
            "name": TENANT,
            "subscription": {GPU: 1, "cpu": 4, "memory": "8Gi"},
            "payg": {GPU: 3, "cpu": 2},
        },
    )
    assert not again.get("failed"), again.get("msg")
    after = granted(api_client)
    assert after["spec"]["capability"]["cpu"] == "2"
    assert after["metadata"]["annotations"]["platform.io/payg-granted-at"] == stamp
    rc, tasks = run_playbook(ansible_env, "payg_reconcile.yml", {}, inventory="inventories/local")
    assert rc == 0, {n: r.get("msg") for n, r in tasks.items() if r.get("failed")}
    assert granted(api_client)["spec"]["capability"][GPU] == 3
