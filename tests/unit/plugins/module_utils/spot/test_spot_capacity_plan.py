# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

from ansible_collections.gpucloud.platform.plugins.module_utils.spot.capacity_plan import (
    plan_spot_capacity,
    recompute_result,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import node, queue

GPU = "nvidia.com/gpu"


def cluster_state():
    nodes = [node(f"n{i}") for i in range(8)]  # 64 GPUs, 512 cpu, 4Ti
    queues = [
        queue("alpha", "subscription", deserved={GPU: 30, "cpu": "240", "memory": "1Ti"}),
        queue("alpha", "spot", deserved={GPU: 0}, capability={GPU: 5}),
        queue("beta", "subscription", deserved={GPU: 10}),
        queue("beta", "payg", deserved={GPU: 4}, capability={GPU: 4}),
        queue(
            "beta",
            "spot",
            capability={GPU: 5, "cpu": "68", "memory": "768Gi"},
            deserved={GPU: 0, "cpu": 0, "memory": 0},
        ),
        queue("gamma", "spot", capability={GPU: 3}),  # no subscription: gets 0
        queue("delta", "subscription", deserved={GPU: 0}),
    ]
    return nodes, queues


def test_table_and_changes():
    nodes, queues = cluster_state()
    plan = plan_spot_capacity(nodes, queues)
    assert plan.idle[GPU] == 64 - 30 - 10 - 4 == 20
    rows = {r["tenant"]: r for r in plan.rows}
    assert (
        rows["alpha"]["new"][GPU] == 15
        and rows["beta"]["new"][GPU] == 5
        and rows["gamma"]["new"][GPU] == 0
    )
    assert rows["alpha"]["share"] == 0.75 and rows["gamma"]["share"] == 0
    assert rows["alpha"]["old"] == {GPU: 5} and rows["alpha"]["changed"] is True
    assert rows["delta"]["queue"] is None and rows["delta"]["old"] is None
    # idle cpu = 512 - 240 = 272, memory 4Ti - 1Ti = 3Ti; alpha gets 3/4
    assert rows["alpha"]["new"]["cpu"] == "204" and rows["alpha"]["new"]["memory"] == "2304Gi"
    assert rows["beta"]["new"] == {GPU: 5, "cpu": "68", "memory": "768Gi"}
    assert rows["beta"]["changed"] is False  # already right: no write
    assert [m["metadata"]["name"] for m in plan.changes] == [
        "tenant-alpha-spot",
        "tenant-gamma-spot",
    ]
    manifest = plan.changes[0]
    assert set(manifest) == {"apiVersion", "kind", "metadata", "spec"}
    assert manifest["metadata"] == {"name": "tenant-alpha-spot"}  # nothing else: a partial apply
    assert manifest["spec"]["deserved"] == {GPU: 0, "cpu": "0", "memory": "0"}
    assert plan.before["tenant-alpha-spot"]["capability"] == {GPU: 5}


def test_second_plan_after_applying_changes_nothing():
    nodes, queues = cluster_state()
    plan = plan_spot_capacity(nodes, queues)
    by_name = {q["metadata"]["name"]: q for q in queues}
    for manifest in plan.changes:
        by_name[manifest["metadata"]["name"]]["spec"].update(manifest["spec"])
    assert plan_spot_capacity(nodes, list(by_name.values())).changes == []


def test_subscription_without_spot_queue_warns():
    plan = plan_spot_capacity([node("n0")], [queue("solo", "subscription", deserved={GPU: 2})])
    assert plan.changes == [] and "has a subscription but no spot queue" in plan.warnings[0]


def test_node_selector_shrinks_the_pool():
    nodes, queues = cluster_state()
    nodes[0]["metadata"]["labels"]["pool"] = "main"
    plan = plan_spot_capacity(nodes, queues, {"pool": "main"})
    assert plan.pool[GPU] == 8 and plan.idle[GPU] == 0
    assert all(r["new"][GPU] == 0 for r in plan.rows)


def test_result_lists_the_changed_tenants_and_counts_them_all():
    plan = plan_spot_capacity(*cluster_state())
    result = recompute_result(plan)
    assert [r["tenant"] for r in result["tenants"]] == ["alpha", "gamma"]
    # delta has no spot queue; beta's is already right
    assert result["counts"] == {"tenants": 4, "spot_queues": 3, "changed": 2, "unchanged": 1}
    assert result["updated"] == ["tenant-alpha-spot", "tenant-gamma-spot"]


def test_result_lists_every_tenant_on_request():
    plan = plan_spot_capacity(*cluster_state())
    every = recompute_result(plan, "all")
    assert [r["tenant"] for r in every["tenants"]] == ["alpha", "beta", "delta", "gamma"]
    assert every["counts"] == recompute_result(plan)["counts"]


def test_result_of_an_unchanged_fleet_lists_nobody():
    nodes, queues = cluster_state()
    by_name = {q["metadata"]["name"]: q for q in queues}
    for manifest in plan_spot_capacity(nodes, queues).changes:
        by_name[manifest["metadata"]["name"]]["spec"].update(manifest["spec"])
    result = recompute_result(plan_spot_capacity(nodes, list(by_name.values())))
    assert result["tenants"] == [] and result["updated"] == []
    assert result["counts"] == {"tenants": 4, "spot_queues": 3, "changed": 0, "unchanged": 3}
