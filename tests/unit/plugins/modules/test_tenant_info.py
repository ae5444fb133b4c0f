# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants import service
from ansible_collections.gpucloud.platform.plugins.modules import tenant_info
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.tenants.tenant_objects import (
    GPU,
    control_plane,
)


def two_tenants():
    cluster = FakeCluster(control_plane())
    for name, gpus in (("a", 40), ("b", 8)):
        service.run_tenant(
            {
                "name": name,
                "subscription": {GPU: gpus, "cpu": 16, "memory": "64Gi"},
                "teams": [{"name": "ml", "deserved": {GPU: gpus // 2}}],
                "oversell_check": False,  # the fake cluster's one node has no GPUs
            },
            cluster,
        )
    cluster.store[("Queue", "", "tenant-a-ml")]["status"] = {
        "allocated": {GPU: "4", "pods": "1"},
        "state": "Open",
    }
    for phase, name in (("Running", "j1"), ("Completed", "j2"), ("Pending", "j3")):
        cluster.put(
            {
                "kind": "Job",
                "metadata": {"name": name, "namespace": "tenant-a"},
                "spec": {"queue": "tenant-a-ml"},
                "status": {"state": {"phase": phase}},
            }
        )
    cluster.lists.clear()
    cluster.requests = 0
    return cluster


def test_all_tenants_with_one_list_per_kind():
    cluster = two_tenants()
    result = service.INFO_FLOW.run({}, cluster, False)
    assert [t["name"] for t in result["tenants"]] == ["a", "b"]
    assert cluster.lists == ["Namespace", "Queue", "Job"]
    a = result["tenants"][0]
    assert a["namespace"] == "tenant-a"
    assert a["active_jobs"] == 2
    queues = {q["name"]: q for q in a["queues"]}
    assert queues["tenant-a-ml"]["allocated"] == {GPU: 4, "pods": 1}
    assert queues["tenant-a-ml"]["active_jobs"] == 2
    assert queues["tenant-a-subscription"]["deserved"][GPU] == 40
    assert a["queues"][-1]["parent"] == "tenant-a-subscription"


def test_one_tenant():
    cluster = two_tenants()
    result = service.INFO_FLOW.run({"name": "b"}, cluster, False)
    assert [t["name"] for t in result["tenants"]] == ["b"]
    assert result["tenants"][0]["active_jobs"] == 0
    assert cluster.requests == 3


def test_unknown_tenant_lists_no_jobs():
    cluster = two_tenants()
    result = service.INFO_FLOW.run({"name": "nobody"}, cluster, False)
    assert result == {"changed": False, "tenants": []}
    assert cluster.lists == ["Namespace", "Queue"]


def test_bad_name_is_refused_before_any_request():
    cluster = two_tenants()
    with pytest.raises(PlatformValidationError) as exc:
        service.INFO_FLOW.run({"name": "Bad_Name"}, cluster, False)
    assert exc.value.errors[0].field == "name"
    assert cluster.requests == 0


def test_module_reports_tenants_and_requests(run_module):
    cluster = two_tenants()
    result = run_module(tenant_info, cluster, name="a")
    assert result["changed"] is False
    assert [t["name"] for t in result["tenants"]] == ["a"]
    assert result["tenants"][0]["active_jobs"] == 2
    assert result["requests"] == 3
    assert "api_requests" not in result


def test_module_bad_name_fails_before_connecting(run_module):
    cluster = two_tenants()
    result = run_module(tenant_info, cluster, name="Bad_Name")
    assert result["failed"] is True
    assert result["errors"][0].startswith("name: ")
    assert result["requests"] == 0


def test_the_module_returns_the_table_a_person_reads(run_module):
    out = run_module(tenant_info, two_tenants())
    assert out["summary"][0].startswith("2 tenant(s), 8 queue(s), 2 active Volcano Job(s)")
    rows = [line.split() for line in out["summary"][2:]]
    ml = next(r for r in rows if "ml" in r)  # tenant a's team queue, a listed first
    assert "4/20/-" in ml  # GPUs as whole numbers: allocated/deserved/capability
    assert any("16/16" in " ".join(r) and "64Gi/64Gi" in " ".join(r) for r in rows)
