# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule federation-moves-counted (hybrid/federation_moves) and what it does to a job's
policy with rule federation-failover-once. The bindings are shaped as Karmada v1.16.0's
ResourceBinding (``spec.clusters``, ``spec.gracefulEvictionTasks``)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid import (
    federation_placement as fp,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.federation_moves import (
    Moves,
    job_of_policy,
    moves_seen,
    needs_writing,
    policy_after_moves,
    recorded_moves,
)

JOB = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "roam", "namespace": "tenant-alpha"},
}
MEMBERS = ["idc-1", "idc-2", "cloud-1"]


def binding(on: list[str], evicted_from: list[str] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"clusters": [{"name": m, "replicas": 1} for m in on]}
    if evicted_from:
        spec["gracefulEvictionTasks"] = [
            {"fromCluster": m, "purgeMode": "Directly", "reason": "TaintUntolerated"}
            for m in evicted_from
        ]
    return {"spec": spec}


def test_the_first_placement_is_recorded_and_is_no_move():
    seen = moves_seen(Moves(), binding(["cloud-1"]))
    assert seen == Moves("cloud-1", ())
    assert seen.count == 0


def test_a_move_under_way_is_seen_from_its_eviction_task():
    # the lost member left the binding; the scheduler has not placed the job again yet
    seen = moves_seen(Moves("cloud-1"), binding([], ["cloud-1"]))
    assert seen == Moves("cloud-1", ("cloud-1",))
    # and placed again, the task still there until the old copy is deleted
    seen = moves_seen(seen, binding(["idc-1"], ["cloud-1"]))
    assert seen == Moves("idc-1", ("cloud-1",))


def test_a_move_done_before_the_run_is_seen_from_the_member_it_was_in():
    assert moves_seen(Moves("cloud-1"), binding(["idc-1"])) == Moves("idc-1", ("cloud-1",))


def test_a_move_under_way_in_a_job_never_seen_placed_is_still_counted():
    assert moves_seen(Moves(), binding(["idc-1"], ["cloud-1"])) == Moves("idc-1", ("cloud-1",))


def test_no_binding_or_an_unplaced_one_keeps_the_record():
    record = Moves("idc-1", ("cloud-1",))
    assert moves_seen(record, None) == record
    assert moves_seen(record, binding([])) == record


@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(MEMBERS), max_size=1),
            st.lists(st.sampled_from(MEMBERS), max_size=2, unique=True),
        ),
        max_size=8,
    )
)
def test_the_count_never_falls_and_a_member_is_counted_once(observations):
    """Whatever the reconciles see, in whatever order, the record only grows, never counts
    a member twice, and seeing the same binding again changes nothing."""
    record = Moves()
    for on, evicted in observations:
        seen = moves_seen(record, binding(on, evicted))
        assert seen.moved_from[: record.count] == record.moved_from
        assert len(set(seen.moved_from)) == seen.count
        assert moves_seen(seen, binding(on, evicted)) == seen
        record = seen


def test_the_record_round_trips_through_the_policy_annotations():
    record = Moves("idc-1", ("cloud-1", "idc-2"))
    policy = {"metadata": {"annotations": record.annotations()}}
    assert recorded_moves(policy) == record
    assert recorded_moves(None) == Moves()
    assert Moves().annotations() == {}


NOT_MOVED = Moves()


def live_policy(placement: str, spot: bool = False, record: Moves = NOT_MOVED) -> dict[str, Any]:
    return fp.job_propagation_policy(
        JOB, placement, spot=spot, replaced=record.count, record=record.annotations()
    )


def test_a_job_policy_is_known_by_its_label_and_its_one_job():
    policy = live_policy("cloud-ok")
    assert job_of_policy(policy) == "roam"
    unlabelled = {**policy, "metadata": {"name": "roam", "namespace": "tenant-alpha"}}
    assert job_of_policy(unlabelled) is None
    tenant_wide = {
        **policy,
        "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "Namespace"}]},
    }
    assert job_of_policy(tenant_wide) is None
    other = dict(policy, metadata={**policy["metadata"], "name": "other"})
    assert job_of_policy(other) is None


def test_a_cloud_ok_job_moved_once_is_held_from_then_on():
    policy = live_policy("cloud-ok")
    assert "failover" in policy["spec"]
    moved = Moves("idc-1", ("cloud-1",))
    assert needs_writing(policy, moved)
    after = policy_after_moves(policy, moved)
    assert "failover" not in after["spec"]
    assert after["spec"]["placement"]["clusterTolerations"] == fp.HELD
    assert after["metadata"]["annotations"] == {
        "platform.io/placed-in": "idc-1",
        "platform.io/moved-from": "cloud-1",
    }
    # the placement Karmada chose by is kept as it was
    assert (
        after["spec"]["placement"]["clusterAffinity"]
        == policy["spec"]["placement"]["clusterAffinity"]
    )
    # written, nothing is left to write
    assert not needs_writing(after, moved)


def test_the_same_policy_vcjob_writes_for_a_job_moved_once():
    """vcjob, writing the policy again with the record it read, writes what the
    reconcile wrote: no failover, held (one rule, two writers)."""
    moved = Moves("idc-1", ("cloud-1",))
    reconciled = policy_after_moves(live_policy("cloud-ok"), moved)
    again = live_policy("cloud-ok", record=moved)
    assert again["spec"] == reconciled["spec"]
    assert again["metadata"] == reconciled["metadata"]


def test_a_job_not_moved_only_gets_its_member_recorded():
    policy = live_policy("cloud-ok", spot=True)
    placed = Moves("cloud-1")
    after = policy_after_moves(policy, placed)
    assert after["spec"]["failover"] == policy["spec"]["failover"]
    assert after["metadata"]["annotations"] == {"platform.io/placed-in": "cloud-1"}


def test_a_held_job_moved_anyway_is_recorded_and_stays_held():
    # a local-first job never had failover: its record changes, its spec does not
    policy = live_policy("local-first")
    moved = Moves("idc-1", ("cloud-1",))
    after = policy_after_moves(policy, moved)
    assert after["spec"] == policy["spec"]
    assert needs_writing(policy, moved)
