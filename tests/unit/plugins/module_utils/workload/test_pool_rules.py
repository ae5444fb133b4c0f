# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.workload.pool import (
    allocated_from_pods,
    commitments_from_queues,
    committed_total,
    idle_for_spot,
    label_selector,
    node_in_pool,
    pool_from_nodes,
    selector_errors,
    validate_node_selector,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import node, pod, queue

GPU = "nvidia.com/gpu"


def test_pool_counts_only_ready_schedulable_matching_nodes():
    nodes = [
        node("a", labels={"pool": "main"}),
        node("b", labels={"pool": "main"}, ready=False),
        node("c", labels={"pool": "main"}, unschedulable=True),
        node("d", labels={"pool": "burst"}),
        node("e", gpus=4, cpu="500m", memory="1Gi", labels={"pool": "main"}),
    ]
    pool, members = pool_from_nodes(nodes, {"pool": "main"})
    assert members == ["a", "e"]
    assert pool == {
        GPU: Decimal(12),
        "cpu": Decimal("64.5"),
        "memory": Decimal(512 * 2**30 + 2**30),
    }
    everything, all_members = pool_from_nodes(nodes)
    assert all_members == ["a", "d", "e"] and everything[GPU] == 20


def test_node_without_ready_condition_is_not_in_pool():
    bare = {"metadata": {"name": "x"}, "status": {"allocatable": {GPU: "8"}}}
    assert node_in_pool(bare) is False


def test_malformed_allocatable_is_refused_with_the_path():
    bad = node("a")
    bad["status"]["allocatable"][GPU] = "lots"
    with pytest.raises(
        PlatformValidationError, match=r"nodes\[a\]\.status\.allocatable\.nvidia\.com/gpu"
    ):
        pool_from_nodes([bad])


def test_selector_rules():
    assert selector_errors({"a": "b"}) == []
    assert selector_errors(None) == []
    assert "must be a mapping" in str(selector_errors("a=b")[0])
    assert selector_errors({"a": 3})[0].field == "node_selector.a"
    assert label_selector({"b": "2", "a": "1"}) == "a=1,b=2"
    assert label_selector({}) is None
    validate_node_selector({"node_selector": {}})
    with pytest.raises(PlatformValidationError, match=r"node_selector\.a: 3 must be a string"):
        validate_node_selector({"node_selector": {"a": 3}})


def test_idle_subtracts_subscriptions_and_payg_and_floors_at_zero():
    pool = {GPU: Decimal(64), "cpu": Decimal(100), "memory": Decimal(0)}
    idle = idle_for_spot(
        pool, [{GPU: Decimal(40)}, {GPU: Decimal(8)}], [{GPU: Decimal(4), "cpu": Decimal(10)}]
    )
    assert idle == {GPU: Decimal(12), "cpu": Decimal(90), "memory": Decimal(0)}
    assert idle_for_spot(pool, [{GPU: Decimal(70)}], [])[GPU] == 0


@given(
    pool=st.integers(0, 1000),
    subs=st.lists(st.integers(0, 200), max_size=10),
    payg=st.lists(st.integers(0, 200), max_size=10),
)
def test_idle_is_never_negative_and_exact_when_room(pool, subs, payg):
    idle = idle_for_spot(
        {GPU: Decimal(pool)}, [{GPU: Decimal(s)} for s in subs], [{GPU: Decimal(p)} for p in payg]
    )
    assert idle[GPU] == max(0, pool - sum(subs) - sum(payg))


def test_commitments_read_subscription_deserved_and_payg_grant():
    queues = [
        queue("alpha", "subscription", deserved={GPU: 40, "cpu": "160"}, capability={GPU: 40}),
        queue("alpha", "payg", deserved={GPU: 4}, capability={GPU: 6}, allocated={GPU: "3"}),
        queue("alpha", "spot", deserved={GPU: 0}, capability={GPU: 12}),
        queue("alpha", "team"),  # team queues are not counted again
        {"metadata": {"name": "stranger"}, "spec": {"deserved": {GPU: 99}}},
    ]
    c = commitments_from_queues(queues)["alpha"]
    assert c.subscription[GPU] == 40 and c.subscription["cpu"] == 160
    assert c.payg[GPU] == 6  # the larger of deserved and capability
    assert c.payg_allocated[GPU] == 3
    assert c.payg_limited == (GPU,)
    assert c.spot_queue == "tenant-alpha-spot" and c.spot_capability == {GPU: Decimal(12)}
    assert committed_total([c])[GPU] == 46
    assert committed_total([c], skip_payg_of="alpha")[GPU] == 40


def test_allocated_counts_unfinished_pods_on_pool_nodes_and_splits_leaving():
    pods = [
        pod("a", "n0", 4),
        pod("b", "n0", 2, deleting=True),
        pod("c", "n0", 8, phase="Succeeded"),
        pod("d", "elsewhere", 8),
        {"metadata": {"name": "pending"}, "spec": {}, "status": {"phase": "Pending"}},
    ]
    init = pod("e", "n0", 1)
    init["spec"]["initContainers"] = [{"name": "i", "resources": {"limits": {GPU: "3"}}}]
    held, leaving = allocated_from_pods([*pods, init], ["n0"])
    assert held[GPU] == 4 + 3  # an init container asking more than the containers counts
    assert leaving[GPU] == 2
