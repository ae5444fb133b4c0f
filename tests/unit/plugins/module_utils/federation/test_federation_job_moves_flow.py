# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module federation_job_moves's flow (federation/job_moves and its I/O) over the
in-memory cluster standing in for the Karmada API server: rules federation-moves-counted
and federation-failover-once, one LIST per kind, a second run writing nothing, check mode
writing nothing, and the summary."""

from __future__ import annotations

from typing import Any

from ansible_collections.gpucloud.platform.plugins.module_utils.federation import (
    job_moves as flow,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.federation.job_moves_io import (
    apply_job_moves,
    gather_job_moves,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid import (
    federation_placement as fp,
)
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster

FLOW = flow.job_moves_flow(gather_job_moves, apply_job_moves)
NS = "tenant-alpha"


def job(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS},
    }


def binding(name: str, on: list[str], evicted_from: list[str] = ()) -> dict[str, Any]:
    """A ResourceBinding as Karmada v1.16.0 names and shapes it."""
    spec: dict[str, Any] = {
        "resource": {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "namespace": NS,
            "name": name,
        },
        "clusters": [{"name": m, "replicas": 1} for m in on],
    }
    if evicted_from:
        spec["gracefulEvictionTasks"] = [
            {"fromCluster": m, "purgeMode": "Directly"} for m in evicted_from
        ]
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": f"{name}-job", "namespace": NS},
        "spec": spec,
    }


def federation(**placements: str) -> FakeCluster:
    """Karmada holding a job policy per job, written as vcjob writes it (server-side apply)."""
    cluster = FakeCluster()
    for name, placement in placements.items():
        cluster.apply(fp.job_propagation_policy(job(name), placement))
    cluster.writes.clear()
    return cluster


def policy(cluster: FakeCluster, name: str) -> dict[str, Any]:
    return cluster.get(fp.POLICY_API, "PropagationPolicy", name, NS)


def run(cluster: FakeCluster, check_mode: bool = False, **params: Any) -> dict[str, Any]:
    return FLOW.run({"namespaces": [], **params}, cluster, check_mode)


def test_the_first_run_records_where_each_job_is_and_the_second_writes_nothing():
    cluster = federation(roam="cloud-ok", spill="local-first")
    cluster.put(binding("roam", ["cloud-1"]))
    cluster.put(binding("spill", ["cloud-1"]))
    first = run(cluster)
    assert first["changed"] and first["policies"] == 2
    assert [r["moved_from"] for r in first["jobs"]] == [[], []]
    assert policy(cluster, "roam")["metadata"]["annotations"] == {
        "platform.io/placed-in": "cloud-1"
    }
    # one LIST of policies and one of bindings, then the writes
    assert cluster.lists == ["PropagationPolicy", "ResourceBinding"]
    cluster.writes.clear()
    again = run(cluster)
    assert not again["changed"] and cluster.writes == []


def test_a_cloud_ok_job_moved_by_a_lost_member_is_held_from_then_on():
    cluster = federation(roam="cloud-ok", spill="local-first")
    cluster.put(binding("roam", ["cloud-1"]))
    cluster.put(binding("spill", ["cloud-1"]))
    run(cluster)
    # the cloud member is lost: Karmada takes roam out of it and places it in the IDC
    cluster.put(binding("roam", ["idc-1"], ["cloud-1"]))
    result = run(cluster)
    assert result["jobs"] == [
        {
            "job": f"{NS}/roam",
            "placed_in": "idc-1",
            "moved_from": ["cloud-1"],
            "moves": 1,
            "held": True,
        }
    ]
    live = policy(cluster, "roam")
    assert "failover" not in live["spec"]
    assert live["spec"]["placement"]["clusterTolerations"] == fp.HELD
    assert live["metadata"]["annotations"]["platform.io/moved-from"] == "cloud-1"
    # the held local-first job was not touched
    assert "platform.io/moved-from" not in policy(cluster, "spill")["metadata"]["annotations"]
    # the move is over (the old copy deleted): nothing more to write
    cluster.put(binding("roam", ["idc-1"]))
    cluster.writes.clear()
    assert not run(cluster)["changed"] and cluster.writes == []


def test_a_move_done_between_two_runs_is_still_counted():
    cluster = federation(roam="cloud-ok")
    cluster.put(binding("roam", ["cloud-1"]))
    run(cluster)
    cluster.put(binding("roam", ["idc-1"]))
    (row,) = run(cluster)["jobs"]
    assert row["moved_from"] == ["cloud-1"] and row["held"]


def test_check_mode_writes_nothing_and_says_what_would_be():
    cluster = federation(roam="cloud-ok")
    cluster.put(binding("roam", ["idc-1"], ["cloud-1"]))
    cluster.dry_run = True  # as the runner makes the client in check mode
    result = run(cluster, check_mode=True)
    assert result["changed"]
    assert cluster.real_writes == []
    assert "failover" in policy(cluster, "roam")["spec"]
    summary = flow.job_moves_summary({}, result, check_mode=True)
    assert summary[0] == (
        "federated jobs: 1 job read, 1 job moved since the last run; job policies would update 1 object"
    )
    assert summary[1] == f"{NS}/roam: moved from cloud-1 to idc-1 (1 move)"
    assert (
        summary[2]
        == f"would hold where they are from now on (moved as often as they may): {NS}/roam"
    )


def test_the_diff_shows_the_record_and_the_failover_taken_off():
    cluster = federation(roam="cloud-ok")
    cluster.put(binding("roam", ["idc-1"], ["cloud-1"]))
    diff = run(cluster)["diff"]
    key = f"PropagationPolicy/{NS}/roam"
    assert "failover" in diff["before"][key]["spec"]
    assert "failover" not in diff["after"][key]["spec"]
    assert diff["after"][key]["spec"]["placement"]["clusterTolerations"] == fp.HELD
    assert diff["after"][key]["metadata"]["annotations"]["platform.io/moved-from"] == "cloud-1"


def test_policies_that_are_not_a_jobs_are_left_alone():
    cluster = federation(roam="cloud-ok")
    tenant_policy = {
        "apiVersion": fp.POLICY_API,
        "kind": "PropagationPolicy",
        "metadata": {
            "name": "tenant",
            "namespace": NS,
            "labels": {"platform.io/managed-by": "gpucloud-platform"},
        },
        "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap"}]},
    }
    cluster.put(tenant_policy)
    cluster.put(binding("roam", ["cloud-1"]))
    result = run(cluster)
    assert result["policies"] == 1
    assert [o["name"] for o in result["objects"]] == ["roam"]


def test_nothing_to_do_says_so():
    result = run(FakeCluster())
    assert not result["changed"]
    assert flow.job_moves_summary({}, result, check_mode=False) == [
        "federated jobs: 0 jobs read, 0 jobs moved since the last run; job policies unchanged"
    ]


def test_namespaces_limit_the_jobs_looked_at():
    cluster = federation(roam="cloud-ok")
    cluster.put(binding("roam", ["cloud-1"]))
    assert run(cluster, namespaces=["tenant-beta"])["policies"] == 0
    assert cluster.real_writes == []
    assert run(cluster, namespaces=[NS])["policies"] == 1
