# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What keeps one tenant from another besides the NetworkPolicy: the namespace's Pod
Security and critical-job labels, the queue list the queue policies read, the queue
reader, and queue names no other tenant has; and how the tenant modules keep them."""

from __future__ import annotations

import copy
import json

import pytest
from kubernetes.client.rest import ApiException
from kubernetes.dynamic.exceptions import ForbiddenError, ResourceNotFoundError

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    tenant_labels,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants import (
    read_io,
    service,
    write_io,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.changes import Changes
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.plan import (
    plan_tenant,
    tenant_namespace,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.rbac import queue_reader
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.spec import (
    parse_tenant_spec,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.tenant_queues import (
    leaf_queue_types,
    queue_name_collisions,
)
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.tenants.tenant_objects import (
    GPU,
    METADATA,
    control_plane,
    foreign_queue,
    networks_of,
    node,
    pool,
    service_cidr,
    tenant_params,
)

NETWORKS = networks_of(control_plane())
QUEUE_LIST = ("ConfigMap", "tenant-a", "platform-queues")
READER = ("ClusterRole", "", "gpucloud-tenant-a-queues")
READER_BINDING = ("ClusterRoleBinding", "", "gpucloud-tenant-a-queues")


def plan(**params):
    spec = parse_tenant_spec({"name": "a", "subscription": {GPU: 8}, **params})
    return plan_tenant(spec, {}, discovered=NETWORKS)


def by_kind(objects):
    return {o["kind"]: o for o in objects}


def teams(*names):
    return [{"name": n, "deserved": {GPU: 1}} for n in names]


# --------------------------------------------------------------------------
# The namespace (rule tenant-namespace)
# --------------------------------------------------------------------------


def test_namespace_enforces_baseline_and_warns_about_restricted():
    ns = tenant_namespace("a")
    assert ns["metadata"]["name"] == "tenant-a"
    assert ns["metadata"]["labels"] == {
        **tenant_labels("a"),
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/enforce-version": "v1.35",
        "pod-security.kubernetes.io/audit": "restricted",
        "pod-security.kubernetes.io/audit-version": "v1.35",
        "pod-security.kubernetes.io/warn": "restricted",
        "pod-security.kubernetes.io/warn-version": "v1.35",
        "platform.io/allow-critical": "false",
    }


def test_allow_critical_is_always_said_so_that_turning_it_off_is_a_change():
    assert tenant_namespace("a", True)["metadata"]["labels"]["platform.io/allow-critical"] == "true"
    on = plan(allow_critical=True).namespace["metadata"]["labels"]
    off = plan().namespace["metadata"]["labels"]
    assert on["platform.io/allow-critical"] == "true"
    assert off["platform.io/allow-critical"] == "false"


def test_module_turns_allow_critical_on_and_off():
    cluster = pool()
    service.run_tenant(tenant_params(), cluster)
    result = service.run_tenant(tenant_params(allow_critical=True), cluster)
    assert result["objects"] == [{"kind": "Namespace", "name": "tenant-a", "action": "update"}]
    labels = cluster.store[("Namespace", "", "tenant-a")]["metadata"]["labels"]
    assert labels["platform.io/allow-critical"] == "true"
    service.run_tenant(tenant_params(), cluster)
    labels = cluster.store[("Namespace", "", "tenant-a")]["metadata"]["labels"]
    assert labels["platform.io/allow-critical"] == "false"


# --------------------------------------------------------------------------
# The queue list (rule queue-ownership: the leaf queues the admission policies read)
# --------------------------------------------------------------------------


def test_a_subscription_with_teams_is_no_leaf():
    queues = plan(subscription={GPU: 8}, teams=teams("ml", "cv")).queues
    assert leaf_queue_types(queues) == {
        "tenant-a-payg": "payg",
        "tenant-a-spot": "spot",
        "tenant-a-ml": "team",
        "tenant-a-cv": "team",
    }


def test_a_subscription_without_teams_is_a_leaf():
    queues = plan().queues
    assert leaf_queue_types(queues) == {
        "tenant-a-subscription": "subscription",
        "tenant-a-payg": "payg",
        "tenant-a-spot": "spot",
    }


def test_queue_list_is_a_configmap_in_the_tenant_namespace():
    cm = by_kind(plan(teams=teams("ml")).objects)["ConfigMap"]
    assert cm["metadata"] == {
        "name": "platform-queues",
        "namespace": "tenant-a",
        "labels": tenant_labels("a"),
    }
    assert cm["data"] == {"tenant-a-ml": "team", "tenant-a-payg": "payg", "tenant-a-spot": "spot"}


# --------------------------------------------------------------------------
# The queue reader (rule tenant-reads-own-queues)
# --------------------------------------------------------------------------


def test_queue_reader_gets_and_watches_exactly_the_tenants_queues():
    planned = plan(teams=teams("ml"))
    objects = by_kind(planned.objects)
    role = objects["ClusterRole"]
    assert role["metadata"] == {"name": "gpucloud-tenant-a-queues", "labels": tenant_labels("a")}
    [rule] = role["rules"]
    assert rule == {
        "apiGroups": ["scheduling.volcano.sh"],
        "resources": ["queues"],
        "resourceNames": sorted(q.name for q in planned.queues),
        "verbs": ["get", "watch"],
    }
    # every queue of the tenant, the parent among them, and nothing else (no list: it would
    # show every tenant's queues)
    assert set(rule["resourceNames"]) == {
        "tenant-a-subscription",
        "tenant-a-payg",
        "tenant-a-spot",
        "tenant-a-ml",
    }


def test_queue_reader_binds_the_role_bindings_subjects():
    subjects = [
        {"kind": "Group", "name": "team-a"},
        {"kind": "User", "name": "alice"},
        {"kind": "ServiceAccount", "name": "ci"},
        {"kind": "ServiceAccount", "name": "deployer", "namespace": "platform-ci"},
    ]
    objects = by_kind(plan(subjects=subjects).objects)
    binding = objects["ClusterRoleBinding"]
    assert binding["subjects"] == objects["RoleBinding"]["subjects"]
    assert {"kind": "ServiceAccount", "name": "ci", "namespace": "tenant-a"} in binding["subjects"]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "gpucloud-tenant-a-queues",
    }
    assert binding["metadata"] == {"name": "gpucloud-tenant-a-queues", "labels": tenant_labels("a")}


def test_queue_reader_names_are_sorted_whatever_the_order_given():
    role, _binding = queue_reader("a", [], ["tenant-a-z", "tenant-a-b"])
    assert role["rules"][0]["resourceNames"] == ["tenant-a-b", "tenant-a-z"]


# --------------------------------------------------------------------------
# Queue names (rule queue-name-owned)
# --------------------------------------------------------------------------


def pa_queues():
    spec = parse_tenant_spec({"name": "pa", "subscription": {GPU: 8}, "teams": teams("b-x")})
    return plan_tenant(spec, {}, discovered=NETWORKS).queues


def test_a_queue_of_another_tenant_of_the_same_name_is_refused_naming_the_field():
    # tenant pa's team b-x and tenant pa-b's team x are both tenant-pa-b-x
    found = {"tenant-pa-b-x": foreign_queue("tenant-pa-b-x", "pa-b")}
    [error] = queue_name_collisions("pa", pa_queues(), found)
    assert error.field == "teams[0]"
    assert error.message == (
        "makes queue tenant-pa-b-x, which already exists and belongs to tenant 'pa-b'; "
        "choose another name"
    )


def test_a_queue_of_no_tenant_is_refused_too():
    found = {"tenant-pa-b-x": foreign_queue("tenant-pa-b-x", None)}
    [error] = queue_name_collisions("pa", pa_queues(), found)
    assert "belongs to no tenant of the platform" in error.message


def test_nothing_found_is_no_collision():
    assert queue_name_collisions("pa", pa_queues(), {}) == []


class GetRecorder(FakeCluster):
    """Records every GET as (kind, name)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.gets = []

    def get(self, api_version, kind, name, namespace=None):
        self.gets.append((kind, name))
        return super().get(api_version, kind, name, namespace)


def queue_gets(cluster):
    return [name for kind, name in cluster.gets if kind == "Queue"]


def pa_and_pa_b(cluster_class=FakeCluster):
    cluster = pool(cluster_class=cluster_class)
    service.run_tenant(tenant_params(name="pa-b", teams=teams("x"), oversell_check=False), cluster)
    cluster.writes.clear()
    return cluster


def test_tenant_module_refuses_a_queue_another_tenant_has_and_writes_nothing():
    cluster = pa_and_pa_b()
    before = copy.deepcopy(cluster.store)
    with pytest.raises(PlatformValidationError) as exc:
        service.run_tenant(tenant_params(name="pa", teams=teams("b-x")), cluster)
    assert [e.field for e in exc.value.errors] == ["teams[0]"]
    assert "belongs to tenant 'pa-b'" in exc.value.messages[0]
    assert cluster.writes == [] and cluster.store == before


def test_queue_names_are_looked_up_once_per_new_queue_and_never_on_a_re_run():
    cluster = pool(cluster_class=GetRecorder)
    service.run_tenant(tenant_params(), cluster)
    # one GET per queue the tenant is to get
    assert sorted(queue_gets(cluster)) == sorted(
        f"tenant-a-{q}" for q in ("subscription", "payg", "spot", "algo", "eng", "data")
    )
    cluster.gets.clear()
    service.run_tenant(tenant_params(), cluster)
    assert queue_gets(cluster) == []
    # a new team: one GET, for its queue
    params = tenant_params()
    params["teams"] = [*params["teams"], {"name": "new", "deserved": {GPU: 0}}]
    service.run_tenant(params, cluster)
    assert queue_gets(cluster) == ["tenant-a-new"]


def test_check_queue_names_free_gets_only_what_the_tenant_lacks():
    cluster = GetRecorder([foreign_queue("tenant-pa-b-x", "pa-b")])
    queues = pa_queues()
    live = {q.name: q.to_manifest() for q in queues if q.name != "tenant-pa-b-x"}
    with pytest.raises(PlatformValidationError) as exc:
        read_io.check_queue_names_free(cluster, "pa", queues, live)
    assert cluster.gets == [("Queue", "tenant-pa-b-x")]
    assert exc.value.errors[0].field == "teams[0]"
    cluster.gets.clear()
    read_io.check_queue_names_free(cluster, "pa", queues[:3], {})  # no collision: returns
    assert len(cluster.gets) == 3


def test_team_queue_refuses_a_queue_another_tenant_has_and_writes_nothing():
    cluster = pa_and_pa_b(GetRecorder)
    service.run_tenant(tenant_params(name="pa", teams=None, oversell_check=False), cluster)
    cluster.writes.clear()
    theirs = copy.deepcopy(cluster.store[("Queue", "", "tenant-pa-b-x")])
    with pytest.raises(PlatformValidationError) as exc:
        service.run_team_queue(
            {"tenant": "pa", "name": "b-x", "deserved": {GPU: 1}, "state": "present"}, cluster
        )
    assert [e.field for e in exc.value.errors] == ["name"]
    assert "belongs to tenant 'pa-b'" in exc.value.messages[0]
    assert cluster.writes == []
    assert cluster.store[("Queue", "", "tenant-pa-b-x")] == theirs


# --------------------------------------------------------------------------
# team_queue keeps the queue list and the queue reader in step
# --------------------------------------------------------------------------


def team(name="ml", **over):
    return {"tenant": "a", "name": name, "state": "present", "deserved": {GPU: 4}, **over}


def tenant_a(cluster_class=FakeCluster, **over):
    cluster = cluster_class(control_plane())
    params = tenant_params(teams=None, oversell_check=False, **over)
    service.run_tenant(params, cluster)
    cluster.writes.clear()
    return cluster


def access_writes(cluster):
    return [w for w in cluster.writes if w[2] in ("platform-queues", "gpucloud-tenant-a-queues")]


def test_adding_a_team_updates_the_queue_list_and_the_queue_reader():
    cluster = tenant_a()
    binding = copy.deepcopy(cluster.store[READER_BINDING])
    service.run_team_queue(team(), cluster)
    assert access_writes(cluster) == [
        ("apply", "ConfigMap", "platform-queues"),
        ("apply", "ClusterRole", "gpucloud-tenant-a-queues"),
    ]
    # after the queue: a job can name it only once it exists
    names = [name for _unused, _unused, name in cluster.writes]
    assert names.index("tenant-a-ml") < names.index("platform-queues")
    assert cluster.store[QUEUE_LIST]["data"] == {
        "tenant-a-ml": "team",
        "tenant-a-payg": "payg",
        "tenant-a-spot": "spot",
    }
    assert cluster.store[READER]["rules"][0]["resourceNames"] == [
        "tenant-a-ml",
        "tenant-a-payg",
        "tenant-a-spot",
        "tenant-a-subscription",
    ]
    assert cluster.store[READER_BINDING] == binding  # the binding is the tenant module's


def test_what_team_queue_writes_is_what_the_tenant_module_plans():
    cluster = tenant_a()
    service.run_team_queue(team(), cluster)
    cluster.writes.clear()
    result = service.run_tenant(
        tenant_params(teams=[{"name": "ml", "deserved": {GPU: 4}}]), cluster
    )
    assert result["changed"] is False and cluster.writes == []


def test_a_resize_leaves_the_queue_list_and_the_queue_reader_alone():
    cluster = tenant_a(GetRecorder)
    service.run_team_queue(team(), cluster)
    cluster.writes.clear()
    cluster.gets.clear()
    result = service.run_team_queue(team(deserved={GPU: 6}), cluster)
    assert result["objects"] == [{"kind": "Queue", "name": "tenant-a-ml", "action": "update"}]
    assert access_writes(cluster) == []
    # read (one GET each), found in step, not written
    assert ("ConfigMap", "platform-queues") in cluster.gets
    assert ("ClusterRole", "gpucloud-tenant-a-queues") in cluster.gets


def test_sync_queue_access_in_step_changes_nothing():
    cluster = tenant_a()
    queues = plan_tenant(
        parse_tenant_spec(tenant_params(teams=None)), {}, discovered=NETWORKS
    ).queues
    changes = Changes()
    cluster.requests = 0
    write_io.sync_queue_access(cluster, "a", queues, changes, check_mode=False)
    assert cluster.writes == [] and changes.objects == [] and changes.done == []
    assert cluster.requests == 2  # a GET each


def test_check_mode_sends_only_dry_runs():
    cluster = tenant_a()
    before = copy.deepcopy(cluster.store)
    cluster.dry_run = True
    result = service.run_team_queue(team(), cluster, check_mode=True)
    assert cluster.real_writes == []
    assert cluster.store == before
    assert {
        "kind": "ConfigMap",
        "name": "platform-queues",
        "namespace": "tenant-a",
        "action": "update",
    } in result["objects"]
    assert {
        "kind": "ClusterRole",
        "name": "gpucloud-tenant-a-queues",
        "action": "update",
    } in result["objects"]
    assert ("dry-run", "ClusterRole", "gpucloud-tenant-a-queues") in cluster.writes
    after = result["diff"]["after"]["ConfigMap/tenant-a/platform-queues"]["data"]
    assert "tenant-a-ml" in after


def test_removing_one_team_unlists_its_queue():
    cluster = tenant_a()
    for name in ("ml", "cv"):
        service.run_team_queue(team(name), cluster)
    result = service.run_team_queue(team("cv", state="absent"), cluster)
    assert {
        "kind": "ConfigMap",
        "name": "platform-queues",
        "namespace": "tenant-a",
        "action": "update",
    } in result["objects"]
    # else the tenant could name tenant-a-cv, whoever has that queue next
    assert cluster.store[QUEUE_LIST]["data"] == {
        "tenant-a-ml": "team",
        "tenant-a-payg": "payg",
        "tenant-a-spot": "spot",
    }
    assert "tenant-a-cv" not in cluster.store[READER]["rules"][0]["resourceNames"]


def test_tenant_module_removing_one_team_unlists_its_queue():
    cluster = pool()
    service.run_tenant(tenant_params(), cluster)
    result = service.run_tenant(tenant_params(teams=tenant_params()["teams"][:2]), cluster)
    assert {
        "kind": "ConfigMap",
        "name": "platform-queues",
        "namespace": "tenant-a",
        "action": "update",
    } in result["objects"]
    assert set(cluster.store[QUEUE_LIST]["data"]) == {
        "tenant-a-algo",
        "tenant-a-eng",
        "tenant-a-payg",
        "tenant-a-spot",
    }
    assert (
        service.run_tenant(tenant_params(teams=tenant_params()["teams"][:2]), cluster)["changed"]
        is False
    )


# --------------------------------------------------------------------------
# Reading the cluster's networks
# --------------------------------------------------------------------------


def test_tenant_module_writes_the_policy_the_cluster_networks_make():
    cluster = pool(nodes=2)
    service.run_tenant(tenant_params(oversell_check=False), cluster)
    policy = cluster.store[("NetworkPolicy", "tenant-a", "deny-cross-tenant")]
    assert policy["spec"]["egress"][2]["to"] == [
        {
            "ipBlock": {
                "cidr": "0.0.0.0/0",
                "except": ["10.96.0.0/12", "10.244.0.0/23", METADATA, "172.18.0.2/31"],
            }
        }
    ]
    result = service.run_tenant(
        tenant_params(oversell_check=False, egress_to_nodes=True, egress_to_metadata=True), cluster
    )
    assert result["objects"] == [
        {
            "kind": "NetworkPolicy",
            "name": "deny-cross-tenant",
            "namespace": "tenant-a",
            "action": "update",
        }
    ]
    policy = cluster.store[("NetworkPolicy", "tenant-a", "deny-cross-tenant")]
    assert policy["spec"]["egress"][2]["to"][0]["ipBlock"]["except"] == [
        "10.96.0.0/12",
        "10.244.0.0/23",
    ]


def test_given_service_cidr_skips_the_service_cidr_list():
    cluster = pool()
    service.run_tenant(tenant_params(service_cidr="10.100.0.0/16"), cluster)
    assert "ServiceCIDR" not in cluster.lists
    assert cluster.lists.count("Node") == 2  # the cluster networks, the oversell guard


def test_egress_into_the_discovered_pod_network_is_refused_before_any_write():
    cluster = pool()
    with pytest.raises(PlatformValidationError) as exc:
        service.run_tenant(tenant_params(egress_cidrs=["10.244.1.0/24"]), cluster)
    assert [e.field for e in exc.value.errors] == ["egress_cidrs[0]"]
    assert cluster.writes == []


def test_a_cluster_without_pod_cidrs_needs_pod_cidr():
    bare = node("n0")
    del bare["spec"]["podCIDR"], bare["spec"]["podCIDRs"]
    cluster = FakeCluster([bare, service_cidr()])
    with pytest.raises(PlatformValidationError) as exc:
        service.run_tenant(tenant_params(teams=None, oversell_check=False), cluster)
    assert [e.field for e in exc.value.errors] == ["pod_cidr"]
    assert cluster.writes == []
    service.run_tenant(
        tenant_params(teams=None, oversell_check=False, pod_cidr="10.244.0.0/16"), cluster
    )
    assert "tenant-a" in cluster.kinds("Namespace")


class NoServiceCIDRs(FakeCluster):
    """An API server that does not serve networking.k8s.io/v1 ServiceCIDR."""

    def list(self, api_version, kind, *args, **kwargs):
        if kind == "ServiceCIDR":
            self.requests += 1
            raise ResourceNotFoundError(f"No matches found for {{'kind': '{kind}'}}")
        return super().list(api_version, kind, *args, **kwargs)


class ForbiddenServiceCIDRs(FakeCluster):
    """An API server that does not let the platform list ServiceCIDRs."""

    def list(self, api_version, kind, *args, **kwargs):
        if kind == "ServiceCIDR":
            exc = ApiException(status=403, reason="Forbidden")
            exc.body = json.dumps({"message": "servicecidrs is forbidden: list"})
            raise ForbiddenError(exc)
        return super().list(api_version, kind, *args, **kwargs)


def test_an_api_server_without_service_cidrs_needs_service_cidr():
    cluster = NoServiceCIDRs(control_plane())
    with pytest.raises(PlatformValidationError) as exc:
        service.run_tenant(tenant_params(teams=None, oversell_check=False), cluster)
    assert [e.field for e in exc.value.errors] == ["service_cidr"]
    assert exc.value.messages[0].endswith("give the cluster's service CIDR")
    assert cluster.writes == []
    given = tenant_params(teams=None, oversell_check=False, service_cidr="10.96.0.0/12")
    assert service.run_tenant(given, cluster)["changed"] is True


def test_a_forbidden_service_cidr_list_is_the_api_error_itself():
    cluster = ForbiddenServiceCIDRs(control_plane())
    with pytest.raises(ForbiddenError):
        service.run_tenant(tenant_params(teams=None, oversell_check=False), cluster)
    assert cluster.writes == []
