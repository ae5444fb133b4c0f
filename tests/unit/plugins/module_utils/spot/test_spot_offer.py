# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule spot-offer (spot/offer): paying-use, paying-claim and unused-for-spot; the
spot_capacity plan and the spot reclaim that read it; and the invariants the offer keeps
(never less than the unsold GPUs, never more than the pool)."""

from __future__ import annotations

import copy
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.spot import reclaim_flow
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.capacity_plan import (
    plan_spot_capacity,
    recompute_result,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.offer import (
    OFFER_UNSOLD,
    OFFER_UNUSED,
    paying_claims,
    paying_use,
    spot_offer,
    unused_for_spot,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.reclaim_flow import (
    ReclaimFacts,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.recompute import (
    facts_in,
    facts_out,
    parse_recompute,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.service import (
    RECLAIM_FLOW,
    RECOMPUTE_FLOW,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.victims import (
    unused_reclaim_need,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.workload.pool import (
    TenantCommitment,
    commitments_from_queues,
    idle_for_spot,
    pool_from_nodes,
)
from ansible_collections.gpucloud.platform.plugins.modules import spot_capacity, spot_reclaim
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import (
    node,
    pod,
    queue,
    vcjob,
)

GPU = "nvidia.com/gpu"
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"


def in_queue(p, queue_name):
    """A pod as Volcano's job controller makes it: its queue in an annotation."""
    p["metadata"]["annotations"] = {QUEUE_ANNOTATION: queue_name}
    p["apiVersion"], p["kind"] = "v1", "Pod"
    return p


def podgroup(name, namespace, queue_name, gpus, phase="Inqueue", members=1):
    """A PodGroup as Volcano's job controller makes it: its queue and the gang's minimum."""
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"queue": queue_name, "minMember": members, "minResources": {GPU: str(gpus)}},
        "status": {"phase": phase},
    }


def in_group(p, group):
    p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = group
    return p


def team_queue(tenant, team):
    q = queue(tenant, "team", deserved={GPU: 0})
    q["metadata"]["name"] = f"tenant-{tenant}-team-{team}"
    return q


def day():
    """Four 8-GPU nodes (32 GPUs). alpha bought 16 (teams a, b) and uses 6, a gang of 2
    waiting (its pod not placed yet); beta bought 8 and 4 pay-as-you-go, uses 8 and 1 of
    them. Sold 28, so 4 are unsold; 16 - 6 - 2 = 8 of alpha's and 3 of beta's
    pay-as-you-go are unused."""
    nodes = [node(f"n{i}") for i in range(4)]
    queues = [
        queue("alpha", "subscription", deserved={GPU: 16}, capability={GPU: 16}),
        team_queue("alpha", "a"),
        team_queue("alpha", "b"),
        queue("alpha", "spot", deserved={GPU: 0}, capability={GPU: 0}),
        queue("beta", "subscription", deserved={GPU: 8}, capability={GPU: 8}),
        queue("beta", "payg", deserved={GPU: 4}, capability={GPU: 4}),
        queue("beta", "spot", deserved={GPU: 0}, capability={GPU: 0}),
    ]
    pods = [
        in_queue(pod("a-0", "n0", 4, "tenant-alpha"), "tenant-alpha-team-a"),
        in_queue(pod("b-0", "n1", 2, "tenant-alpha"), "tenant-alpha-team-b"),
        in_queue(pod("b2-0", None, 2, "tenant-alpha", phase="Pending"), "tenant-alpha-team-b"),
        in_queue(pod("s-0", "n2", 8, "tenant-beta"), "tenant-beta-subscription"),
        in_queue(pod("p-0", "n3", 1, "tenant-beta"), "tenant-beta-payg"),
    ]
    podgroups = [
        podgroup("a", "tenant-alpha", "tenant-alpha-team-a", 4, "Running"),
        podgroup("b", "tenant-alpha", "tenant-alpha-team-b", 2, "Running"),
        podgroup("b2", "tenant-alpha", "tenant-alpha-team-b", 2, "Inqueue"),
        podgroup("s", "tenant-beta", "tenant-beta-subscription", 8, "Running"),
        podgroup("p", "tenant-beta", "tenant-beta-payg", 1, "Running"),
    ]
    return nodes, queues, pods, podgroups


def test_paying_use_counts_team_queues_in_the_subscription_and_waiting_gangs():
    nodes, queues, pods, podgroups = day()
    _pool, members = pool_from_nodes(nodes)
    use = paying_use(pods, podgroups, queues, members)
    assert use["alpha"]["subscription"][GPU] == 8  # 4 + 2 held, 2 waiting
    assert use["alpha"]["payg"][GPU] == 0
    assert use["beta"]["subscription"][GPU] == 8 and use["beta"]["payg"][GPU] == 1


def test_a_waiting_gang_counts_what_its_bound_pods_do_not_hold_yet():
    nodes, queues, _pods, _groups = day()
    _pool, members = pool_from_nodes(nodes)
    half = in_group(in_queue(pod("g-0", "n0", 4, "tenant-alpha"), "tenant-alpha-team-a"), "g")
    gang = podgroup("g", "tenant-alpha", "tenant-alpha-team-a", 8, "Inqueue")
    use = paying_use([half], [gang], queues, members)
    assert use["alpha"]["subscription"][GPU] == 8  # 4 bound, 4 still wanted
    # A Pending gang (not admitted yet) waits too; one being deleted does not.
    pending = podgroup("h", "tenant-beta", "tenant-beta-payg", 3, "Pending")
    gone = podgroup("i", "tenant-beta", "tenant-beta-payg", 5, "Pending")
    gone["metadata"]["deletionTimestamp"] = "2026-12-06T00:00:00Z"
    assert paying_use([], [pending, gone], queues, members)["beta"]["payg"][GPU] == 3


def test_paying_use_counts_nothing_of_spot_leaving_finished_or_outside_pods():
    nodes, queues, _pods, _groups = day()
    _pool, members = pool_from_nodes(nodes)
    pods = [
        in_queue(pod("spot-0", "n0", 4, "tenant-alpha"), "tenant-alpha-spot"),
        in_queue(pod("gone", "n0", 4, "tenant-alpha", deleting=True), "tenant-alpha-team-a"),
        in_queue(pod("done", "n0", 4, "tenant-alpha", phase="Succeeded"), "tenant-alpha-team-a"),
        in_queue(pod("cloud", "cloud-0", 4, "tenant-alpha"), "tenant-alpha-team-a"),
        in_queue(pod("stray", "n0", 4, "tenant-alpha"), "not-a-platform-queue"),
        pod("no-queue", "n0", 4, "tenant-alpha"),
    ]
    groups = [podgroup("s", "tenant-alpha", "tenant-alpha-spot", 4, "Inqueue")]
    assert paying_use(pods, groups, queues, members) == {}


def test_a_volcano_jobs_pods_count_by_the_queue_its_job_controller_wrote():
    """Rule pod-queue: a Volcano Job's pods carry ``volcano.sh/queue-name`` (label and
    annotation), not the plain pod's ``scheduling.volcano.sh/queue-name``."""
    nodes, queues, _pods, _groups = day()
    _pool, members = pool_from_nodes(nodes)
    job_pod = pod("j-0", "n0", 4, "tenant-alpha")
    job_pod["metadata"]["labels"] = {"volcano.sh/queue-name": "tenant-alpha-team-a"}
    annotated = pod("k-0", "n1", 2, "tenant-alpha")
    annotated["metadata"]["annotations"] = {"volcano.sh/queue-name": "tenant-alpha-team-b"}
    use = paying_use([job_pod, annotated], [], queues, members)
    assert use["alpha"]["subscription"][GPU] == 6


def test_the_queue_says_whose_use_it_is_not_the_pods_namespace():
    nodes, queues, _pods, _groups = day()
    _pool, members = pool_from_nodes(nodes)
    stray = in_queue(pod("x", "n0", 4, "tenant-beta"), "tenant-alpha-team-a")
    assert paying_use([stray], [], queues, members)["alpha"]["subscription"][GPU] == 4


def test_each_part_claims_at_most_what_it_bought():
    alpha = TenantCommitment("alpha", subscription={GPU: Decimal(16)}, payg={GPU: Decimal(0)})
    beta = TenantCommitment("beta", subscription={GPU: Decimal(8)}, payg={GPU: Decimal(4)})
    use = {
        "alpha": {"subscription": {GPU: Decimal(20)}, "payg": {GPU: Decimal(3)}},
        "beta": {"subscription": {GPU: Decimal(5)}, "payg": {GPU: Decimal(1)}},
    }
    # alpha: min(16, 20) + min(0, 3); beta: min(8, 5) + min(4, 1)
    assert paying_claims([alpha, beta], use)[GPU] == 16 + 0 + 5 + 1


def test_the_two_offers_on_the_same_day():
    nodes, queues, pods, groups = day()
    pool, members = pool_from_nodes(nodes)
    commitments = list(commitments_from_queues(queues).values())
    unsold = spot_offer(OFFER_UNSOLD, pool, commitments, pods, groups, queues, members)
    unused = spot_offer(OFFER_UNUSED, pool, commitments, pods, groups, queues, members)
    assert unsold[GPU] == 32 - 16 - 8 - 4 == 4
    # claims: alpha min(16, 8) = 8; beta min(8, 8) + min(4, 1) = 9
    assert unused[GPU] == 32 - 8 - 9 == 15


def test_a_plan_with_the_unused_offer_apportions_it_and_says_so():
    nodes, queues, pods, groups = day()
    plan = plan_spot_capacity(nodes, queues, offer=OFFER_UNUSED, pods=pods, podgroups=groups)
    rows = {r["tenant"]: r for r in plan.rows}
    assert plan.idle[GPU] == 15
    # shares 16:8 of 15 by largest remainder: 10 and 5
    assert rows["alpha"]["new"][GPU] == 10 and rows["beta"]["new"][GPU] == 5
    result = recompute_result(plan)
    assert result["offer"] == "unused" and result["idle"][GPU] == 15
    # The default is the design's: the unsold GPUs only.
    assert plan_spot_capacity(nodes, queues, pods=pods, podgroups=groups).idle[GPU] == 4


def test_recompute_facts_keep_the_pods_for_parsed():
    nodes, queues, pods, groups = day()
    request = parse_recompute({"offer": "unused", "node_selector": {}})
    assert request.reads_pods
    without_pods = facts_in(request, {"nodes": nodes, "queues": queues})
    saved = facts_out(without_pods)
    assert "pods" not in saved and without_pods.pods == ()
    given = {**saved, "pods": pods, "podgroups": groups}
    again = facts_in(request, facts_out(facts_in(request, given)))
    assert (len(again.pods), len(again.podgroups)) == (len(pods), len(groups))
    assert not parse_recompute({"node_selector": {}}).reads_pods


# --- rule unused-reclaim-need --------------------------------------------------------


def test_unused_reclaim_need_examples():
    # spot holds 12, the offer is 10: 2 above it
    assert unused_reclaim_need(32, 10, 12, 30, 0) == 2
    # within the offer: nothing
    assert unused_reclaim_need(32, 15, 12, 30, 0) == 0
    # a demand of 4 on top: spot keeps 15 - 4 = 11
    assert unused_reclaim_need(32, 15, 12, 20, 4) == 1
    # never less than the free count asks: 32 held, 4 more wanted
    assert unused_reclaim_need(32, 32, 0, 32, 4) == 4


@given(
    pool=st.integers(0, 256),
    offer=st.integers(0, 256),
    spot=st.integers(0, 256),
    demand=st.integers(0, 64),
)
def test_after_the_reclaim_spot_keeps_no_more_than_the_offer_less_the_demand(
    pool, offer, spot, demand
):
    """What is reclaimed leaves spot within the offer less the demand, takes no more than
    that asks unless the free count asks more, and takes nothing while spot is within it
    and enough GPUs are free."""
    allowed = max(0, offer - demand)
    free = max(0, pool - spot)  # only spot holds GPUs here
    need = unused_reclaim_need(pool, offer, spot, spot, demand)
    assert need >= 0 and spot - need <= allowed
    assert need == max(spot - allowed, demand - free, 0)
    if spot <= allowed and free >= demand:
        assert need == 0


@given(
    st.lists(
        st.tuples(st.integers(0, 64), st.integers(0, 64), st.integers(0, 96), st.integers(0, 96)),
        max_size=8,
    ),
    st.integers(0, 512),
)
def test_the_unused_offer_is_never_below_the_unsold_one_nor_above_the_pool(tenants, pool_gpus):
    """Whatever the tenants bought and use: unsold <= unused <= pool."""
    commitments, use = [], {}
    for i, (sub, payg, sub_use, payg_use) in enumerate(tenants):
        name = f"t{i}"
        commitments.append(
            TenantCommitment(name, subscription={GPU: Decimal(sub)}, payg={GPU: Decimal(payg)})
        )
        use[name] = {"subscription": {GPU: Decimal(sub_use)}, "payg": {GPU: Decimal(payg_use)}}
    pool = {GPU: Decimal(pool_gpus)}
    unsold = idle_for_spot(
        pool, [c.subscription for c in commitments], [c.payg for c in commitments]
    )
    unused = unused_for_spot(pool, paying_claims(commitments, use))
    assert unsold[GPU] <= unused[GPU] <= pool[GPU]


# --- the reclaim with need_from: unused ---------------------------------------------


def reclaim_request(**given):
    params = {name: spec.get("default") for name, spec in spot_reclaim.OPTIONS.items()}
    params.update(holder="h", run_id="r", **given)
    return reclaim_flow.parse_reclaim(params).request


def reclaim_day(waiting_gpus):
    """The day with alpha's spot jobs on the unused GPUs: two jobs of 4 and one of 2 on
    n1-n3 (10 GPUs), and ``waiting_gpus`` more of alpha's team a pending."""
    nodes, queues, pods, groups = day()
    jobs = [
        vcjob("spot-cheap", "alpha", 4, 1, "0.1", 10),
        vcjob("spot-mid", "alpha", 2, 1, "0.2", 20),
        vcjob("spot-dear", "alpha", 4, 1, "0.9", 30),
    ]
    spot_pods = [
        in_queue(pod("spot-cheap-0", "n1", 4, "tenant-alpha"), "tenant-alpha-spot"),
        in_queue(pod("spot-mid-0", "n2", 2, "tenant-alpha"), "tenant-alpha-spot"),
        in_queue(pod("spot-dear-0", "n3", 4, "tenant-alpha"), "tenant-alpha-spot"),
    ]
    if waiting_gpus:
        groups.append(podgroup("w", "tenant-alpha", "tenant-alpha-team-a", waiting_gpus, "Pending"))
    all_pods = tuple(pods + spot_pods)
    return ReclaimFacts(tuple(nodes), all_pods, tuple(queues), tuple(jobs), (), tuple(groups))


def test_spot_within_the_unused_offer_is_left_alone():
    planned = reclaim_flow.plan_reclaim(reclaim_request(need=0, need_from="unused"), reclaim_day(0))
    assert planned.result["offer"] == 15 and planned.result["spot"] == 10
    assert planned.result["shortfall"] == 0 and planned.victims == []
    # The unsold rule would have taken 6 of the 10 (4 unsold GPUs).
    unsold = reclaim_flow.plan_reclaim(reclaim_request(need=0, need_from="unsold"), reclaim_day(0))
    assert unsold.result["shortfall"] == 6


def test_paying_pods_that_wait_take_back_what_spot_borrowed_cheapest_first():
    # 7 more of alpha's GPUs wait: claim 8 + 7 = 15 (of 16), offer 32 - 15 - 9 = 8.
    planned = reclaim_flow.plan_reclaim(
        reclaim_request(need=0, need_from="unused", allow_partial=True), reclaim_day(7)
    )
    assert planned.result["offer"] == 8 and planned.result["need_from"] == "unused"
    assert planned.result["shortfall"] == 2
    assert [v.name for v in planned.victims] == ["spot-cheap"]


# --- the modules over a cluster: one list per kind, parsed of gathered is check mode --


def day_objects(waiting_gpus=0):
    facts = reclaim_day(waiting_gpus)
    objects = [*facts.nodes, *facts.queues, *facts.jobs, *facts.pods, *facts.podgroups]
    for obj in objects:
        obj.setdefault("apiVersion", "v1")
    for n in facts.nodes:
        n["kind"] = "Node"
    return objects


def capacity_params(**given):
    return {n: s.get("default") for n, s in spot_capacity.OPTIONS.items()} | given


def test_spot_capacity_with_the_unused_offer_lists_each_kind_once():
    cluster = FakeCluster(day_objects())
    answer = RECOMPUTE_FLOW.run(capacity_params(offer="unused", report="all"), cluster, True)
    assert sorted(cluster.lists) == ["Node", "Pod", "PodGroup", "Queue"]
    assert answer["offer"] == "unused" and answer["idle"][GPU] == 15
    # The design's offer reads no Pod and no PodGroup.
    cluster = FakeCluster(day_objects())
    assert RECOMPUTE_FLOW.run(capacity_params(), cluster, True)["idle"][GPU] == 4
    assert sorted(cluster.lists) == ["Node", "Queue"]


@pytest.mark.parametrize("waiting", [0, 7])
def test_parsed_of_gathered_is_the_check_mode_run_with_the_unused_offer(waiting):
    objects = day_objects(waiting)
    given = capacity_params(offer="unused", report="all")
    check = RECOMPUTE_FLOW.run(given, FakeCluster(copy.deepcopy(objects)), True)
    facts = RECOMPUTE_FLOW.run({**given, "state": "gathered"}, FakeCluster(objects), False)
    parsed = RECOMPUTE_FLOW.offline({**given, "state": "parsed", "facts": facts["gathered"]})
    assert parsed is not None and parsed.pop("state") == "parsed" and parsed.pop("changed") is False
    check.pop("changed")
    assert parsed == check


def test_spot_reclaim_with_need_from_unused_reads_podgroups_and_every_managed_queue():
    cluster = FakeCluster(day_objects(7))
    params = {n: s.get("default") for n, s in spot_reclaim.OPTIONS.items()}
    params.update(need=0, need_from="unused", allow_partial=True)
    answer = RECLAIM_FLOW.run(params, cluster, True)
    assert (answer["offer"], answer["spot"], answer["shortfall"]) == (8, 10, 2)
    assert [v["name"] for v in answer["victims"]] == ["spot-cheap"]
    assert sorted(cluster.lists) == ["Job", "Node", "Pod", "Pod", "PodGroup", "Queue"]
