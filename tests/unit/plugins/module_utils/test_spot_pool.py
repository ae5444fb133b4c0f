# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.capacity.pool import (
    TenantCommitment,
    allocated_from_pods,
    check_oversell,
    commitments_from_queues,
    committed_total,
    idle_for_spot,
    label_selector,
    node_in_pool,
    pool_from_nodes,
    purchase_demand,
    purchase_growth,
    selector_errors,
    tenant_oversell_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from spot_fixtures import node, pod, queue

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


def test_oversell_guard_refuses_with_the_numbers():
    pool = {GPU: Decimal(64)}
    check_oversell("capability", pool, {GPU: Decimal(40)}, {GPU: Decimal(24)})
    with pytest.raises(PlatformValidationError) as info:
        check_oversell(
            "capability",
            pool,
            {GPU: Decimal(48)},
            {GPU: Decimal(20)},
            what="tenant gamma's subscription",
        )
    message = str(info.value)
    assert message.startswith(
        "capability.nvidia.com/gpu: 20 for tenant gamma's subscription exceeds"
    )
    assert "(64 in the pool - 48 sold as subscriptions and pay-as-you-go = 16)" in message
    assert "at most 16 can be granted" in message


def test_oversell_guard_when_already_oversold_shows_negative_left():
    with pytest.raises(PlatformValidationError, match=r"= -6\); at most 0"):
        check_oversell("x", {GPU: Decimal(10)}, {GPU: Decimal(16)}, {GPU: Decimal(1)})


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


def commitment(tenant, sub=0, payg=0):
    zero = {GPU: Decimal(0), "cpu": Decimal(0), "memory": Decimal(0)}
    return TenantCommitment(
        tenant,
        subscription={**zero, GPU: Decimal(sub)},
        payg={**zero, GPU: Decimal(payg)},
    )


def test_purchase_growth_counts_only_what_grows():
    live = commitment("a", sub=10, payg=4)
    assert purchase_growth(live, {GPU: Decimal(10)}, None) == ({}, {})
    assert purchase_growth(live, {GPU: Decimal(8)}, {GPU: Decimal(2)}) == ({}, {})
    assert purchase_growth(live, {GPU: Decimal(12)}, {GPU: Decimal(5)}) == (
        {GPU: Decimal(12)},
        {GPU: Decimal(5)},
    )
    # A new tenant: everything it asks for grows; a resource left out of payg is 0.
    assert purchase_growth(None, {GPU: Decimal(1), "cpu": Decimal(0)}, {"cpu": Decimal(2)}) == (
        {GPU: Decimal(1)},
        {"cpu": Decimal(2)},
    )


def test_purchase_demand_adds_the_growth_of_subscription_and_payg():
    live = commitment("a", sub=10, payg=4)
    assert purchase_demand(live, {GPU: Decimal(16)}, {GPU: Decimal(6)})[GPU] == 6 + 2
    # What shrinks frees nothing for the other part; a PAYG grant left out is kept.
    assert purchase_demand(live, {GPU: Decimal(8)}, {GPU: Decimal(7)})[GPU] == 3
    assert purchase_demand(live, {GPU: Decimal(12)}, None)[GPU] == 2
    assert purchase_demand(live, {GPU: Decimal(10)}, {GPU: Decimal(4)})[GPU] == 0
    # A new tenant: everything it asks for.
    assert purchase_demand(None, {GPU: Decimal(12)}, {GPU: Decimal(4)})[GPU] == 16


def test_tenant_oversell_names_the_field_and_every_number():
    commitments = {
        "a": commitment("a", sub=8, payg=2),
        "b": commitment("b", sub=30, payg=6),
        "c": commitment("c", sub=10),
    }
    pool = {GPU: Decimal(64)}
    assert tenant_oversell_errors("a", pool, commitments, {GPU: Decimal(16)}) == []
    errors = tenant_oversell_errors("a", pool, commitments, {GPU: Decimal(17)})
    assert [str(e) for e in errors] == [
        "subscription.nvidia.com/gpu: 17 for the subscription of tenant 'a' exceeds what the pool "
        "has left for it (64 in the pool - 40 in other tenants' subscriptions - 6 in other "
        "tenants' pay-as-you-go - 2 in this tenant's pay-as-you-go = 16); at most 16 can be "
        "granted (rule oversell-guard)"
    ]
    errors = tenant_oversell_errors("a", pool, commitments, {GPU: Decimal(8)}, {GPU: Decimal(11)})
    assert [e.field for e in errors] == ["payg.nvidia.com/gpu"]
    assert "- 8 in this tenant's new subscription = 10); at most 10" in str(errors[0])


@given(
    pool=st.integers(0, 100),
    others=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=3),
    live=st.none() | st.tuples(st.integers(0, 40), st.integers(0, 40)),
    new_sub=st.integers(0, 60),
    new_payg=st.none() | st.integers(0, 60),
)
def test_tenant_oversell_refuses_exactly_growth_that_does_not_fit(
    pool, others, live, new_sub, new_payg
):
    commitments = {f"o{i}": commitment(f"o{i}", s, p) for i, (s, p) in enumerate(others)}
    if live is not None:
        commitments["t"] = commitment("t", *live)
    live_sub, live_payg = live or (0, 0)
    payg = None if new_payg is None else {GPU: Decimal(new_payg)}
    errors = tenant_oversell_errors(
        "t", {GPU: Decimal(pool)}, commitments, {GPU: Decimal(new_sub)}, payg
    )
    grows = new_sub > live_sub or (new_payg is not None and new_payg > live_payg)
    total = sum(s + p for s, p in others) + new_sub + (live_payg if new_payg is None else new_payg)
    assert bool(errors) == (grows and total > pool)
    assert all(e.field in (f"subscription.{GPU}", f"payg.{GPU}") for e in errors)
