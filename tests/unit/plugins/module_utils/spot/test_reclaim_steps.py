# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import json
from datetime import timedelta

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import Refused
from ansible_collections.gpucloud.platform.plugins.module_utils.common.history import push_history
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.read_io import wait_until_free
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.reclaim import (
    ReclaimError,
    ReclaimRequest,
    lease_blocker,
    lease_manifest,
    reclaim_request,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.reclaim_io import (
    acquire_lease,
    reclaim,
    release_lease,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import (
    NOW,
    SpotCluster,
    spot_cluster,
    spot_objects,
)


class RecreatingCluster(SpotCluster):
    """Someone deletes spot-a and creates it again under its name (a new uid)
    between the reclaim's list and its delete."""

    def delete(self, api_version, kind, name, namespace=None, **kw):
        if (kind, name) == ("Job", "spot-a"):
            self.store[self.key("Job", namespace, name)]["metadata"]["uid"] = "uid-spot-a-new"
        return super().delete(api_version, kind, name, namespace, **kw)


def test_nothing_to_do_when_enough_is_free():
    cluster = spot_cluster()
    result = reclaim(cluster, ReclaimRequest(demand=4, holder="me"), check_mode=False, now=NOW)
    assert result["changed"] is False and result["shortfall"] == 0 and result["victims"] == []
    assert (result["pool"], result["allocated"], result["free"]) == (64, 60, 4)
    assert not [w for w in cluster.writes if w[0] == "delete" and w[1] == "Job"]


def test_a_victim_recreated_under_its_name_since_the_list_is_left_alone():
    cluster = RecreatingCluster(spot_objects())
    # reclaim lists the jobs, then deletes each by the uid it listed
    result = reclaim(cluster, ReclaimRequest(demand=16, holder="me"), check_mode=False, now=NOW)
    deletes = [w[2] for w in cluster.writes if w[:2] == ("delete", "Job")]
    assert deletes == ["spot-b"]  # the new spot-a is not the job that was chosen
    assert ("Job", "tenant-alpha", "spot-a") in cluster.store
    assert [e["involvedObject"]["name"] for e in cluster.objects("Event")] == ["spot-b"]
    assert [v["name"] for v in result["victims"]] == ["spot-b"]  # what was deleted


def test_design_example_deletes_a_then_b_records_events_and_history():
    cluster = spot_cluster()
    result = reclaim(
        cluster, ReclaimRequest(demand=16, reason="order 7", holder="me"), check_mode=False, now=NOW
    )
    assert result["shortfall"] == 12  # 4 free, 16 asked
    assert [v["name"] for v in result["victims"]] == ["spot-a", "spot-b"]
    assert result["freed"] == 12 and result["changed"] is True
    deletes = [w[2] for w in cluster.writes if w[:2] == ("delete", "Job")]
    assert deletes == ["spot-a", "spot-b"]
    events = cluster.objects("Event")
    assert sorted(e["involvedObject"]["name"] for e in events) == ["spot-a", "spot-b"]
    event_b = next(e for e in events if e["involvedObject"]["name"] == "spot-b")
    assert (
        event_b["reason"] == "SpotReclaimed" and event_b["metadata"]["namespace"] == "tenant-alpha"
    )
    assert (
        "price 0.1, 8 GPUs" in event_b["message"]
        and "order 7: demand 16 GPUs" in event_b["message"]
    )
    assert event_b["involvedObject"]["uid"] == "uid-spot-b"
    event_a = next(e for e in events if e["involvedObject"]["name"] == "spot-a")
    # same run time, yet the kill order is recorded and orders the name suffixes
    assert event_a["metadata"]["annotations"]["platform.io/reclaim-order"] == "1"
    assert event_b["metadata"]["annotations"]["platform.io/reclaim-order"] == "2"
    suffix = [e["metadata"]["name"].rsplit(".", 1)[1] for e in (event_a, event_b)]
    assert int(suffix[0], 16) < int(suffix[1], 16)
    history = json.loads(cluster.objects("ConfigMap")[0]["data"]["history.json"])
    assert history == result["history"] and history[0]["victims"][0]["name"] == "spot-a"
    assert cluster.objects("Lease") == []  # released


def test_check_mode_only_reports():
    cluster = spot_cluster()
    result = reclaim(cluster, ReclaimRequest(demand=16, holder="me"), check_mode=True, now=NOW)
    assert [v["name"] for v in result["victims"]] == ["spot-a", "spot-b"] and result[
        "changed"
    ] is True
    assert cluster.writes == []


def test_too_little_spot_fails_before_deleting():
    cluster = spot_cluster()
    with pytest.raises(
        ReclaimError,
        match=r"demand 40 GPUs: 4 of the pool's 64 GPUs are free, 36 must be reclaimed",
    ) as info:
        reclaim(cluster, ReclaimRequest(demand=40, holder="me"), check_mode=False, now=NOW)
    # a refusal: reported with what the run found
    assert isinstance(info.value, Refused) and info.value.result["shortfall"] == 36
    assert not [w for w in cluster.writes if w[0] == "delete" and w[1] == "Job"]
    assert cluster.objects("Lease") == []


def test_a_held_lease_blocks_and_names_the_holder():
    cluster = spot_cluster(
        [lease_manifest("other-run", 60, NOW - timedelta(seconds=10)) | {"kind": "Lease"}]
    )
    with pytest.raises(ReclaimError, match=r"held by 'other-run' until 2026-01-01T12:00:50Z"):
        reclaim(cluster, ReclaimRequest(demand=16, holder="me"), check_mode=False, now=NOW)
    assert not [w for w in cluster.writes if w[0] == "delete"]
    assert cluster.objects("Lease")[0]["spec"]["holderIdentity"] == "other-run"


OPTIONS = {"holder_identity": "awx", "history_size": 100, "lease_duration": 60}


def test_two_runs_that_share_an_identity_exclude_each_other():
    """Rule reclaim-lease-holder: a second launch of the same AWX template (same
    holder_identity) finds the Lease held by the first run, not by itself."""
    first = reclaim_request(OPTIONS, 16, "order 1", "host-1", run_id="run-1")
    second = reclaim_request(OPTIONS, 16, "order 1", "host-1", run_id="run-2")
    assert first.holder != second.holder
    held = lease_manifest(first.holder, 60, NOW - timedelta(seconds=10)) | {"kind": "Lease"}
    cluster = spot_cluster([held])
    with pytest.raises(ReclaimError, match=r"held by 'awx/run-1'"):
        reclaim(cluster, second, check_mode=False, now=NOW)
    assert not [w for w in cluster.writes if w[0] == "delete"]


def test_an_expired_lease_is_taken_over():
    cluster = spot_cluster([lease_manifest("dead-run", 60, NOW - timedelta(seconds=61))])
    lease = acquire_lease(cluster, "me", 60, NOW)
    assert lease["spec"]["holderIdentity"] == "me" and lease["spec"]["leaseTransitions"] == 1
    assert ("replace", "Lease", "spot-reclaim") in cluster.writes
    assert release_lease(cluster, lease) is True


def test_release_leaves_a_lease_someone_else_took():
    cluster = spot_cluster()
    mine = acquire_lease(cluster, "me", 60, NOW)
    cluster.store[("Lease", "platform-system", "spot-reclaim")]["metadata"]["resourceVersion"] = (
        "changed"
    )
    assert release_lease(cluster, mine) is False
    assert cluster.objects("Lease")


def test_lease_blocker_rule():
    assert lease_blocker(None, "me", NOW) is None
    assert lease_blocker(lease_manifest("me", 60, NOW), "me", NOW) is None
    assert lease_blocker(lease_manifest("x", 60, NOW - timedelta(seconds=60)), "me", NOW) is None
    assert "held by 'x'" in lease_blocker(
        lease_manifest("x", 60, NOW - timedelta(seconds=59)), "me", NOW
    )


def test_history_is_newest_first_and_bounded():
    entries = []
    for i in range(5):
        entries = push_history(entries, {"n": i}, 3)
    assert entries == [{"n": 4}, {"n": 3}, {"n": 2}]


def test_a_second_reclaim_counts_pods_on_their_way_out_as_free():
    cluster = spot_cluster()
    for name in ("spot-a-0", "spot-b-0", "spot-b-1"):
        cluster.store[("Pod", "tenant-x", name)]["metadata"]["deletionTimestamp"] = (
            "2026-01-01T12:00:00Z"
        )
    result = reclaim(cluster, ReclaimRequest(demand=16, holder="me"), check_mode=False, now=NOW)
    assert result["free"] == 16 and result["victims"] == []


def test_wait_until_free_polls_until_pods_are_gone():
    cluster = spot_cluster()
    ticks = iter(range(100))
    pauses = []

    def pause(_unused):
        pauses.append(1)
        if len(pauses) == 2:
            for name in ("spot-a-0", "spot-b-0", "spot-b-1"):
                del cluster.store[("Pod", "tenant-x", name)]

    reached, free = wait_until_free(
        cluster, {}, 16, timeout=50, clock=lambda: next(ticks), pause=pause
    )
    assert reached is True and free == 16 and len(pauses) == 2
    reached, free = wait_until_free(
        cluster, {}, 64, timeout=3, clock=lambda: next(ticks), pause=lambda _unused: None
    )
    assert reached is False and free == 16


def test_the_reclaim_event_names_what_the_shortfall_was_counted_against():
    """ "free" means not allocated, "unsold" means not sold: the Event says which."""
    from datetime import UTC, datetime

    from ansible_collections.gpucloud.platform.plugins.module_utils.spot.reclaim import (
        event_manifest,
    )
    from ansible_collections.gpucloud.platform.plugins.module_utils.spot.victims import SpotJob

    job = SpotJob("tenant-a", "cheap", "0.1", 2, 1, 0.0, "tenant-a-spot", "u", "Job")
    now = datetime(2026, 1, 1, tzinfo=UTC)
    free = event_manifest(job, "u", 20, 14, "a purchase", now)
    unsold = event_manifest(job, "u", 20, 14, "a purchase", now, basis="unsold")
    assert free["message"].endswith("demand 20 GPUs, 14 short of free GPUs")
    assert unsold["message"].endswith("demand 20 GPUs, 14 short of unsold GPUs")
