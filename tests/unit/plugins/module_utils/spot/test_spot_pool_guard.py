# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule spot-pool-not-empty and rule spot-capability-floor."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.capacity_plan import (
    empty_pool_errors,
    plan_spot_capacity,
    spot_capability_floor,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import node, queue

GPU = "nvidia.com/gpu"


def test_no_node_is_refused_naming_the_selector_and_the_count():
    (error,) = empty_pool_errors({"platform.io/pool": "mian"}, 0, 0, Decimal(0))
    assert error.field == "node_selector"
    assert error.message.startswith(
        "{'platform.io/pool': 'mian'} matches 0 node(s), 0 of them Ready and schedulable;"
    )
    assert "allow_empty_pool: true" in error.message


def test_matched_nodes_that_are_not_ready_are_counted():
    (error,) = empty_pool_errors({"pool": "main"}, 3, 0, Decimal(0))
    assert "{'pool': 'main'} matches 3 node(s), 0 of them Ready and schedulable" in error.message


def test_without_a_selector_an_empty_cluster_is_not_refused():
    # Nothing to mistype: a first bring-up before the GPU nodes joined has no idle GPUs.
    assert empty_pool_errors({}, 0, 0, Decimal(0)) == []
    assert empty_pool_errors(None, 3, 0, Decimal(0)) == []


def test_nodes_without_gpus_are_refused():
    (error,) = empty_pool_errors({"pool": "cpu"}, 2, 2, Decimal(0))
    assert "matches 2 node(s) (2 Ready and schedulable) with 0 allocatable GPUs" in error.message


@pytest.mark.parametrize(("members", "gpus"), [(0, 0), (2, 0), (0, 8)])
def test_allow_empty_pool_accepts_it(members, gpus):
    assert empty_pool_errors({"pool": "x"}, members, members, Decimal(gpus), True) == []


def test_a_pool_with_gpus_passes():
    assert empty_pool_errors({"pool": "main"}, 4, 1, Decimal(8)) == []


def test_the_plan_refuses_a_selector_that_matches_nothing_and_writes_no_change():
    nodes = [node("n0", labels={"pool": "main"})]
    queues = [queue("a", "subscription", deserved={GPU: 4}), queue("a", "spot")]
    with pytest.raises(
        PlatformValidationError, match=r"node_selector: \{'pool': 'mian'\} matches 0"
    ):
        plan_spot_capacity(nodes, queues, {"pool": "mian"})
    # The nodes that do not match are not counted as matched.
    with pytest.raises(PlatformValidationError, match="matches 0 node"):
        plan_spot_capacity(nodes, queues, {"pool": "other"})


def test_an_allowed_empty_pool_writes_the_floor_not_zero():
    queues = [
        queue("a", "subscription", deserved={GPU: 4}),
        queue("a", "spot", capability={GPU: 2}),
    ]
    plan = plan_spot_capacity([], queues, {"pool": "gone"}, allow_empty_pool=True)
    (manifest,) = plan.changes
    assert manifest["spec"]["capability"] == {GPU: 0, "cpu": "1m", "memory": "1Mi"}
    assert manifest["spec"]["deserved"] == {GPU: 0, "cpu": "0", "memory": "0"}


def test_a_tenant_without_a_subscription_gets_the_floor():
    nodes = [node("n0")]
    queues = [queue("a", "subscription", deserved={GPU: 4}), queue("b", "spot")]
    rows = {r["tenant"]: r for r in plan_spot_capacity(nodes, queues).rows}
    assert rows["b"]["new"] == {GPU: 0, "cpu": "1m", "memory": "1Mi"}


@given(
    st.decimals(min_value=-5, max_value=10**6, places=3),
    st.integers(min_value=-5, max_value=2**40),
    st.integers(min_value=0, max_value=64),
)
def test_the_floor_never_leaves_a_cpu_or_memory_at_or_below_0(cpu, memory, gpus):
    out = spot_capability_floor({GPU: Decimal(gpus), "cpu": cpu, "memory": Decimal(memory)})
    assert out["cpu"] > 0 and out["memory"] > 0 and out[GPU] == gpus
    if cpu > 0:
        assert out["cpu"] == cpu
    if memory > 0:
        assert out["memory"] == memory
