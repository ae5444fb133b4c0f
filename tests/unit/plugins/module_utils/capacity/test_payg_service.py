# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""capacity.service.run (payg_capacity) against the fake cluster."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.capacity import service
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PartialWrite,
    PlatformValidationError,
    Refused,
)
from ansible_collections.gpucloud.platform.plugins.modules import payg_capacity
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import (
    RefusingCluster,
    SpotCluster,
    api_error,
    hybrid_queues,
    spot_cluster,
    spot_objects,
)

GPU = "nvidia.com/gpu"


def params(**given):
    """The module's options with their defaults, as the runner passes them."""
    return {name: spec.get("default") for name, spec in payg_capacity.OPTIONS.items()} | given


def capability(cluster, queue):
    return cluster.store[cluster.key("Queue", None, queue)]["spec"]["capability"]


def oversized_beta():
    """spot_objects with beta's PAYG queue granted 10 GPUs while it uses 4."""
    objects = spot_objects()
    beta = next(o for o in objects if o["metadata"]["name"] == "tenant-beta-payg")
    beta["spec"]["capability"] = beta["spec"]["deserved"] = {GPU: 10}
    return objects


def test_grow_reclaims_then_writes_only_the_capacity_fields():
    cluster = spot_cluster(alpha_subscription=28)
    cluster.lists.clear()
    result = service.run(params(tenant="alpha", capability={GPU: 12}), cluster, check_mode=False)
    # Before the reclaim (which reads afresh under its Lease): the Queues and Jobs once,
    # the pool (Nodes, Pods) and the spot pods of other workloads.
    assert cluster.lists[:5] == ["Queue", "Job", "Node", "Pod", "Pod"]
    assert result["changed"] is True and result["updated"] == ["tenant-alpha-payg"]
    assert [v["name"] for v in result["reclaim"]["victims"]] == ["spot-a", "spot-b"]
    assert result["diff"]["before"]["tenant-alpha-payg"]["capability"] == {GPU: 0}
    assert capability(cluster, "tenant-alpha-payg") == {GPU: 12}
    assert ("apply:gpucloud-platform-capacity", "Queue", "tenant-alpha-payg") in cluster.writes
    queue = cluster.store[cluster.key("Queue", None, "tenant-alpha-payg")]
    assert queue["metadata"]["labels"]["platform.io/queue-type"] == "payg"  # kept


def test_check_mode_writes_nothing():
    cluster = spot_cluster(dry_run=True, alpha_subscription=28)
    result = service.run(params(tenant="alpha", capability={GPU: 12}), cluster, check_mode=True)
    assert result["changed"] is True and result["updated"] == ["tenant-alpha-payg"]
    assert [v["name"] for v in result["reclaim"]["victims"]] == ["spot-a", "spot-b"]
    assert cluster.real_writes == []
    assert [w[0] for w in cluster.writes] == ["dry-run"]  # the queue's apply, as a dry run
    assert capability(cluster, "tenant-alpha-payg") == {GPU: 0}
    assert cluster.objects("Lease") == [] and cluster.objects("Event") == []


def test_a_write_refused_part_way_raises_partial_write_with_done():
    refusal = api_error(message="spec.capability: Invalid value")
    objects = [*oversized_beta()]
    alpha = next(o for o in objects if o["metadata"]["name"] == "tenant-alpha-payg")
    alpha["spec"]["capability"] = alpha["spec"]["deserved"] = {GPU: 2}  # uses 0: shrinks to 0
    cluster = RefusingCluster(objects, refuse={("apply", "Queue", "tenant-beta-payg"): refusal})
    with pytest.raises(PartialWrite) as info:
        service.run(params(fit_to_use=True), cluster, check_mode=False)
    assert info.value.what == "updating pay-as-you-go queues"
    assert info.value.done == ["tenant-alpha-payg"] and info.value.cause is refusal
    assert info.value.report["updated"] == ["tenant-alpha-payg"]
    assert {r["tenant"] for r in info.value.report["queues"]} == {"alpha", "beta"}
    assert capability(cluster, "tenant-alpha-payg") == {GPU: 0}


def test_a_write_refused_after_the_reclaim_counts_the_deleted_jobs_as_done():
    refusal = api_error()
    cluster = RefusingCluster(
        spot_objects(alpha_subscription=28),
        refuse={("apply", "Queue", "tenant-alpha-payg"): refusal},
    )
    with pytest.raises(PartialWrite) as info:
        service.run(params(tenant="alpha", capability={GPU: 12}), cluster, check_mode=False)
    assert info.value.done == ["tenant-alpha/spot-a", "tenant-alpha/spot-b"]
    assert info.value.report["reclaim"]["freed"] == 12 and info.value.report["updated"] == []


def test_a_delete_refused_part_way_raises_partial_write_with_done():
    refusal = api_error(403, "forbidden")
    cluster = RefusingCluster(spot_objects(), refuse={("delete", "Job", "spot-b"): refusal})
    with pytest.raises(PartialWrite) as info:
        service.run(params(tenant="alpha", capability={GPU: 12}), cluster, check_mode=False)
    assert info.value.what == "reclaiming spot jobs"
    assert info.value.done == ["tenant-alpha/spot-a"]
    assert [v["name"] for v in info.value.report["reclaim"]["victims"]] == ["spot-a"]
    assert capability(cluster, "tenant-alpha-payg") == {GPU: 0}  # not grown


def test_oversell_is_refused_with_the_errors_and_the_table():
    cluster = spot_cluster()
    with pytest.raises(Refused) as info:
        service.run(params(tenant="alpha", capability={GPU: 17}), cluster, check_mode=False)
    assert info.value.extra["errors"][0].startswith(
        "capability.nvidia.com/gpu: 17 for the pay-as-you-go queue of tenant 'alpha' exceeds"
    )
    assert info.value.extra["queues"][0]["growth"] == 17
    assert cluster.writes == []


def test_a_lease_held_elsewhere_refuses_the_growth():
    from ansible_collections.gpucloud.platform.plugins.module_utils.spot.reclaim import (
        lease_manifest,
    )
    from ansible_collections.gpucloud.platform.plugins.module_utils.spot.reclaim_io import utc_now

    cluster = SpotCluster(spot_objects([lease_manifest("other-run", 600, utc_now())]))
    with pytest.raises(Refused, match="held by 'other-run'") as info:
        service.run(params(tenant="alpha", capability={GPU: 12}), cluster, check_mode=False)
    assert info.value.extra["reclaim"] == {} and "queues" in info.value.extra
    assert not [w for w in cluster.writes if w[1] in ("Job", "Queue")]


def test_below_use_is_refused_before_any_write():
    cluster = spot_cluster()
    with pytest.raises(PlatformValidationError, match="2 is below what tenant 'beta' uses"):
        service.run(params(tenant="beta", capability={GPU: 2}), cluster, check_mode=False)
    assert cluster.writes == []


def test_growth_not_free_in_time_is_refused_after_the_writes(monkeypatch):
    monkeypatch.setattr(service, "wait_until_free", lambda *args: (False, 4))
    cluster = spot_cluster()
    with pytest.raises(Refused, match="12 GPUs were not free within 300 s") as info:
        service.run(
            params(tenant="alpha", capability={GPU: 12}, wait=True), cluster, check_mode=False
        )
    assert info.value.extra["changed"] is True  # jobs deleted, queue grown
    assert info.value.extra["reclaim"]["waited"] is True
    assert info.value.extra["reclaim"]["free_after"] == 4
    assert info.value.extra["updated"] == ["tenant-alpha-payg"]


def test_a_grant_is_kept_through_its_grace_then_shrunk_unused(monkeypatch):
    """Rule payg-grace: a growth stamps its queue; a fit-to-use run within the grace keeps
    the unused grant and says until when; after it, the grant shrinks to what is used."""
    from datetime import UTC, datetime, timedelta

    start = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    clock = {"now": start}
    monkeypatch.setattr(service, "utc_now", lambda: clock["now"])
    cluster = spot_cluster(alpha_subscription=28)
    grown = service.run(params(tenant="alpha", capability={GPU: 12}), cluster, check_mode=False)
    row = next(r for r in grown["queues"] if r["queue"] == "tenant-alpha-payg")
    assert row["kept_until"] == "2026-01-01T12:30:00Z"
    queue = cluster.store[cluster.key("Queue", None, "tenant-alpha-payg")]
    assert queue["metadata"]["annotations"]["platform.io/payg-granted-at"] == "2026-01-01T12:00:00Z"

    clock["now"] = start + timedelta(minutes=29)
    kept = service.run(params(fit_to_use=True), cluster, check_mode=False)
    assert "tenant-alpha-payg" not in kept["updated"]
    row = next(r for r in kept["queues"] if r["queue"] == "tenant-alpha-payg")
    assert row["kept_until"] == "2026-01-01T12:30:00Z" and row["new"][GPU] == 12
    assert capability(cluster, "tenant-alpha-payg")[GPU] == 12

    clock["now"] = start + timedelta(minutes=31)
    shrunk = service.run(params(fit_to_use=True), cluster, check_mode=False)
    assert "tenant-alpha-payg" in shrunk["updated"]
    assert capability(cluster, "tenant-alpha-payg")[GPU] == 0


def test_an_explicit_capability_is_never_held_back_by_the_grace():
    cluster = spot_cluster(alpha_subscription=28)
    service.run(params(tenant="alpha", capability={GPU: 12}), cluster, check_mode=False)
    smaller = service.run(params(tenant="alpha", capability={GPU: 4}), cluster, check_mode=False)
    assert smaller["updated"] == ["tenant-alpha-payg"]
    assert capability(cluster, "tenant-alpha-payg")[GPU] == 4


def hybrid_objects(alpha_subscription=28, leaf=True):
    """spot_objects with node groups: alpha's PAYG queue prefers the IDC, then the cloud
    group; cloud-burst caps the cloud at 16 GPUs; alpha's burst quota is 8."""
    objects = spot_objects(alpha_subscription=alpha_subscription)
    *burst, payg_affinity = hybrid_queues(leaves=("alpha",) if leaf else ())
    payg = next(o for o in objects if o["metadata"]["name"] == "tenant-alpha-payg")
    payg["spec"].update(payg_affinity["spec"])
    return [*objects, *burst]


def cloud_record(cluster, name="tenant-alpha-payg"):
    queue = cluster.store[cluster.key("Queue", None, name)]
    return (queue["metadata"].get("annotations") or {}).get("platform.io/payg-cloud-gpus")


def test_a_growth_past_the_idc_takes_the_rest_from_the_burst_quota():
    """Rule payg-idc-first: 24 GPUs are unsold (spot holds them, reclaimed as before);
    the 6 more come from alpha's burst quota of 8 and are recorded on its queue."""
    cluster = SpotCluster(hybrid_objects())
    cluster.lists.clear()
    result = service.run(params(tenant="alpha", capability={GPU: 30}), cluster, check_mode=False)
    assert cluster.lists[:6] == ["Queue", "Job", "Node", "Pod", "Pod", "Queue"]
    (row,) = [r for r in result["queues"] if r["queue"] == "tenant-alpha-payg"]
    assert (row["growth"], row["from_idc"], row["from_cloud"], row["cloud_gpus"]) == (30, 24, 6, 6)
    assert result["reclaim"]["freed"] == 24
    assert capability(cluster, "tenant-alpha-payg") == {GPU: 30}
    assert cloud_record(cluster) == "6"
    # What the IDC sold is the IDC part only: nothing is left unsold, none oversold.
    from ansible_collections.gpucloud.platform.plugins.module_utils.workload.pool import (
        commitments_from_queues,
        committed_total,
    )

    queues = cluster.objects("Queue")
    assert committed_total(commitments_from_queues(queues).values())[GPU] == 64

    # A shrink gives the cloud GPUs back first.
    service.run(params(tenant="alpha", capability={GPU: 27}), cluster, check_mode=False)
    assert cloud_record(cluster) == "3"
    service.run(params(tenant="alpha", capability={GPU: 20}), cluster, check_mode=False)
    assert cloud_record(cluster) is None
    assert capability(cluster, "tenant-alpha-payg") == {GPU: 20}


def test_a_cloud_part_above_the_burst_headroom_is_refused_before_any_write():
    cluster = SpotCluster(hybrid_objects())
    with pytest.raises(Refused) as info:
        service.run(params(tenant="alpha", capability={GPU: 33}), cluster, check_mode=False)
    (error,) = info.value.extra["errors"]
    assert "takes 24 from the IDC (unsold) and 9 from the cloud, but the cloud has room for 8" in (
        error
    )
    assert "grow by at most 32 (rule payg-idc-first)" in error
    assert cluster.writes == []


def test_without_a_burst_quota_the_idc_cap_holds_as_before():
    cluster = SpotCluster(hybrid_objects(leaf=False))
    with pytest.raises(Refused) as info:
        service.run(params(tenant="alpha", capability={GPU: 30}), cluster, check_mode=False)
    assert "rule oversell-guard" in info.value.extra["errors"][0]
    assert cluster.writes == []


def test_without_reclaim_the_spot_held_idc_is_left_and_the_cloud_takes_the_growth():
    """With 40 subscribed nothing is unsold that spot does not hold: reclaim off, the
    growth is the cloud's whole and no spot job goes."""
    cluster = SpotCluster(hybrid_objects(alpha_subscription=40))
    result = service.run(
        params(tenant="alpha", capability={GPU: 8}, reclaim=False), cluster, check_mode=False
    )
    (row,) = [r for r in result["queues"] if r["queue"] == "tenant-alpha-payg"]
    assert (row["from_idc"], row["from_cloud"]) == (0, 8)
    assert result["reclaim"] is None and cloud_record(cluster) == "8"
    assert not [w for w in cluster.writes if w[1] == "Job"]
