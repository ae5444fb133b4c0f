# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""spot.service.RECOMPUTE_FLOW (spot_capacity) and run_reclaim (spot_reclaim)
against the fake cluster."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PartialWrite,
    Refused,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube import run_record
from ansible_collections.gpucloud.platform.plugins.module_utils.spot import reclaim_io, service
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.reclaim import ReclaimError
from ansible_collections.gpucloud.platform.plugins.modules import spot_capacity, spot_reclaim
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import (
    RefusingCluster,
    api_error,
    spot_cluster,
    spot_objects,
)

GPU = "nvidia.com/gpu"


def params(module, **given):
    """The module's options with their defaults, as the runner passes them."""
    return {name: spec.get("default") for name, spec in module.OPTIONS.items()} | given


def capability(cluster, queue):
    return cluster.store[cluster.key("Queue", None, queue)]["spec"]["capability"]


# --- RECOMPUTE_FLOW -----------------------------------------------------------------


def test_recompute_applies_each_changed_spot_queue():
    cluster = spot_cluster()
    result = service.RECOMPUTE_FLOW.run(params(spot_capacity), cluster, check_mode=False)
    assert result["changed"] is True
    assert result["updated"] == ["tenant-alpha-spot", "tenant-beta-spot"]
    assert result["pool"][GPU] == 64 and result["idle"][GPU] == 12
    assert result["diff"]["after"]["tenant-beta-spot"]["deserved"][GPU] == 0
    assert capability(cluster, "tenant-alpha-spot")[GPU] == 10
    assert cluster.lists == ["Node", "Queue"]


def test_recompute_in_check_mode_writes_nothing():
    cluster = spot_cluster(dry_run=True)
    result = service.RECOMPUTE_FLOW.run(params(spot_capacity), cluster, check_mode=True)
    assert result["changed"] is True and len(result["updated"]) == 2
    assert cluster.real_writes == [] and [w[0] for w in cluster.writes] == ["dry-run", "dry-run"]
    assert capability(cluster, "tenant-alpha-spot") == {GPU: 0}


def test_recompute_refused_part_way_raises_partial_write_with_done():
    refusal = api_error()
    cluster = RefusingCluster(
        spot_objects(), refuse={("apply", "Queue", "tenant-beta-spot"): refusal}
    )
    with pytest.raises(PartialWrite) as info:
        service.RECOMPUTE_FLOW.run(params(spot_capacity), cluster, check_mode=False)
    assert info.value.what == "updating spot queues" and info.value.cause is refusal
    assert info.value.done == ["tenant-alpha-spot"]
    # what was written, not what was planned (a run reported 307 updated after writing 94)
    assert info.value.report["updated"] == ["tenant-alpha-spot"]
    assert info.value.report["planned"] == ["tenant-alpha-spot", "tenant-beta-spot"]
    assert "changed" not in info.value.report and "tenants" in info.value.report


# --- run_reclaim -------------------------------------------------------------------


def test_reclaim_deletes_records_and_summarises():
    cluster = spot_cluster()
    result = service.run_reclaim(
        params(spot_reclaim, need=16, demand_reason="order 7"), cluster, check_mode=False
    )
    assert result["changed"] is True and result["waited"] is False
    assert [v["name"] for v in result["victims"]] == ["spot-a", "spot-b"]
    assert result["reclaim"]["reason"] == "order 7" and result["reclaim"]["freed"] == 12
    assert result["reclaim"]["victims"] == result["victims"] == result["history"][0]["victims"]
    count = "tenant-alpha-spot platform.io/spot-reclaimed-jobs"
    assert set(result["diff"]["before"]) == {"tenant-alpha/spot-a", "tenant-alpha/spot-b", count}
    assert (result["diff"]["before"][count], result["diff"]["after"][count]) == ("0", "2")
    assert result["counted"] == {"tenant-alpha-spot": {"before": 0, "after": 2}}
    assert len(cluster.objects("Event")) == 2 and cluster.objects("Lease") == []


def reclaimed_jobs_of(cluster, queue):
    annotations = cluster.store[cluster.key("Queue", None, queue)]["metadata"].get("annotations")
    return (annotations or {}).get("platform.io/spot-reclaimed-jobs")


def test_reclaim_counts_the_jobs_taken_from_each_spot_queue():
    cluster = spot_cluster()
    assert reclaimed_jobs_of(cluster, "tenant-alpha-spot") is None
    service.run_reclaim(params(spot_reclaim, need=16), cluster, check_mode=False)
    assert reclaimed_jobs_of(cluster, "tenant-alpha-spot") == "2"
    assert reclaimed_jobs_of(cluster, "tenant-beta-spot") is None  # lost no job


def test_the_count_goes_on_from_what_the_queue_says():
    objects = spot_objects()
    for obj in objects:
        if obj["kind"] == "Queue" and obj["metadata"]["name"] == "tenant-alpha-spot":
            obj["metadata"]["annotations"] = {"platform.io/spot-reclaimed-jobs": "40"}
    cluster = RefusingCluster(objects)
    service.run_reclaim(params(spot_reclaim, need=16), cluster, check_mode=False)
    assert reclaimed_jobs_of(cluster, "tenant-alpha-spot") == "42"


class ConflictOnce(RefusingCluster):
    """A spot recompute changes the queue between the count's read and its patch, once."""

    conflicts = 0

    def merge_patch(self, api_version, kind, name, body, namespace=None):
        if kind == "Queue" and not self.conflicts:
            self.conflicts += 1
            queue = self.store[self.key("Queue", None, name)]
            queue["metadata"]["resourceVersion"] = str(
                int(queue["metadata"]["resourceVersion"]) + 1
            )
        return super().merge_patch(api_version, kind, name, body, namespace)


def test_a_count_changed_under_the_patch_is_read_again_not_lost():
    cluster = ConflictOnce(spot_objects())
    service.run_reclaim(params(spot_reclaim, need=16), cluster, check_mode=False)
    assert cluster.conflicts == 1 and reclaimed_jobs_of(cluster, "tenant-alpha-spot") == "2"


def test_a_count_that_cannot_be_written_is_warned_about_and_the_reclaim_stands(monkeypatch):
    warned = []
    monkeypatch.setattr(reclaim_io, "warn", warned.append)
    monkeypatch.setattr(run_record, "warn", warned.append)  # the count's writer

    class Refusing(RefusingCluster):
        def merge_patch(self, api_version, kind, name, body, namespace=None):
            self.requests += 1
            raise api_error(403, "forbidden")

    cluster = Refusing(spot_objects())
    result = service.run_reclaim(params(spot_reclaim, need=16), cluster, check_mode=False)
    assert result["changed"] is True and len(result["victims"]) == 2
    assert any("reclaim count of queue tenant-alpha-spot" in w for w in warned), warned


def test_reclaim_in_check_mode_writes_nothing():
    cluster = spot_cluster(dry_run=True)
    result = service.run_reclaim(params(spot_reclaim, need=16), cluster, check_mode=True)
    assert result["changed"] is True
    assert [v["name"] for v in result["victims"]] == ["spot-a", "spot-b"]
    assert cluster.writes == []  # not even a dry run: no lease, no delete, no event
    assert len(cluster.objects("Job")) == 4


def test_reclaim_refused_part_way_raises_partial_write_with_done():
    refusal = api_error(403, "forbidden")
    cluster = RefusingCluster(spot_objects(), refuse={("delete", "Job", "spot-b"): refusal})
    with pytest.raises(PartialWrite) as info:
        service.run_reclaim(params(spot_reclaim, need=16), cluster, check_mode=False)
    assert info.value.what == "reclaiming spot jobs" and info.value.cause is refusal
    assert info.value.done == ["tenant-alpha/spot-a"]
    assert info.value.report["freed"] == 4 and info.value.report["shortfall"] == 12
    assert [e["involvedObject"]["name"] for e in cluster.objects("Event")] == ["spot-a"]
    assert cluster.objects("Lease") == []  # released


def test_reclaim_beyond_what_spot_holds_is_refused_with_the_numbers():
    cluster = spot_cluster()
    with pytest.raises(ReclaimError) as info:
        service.run_reclaim(params(spot_reclaim, need=60), cluster, check_mode=False)
    assert isinstance(info.value, Refused)
    assert info.value.extra["shortfall"] == 56 and info.value.extra["victims"] == []
    assert not [w for w in cluster.writes if w[0] == "delete" and w[1] == "Job"]


def test_reclaim_not_free_in_time_is_refused_reporting_the_deletes(monkeypatch):
    monkeypatch.setattr(service, "wait_until_free", lambda *args: (False, 10))
    cluster = spot_cluster()
    with pytest.raises(Refused, match=r"16 GPUs were not free within 5 s after deleting 2") as info:
        service.run_reclaim(
            params(spot_reclaim, need=16, wait=True, wait_timeout=5), cluster, check_mode=False
        )
    assert info.value.extra["changed"] is True and info.value.extra["waited"] is True
    assert info.value.extra["free_after"] == 10


def test_reclaim_wait_failing_raises_partial_write_with_the_deleted_jobs(monkeypatch):
    refusal = api_error(503, "the server is shutting down")

    def refused(*args):
        raise refusal

    monkeypatch.setattr(service, "wait_until_free", refused)
    with pytest.raises(PartialWrite) as info:
        service.run_reclaim(
            params(spot_reclaim, need=16, wait=True), spot_cluster(), check_mode=False
        )
    assert info.value.what == "waiting for free GPUs"
    assert info.value.done == ["tenant-alpha/spot-a", "tenant-alpha/spot-b"]
    assert info.value.report["freed"] == 12


def test_reclaim_waits_until_the_gpus_are_free(monkeypatch):
    calls = []

    def free_now(cluster, node_selector, demand, timeout):
        calls.append((node_selector, demand, timeout))
        return True, 16

    monkeypatch.setattr(service, "wait_until_free", free_now)
    result = service.run_reclaim(
        params(spot_reclaim, need=16, wait=True), spot_cluster(), check_mode=False
    )
    assert result["waited"] is True and result["free_after"] == 16
    assert calls == [({}, 16, 300)]
