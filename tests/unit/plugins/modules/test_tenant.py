# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.modules import tenant

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_cluster import FakeCluster

GPU = "nvidia.com/gpu"
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "module_utils"))
from test_tenant_spec import BAD  # noqa: E402


def params(**over):
    p = {
        "name": "a",
        "state": "present",
        "subscription": {GPU: 40, "cpu": 160, "memory": "640Gi"},
        "teams": [
            {"name": "algo", "deserved": {GPU: 20}, "capability": {GPU: 40}, "guarantee": None},
            {"name": "eng", "deserved": {GPU: 10}, "capability": None, "guarantee": None},
            {"name": "data", "deserved": {GPU: 10}, "capability": None, "guarantee": None},
        ],
        "subjects": None,
        "egress_cidrs": ["0.0.0.0/0"],
        "pod_cidr": "10.244.0.0/16",
        "service_cidr": "10.96.0.0/12",
        "force": False,
        "wait": False,
        "wait_timeout": 120,
    }
    p.update(over)
    return p


def created():
    cluster = FakeCluster()
    tenant.run(params(), cluster)
    return cluster


@pytest.mark.parametrize(("what", "bad", "field"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_writes_nothing(what, bad, field):
    cluster = FakeCluster()
    full = params(**dict(bad))
    with pytest.raises(PlatformValidationError) as exc:
        tenant.run(full, cluster)
    assert any(m.startswith(f"{field}: ") for m in exc.value.messages), exc.value.messages
    assert cluster.writes == []


def test_bad_input_on_existing_tenant_writes_nothing():
    cluster = created()
    before = copy.deepcopy(cluster.store)
    cluster.writes.clear()
    bad = params(
        teams=[{"name": "algo", "deserved": {GPU: 50}, "capability": None, "guarantee": None}]
    )
    with pytest.raises(PlatformValidationError) as exc:
        tenant.run(bad, cluster)
    assert exc.value.errors[0].field == f"teams[0].deserved.{GPU}"
    assert cluster.writes == []
    assert cluster.store == before


def test_create_writes_everything_in_order():
    cluster = FakeCluster()
    result = tenant.run(params(), cluster)
    assert result["changed"]
    order = list(cluster.writes)
    # The subscription queue is listed as a parent before its teams exist.
    assert order[0] == ("create", "ConfigMap", "platform-parent-queues")
    assert order[1] == ("apply", "Namespace", "tenant-a")
    parents = cluster.store[("ConfigMap", "platform-system", "platform-parent-queues")]
    assert parents["data"] == {"queues": "tenant-a-subscription"}
    names = [name for _unused, _unused, name in order]
    assert names.index("tenant-a-subscription") < names.index("tenant-a-algo")
    assert ("apply:gpucloud-platform-capacity", "Queue", "tenant-a-spot") in order
    assert order.index(
        ("apply:gpucloud-platform-capacity", "Queue", "tenant-a-spot")
    ) < order.index(("apply", "Queue", "tenant-a-spot"))
    queues = cluster.kinds("Queue")
    assert set(queues) == {
        f"tenant-a-{n}" for n in ("subscription", "payg", "spot", "algo", "eng", "data")
    }
    assert all(q["spec"]["parent"] for q in queues.values())
    assert queues["tenant-a-spot"]["spec"]["capability"] == {GPU: 0}
    assert {o["kind"] for o in result["objects"]} == {
        "ConfigMap",
        "Namespace",
        "Role",
        "RoleBinding",
        "NetworkPolicy",
        "Queue",
    }
    assert cluster.lists.count("Queue") == 1


def test_second_run_changes_nothing():
    cluster = created()
    cluster.writes.clear()
    result = tenant.run(params(), cluster)
    assert result["changed"] is False
    assert result["objects"] == []
    assert cluster.writes == []


def test_spot_capability_set_by_recompute_survives():
    cluster = created()
    cluster.store[("Queue", "", "tenant-a-spot")]["spec"]["capability"] = {GPU: 12}
    cluster.writes.clear()
    result = tenant.run(params(), cluster)
    assert result["changed"] is False
    assert cluster.kinds("Queue")["tenant-a-spot"]["spec"]["capability"] == {GPU: 12}


def test_check_mode_reports_but_only_dry_runs():
    cluster = FakeCluster(dry_run=True)
    result = tenant.run(params(), cluster, check_mode=True)
    assert result["changed"]
    assert cluster.real_writes == []
    assert cluster.store == {}
    # nothing namespaced is sent while its namespace does not exist yet
    assert all(
        kind in ("Namespace", "Queue", "ConfigMap") for _unused, kind, _unused in cluster.writes
    )
    assert ("dry-run", "ConfigMap", "platform-parent-queues") in cluster.writes
    assert "Queue/tenant-a-subscription" in result["diff"]["after"]


def test_diff_shows_a_resize():
    cluster = created()
    result = tenant.run(params(subscription={GPU: 48, "cpu": 160, "memory": "640Gi"}), cluster)
    diff = result["diff"]
    key = "Queue/tenant-a-subscription"
    assert diff["before"][key]["spec"]["deserved"][GPU] == 40
    assert diff["after"][key]["spec"]["deserved"][GPU] == 48
    assert result["objects"] == [
        {"kind": "Queue", "name": "tenant-a-subscription", "action": "update"}
    ]


def test_capability_below_allocated_refused_then_forced():
    cluster = created()
    cluster.store[("Queue", "", "tenant-a-algo")]["status"] = {"allocated": {GPU: "30"}}
    teams = params()["teams"]
    teams[0] = dict(teams[0], capability={GPU: 24})
    cluster.writes.clear()
    with pytest.raises(PlatformValidationError) as exc:
        tenant.run(params(teams=teams), cluster)
    assert "24 is below the 30" in str(exc.value)
    assert cluster.writes == []
    tenant.run(params(teams=teams, force=True), cluster)
    assert cluster.kinds("Queue")["tenant-a-algo"]["spec"]["capability"] == {GPU: 24}


def podgroup(queue, phase="Running"):
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": f"pg-{queue}", "namespace": "tenant-a"},
        "spec": {"queue": queue},
        "status": {"phase": phase},
    }


def test_removing_busy_team_refused():
    cluster = created()
    cluster.put(podgroup("tenant-a-data"))
    cluster.writes.clear()
    with pytest.raises(PlatformValidationError):
        tenant.run(params(teams=params()["teams"][:2]), cluster)
    assert cluster.writes == []
    cluster.put(podgroup("tenant-a-data", phase="Completed"))
    result = tenant.run(params(teams=params()["teams"][:2]), cluster)
    assert {"kind": "Queue", "name": "tenant-a-data", "action": "delete"} in result["objects"]
    assert "tenant-a-data" not in cluster.kinds("Queue")


def vcjob(phase="Running"):
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "tenant-a"},
        "spec": {"queue": "tenant-a-algo"},
        "status": {"state": {"phase": phase}},
    }


def test_absent_refused_while_jobs_run():
    cluster = created()
    cluster.put(vcjob())
    cluster.writes.clear()
    with pytest.raises(tenant.Refused) as exc:
        tenant.run({"name": "a", "state": "absent", "force": False}, cluster)
    assert "1 active Volcano Job" in str(exc.value)
    assert exc.value.extra["running"] == {"jobs": 1, "pods": 0}
    assert cluster.writes == []


def test_absent_forced_deletes_children_first_namespace_last():
    cluster = created()
    cluster.put(vcjob())
    cluster.writes.clear()
    result = tenant.run({"name": "a", "state": "absent", "force": True}, cluster)
    assert result["changed"]
    kinds = [kind for _unused, kind, _unused in cluster.writes]
    names = [name for _unused, _unused, name in cluster.writes]
    assert kinds[0] == "Job"
    assert kinds[-1] == "Namespace"
    assert max(names.index(f"tenant-a-{t}") for t in ("algo", "eng", "data")) < names.index(
        "tenant-a-subscription"
    )
    assert kinds.index("RoleBinding") > names.index("tenant-a-spot")
    # unlisted as a parent after its queues are gone
    assert names.index("platform-parent-queues") > names.index("tenant-a-subscription")
    parents = cluster.store.pop(("ConfigMap", "platform-system", "platform-parent-queues"))
    assert parents["data"] == {"queues": ""}
    assert not [k for k in cluster.store if k[0] != "Job"]


def test_absent_of_missing_tenant_changes_nothing():
    cluster = FakeCluster()
    result = tenant.run({"name": "a", "state": "absent"}, cluster)
    assert result["changed"] is False
    assert cluster.writes == []


def test_absent_check_mode_writes_nothing():
    cluster = created()
    cluster.writes.clear()
    cluster.dry_run = True
    result = tenant.run({"name": "a", "state": "absent", "force": True}, cluster, check_mode=True)
    assert result["changed"]
    assert cluster.writes == [("dry-run", "ConfigMap", "platform-parent-queues")]


def test_reads_one_list_per_kind():
    cluster = created()
    cluster.lists.clear()
    tenant.run(params(), cluster)
    assert sorted(cluster.lists) == sorted(
        ["Namespace", "Role", "RoleBinding", "NetworkPolicy", "Queue", "PodGroup"]
    )


def test_new_tenant_skips_namespaced_reads():
    cluster = FakeCluster()
    tenant.run(params(), cluster)
    assert cluster.lists == ["Namespace", "Queue"]


PARENTS = ("ConfigMap", "platform-system", "platform-parent-queues")


def parent_list(queues: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "platform-parent-queues",
            "namespace": "platform-system",
            "resourceVersion": "7",
        },
        "data": {"queues": queues},
    }


def test_parent_queues_keep_other_tenants_and_write_only_on_change():
    cluster = FakeCluster([parent_list("tenant-z-subscription")])
    tenant.run(params(), cluster)
    assert cluster.store[PARENTS]["data"]["queues"] == "tenant-a-subscription,tenant-z-subscription"
    cluster.writes.clear()
    assert tenant.run(params(), cluster)["changed"] is False
    assert not [w for w in cluster.writes if w[1] == "ConfigMap"]
    # Without teams the subscription queue is a leaf again: unlisted after the teams are removed.
    result = tenant.run(params(teams=[]), cluster, check_mode=False)
    assert {
        "kind": "ConfigMap",
        "name": "platform-parent-queues",
        "action": "update",
        "namespace": "platform-system",
    } in result["objects"]
    assert cluster.store[PARENTS]["data"]["queues"] == "tenant-z-subscription"
    names = [name for _unused, _unused, name in cluster.writes]
    assert names.index("platform-parent-queues") > names.index("tenant-a-algo")


def test_tenant_without_teams_is_not_listed():
    cluster = FakeCluster([parent_list("")])
    tenant.run(params(teams=None), cluster)
    assert cluster.store[PARENTS]["data"]["queues"] == ""
    assert not [w for w in cluster.writes if w[1] == "ConfigMap"]
