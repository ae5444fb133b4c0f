# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A ``tenant_catalog`` run that sells GPUs sells like a purchase (rule catalog-sale):
one spot reclaim before its first write, counted from the unsold GPUs, one spot
recompute after its last, over the fake cluster of the spot tests. The same on the
real API server: tests/integration/test_tenant_catalog_sale.py."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.catalog import service
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import Refused
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import spot_cluster

GPU = "nvidia.com/gpu"


def params(tenants, **over):
    p = {
        "state": "present",
        "tenants": tenants,
        "defaults": {},
        "pod_cidr": "10.244.0.0/16",
        "service_cidr": "10.96.0.0/12",
        "node_selector": {},
        "workers": 2,
        "holder_identity": "catalog-test",
    }
    p.update(over)
    return p


def gamma(gpus=4):
    return [{"name": "gamma", "subscription": {GPU: gpus, "cpu": 4, "memory": "16Gi"}}]


def spot_gpus(cluster):
    """What every spot queue's capability adds up to, in GPUs."""
    return sum(
        int((q["spec"].get("capability") or {}).get(GPU, 0))
        for q in cluster.objects("Queue")
        if q["metadata"]["labels"].get("platform.io/queue-type") == "spot"
    )


def deleted_jobs(cluster):
    return [w[2] for w in cluster.real_writes if w[:2] == ("delete", "Job")]


def test_a_sale_reclaims_the_unsold_shortfall_once_then_spot_holds_at_most_the_unsold():
    # 64 GPUs, 52 sold (alpha 40, beta 8 + 4 PAYG), spot jobs hold 24. Gamma buys 4:
    # 8 stay unsold, so 16 spot GPUs go (the cheapest: spot-a, spot-b, spot-c).
    cluster = spot_cluster()
    result = service.run_catalog(params(gamma()), cluster)
    sale = result["sale"]
    assert (sale["sold_before"], sale["sold_after"], sale["added"], sale["unsold_after"]) == (
        52,
        56,
        4,
        8,
    )
    assert sale["growing"] == ["gamma (+4)"]
    assert deleted_jobs(cluster) == ["spot-a", "spot-b", "spot-c"]
    assert result["reclaim"]["shortfall"] == 16 and result["reclaim"]["freed"] == 16
    assert "the tenant catalog selling 4 more GPUs (gamma (+4))" in result["reclaim"]["reason"]
    # One Lease for the whole run, taken and given back.
    assert [w[:2] for w in cluster.real_writes if w[1] == "Lease"] == [
        ("create", "Lease"),
        ("delete", "Lease"),
    ]
    assert result["spot"]["recomputed"] is True and result["spot"]["gpus"] == 8
    assert spot_gpus(cluster) == 8 <= sale["unsold_after"]
    assert "tenant-gamma-spot" in result["spot"]["updated"]
    assert result["sale"]["summary"] == (
        "52 -> 56 of 64 GPUs sold (+4); reclaimed 16 spot GPUs (tenant-alpha/spot-a, "
        "tenant-alpha/spot-b, tenant-beta/spot-c); spot capacity after: 8 GPUs over 3 spot "
        "queues (3 changed)"
    )
    # The reclaim is written before the catalog's first write.
    writes = cluster.real_writes
    first_catalog_write = next(i for i, w in enumerate(writes) if w[1] == "Namespace")
    assert max(i for i, w in enumerate(writes) if w[:2] == ("delete", "Job")) < first_catalog_write

    cluster.writes.clear()
    again = service.run_catalog(params(gamma()), cluster)
    assert again["changed"] is False and cluster.writes == []
    assert again["sale"]["recomputes"] is False and again["reclaim"] == {}
    assert again["sale"]["summary"].startswith("no subscription or pay-as-you-go grant changes")


def test_check_mode_writes_nothing_and_says_what_it_would_reclaim_and_leave_to_spot():
    cluster = spot_cluster(dry_run=True)
    result = service.run_catalog(params(gamma()), cluster, check_mode=True)
    assert cluster.real_writes == []
    assert [v["name"] for v in result["reclaim"]["victims"]] == ["spot-a", "spot-b", "spot-c"]
    assert result["spot"] == {"recomputed": False, "gpus": 8, "updated": []}
    assert "would reclaim 16 spot GPUs" in result["sale"]["summary"]
    assert result["sale"]["summary"].endswith(
        "spot capacity after: would be at most 8 GPUs (the unsold ones)"
    )
    assert result["changed"] is True
    assert "spot reclaim tenant-alpha/spot-a" in result["diff"]["after"]


def test_without_reclaim_a_sale_that_needs_spot_jobs_is_refused_before_any_write():
    cluster = spot_cluster()
    with pytest.raises(Refused) as exc:
        service.run_catalog(params(gamma(), reclaim=False), cluster)
    assert str(exc.value).startswith(
        "tenants.nvidia.com/gpu: the catalog selling 4 GPUs needs 16 spot GPUs reclaimed: "
        "12 GPUs are unsold and spot jobs hold 24; set reclaim: true"
    )
    assert cluster.real_writes == []


def test_a_run_that_sells_nothing_more_reclaims_nothing_even_without_reclaim():
    # A new tenant without GPUs sells none: no reclaim is planned, none refused.
    cluster = spot_cluster()
    result = service.run_catalog(params(gamma(0), reclaim=False), cluster)
    assert deleted_jobs(cluster) == [] and result["reclaim"] == {}
    assert result["sale"]["added"] == 0 and result["sale"]["reclaims"] is False


def test_a_sale_spot_cannot_cover_is_refused_before_any_catalog_write():
    # Gamma buys 32 (the guard off): 60 of the 64 GPUs are held, so 28 must be freed,
    # and the spot jobs hold 24: the reclaim refuses, and the catalog writes nothing.
    cluster = spot_cluster()
    with pytest.raises(Refused) as exc:
        service.run_catalog(params(gamma(32), oversell_check=False), cluster)
    assert "nothing of the catalog was written" in str(exc.value)
    assert exc.value.extra["sale"]["added"] == 32
    # Only the reclaim's Lease, under which it decided again (as spot_reclaim does).
    assert {w[1] for w in cluster.real_writes} == {"Lease"}


def test_a_shrink_reclaims_nothing_and_gives_spot_the_gpus_back():
    cluster = spot_cluster(alpha_subscription=28)
    tenants = [
        {"name": "alpha", "subscription": {GPU: 20, "cpu": 4, "memory": "16Gi"}},
    ]
    result = service.run_catalog(params(tenants), cluster)
    assert deleted_jobs(cluster) == []
    assert result["sale"]["added"] == 0 and result["sale"]["recomputes"] is True
    assert result["spot"]["gpus"] == 64 - 20 - 12 == spot_gpus(cluster)
