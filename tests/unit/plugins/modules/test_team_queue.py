# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.modules import team_queue, tenant

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_cluster import FakeCluster

GPU = "nvidia.com/gpu"


def tenant_without_teams():
    cluster = FakeCluster()
    tenant.run(
        {
            "name": "a",
            "subscription": {GPU: 40, "cpu": 160, "memory": "640Gi"},
            "oversell_check": False,  # the fake cluster has no nodes
        },
        cluster,
    )
    cluster.writes.clear()
    return cluster


def team(**over):
    p = {
        "tenant": "a",
        "name": "ml",
        "state": "present",
        "deserved": {GPU: 10},
        "capability": None,
        "guarantee": None,
        "force": False,
    }
    p.update(over)
    return p


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"name": "payg"}, "name"),
        ({"name": "ML"}, "name"),
        ({"tenant": "A"}, "tenant"),
        ({"deserved": {GPU: -1}}, f"deserved.{GPU}"),
        ({"deserved": {"gpu": 1}}, "deserved.gpu"),
        ({"deserved": {GPU: 50}}, f"deserved.{GPU}"),
        ({"capability": {GPU: 41}}, f"capability.{GPU}"),
        ({"deserved": {GPU: 5}, "capability": {GPU: 4}}, f"deserved.{GPU}"),
        ({"guarantee": {GPU: 1}}, f"guarantee.{GPU}"),
    ],
)
def test_bad_team_writes_nothing(over, field):
    cluster = tenant_without_teams()
    with pytest.raises(PlatformValidationError) as exc:
        team_queue.run(team(**over), cluster)
    assert field in [e.field for e in exc.value.errors], exc.value.messages
    assert cluster.writes == []


def test_add_resize_remove():
    cluster = tenant_without_teams()
    result = team_queue.run(team(), cluster)
    parents = {
        "kind": "ConfigMap",
        "name": "platform-parent-queues",
        "namespace": "platform-system",
    }
    # the subscription queue is listed as a parent first, then gets its team
    assert result["objects"] == [
        {**parents, "action": "create"},
        {"kind": "Queue", "name": "tenant-a-ml", "action": "create"},
    ]
    key = ("ConfigMap", "platform-system", "platform-parent-queues")
    assert cluster.store[key]["data"] == {"queues": "tenant-a-subscription"}
    q = cluster.kinds("Queue")["tenant-a-ml"]
    assert q["spec"]["parent"] == "tenant-a-subscription"
    assert q["metadata"]["labels"]["platform.io/team"] == "ml"
    assert team_queue.run(team(), cluster)["changed"] is False
    result = team_queue.run(team(deserved={GPU: 12}), cluster)
    assert result["diff"]["after"]["Queue/tenant-a-ml"]["spec"]["deserved"][GPU] == 12
    result = team_queue.run(team(state="absent"), cluster)
    # its last team gone, it is unlisted after the delete
    assert result["objects"] == [
        {"kind": "Queue", "name": "tenant-a-ml", "action": "delete"},
        {**parents, "action": "update"},
    ]
    assert cluster.store[key]["data"] == {"queues": ""}
    assert "tenant-a-ml" not in cluster.kinds("Queue")
    assert team_queue.run(team(state="absent"), cluster)["changed"] is False


def pg(queue):
    return {
        "kind": "PodGroup",
        "metadata": {"name": "pg", "namespace": "tenant-a"},
        "spec": {"queue": queue},
        "status": {"phase": "Running"},
    }


def test_refuses_turning_busy_subscription_into_parent():
    cluster = tenant_without_teams()
    cluster.put(pg("tenant-a-subscription"))
    with pytest.raises(PlatformValidationError) as exc:
        team_queue.run(team(), cluster)
    assert "leaf queues" in str(exc.value)
    assert cluster.writes == []


def test_refuses_removing_busy_team_unless_forced():
    cluster = tenant_without_teams()
    team_queue.run(team(), cluster)
    cluster.put(pg("tenant-a-ml"))
    cluster.writes.clear()
    with pytest.raises(PlatformValidationError) as exc:
        team_queue.run(team(state="absent"), cluster)
    assert exc.value.errors[0].field == "team.name"
    assert cluster.writes == []
    team_queue.run(team(state="absent", force=True), cluster)
    assert "tenant-a-ml" not in cluster.kinds("Queue")


def test_unknown_tenant_refused():
    cluster = FakeCluster()
    with pytest.raises(PlatformValidationError) as exc:
        team_queue.run(team(tenant="nobody"), cluster)
    assert "create the tenant first" in str(exc.value)
    assert cluster.writes == []


def test_parent_allocation_of_its_teams_does_not_make_it_busy():
    """Volcano reports a parent queue's status.allocated as the sum of its
    children's: a job in a team queue must not block adding another team."""
    cluster = tenant_without_teams()
    team_queue.run(team(), cluster)
    used = {"allocated": {GPU: "1", "cpu": "1", "pods": "1"}}
    for name in ("tenant-a-subscription", "tenant-a-ml"):
        cluster.store[("Queue", "", name)]["status"] = dict(used)
    cluster.put(pg("tenant-a-ml"))
    result = team_queue.run(team(name="extra", deserved={GPU: 4}), cluster)
    assert {"kind": "Queue", "name": "tenant-a-extra", "action": "create"} in result["objects"]
    # the team queue itself still counts as busy: removing it is refused
    with pytest.raises(PlatformValidationError):
        team_queue.run(team(state="absent"), cluster)
