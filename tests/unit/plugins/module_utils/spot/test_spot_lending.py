# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules spot-demand, spot-lending and spot-lending-resources (spot/lending): a share its
tenant's spot jobs leave unused is lent, whole gangs, oldest first, to spot gangs larger
than their own tenant's share; the spot_capacity plan and module that use them."""

from __future__ import annotations

import copy
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.spot.capacity_plan import (
    plan_spot_capacity,
    recompute_result,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.lending import (
    SpotDemand,
    SpotGang,
    apportion_by_demand,
    free_gpus_by_node,
    lend_spot,
    split_evenly,
    spot_demand,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.service import (
    RECOMPUTE_FLOW,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.summary import (
    capacity_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.workload.pool import (
    pool_node_resources,
)
from ansible_collections.gpucloud.platform.plugins.modules import spot_capacity
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.spot.test_spot_offer import (
    in_group,
    in_queue,
    podgroup,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import (
    node,
    pod,
    queue,
)

GPU = "nvidia.com/gpu"


def gang(tenant, gpus, created, name=None, pods=()):
    return SpotGang(tenant, gpus, created, name or f"tenant-{tenant}/{created}", pods)


# --- rule spot-lending ---------------------------------------------------------------


def test_with_nothing_waiting_every_tenant_has_its_share():
    shares = {"a": 16, "b": 8, "c": 8}
    assert lend_spot(32, shares, SpotDemand({"a": 4}, [])) == shares


def test_a_gang_larger_than_its_share_borrows_what_the_others_leave_unused():
    """b's 24-GPU gang can never run within b's 8; a and c hold 4 and nothing."""
    shares = {"a": 16, "b": 8, "c": 8}
    lent = lend_spot(32, shares, SpotDemand({"a": 4}, [gang("b", 24, "t1")]))
    assert lent == {"a": 4 + 2, "b": 24, "c": 2}  # 2 left over, back to a and c
    assert sum(lent.values()) == 32


def test_a_gang_that_even_the_unused_shares_cannot_hold_borrows_nothing():
    shares = {"a": 16, "b": 8, "c": 8}
    assert lend_spot(32, shares, SpotDemand({"a": 12}, [gang("b", 24, "t1")])) == shares


def test_the_oldest_gang_borrows_first_and_a_smaller_later_one_may_still_fit():
    shares = {"a": 16, "b": 8, "c": 8}
    waiting = [gang("c", 20, "t3"), gang("b", 24, "t1"), gang("a", 20, "t2")]
    lent = lend_spot(32, shares, SpotDemand({}, waiting))
    # b's (oldest) takes 24; a's 20 and c's 20 do not fit in the 8 left, which go back
    # to a and c by what each leaves unused (16:8, largest remainder).
    assert lent == {"a": 5, "b": 24, "c": 3}


def test_a_tenants_own_gang_within_its_share_comes_before_any_lending():
    shares = {"a": 16, "b": 8}
    waiting = [gang("b", 20, "t1"), gang("a", 10, "t2")]
    # a's 10 fit its 16; only 14 are left, so b's 20 is not lent anything.
    assert lend_spot(24, shares, SpotDemand({}, waiting)) == shares


def test_a_lent_share_comes_back_as_the_borrower_ends_not_by_eviction():
    """b borrowed (holds 24 of a share of 8); a's own 10-GPU gang now waits. Nothing is
    lent; a gets its whole share back and b keeps what it runs, so nothing running is put
    over its capability, and a's gang starts as b's job ends."""
    shares = {"a": 16, "b": 8}
    lent = lend_spot(24, shares, SpotDemand({"b": 24}, [gang("a", 10, "t5")]))
    assert lent == {"a": 16, "b": 24}


def test_a_tenant_without_a_subscription_borrows_nothing():
    shares = {"a": 16, "z": 0}
    assert lend_spot(16, shares, SpotDemand({}, [gang("z", 4, "t1")])) == shares


@given(
    st.lists(st.integers(0, 40), min_size=1, max_size=6),
    st.data(),
)
def test_lending_keeps_the_offer_and_what_runs(shares_list, data):
    """Whatever waits: every tenant keeps at least what it holds; while nobody holds more
    than its share the capabilities add up to the offer exactly; with nothing waiting
    every tenant has its share."""
    shares = {f"t{i}": s for i, s in enumerate(shares_list)}
    offer = sum(shares.values())
    held = {t: data.draw(st.integers(0, s), label=f"held {t}") for t, s in shares.items()}
    waiting = [
        gang(
            f"t{data.draw(st.integers(0, len(shares) - 1))}",
            data.draw(st.integers(1, 64)),
            f"{i:03}",
        )
        for i in range(data.draw(st.integers(0, 8)))
    ]
    lent = lend_spot(offer, shares, SpotDemand(held, waiting))
    assert all(lent[t] >= held[t] for t in shares)
    assert sum(lent.values()) == offer
    assert lend_spot(offer, shares, SpotDemand(held, [])) == shares
    # Every tenant that lends keeps at least what it holds and its own gangs that fit.
    for t in shares:
        if lent[t] < shares[t]:
            assert lent[t] >= held[t]


# --- rule spot-demand ---------------------------------------------------------------


def spot_day():
    """Four 8-GPU nodes; alpha bought 16 and beta 8, nothing else sold, so 8 are unsold.
    alpha's spot queue runs a 2-GPU job; beta's has a 16-GPU gang waiting, 4 of it bound."""
    nodes = [node(f"n{i}") for i in range(4)]
    queues = [
        queue("alpha", "subscription", deserved={GPU: 16}, capability={GPU: 16}),
        queue("alpha", "spot", deserved={GPU: 0}, capability={GPU: 0}),
        queue("beta", "subscription", deserved={GPU: 8}, capability={GPU: 8}),
        queue("beta", "spot", deserved={GPU: 0}, capability={GPU: 0}),
    ]
    pods = [
        in_queue(pod("a-0", "n0", 2, "tenant-alpha"), "tenant-alpha-spot"),
        in_group(in_queue(pod("b-0", "n1", 4, "tenant-beta"), "tenant-beta-spot"), "big"),
        in_queue(pod("paid-0", "n2", 8, "tenant-beta"), "tenant-beta-subscription"),
    ]
    groups = [
        podgroup("a", "tenant-alpha", "tenant-alpha-spot", 2, "Running"),
        podgroup("big", "tenant-beta", "tenant-beta-spot", 16, "Inqueue", members=4),
        podgroup("paid", "tenant-beta", "tenant-beta-subscription", 8, "Pending"),
    ]
    for i, g in enumerate(groups):
        g["metadata"]["creationTimestamp"] = f"2026-12-06T10:0{i}:00Z"
    return nodes, queues, pods, groups


def test_spot_demand_counts_the_spot_queues_only():
    nodes, queues, pods, groups = spot_day()
    demand = spot_demand(pods, groups, queues, pool_node_resources(nodes))
    assert demand.held == {"alpha": 2, "beta": 4}
    # 16 over 4 pods, one of them bound: 3 pods of 4 to place
    assert demand.waiting == [
        SpotGang("beta", 12, "2026-12-06T10:01:00Z", "tenant-beta/big", (4, 4, 4))
    ]
    # Every pod on a node holds its GPUs, whatever its queue: 8 - 2, 8 - 4, 8 - 8, 8.
    assert demand.free == [6, 4, 0, 8]


def test_a_gang_that_cannot_be_placed_now_borrows_nothing():
    """Lending to a gang whose pods do not fit the nodes' free GPUs would leave the lent
    share reserved for a job that cannot start, while the lenders' own jobs wait."""
    shares = {"a": 16, "b": 8}
    big = gang("b", 16, "t1", pods=(8, 8))
    assert lend_spot(24, shares, SpotDemand({}, [big], free=[8, 4, 4, 8]))["b"] == 16
    assert lend_spot(24, shares, SpotDemand({}, [big], free=[6, 6, 6, 6])) == shares
    # Each lent gang's pods are placed before the next is tried.
    second = gang("a", 24, "t2", pods=(8, 8, 8))
    lent = lend_spot(48, {"a": 8, "b": 8, "c": 32}, SpotDemand({}, [big, second], [8, 8, 8, 8]))
    # b's two pods take two nodes; a's three do not fit the two left, so a borrows nothing
    # and keeps its part of what is left (8 : 32 of the 32 unlent).
    assert (lent["b"], lent["a"], lent["c"]) == (16, 6, 26)


def test_split_evenly_and_the_free_gpus_of_each_node():
    assert split_evenly(10, 4) == (3, 3, 2, 2)
    assert split_evenly(3, 8) == (1, 1, 1)
    assert split_evenly(0, 2) == (0,)
    nodes = [node("n0"), node("n1")]
    done = pod("done", "n0", 8, "x", phase="Succeeded")
    leaving = pod("leaving", "n1", 2, "x", deleting=True)
    assert free_gpus_by_node(pool_node_resources(nodes), [done, leaving]) == [8, 6]


# --- the plan and the module ---------------------------------------------------------


def test_cpu_and_memory_follow_the_lent_gpus():
    idle = {GPU: Decimal(8), "cpu": Decimal(64), "memory": Decimal(8 << 30)}
    demand = SpotDemand({}, [gang("b", 8, "t1")])
    got = apportion_by_demand(idle, {"a": 16, "b": 8}, demand)
    assert got["b"] == {GPU: 8, "cpu": 64, "memory": 8 << 30}
    assert got["a"] == {GPU: 0, "cpu": 0, "memory": 0}


def test_the_plan_lends_and_says_who_lends_and_who_borrows():
    nodes, queues, pods, groups = spot_day()
    # Unsold 8: alpha's share 5 (holds 2), beta's 3 (holds 4, 12 more wanted).
    by_share = plan_spot_capacity(nodes, queues, pods=pods, podgroups=groups)
    assert {t.tenant: t.new[GPU] for t in by_share.tenants} == {"alpha": 5, "beta": 3}
    plan = plan_spot_capacity(nodes, queues, pods=pods, podgroups=groups, apportion="demand")
    rows = {r["tenant"]: r for r in plan.rows}
    # beta holds 4 already, 1 over its share of 3, and its 12 more do not fit the 2
    # left: beta keeps what it runs, alpha gets the 2 it leaves unused (3 of its 5).
    assert rows["alpha"]["new"][GPU] == 4 and rows["beta"]["new"][GPU] == 4
    assert rows["beta"]["lent"] == 1 and rows["alpha"]["lent"] == -1
    assert recompute_result(plan)["apportion"] == "demand"
    assert "lent" not in by_share.rows[0]


def capacity_params(**given):
    return {n: s.get("default") for n, s in spot_capacity.OPTIONS.items()} | given


def cluster_objects(waiting_gpus):
    """spot_day with the offer at 16 unsold (alpha 16 -> 8 bought) and beta's spot gang
    asking ``waiting_gpus`` more, none bound."""
    nodes, queues, pods, groups = spot_day()
    queues[0] = queue("alpha", "subscription", deserved={GPU: 8}, capability={GPU: 8})
    groups[1]["spec"]["minResources"][GPU] = str(4 + waiting_gpus)
    groups[1]["spec"]["minMember"] = 1 + waiting_gpus // 2  # pods of 2 GPUs to place
    objects = [*nodes, *queues, *pods, *groups]
    for obj in objects:
        obj.setdefault("apiVersion", "v1")
    for n in nodes:
        n["kind"] = "Node"
    for p in pods:
        p["kind"] = "Pod"
    return objects


def test_spot_capacity_lends_in_one_list_per_kind_and_parsed_agrees():
    """Offer 16 (unsold), shares 8 and 8; alpha holds 2, beta 4 and wants 10 more: beta's
    gang borrows 6 of alpha's unused 6."""
    objects = cluster_objects(10)
    given = capacity_params(apportion="demand", report="all")
    cluster = FakeCluster(copy.deepcopy(objects))
    check = RECOMPUTE_FLOW.run(given, cluster, True)
    assert sorted(cluster.lists) == ["Node", "Pod", "PodGroup", "Queue"]
    rows = {r["tenant"]: r for r in check["tenants"]}
    assert rows["beta"]["new"][GPU] == 14 and rows["beta"]["lent"] == 6
    assert rows["alpha"]["new"][GPU] == 2 and rows["alpha"]["lent"] == -6
    lines = capacity_summary(given, check, True)
    assert "shared and lent" in lines[0]
    assert any("beta" in line and "borrows 6" in line for line in lines)
    gathered = RECOMPUTE_FLOW.run({**given, "state": "gathered"}, FakeCluster(objects), False)
    parsed = RECOMPUTE_FLOW.offline({**given, "state": "parsed", "facts": gathered["gathered"]})
    assert parsed["tenants"] == check["tenants"]
    # By share (the default), no Pod or PodGroup is read and nothing is lent.
    cluster = FakeCluster(copy.deepcopy(objects))
    default = RECOMPUTE_FLOW.run(capacity_params(report="all"), cluster, True)
    assert sorted(cluster.lists) == ["Node", "Queue"]
    assert {r["tenant"]: r["new"][GPU] for r in default["tenants"]} == {"alpha": 8, "beta": 8}
