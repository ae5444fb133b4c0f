# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""spot_info (spot.service.MARKET_FLOW) against the fake cluster."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot import service
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.reclaim import (
    history_manifest,
)
from ansible_collections.gpucloud.platform.plugins.modules import spot_info
from ansible_collections.gpucloud.platform.plugins.modules import spot_reclaim as reclaim_module
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import (
    spot_cluster,
    vcjob,
)

GPU = "nvidia.com/gpu"


def market_cluster(extra=()):
    """spot_objects (alpha: A 0.1 4 GPUs single, B 0.1 8 GPUs on 2 pods; beta: C 0.3 4
    GPUs single, D 0.5 8 GPUs on 2 pods), alpha's spot queue with a capability and use."""
    cluster = spot_cluster(extra)
    alpha = cluster.store[cluster.key("Queue", None, "tenant-alpha-spot")]
    alpha["spec"]["capability"] = {GPU: 12, "cpu": "48", "memory": "192Gi"}
    alpha["status"] = {"allocated": {GPU: "12", "cpu": "2", "pods": "3"}}
    cluster.lists.clear()
    return cluster


def test_every_tenant_with_one_list_per_kind_and_one_get(run_module):
    cluster = market_cluster()
    out = run_module(spot_info, cluster)
    assert out["changed"] is False and out["requests"] == 4
    assert cluster.lists == ["Queue", "Job", "Pod"] and cluster.real_writes == []
    assert out["reclaim_gpus"] == 1 and out["safe_bid"] == "0.100001"
    assert out["spot_jobs"] == 4
    alpha, beta = out["tenants"]
    assert alpha["tenant"] == "alpha" and beta["tenant"] == "beta"
    assert alpha["queue"]["capability"] == {GPU: 12, "cpu": "48", "memory": "192Gi"}
    assert alpha["queue"]["allocated"] == {GPU: 12, "cpu": "2", "pods": 3}
    assert [(j["name"], j["price"], j["rank"]) for j in alpha["jobs"]] == [
        ("spot-a", "0.1", 1),
        ("spot-b", "0.1", 2),
    ]
    assert [(j["name"], j["rank"], j["at_risk"]) for j in beta["jobs"]] == [
        ("spot-c", 3, False),
        ("spot-d", 4, False),
    ]
    assert alpha["jobs"][0]["at_risk"] is True and alpha["history"] == []
    assert "diff" not in out


def test_one_tenant_safe_bid_is_cluster_wide(run_module):
    out = run_module(spot_info, market_cluster(), tenant="beta", reclaim_gpus=13)
    assert [t["tenant"] for t in out["tenants"]] == ["beta"]
    # A (4) + B (8) + C (4) = 16 >= 13: up to C's 0.3, whoever owns the jobs.
    assert out["safe_bid"] == "0.300001"
    detail = out["safe_bid_detail"]
    assert detail["victims"] == ["tenant-alpha/spot-a", "tenant-alpha/spot-b", "tenant-beta/spot-c"]
    assert detail["highest_price"] == "0.3" and detail["possible"] is True
    assert [j["at_risk"] for j in out["tenants"][0]["jobs"]] == [True, False]


def test_a_reclaim_spot_cannot_meet_has_no_safe_bid(run_module):
    out = run_module(spot_info, market_cluster(), reclaim_gpus=25)
    assert out["safe_bid"] is None and out["safe_bid_detail"]["possible"] is False
    assert out["safe_bid_detail"]["spot_gpus"] == 24
    assert "cannot be met from spot" in out["safe_bid_detail"]["reason"]


def test_missing_price_counts_as_zero_and_a_bad_one_is_warned(run_module):
    extra = [vcjob("free", "beta", 1, 1, None, 5), vcjob("typo", "beta", 1, 1, "O.2", 6)]
    out = run_module(spot_info, market_cluster(extra), tenant="beta")
    jobs = {j["name"]: j for j in out["tenants"][0]["jobs"]}
    assert jobs["free"]["price"] == "0" and jobs["typo"]["price"] == "0"
    # Price 0 first; single-pod, 1 GPU; the newer ("free", 5 min) before "typo" (6 min).
    assert (jobs["free"]["rank"], jobs["typo"]["rank"]) == (1, 2)
    assert out["safe_bid"] == "0.000001"
    assert any("'O.2'" in str(w) and "counts as price 0" in str(w) for w in out["warnings"])


def test_history_after_a_reclaim_is_filtered_to_the_tenant(run_module):
    cluster = market_cluster()
    # 4 of the 64 GPUs are free: a demand of 20 reclaims 16, A, B and C.
    reclaim = run_module(reclaim_module, cluster, need=20, demand_reason="order 4711")
    assert [v["name"] for v in reclaim["victims"]] == ["spot-a", "spot-b", "spot-c"]
    out = run_module(spot_info, cluster, tenant="alpha")
    (entry,) = out["tenants"][0]["history"]
    assert [v["name"] for v in entry["victims"]] == ["spot-a", "spot-b"]
    assert entry["tenant_freed"] == 12 and entry["freed"] == 16
    assert entry["reason"] == "order 4711"
    assert out["tenants"][0]["jobs"] == []
    beta = run_module(spot_info, cluster, tenant="beta", reclaim_gpus=8)
    assert [v["name"] for v in beta["tenants"][0]["history"][0]["victims"]] == ["spot-c"]
    assert [(j["name"], j["rank"]) for j in beta["tenants"][0]["jobs"]] == [("spot-d", 1)]
    assert beta["safe_bid"] == "0.500001"


def test_history_newest_first():
    cluster = market_cluster()
    entries = [
        {
            "time": "new",
            "victims": [{"namespace": "x", "name": "j2", "queue": "tenant-alpha-spot", "gpus": 2}],
        },
        {
            "time": "old",
            "victims": [{"namespace": "x", "name": "j1", "queue": "tenant-alpha-spot", "gpus": 1}],
        },
    ]
    manifest = history_manifest(entries)
    manifest["metadata"]["resourceVersion"] = "1"
    cluster.put(manifest)
    out = service.MARKET_FLOW.run({"tenant": "alpha", "reclaim_gpus": 1}, cluster, False)
    assert [e["time"] for e in out["tenants"][0]["history"]] == ["new", "old"]


def test_check_mode_reads_the_same(run_module):
    cluster = market_cluster()
    out = run_module(spot_info, cluster, _ansible_check_mode=True, tenant="alpha")
    assert out["changed"] is False and out["safe_bid"] == "0.100001"
    assert cluster.writes == []


@pytest.mark.parametrize(
    ("args", "field", "text"),
    [
        ({"tenant": "Bad_Name"}, "tenant", "'Bad_Name' is not a DNS-1123 label"),
        ({"reclaim_gpus": 0}, "reclaim_gpus", "0 is less than 1"),
        ({"reclaim_gpus": -2}, "reclaim_gpus", "-2 is less than 1"),
    ],
)
def test_bad_input_is_refused_before_any_request(run_module, args, field, text):
    cluster = market_cluster()
    out = run_module(spot_info, cluster, **args)
    assert out["failed"] is True and out["changed"] is False and out["requests"] == 0
    assert any(e.startswith(f"{field}: ") and text in e and "(rule " in e for e in out["errors"])


def test_unknown_tenant_is_refused_after_the_queue_list_only(run_module):
    cluster = market_cluster()
    out = run_module(spot_info, cluster, tenant="gamma")
    assert out["failed"] is True and out["changed"] is False
    assert out["requests"] == 1 and cluster.lists == ["Queue"]
    (error,) = out["errors"]
    assert error.startswith("tenant: 'gamma' is not a tenant")
    assert "known tenants: alpha, beta" in error and "(rule known-tenant)" in error


def test_service_refuses_bad_input_itself():
    with pytest.raises(PlatformValidationError, match="reclaim_gpus"):
        service.MARKET_FLOW.run({"reclaim_gpus": 0}, market_cluster(), False)


def test_the_module_returns_the_market_a_person_reads(run_module):
    out = run_module(spot_info, market_cluster(), reclaim_gpus=25)
    assert out["summary"][0].endswith(
        "cannot be met from spot, so no bid is safe or unsafe by price"
    )
    assert out["summary"][1] == "spot queues (GPUS, CORES, MEMORY as allocated/capability):"
    assert out["summary"][2].split() == [
        "TENANT",
        "SPOT",
        "QUEUE",
        "GPUS",
        "CORES",
        "MEMORY",
        "JOBS",
        "RECLAIMED",
    ]
