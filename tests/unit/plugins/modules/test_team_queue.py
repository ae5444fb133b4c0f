# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import pytest
from urllib3.exceptions import ProtocolError

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PartialWrite,
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants import service
from ansible_collections.gpucloud.platform.plugins.modules import team_queue
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.tenants.tenant_objects import (
    GPU,
    control_plane,
    podgroup,
)

QUEUE_LIST = ("ConfigMap", "tenant-a", "platform-queues")
QUEUE_READER = ("ClusterRole", "", "gpucloud-tenant-a-queues")


def tenant_without_teams():
    cluster = FakeCluster(control_plane())
    service.run_tenant(
        {
            "name": "a",
            "subscription": {GPU: 40, "cpu": 160, "memory": "640Gi"},
            "oversell_check": False,  # the fake cluster's one node has no GPUs
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
        service.run_team_queue(team(**over), cluster)
    assert field in [e.field for e in exc.value.errors], exc.value.messages
    assert cluster.writes == []


def test_add_resize_remove():
    cluster = tenant_without_teams()
    result = service.run_team_queue(team(), cluster)
    parents = {
        "kind": "ConfigMap",
        "name": "platform-parent-queues",
        "namespace": "platform-system",
    }
    queue_list = {"kind": "ConfigMap", "name": "platform-queues", "namespace": "tenant-a"}
    reader = {"kind": "ClusterRole", "name": "gpucloud-tenant-a-queues"}
    # the subscription queue is listed as a parent first, then gets its team; then the
    # tenant's queue list and queue reader name the team's queue
    assert result["objects"] == [
        {**parents, "action": "create"},
        {"kind": "Queue", "name": "tenant-a-ml", "action": "create"},
        {**queue_list, "action": "update"},
        {**reader, "action": "update"},
    ]
    # the subscription queue is a parent now: not a queue to name in a job
    assert cluster.store[QUEUE_LIST]["data"] == {
        "tenant-a-ml": "team",
        "tenant-a-payg": "payg",
        "tenant-a-spot": "spot",
    }
    assert "tenant-a-ml" in cluster.store[QUEUE_READER]["rules"][0]["resourceNames"]
    key = ("ConfigMap", "platform-system", "platform-parent-queues")
    assert cluster.store[key]["data"] == {"queues": "tenant-a-subscription"}
    q = cluster.kinds("Queue")["tenant-a-ml"]
    assert q["spec"]["parent"] == "tenant-a-subscription"
    assert q["metadata"]["labels"]["platform.io/team"] == "ml"
    assert service.run_team_queue(team(), cluster)["changed"] is False
    result = service.run_team_queue(team(deserved={GPU: 12}), cluster)
    assert result["diff"]["after"]["Queue/tenant-a-ml"]["spec"]["deserved"][GPU] == 12
    result = service.run_team_queue(team(state="absent"), cluster)
    # its last team gone, it is unlisted after the delete; a leaf again, it takes jobs
    assert result["objects"] == [
        {"kind": "Queue", "name": "tenant-a-ml", "action": "delete"},
        {**parents, "action": "update"},
        {**queue_list, "action": "update"},
        {**reader, "action": "update"},
    ]
    assert set(cluster.store[QUEUE_LIST]["data"]) == {
        "tenant-a-subscription",
        "tenant-a-payg",
        "tenant-a-spot",
    }
    assert "tenant-a-ml" not in cluster.store[QUEUE_READER]["rules"][0]["resourceNames"]
    assert cluster.store[key]["data"] == {"queues": ""}
    assert "tenant-a-ml" not in cluster.kinds("Queue")
    assert service.run_team_queue(team(state="absent"), cluster)["changed"] is False


def test_refuses_turning_busy_subscription_into_parent():
    cluster = tenant_without_teams()
    cluster.put(podgroup("tenant-a-subscription"))
    with pytest.raises(PlatformValidationError) as exc:
        service.run_team_queue(team(), cluster)
    assert "leaf queues" in str(exc.value)
    assert cluster.writes == []


def test_refuses_removing_busy_team_unless_forced():
    cluster = tenant_without_teams()
    service.run_team_queue(team(), cluster)
    cluster.put(podgroup("tenant-a-ml"))
    cluster.writes.clear()
    with pytest.raises(PlatformValidationError) as exc:
        service.run_team_queue(team(state="absent"), cluster)
    assert exc.value.errors[0].field == "team.name"
    assert cluster.writes == []
    service.run_team_queue(team(state="absent", force=True), cluster)
    assert "tenant-a-ml" not in cluster.kinds("Queue")


def test_unknown_tenant_refused():
    cluster = FakeCluster()
    with pytest.raises(PlatformValidationError) as exc:
        service.run_team_queue(team(tenant="nobody"), cluster)
    assert "create the tenant first" in str(exc.value)
    assert cluster.writes == []


def test_parent_allocation_of_its_teams_does_not_make_it_busy():
    """Volcano reports a parent queue's status.allocated as the sum of its
    children's: a job in a team queue must not block adding another team."""
    cluster = tenant_without_teams()
    service.run_team_queue(team(), cluster)
    used = {"allocated": {GPU: "1", "cpu": "1", "pods": "1"}}
    for name in ("tenant-a-subscription", "tenant-a-ml"):
        cluster.store[("Queue", "", name)]["status"] = dict(used)
    cluster.put(podgroup("tenant-a-ml"))
    result = service.run_team_queue(team(name="extra", deserved={GPU: 4}), cluster)
    assert {"kind": "Queue", "name": "tenant-a-extra", "action": "create"} in result["objects"]
    # the team queue itself still counts as busy: removing it is refused
    with pytest.raises(PlatformValidationError):
        service.run_team_queue(team(state="absent"), cluster)


class DroppedOnQueueWrites(FakeCluster):
    """The connection drops on every Queue write."""

    def apply(self, manifest, field_manager="gpucloud-platform"):
        if manifest["kind"] == "Queue":
            raise ProtocolError("Connection aborted.")
        return super().apply(manifest, field_manager)


def test_write_that_stops_after_the_parent_list_says_so():
    cluster = DroppedOnQueueWrites(tenant_without_teams().objects("Queue"))
    with pytest.raises(PartialWrite) as exc:
        service.run_team_queue(team(), cluster)
    assert exc.value.done == ["create ConfigMap/platform-system/platform-parent-queues"]
    assert exc.value.what == "writing team 'ml' of tenant 'a'"
    assert "tenant-a-ml" not in cluster.kinds("Queue")


def test_module_reports_a_partial_write_as_changed(run_module):
    cluster = DroppedOnQueueWrites(tenant_without_teams().objects("Queue"))
    result = run_module(team_queue, cluster, tenant="a", name="ml", deserved={GPU: 10})
    assert result["failed"] is True and result["changed"] is True
    assert result["msg"].startswith("writing team 'ml' of tenant 'a' failed after 1 change(s): ")
    assert result["done"] == ["create ConfigMap/platform-system/platform-parent-queues"]


# --------------------------------------------------------------------------
# The module
# --------------------------------------------------------------------------


def test_module_adds_a_team_and_reports_requests(run_module):
    cluster = tenant_without_teams()
    result = run_module(team_queue, cluster, tenant="a", name="ml", deserved={GPU: 10})
    assert result["changed"] is True
    assert {"kind": "Queue", "name": "tenant-a-ml", "action": "create"} in result["objects"]
    assert result["requests"] == cluster.requests > 0
    assert result["requests"] == (
        2  # list of the tenant's Queues and PodGroups
        + 1  # GET tenant-a-ml: is the name free (rule queue-name-owned)
        + 2  # GET and create of the parent-queues ConfigMap
        + 1  # apply of the team queue
        + 2  # GET and apply of the tenant's platform-queues ConfigMap
        + 2  # GET and apply of its queue-reader ClusterRole
    )
    assert "api_requests" not in result
    assert "tenant-a-ml" in cluster.kinds("Queue")


def test_module_check_mode_writes_nothing(run_module):
    cluster = tenant_without_teams()
    cluster.dry_run = True
    result = run_module(
        team_queue, cluster, _ansible_check_mode=True, tenant="a", name="ml", deserved={GPU: 10}
    )
    assert result["changed"] is True
    assert cluster.real_writes == []
    assert "tenant-a-ml" not in cluster.kinds("Queue")


def test_module_bad_team_fails_before_connecting(run_module):
    cluster = tenant_without_teams()
    result = run_module(team_queue, cluster, tenant="a", name="payg", deserved={GPU: 10})
    assert result["failed"] is True and result["changed"] is False
    assert result["errors"][0].startswith("name: ")
    assert result["requests"] == 0 and cluster.requests == 0


def test_module_rule_broken_against_live_queues_fails_with_the_field(run_module):
    cluster = tenant_without_teams()
    result = run_module(team_queue, cluster, tenant="a", name="ml", deserved={GPU: 50})
    assert result["failed"] is True and result["changed"] is False
    assert any(e.startswith(f"deserved.{GPU}: ") for e in result["errors"]), result["errors"]
    assert result["requests"] == cluster.requests > 0
    assert cluster.writes == []
