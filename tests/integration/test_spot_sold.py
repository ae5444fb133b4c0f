# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Spot holding GPUs that a tenant bought, on the real scheduler.

Two tenants made by the ``tenant`` module buy 8 GPUs each. The second tenant's
spot queue is given a capability of the whole pool (what a stale recompute or
a shrunken pool leaves behind), and its spot jobs take every GPU the first
tenant is not using, 4 of them bought by the first tenant:

* the first tenant then asks for 4 of its own GPUs. Volcano's ``gangreclaim``
  would evict a spot job for it in its own order, with no SpotReclaimed Event
  and no history; the spot queue is not reclaimable, so no spot job is
  touched by Volcano and the job waits;
* ``playbooks/spot_recompute.yml`` then deletes the spot jobs holding sold
  GPUs, cheapest first (12 GPUs: both tenants' unused purchase), records
  them, sets the spot capability back to the unsold GPUs, and the first
  tenant's job runs.

With the unused offer, bought and unused GPUs go to spot until their owner asks; with
demand apportionment, a spot gang larger than its tenant's share borrows the others'
unused shares.

Needs the cluster's GPUs free of other jobs (it skips otherwise).
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid

import pytest

from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    remove_tenants,
    wait_until,
)
from ansible_collections.gpucloud.platform.tests.integration.test_spot import (
    GPU,
    VCJOBS,
    VOLCANO,
    job_body,
    job_phase,
    run_playbook,
)

pytestmark = pytest.mark.integration

# Several scheduling periods of the local vc-scheduler (1 s each).
WATCH_SECONDS = 20


@pytest.fixture
def two_tenants(run_module, api_client, priority_classes):
    suffix = uuid.uuid4().hex[:6]
    names = (f"sda{suffix}", f"sdb{suffix}")
    for name in names:
        created = run_module(
            "tenant",
            {"name": name, "subscription": {GPU: 8, "cpu": "32", "memory": "128Gi"}},
        )
        assert not created.get("failed"), created.get("msg")
    yield names
    remove_tenants(run_module, api_client, list(names))


def idle_pool(run_module) -> int:
    """The pool's GPUs, all free, on 8-GPU nodes (at least 32); the test skips otherwise."""
    idle = run_module("spot_reclaim", {"need": 0}, check=True)
    assert not idle.get("failed"), idle.get("msg")
    pool = idle["pool"]
    if idle["free"] != pool or pool % 8 or pool < 32:
        pytest.skip(f"needs an idle cluster of 8-GPU nodes; {idle['free']} of {pool} free")
    return pool


def start(custom, body):
    meta = body["metadata"]
    custom.create_namespaced_custom_object(*VCJOBS[:2], meta["namespace"], VCJOBS[2], body)


def running(custom, namespace, name):
    wait_until(lambda: job_phase(custom, namespace, name) == "Running", what=f"{name} Running")
    time.sleep(1.1)  # distinct start times (seconds resolution)


def test_volcano_leaves_spot_alone_and_the_platform_reclaims_it_cheapest_first(
    api_client, two_tenants, ansible_env, run_module, platform_scheduler_conf
):
    from kubernetes import client

    custom = client.CustomObjectsApi(api_client)
    core = client.CoreV1Api(api_client)
    owner, spot_tenant = two_tenants
    own_ns, spot_ns = f"tenant-{owner}", f"tenant-{spot_tenant}"
    own_queue, spot_queue = f"{own_ns}-subscription", f"{spot_ns}-spot"

    pool = idle_pool(run_module)

    live = custom.get_cluster_custom_object(*VOLCANO, spot_queue)
    assert live["spec"]["reclaimable"] is False  # rule spot-not-reclaimable
    custom.patch_cluster_custom_object(
        *VOLCANO, spot_queue, {"spec": {"capability": {GPU: pool, "cpu": "1000", "memory": "4Ti"}}}
    )

    # The filler on whole nodes first, then the owner's 4 GPUs and two cheap spot jobs
    # pair up on the two nodes left: no GPU is free, spot holds pool - 4.
    filler = job_body("spot-fill", spot_ns, spot_queue, 8, (pool - 16) // 8, "0.9")
    start(custom, filler)
    running(custom, spot_ns, "spot-fill")
    start(custom, job_body("own-1", own_ns, own_queue, 4, 1, billing="subscription"))
    running(custom, own_ns, "own-1")
    start(custom, job_body("spot-cheap", spot_ns, spot_queue, 4, 1, "0.1"))
    running(custom, spot_ns, "spot-cheap")
    start(custom, job_body("spot-mid", spot_ns, spot_queue, 4, 2, "0.2"))
    running(custom, spot_ns, "spot-mid")

    # The owner asks for 4 more of the 8 GPUs it bought. Volcano does not reclaim the
    # spot queue: for several scheduling periods nothing is evicted and the job waits.
    start(custom, job_body("own-2", own_ns, own_queue, 4, 1, billing="subscription"))
    deadline = time.monotonic() + WATCH_SECONDS
    while time.monotonic() < deadline:
        for name in ("spot-fill", "spot-cheap", "spot-mid"):
            assert job_phase(custom, spot_ns, name) == "Running", f"{name} was touched"
        assert job_phase(custom, own_ns, "own-2") != "Running"
        time.sleep(2)
    evicted = core.list_namespaced_event(spot_ns, field_selector="reason=Evict").items
    assert evicted == [], [e.message for e in evicted]

    # The scheduled reconcile: spot holds pool - 4 GPUs, pool - 16 are unsold, so 12
    # go, cheapest first: spot-cheap (4) then spot-mid (8); the filler stays.
    tasks = run_playbook(ansible_env, "spot_recompute.yml", {})
    reclaim = tasks[
        "Delete the spot jobs that hold GPUs spot may not hold (spot_offer), cheapest first"
    ]
    assert (reclaim["need_from"], reclaim["sold"], reclaim["spot"]) == ("unsold", 16, pool - 4)
    assert reclaim["shortfall"] == 12 and reclaim["freed"] == 12
    assert [v["name"] for v in reclaim["victims"]] == ["spot-cheap", "spot-mid"]
    events = core.list_namespaced_event(spot_ns, field_selector="reason=SpotReclaimed").items
    assert {e.involved_object.name for e in events} == {"spot-cheap", "spot-mid"}
    history = json.loads(
        core.read_namespaced_config_map("spot-reclaim-history", "platform-system").data[
            "history.json"
        ]
    )
    assert [v["name"] for v in history[0]["victims"]] == ["spot-cheap", "spot-mid"]
    assert history[0]["reason"] == "spot jobs held GPUs that tenants bought"

    capacity = tasks["Set every spot queue's capability to its tenant's share of the idle pool"]
    assert capacity["idle"][GPU] == pool - 16
    wait_until(lambda: job_phase(custom, own_ns, "own-2") == "Running", what="own-2 Running")
    assert job_phase(custom, spot_ns, "spot-fill") == "Running"

    # Spot now holds only unsold GPUs: the next run deletes nothing and writes no Lease.
    again = run_playbook(ansible_env, "spot_recompute.yml", {})
    assert (
        again["Delete the spot jobs that hold GPUs spot may not hold (spot_offer), cheapest first"][
            "changed"
        ]
        is False
    )
    with contextlib.suppress(Exception):
        for name in ("own-1", "own-2"):
            custom.delete_namespaced_custom_object(*VCJOBS[:2], own_ns, VCJOBS[2], name)


def test_with_the_unused_offer_spot_runs_on_bought_idle_gpus_until_their_owner_asks(
    api_client, two_tenants, ansible_env, run_module, platform_scheduler_conf
):
    """spot_offer: unused. Both tenants bought 8 and use none: spot is offered the whole
    pool, and the two spot queues fill it. The owner's job then waits; the next
    spot_recompute.yml deletes the cheapest spot jobs for exactly its 8 GPUs (the design's
    unsold offer would have taken 16), and the job runs. A second run deletes nothing."""
    from kubernetes import client

    custom = client.CustomObjectsApi(api_client)
    owner, spot_tenant = two_tenants
    own_ns, spot_ns = f"tenant-{owner}", f"tenant-{spot_tenant}"

    pool = idle_pool(run_module)

    offered = run_playbook(ansible_env, "spot_recompute.yml", {"spot_offer": "unused"})
    capacity = offered["Set every spot queue's capability to its tenant's share of the idle pool"]
    assert (capacity["offer"], capacity["idle"][GPU]) == ("unused", pool)
    for ns in (own_ns, spot_ns):
        live = custom.get_cluster_custom_object(*VOLCANO, f"{ns}-spot")
        assert int(live["spec"]["capability"][GPU]) == pool // 2  # equal shares of the pool

    # Each spot queue fills its half: the owner's at 0.9 on whole nodes, the other's with
    # a filler at 0.9 and two cheap jobs of 4 that pair up on the last node.
    start(custom, job_body("own-spot", own_ns, f"{own_ns}-spot", 8, pool // 16, "0.9"))
    running(custom, own_ns, "own-spot")
    start(custom, job_body("spot-fill", spot_ns, f"{spot_ns}-spot", 8, pool // 16 - 1, "0.9"))
    running(custom, spot_ns, "spot-fill")
    start(custom, job_body("spot-cheap", spot_ns, f"{spot_ns}-spot", 4, 1, "0.1"))
    running(custom, spot_ns, "spot-cheap")
    start(custom, job_body("spot-mid", spot_ns, f"{spot_ns}-spot", 4, 1, "0.2"))
    running(custom, spot_ns, "spot-mid")
    # Spot holds the whole pool, 16 GPUs of it bought: the design's offer would take 16.
    unsold = run_module("spot_reclaim", {"need": 0, "need_from": "unsold"}, check=True)
    assert (unsold["spot"], unsold["shortfall"]) == (pool, 16)
    # With the unused offer nobody waits yet: nothing to take.
    calm = run_module("spot_reclaim", {"need": 0, "need_from": "unused"}, check=True)
    assert (calm["offer"], calm["shortfall"], calm["victims"]) == (pool, 0, [])

    # The owner asks for 8 of its GPUs (two pods of 4): no GPU is free, it waits.
    start(custom, job_body("own-1", own_ns, f"{own_ns}-subscription", 4, 2, billing="subscription"))
    time.sleep(5)  # several scheduling periods
    assert job_phase(custom, own_ns, "own-1") != "Running"

    tasks = run_playbook(ansible_env, "spot_recompute.yml", {"spot_offer": "unused"})
    reclaim = tasks[
        "Delete the spot jobs that hold GPUs spot may not hold (spot_offer), cheapest first"
    ]
    assert (reclaim["need_from"], reclaim["offer"], reclaim["spot"]) == ("unused", pool - 8, pool)
    assert reclaim["shortfall"] == 8 and reclaim["freed"] == 8
    assert [v["name"] for v in reclaim["victims"]] == ["spot-cheap", "spot-mid"]
    assert reclaim["reclaim"]["reason"] == "paying jobs waited for GPUs spot held"
    capacity = tasks["Set every spot queue's capability to its tenant's share of the idle pool"]
    assert capacity["idle"][GPU] == pool - 8
    wait_until(lambda: job_phase(custom, own_ns, "own-1") == "Running", what="own-1 Running")
    for ns, name in ((own_ns, "own-spot"), (spot_ns, "spot-fill")):
        assert job_phase(custom, ns, name) == "Running", name

    # The owner now holds its 8: spot holds no more than the offer, nothing is deleted.
    again = run_playbook(ansible_env, "spot_recompute.yml", {"spot_offer": "unused"})
    after = again[
        "Delete the spot jobs that hold GPUs spot may not hold (spot_offer), cheapest first"
    ]
    assert after["changed"] is False and after["shortfall"] == 0, after
    # The owner's running job is a claim (rule pod-queue reads its Volcano Job's pods).
    assert after["offer"] == pool - 8, after
    with contextlib.suppress(Exception):
        for ns, name in ((own_ns, "own-1"), (own_ns, "own-spot"), (spot_ns, "spot-fill")):
            custom.delete_namespaced_custom_object(*VCJOBS[:2], ns, VCJOBS[2], name)


def test_with_demand_apportionment_a_spot_gang_larger_than_its_share_borrows_and_runs(
    api_client, two_tenants, ansible_env, run_module, platform_scheduler_conf
):
    """spot_apportion: demand. Both tenants bought 8, so the unsold offer is pool - 16,
    half each. The second tenant's spot gang wants half the pool, 8 more than its share:
    by share it waits on its queue's capability for as long as it likes. The next
    spot_recompute.yml with demand apportionment lends it the first tenant's unused
    share, the gang runs, and a second run writes and deletes nothing."""
    from kubernetes import client

    custom = client.CustomObjectsApi(api_client)
    lender, borrower = two_tenants
    lender_q, borrower_ns = f"tenant-{lender}-spot", f"tenant-{borrower}"
    borrower_q = f"{borrower_ns}-spot"

    pool = idle_pool(run_module)
    offer = pool - 16
    by_share = run_playbook(ansible_env, "spot_recompute.yml", {})
    assert (
        by_share["Set every spot queue's capability to its tenant's share of the idle pool"][
            "idle"
        ][GPU]
        == offer
    )
    for queue in (lender_q, borrower_q):
        live = custom.get_cluster_custom_object(*VOLCANO, queue)
        assert int(live["spec"]["capability"][GPU]) == offer // 2

    gang = pool // 2  # offer // 2 + 8: larger than the share, within the offer
    start(custom, job_body("big-spot", borrower_ns, borrower_q, 8, gang // 8, "0.5"))
    time.sleep(5)  # several scheduling periods
    assert job_phase(custom, borrower_ns, "big-spot") != "Running"

    tasks = run_playbook(ansible_env, "spot_recompute.yml", {"spot_apportion": "demand"})
    capacity = tasks["Set every spot queue's capability to its tenant's share of the idle pool"]
    assert capacity["apportion"] == "demand"
    rows = {row["tenant"]: row for row in capacity["tenants"]}
    assert (rows[borrower]["new"][GPU], rows[borrower]["lent"]) == (gang, 8)
    assert (rows[lender]["new"][GPU], rows[lender]["lent"]) == (offer - gang, -8)
    running(custom, borrower_ns, "big-spot")

    # It runs on the lent share, within the offer: nothing to reclaim, nothing to change.
    again = run_playbook(ansible_env, "spot_recompute.yml", {"spot_apportion": "demand"})
    reclaim = again[
        "Delete the spot jobs that hold GPUs spot may not hold (spot_offer), cheapest first"
    ]
    assert (reclaim["changed"], reclaim["spot"], reclaim["shortfall"]) == (False, gang, 0)
    steady = again["Set every spot queue's capability to its tenant's share of the idle pool"]
    assert steady["updated"] == [] and steady["changed"] is False
    with contextlib.suppress(Exception):
        custom.delete_namespaced_custom_object(*VCJOBS[:2], borrower_ns, VCJOBS[2], "big-spot")
