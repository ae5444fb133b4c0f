# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import copy
import json

import pytest
from kubernetes.client.rest import ApiException
from kubernetes.dynamic.exceptions import ForbiddenError

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PartialWrite,
    PlatformValidationError,
    Refused,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube import flow
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants import service
from ansible_collections.gpucloud.platform.plugins.modules import tenant
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.tenants.tenant_objects import (
    GPU,
    NO_VGPU_RENDERED,
    node,
    parent_list,
    podgroup,
    pool,
    vcjob,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.tenants.tenant_objects import (
    tenant_params as params,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.tenants.test_tenant_spec import (
    BAD,
)
from ansible_collections.kubernetes.core.plugins.module_utils.k8s import waiter as k8s_waiter


def created(cluster_class=FakeCluster):
    cluster = pool(cluster_class=cluster_class)
    service.run_tenant(params(), cluster)
    return cluster


@pytest.mark.parametrize(("what", "bad", "field"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_writes_nothing(what, bad, field):
    cluster = pool()
    full = params(**dict(bad))
    with pytest.raises(PlatformValidationError) as exc:
        service.run_tenant(full, cluster)
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
        service.run_tenant(bad, cluster)
    assert exc.value.errors[0].field == f"teams[0].deserved.{GPU}"
    assert cluster.writes == []
    assert cluster.store == before


def test_create_writes_everything_in_order():
    cluster = pool()
    result = service.run_tenant(params(), cluster)
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
    assert queues["tenant-a-spot"]["spec"]["capability"] == {GPU: 0, **NO_VGPU_RENDERED}
    assert {o["kind"] for o in result["objects"]} == {
        "ConfigMap",
        "Namespace",
        "Role",
        "RoleBinding",
        "NetworkPolicy",
        "ClusterRole",
        "ClusterRoleBinding",
        "ResourceQuota",
        "LimitRange",
        "Queue",
    }
    # The tenant's objects after the parent list and its Namespace, before its queues.
    assert order[1:8] == [
        ("apply", "Namespace", "tenant-a"),
        ("apply", "Role", "tenant-user"),
        ("apply", "RoleBinding", "tenant-user"),
        ("apply", "NetworkPolicy", "deny-cross-tenant"),
        ("apply", "ConfigMap", "platform-queues"),
        ("apply", "ClusterRole", "gpucloud-tenant-a-queues"),
        ("apply", "ClusterRoleBinding", "gpucloud-tenant-a-queues"),
    ]
    # The tenant's own cluster-scoped objects and queues (its namespace does not exist yet),
    # the cluster networks (Nodes, ServiceCIDRs), then (the oversell guard) the Nodes and
    # every managed queue.
    assert cluster.lists == [
        "Namespace",
        "ClusterRole",
        "ClusterRoleBinding",
        "Queue",
        "Node",
        "ServiceCIDR",
        "Node",
        "Queue",
    ]
    assert (
        cluster.requests
        == (
            8  # the lists above
            + 6  # a GET per new queue: is its name free (rule queue-name-owned)
            + 2  # GET and create of the parent-queues ConfigMap
            + 9  # apply of the Namespace, Role, RoleBinding, NetworkPolicy, ConfigMap, ClusterRole(Binding),
            # ResourceQuota and LimitRange
            + 6  # apply of each queue
            + 2  # capacity applies of the new payg and spot queues
        )
    )


def test_second_run_changes_nothing():
    cluster = created()
    cluster.writes.clear()
    result = service.run_tenant(params(), cluster)
    assert result["changed"] is False
    assert result["objects"] == []
    assert cluster.writes == []


def test_spot_capability_set_by_recompute_survives():
    cluster = created()
    # The recompute's apply owns only its own keys; the tenant's vGPU keys stay.
    cluster.store[("Queue", "", "tenant-a-spot")]["spec"]["capability"][GPU] = 12
    cluster.writes.clear()
    result = service.run_tenant(params(), cluster)
    assert result["changed"] is False
    assert cluster.kinds("Queue")["tenant-a-spot"]["spec"]["capability"] == {
        GPU: 12,
        **NO_VGPU_RENDERED,
    }


def test_spot_deserved_written_by_recompute_is_no_change():
    # spot_capacity writes deserved 0 for cpu and memory as well as GPUs.
    cluster = created()
    spec = cluster.store[("Queue", "", "tenant-a-spot")]["spec"]
    spec["capability"] = {**spec["capability"], GPU: 12, "cpu": "48", "memory": "192Gi"}
    spec["deserved"] = {GPU: 0, "cpu": "0", "memory": "0"}
    cluster.writes.clear()
    result = service.run_tenant(params(), cluster)
    assert result["changed"] is False, result.get("objects")
    assert cluster.writes == []


def test_check_mode_reports_but_only_dry_runs():
    cluster = pool(dry_run=True)
    result = service.run_tenant(params(), cluster, check_mode=True)
    assert result["changed"]
    assert cluster.real_writes == []
    assert {k[0] for k in cluster.store} == {"Node", "ServiceCIDR"}
    # nothing in the tenant namespace is sent while it does not exist yet: only cluster-scoped
    # objects and the parent list in platform-system
    assert all(
        kind in ("Namespace", "ClusterRole", "ClusterRoleBinding", "Queue")
        or name == "platform-parent-queues"
        for _unused, kind, name in cluster.writes
    )
    assert ("dry-run", "ConfigMap", "platform-parent-queues") in cluster.writes
    assert "Queue/tenant-a-subscription" in result["diff"]["after"]


def test_diff_shows_a_resize():
    cluster = created()
    result = service.run_tenant(
        params(subscription={GPU: 48, "cpu": 160, "memory": "640Gi"}), cluster
    )
    diff = result["diff"]
    key = "Queue/tenant-a-subscription"
    assert diff["before"][key]["spec"]["deserved"][GPU] == 40
    assert diff["after"][key]["spec"]["deserved"][GPU] == 48
    # Rule tenant-bounds: the pods the tenant may run follow its GPUs (16 x 48).
    assert result["objects"] == [
        {
            "kind": "ResourceQuota",
            "name": "platform-bounds",
            "action": "update",
            "namespace": "tenant-a",
        },
        {"kind": "Queue", "name": "tenant-a-subscription", "action": "update"},
    ]
    assert cluster.kinds("ResourceQuota")["platform-bounds"]["spec"]["hard"]["pods"] == "768"


def test_added_is_what_the_purchase_newly_sells():
    cluster = pool()
    first = service.run_tenant(params(payg={GPU: 4}), cluster)
    assert first["added"] == {GPU: 44, "cpu": "160", "memory": "640Gi"}
    # The same purchase again adds nothing; growing both adds both growths.
    assert service.run_tenant(params(payg={GPU: 4}), cluster)["added"][GPU] == 0
    bigger = params(subscription={GPU: 48, "cpu": 160, "memory": "640Gi"}, payg={GPU: 6})
    assert service.run_tenant(bigger, cluster, check_mode=True)["added"][GPU] == 8 + 2
    # Shrinking frees nothing for the purchase flows to count.
    smaller = params(subscription={GPU: 40, "cpu": 160, "memory": "640Gi"}, payg={GPU: 2})
    assert service.run_tenant(smaller, cluster)["added"][GPU] == 0


def test_capability_below_allocated_refused_then_forced():
    cluster = created()
    cluster.store[("Queue", "", "tenant-a-algo")]["status"] = {"allocated": {GPU: "30"}}
    teams = params()["teams"]
    teams[0] = dict(teams[0], capability={GPU: 24})
    cluster.writes.clear()
    with pytest.raises(PlatformValidationError) as exc:
        service.run_tenant(params(teams=teams), cluster)
    assert "24 is below the 30" in str(exc.value)
    assert cluster.writes == []
    service.run_tenant(params(teams=teams, force=True), cluster)
    assert cluster.kinds("Queue")["tenant-a-algo"]["spec"]["capability"] == {
        GPU: 24,
        **NO_VGPU_RENDERED,
    }


def test_removing_busy_team_refused():
    cluster = created()
    cluster.put(podgroup("tenant-a-data"))
    cluster.writes.clear()
    with pytest.raises(PlatformValidationError):
        service.run_tenant(params(teams=params()["teams"][:2]), cluster)
    assert cluster.writes == []
    cluster.put(podgroup("tenant-a-data", phase="Completed"))
    result = service.run_tenant(params(teams=params()["teams"][:2]), cluster)
    assert {"kind": "Queue", "name": "tenant-a-data", "action": "delete"} in result["objects"]
    assert "tenant-a-data" not in cluster.kinds("Queue")


def test_absent_refused_while_jobs_run():
    cluster = created()
    cluster.put(vcjob())
    cluster.writes.clear()
    with pytest.raises(Refused) as exc:
        service.run_tenant({"name": "a", "state": "absent", "force": False}, cluster)
    assert "1 active Volcano Job" in str(exc.value)
    assert exc.value.extra["running"] == {"jobs": 1, "pods": 0}
    assert cluster.writes == []


def test_absent_forced_deletes_children_first_namespace_last():
    cluster = created()
    cluster.put(vcjob())
    cluster.writes.clear()
    result = service.run_tenant({"name": "a", "state": "absent", "force": True}, cluster)
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
    assert not [k for k in cluster.store if k[0] not in ("Job", "Node", "ServiceCIDR")]


def test_absent_of_missing_tenant_changes_nothing_and_says_so(monkeypatch):
    said: list[str] = []
    monkeypatch.setattr(flow, "warn", said.append)  # the plan's warning, said by the flow
    cluster = pool()
    result = service.run_tenant({"name": "a", "state": "absent"}, cluster)
    assert result["changed"] is False
    assert cluster.writes == []
    assert said == [
        "tenant 'a' does not exist: no namespace, queue or other object carries "
        "platform.io/tenant=a, so nothing was deleted"
    ]
    # A tenant that exists is deleted without that warning.
    said.clear()
    service.run_tenant({"name": "a", "state": "absent", "force": True}, created())
    assert said == []


def test_absent_check_mode_writes_nothing():
    cluster = created()
    cluster.writes.clear()
    cluster.dry_run = True
    result = service.run_tenant(
        {"name": "a", "state": "absent", "force": True}, cluster, check_mode=True
    )
    assert result["changed"]
    assert cluster.writes == [("dry-run", "ConfigMap", "platform-parent-queues")]


def test_reads_one_list_per_kind():
    cluster = created()
    cluster.lists.clear()
    cluster.requests = 0
    service.run_tenant(params(), cluster)
    # The tenant's kinds, its queues and pod groups, and the cluster networks (Nodes and
    # ServiceCIDRs); the purchase does not grow, so the oversell guard reads nothing.
    assert sorted(cluster.lists) == sorted(
        [
            "Namespace",
            "Role",
            "RoleBinding",
            "NetworkPolicy",
            "ConfigMap",
            "ClusterRole",
            "ClusterRoleBinding",
            "ResourceQuota",
            "LimitRange",
            "Queue",
            "PodGroup",
            "Node",
            "ServiceCIDR",
        ]
    )
    # 13 lists and the GET of the parent-queues ConfigMap; no queue name to check, no write
    assert cluster.requests == 13 + 1


def test_new_tenant_skips_namespaced_reads():
    cluster = pool()
    service.run_tenant(params(), cluster)
    assert cluster.lists == [
        "Namespace",
        "ClusterRole",  # cluster-scoped: listed although the namespace does not exist
        "ClusterRoleBinding",
        "Queue",
        "Node",  # the cluster networks
        "ServiceCIDR",
        "Node",  # the oversell guard
        "Queue",
    ]


PARENTS = ("ConfigMap", "platform-system", "platform-parent-queues")


def test_parent_queues_keep_other_tenants_and_write_only_on_change():
    cluster = pool(objects=[parent_list("tenant-z-subscription")])
    service.run_tenant(params(), cluster)
    assert cluster.store[PARENTS]["data"]["queues"] == "tenant-a-subscription,tenant-z-subscription"
    cluster.writes.clear()
    assert service.run_tenant(params(), cluster)["changed"] is False
    assert not [w for w in cluster.writes if w[1] == "ConfigMap"]
    # Without teams the subscription queue is a leaf again: unlisted after the teams are removed.
    result = service.run_tenant(params(teams=[]), cluster, check_mode=False)
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
    cluster = pool(objects=[parent_list("")])
    service.run_tenant(params(teams=None), cluster)
    assert cluster.store[PARENTS]["data"]["queues"] == ""
    assert not [w for w in cluster.writes if w[2] == "platform-parent-queues"]


# --------------------------------------------------------------------------
# Oversell guard
# --------------------------------------------------------------------------


def buyer(name, gpus, **over):
    """A tenant without teams buying ``gpus`` GPUs."""
    return params(
        name=name, subscription={GPU: gpus, "cpu": 16, "memory": "64Gi"}, teams=None, **over
    )


def sold(cluster):
    """Tenant b bought 40 GPUs and holds 8 pay-as-you-go: 16 of the 64 are left."""
    service.run_tenant(buyer("b", 40, payg={GPU: 8}), cluster)
    cluster.writes.clear()
    cluster.lists.clear()
    return cluster


def test_oversold_subscription_is_refused_with_the_numbers_and_nothing_written():
    cluster = sold(pool())
    before = copy.deepcopy(cluster.store)
    with pytest.raises(PlatformValidationError) as exc:
        service.run_tenant(buyer("a", 20), cluster)
    assert [e.field for e in exc.value.errors] == [f"subscription.{GPU}"]
    message = exc.value.messages[0]
    assert message.startswith(f"subscription.{GPU}: 20 for the subscription of tenant 'a' exceeds")
    assert (
        "(64 in the pool - 40 in other tenants' subscriptions - 8 in other tenants' "
        "pay-as-you-go - 0 in this tenant's pay-as-you-go = 16)"
    ) in message
    assert "at most 16 can be granted (rule oversell-guard)" in message
    assert cluster.writes == []
    assert cluster.store == before
    # One Node list and one list of every managed queue, besides the tenant's own reads
    # (its queues, and the Nodes for the cluster networks).
    assert cluster.lists.count("Node") == 1 + 1 and cluster.lists.count("Queue") == 2
    # What is left is accepted.
    assert service.run_tenant(buyer("a", 16), cluster)["changed"] is True


def test_growing_an_existing_subscription_past_the_pool_is_refused():
    cluster = sold(pool())
    service.run_tenant(buyer("a", 10), cluster)
    before = copy.deepcopy(cluster.store)
    cluster.writes.clear()
    with pytest.raises(PlatformValidationError) as exc:
        service.run_tenant(buyer("a", 17), cluster)
    # The tenant's own 10 are not counted twice: 64 - 40 - 8 = 16 are left for it.
    assert "= 16); at most 16 can be granted" in exc.value.messages[0]
    assert cluster.writes == []
    assert cluster.store == before


def test_payg_grant_is_checked_with_the_new_subscription():
    cluster = sold(pool())
    with pytest.raises(PlatformValidationError) as exc:
        service.run_tenant(buyer("a", 10, payg={GPU: 8}), cluster)
    assert [e.field for e in exc.value.errors] == [f"payg.{GPU}"]
    assert (
        "8 for the pay-as-you-go grant of tenant 'a' exceeds what the pool has left for it "
        "(64 in the pool - 40 in other tenants' subscriptions - 8 in other tenants' "
        "pay-as-you-go - 10 in this tenant's new subscription = 6); at most 6"
    ) in exc.value.messages[0]
    assert cluster.writes == []


def test_subscription_and_payg_both_growing_past_the_pool_name_both_fields():
    cluster = sold(pool())
    with pytest.raises(PlatformValidationError) as exc:
        service.run_tenant(buyer("a", 20, payg={GPU: 6}), cluster)
    assert [e.field for e in exc.value.errors] == [f"subscription.{GPU}", f"payg.{GPU}"]
    assert "- 0 in this tenant's pay-as-you-go = 16); at most 16" in exc.value.messages[0]
    assert "- 20 in this tenant's new subscription = -4); at most 0" in exc.value.messages[1]
    assert cluster.writes == []


def test_cpu_and_memory_are_guarded_too():
    cluster = pool(nodes=1)  # 8 GPUs, 128 cpu, 1Ti
    with pytest.raises(PlatformValidationError) as exc:
        service.run_tenant(
            params(name="a", subscription={GPU: 8, "cpu": 129, "memory": "2Ti"}, teams=None),
            cluster,
        )
    assert [e.field for e in exc.value.errors] == ["subscription.cpu", "subscription.memory"]
    assert "(1Ti in the pool - 0 in other tenants' subscriptions" in exc.value.messages[1]
    assert cluster.writes == []


def test_subscription_may_grow_into_what_its_own_payg_shrink_frees():
    cluster = sold(pool())
    service.run_tenant(buyer("a", 8, payg={GPU: 8}), cluster)  # 64 - 48 - 16 = 0 left
    result = service.run_tenant(buyer("a", 16, payg={GPU: 0}), cluster)
    assert result["changed"] is True
    assert cluster.kinds("Queue")["tenant-a-subscription"]["spec"]["deserved"][GPU] == 16


def test_keeping_or_shrinking_is_never_refused_even_when_oversold():
    cluster = sold(pool())
    service.run_tenant(buyer("a", 16), cluster)
    # Half the nodes leave the pool: 64 -> 32 GPUs, while 40 + 8 + 16 are sold.
    for i in range(4):
        cluster.store[("Node", "", f"gpu-node-{i}")]["spec"]["unschedulable"] = True
    cluster.lists.clear()
    assert service.run_tenant(buyer("a", 16), cluster)["changed"] is False
    assert service.run_tenant(buyer("a", 12), cluster)["changed"] is True
    # nothing grew: the pool is not even read (one Node list per run, the cluster networks',
    # and only the tenant's own queues)
    assert cluster.lists.count("Node") == 2 and cluster.lists.count("Queue") == 2
    with pytest.raises(PlatformValidationError, match=r"= -16\); at most 0 can be granted"):
        service.run_tenant(buyer("a", 13), cluster)


def test_oversell_check_false_allows_overselling():
    cluster = sold(pool())
    result = service.run_tenant(buyer("a", 100, oversell_check=False), cluster)
    assert result["changed"] is True
    # the cluster networks' Node list only: neither the pool nor every managed queue is read
    assert cluster.lists.count("Node") == 1 and cluster.lists.count("Queue") == 1
    sub = cluster.kinds("Queue")["tenant-a-subscription"]["spec"]
    assert sub["deserved"][GPU] == 100


def test_node_selector_limits_the_pool():
    labelled = [node(f"main-{i}", 4 + i, labels={"platform.io/pool": "main"}) for i in range(4)]
    cluster = pool(nodes=4, objects=labelled)  # 64 GPUs, 32 of them labelled
    selector = {"platform.io/pool": "main"}
    with pytest.raises(PlatformValidationError) as exc:
        service.run_tenant(buyer("a", 33, node_selector=selector), cluster)
    assert "(32 in the pool - 0 in other tenants' subscriptions" in exc.value.messages[0]
    assert cluster.writes == []
    assert service.run_tenant(buyer("a", 32, node_selector=selector), cluster)["changed"] is True


def test_nodes_not_ready_are_not_in_the_pool():
    cluster = pool(nodes=2, objects=[node("down", 2, ready=False)])
    with pytest.raises(PlatformValidationError, match=r"\(16 in the pool - "):
        service.run_tenant(buyer("a", 17), cluster)


def test_check_mode_refuses_an_oversell_without_dry_runs():
    cluster = sold(pool())
    cluster.dry_run = True
    with pytest.raises(PlatformValidationError):
        service.run_tenant(buyer("a", 20), cluster, check_mode=True)
    assert cluster.writes == []


def test_bad_node_selector_fails_with_the_other_input_errors_before_any_request():
    cluster = pool()
    bad = params(name="Bad_Name", node_selector={"platform.io/pool": 1})
    with pytest.raises(PlatformValidationError) as exc:
        service.run_tenant(bad, cluster)
    assert [e.field for e in exc.value.errors] == ["name", "node_selector.platform.io/pool"]
    assert cluster.requests == 0


# --------------------------------------------------------------------------
# state: absent with wait, and writes that stop part-way
# --------------------------------------------------------------------------


class Clock:
    """Stands in for the ``time`` module in ``tenants.service``: sleeping moves it on."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def fake_time(monkeypatch):
    """One Clock for ``tenants.service`` and kubernetes.core's Waiter (its own ``time``)."""
    clock = Clock()
    monkeypatch.setattr(service, "time", clock)
    monkeypatch.setattr(k8s_waiter, "time", clock)
    return clock


class TerminatingNamespaces(FakeCluster):
    """An API server that keeps a deleted Namespace while it finalizes its content."""

    def delete(self, api_version, kind, name, namespace=None, **kwargs):
        live = self.store.get(self.key(kind, namespace, name))
        deleted = super().delete(api_version, kind, name, namespace, **kwargs)
        if deleted and kind == "Namespace" and not self.dry_run:
            self.put({**live, "status": {"phase": "Terminating"}})
        return deleted


class Forbidding(FakeCluster):
    """An API server that forbids one (verb, kind), once ``forbid`` is set."""

    forbid = None

    def refuse(self, verb, kind):
        if (verb, kind) == self.forbid:
            exc = ApiException(status=403, reason="Forbidden")
            exc.body = json.dumps({"message": f"{kind.lower()}s is forbidden: {verb}"})
            raise ForbiddenError(exc)

    def create(self, manifest):
        self.refuse("create", manifest["kind"])
        return super().create(manifest)

    def delete(self, api_version, kind, name, namespace=None, **kwargs):
        self.refuse("delete", kind)
        return super().delete(api_version, kind, name, namespace, **kwargs)


def absent(**over):
    return {"name": "a", "state": "absent", "force": True, **over}


@pytest.mark.parametrize("timeout", [0, -5])
def test_wait_timeout_below_one_second_is_refused_before_any_request(timeout):
    cluster = created()
    cluster.writes.clear()
    cluster.requests = 0
    with pytest.raises(PlatformValidationError) as exc:
        service.run_tenant(absent(wait=True, wait_timeout=timeout), cluster)
    [message] = exc.value.messages
    assert message.startswith(f"wait_timeout: {timeout} must be a whole number of seconds")
    assert "(rule wait-timeout-positive)" in message
    assert cluster.requests == 0 and cluster.writes == []


def test_wait_timeout_is_not_judged_without_wait():
    cluster = created()
    result = service.run_tenant(absent(wait=False, wait_timeout=0), cluster)
    assert result["changed"] is True
    assert cluster.kinds("Namespace") == {}


def test_wait_returns_once_the_tenant_is_gone(monkeypatch):
    fake_time(monkeypatch)
    cluster = created()
    result = service.run_tenant(absent(wait=True, wait_timeout=5), cluster)
    assert result["changed"] is True
    assert cluster.lists[-2:] == ["Namespace", "Queue"]  # one look, nothing left


def test_wait_that_times_out_after_deleting_reports_changed(monkeypatch):
    clock = fake_time(monkeypatch)
    cluster = created(cluster_class=TerminatingNamespaces)
    with pytest.raises(Refused) as exc:
        service.run_tenant(absent(wait=True, wait_timeout=5), cluster)
    assert str(exc.value) == "after 5s these objects of tenant 'a' still exist: Namespace/tenant-a"
    assert exc.value.extra["changed"] is True
    assert {"kind": "Namespace", "name": "tenant-a", "action": "delete"} in exc.value.extra[
        "objects"
    ]
    assert exc.value.extra["running"] == {"jobs": 0, "pods": 0}
    assert clock.now >= 5
    assert cluster.kinds("Queue") == {}


class Lingering(FakeCluster):
    """An API server that keeps a deleted Namespace or Queue (as with a finalizer) until
    ``clock`` reads ``gone_at`` (None: for good)."""

    clock: Clock = Clock()
    gone_at: float | None = None
    kinds_kept = ("Namespace",)

    def delete(self, api_version, kind, name, namespace=None, **kwargs):
        live = self.store.get(self.key(kind, namespace, name))
        deleted = super().delete(api_version, kind, name, namespace, **kwargs)
        if deleted and kind in self.kinds_kept and not self.dry_run:
            self.put({**live, "metadata": {**live["metadata"], "deletionTimestamp": "now"}})
        return deleted

    def list(self, api_version, kind, **kw):
        if self.gone_at is not None and self.clock.now >= self.gone_at:
            for key in [k for k, o in self.store.items() if "deletionTimestamp" in o["metadata"]]:
                self.store.pop(key)
        return super().list(api_version, kind, **kw)


def test_wait_lists_one_kind_a_poll_namespaces_first(monkeypatch):
    """What is gone stays gone: the Queues are looked at once the Namespace went."""
    cluster = created(cluster_class=Lingering)
    cluster.clock, cluster.gone_at = fake_time(monkeypatch), 4
    service.run_tenant(absent(wait=True, wait_timeout=10), cluster)
    waited = cluster.lists[-4:]
    assert waited == ["Namespace", "Namespace", "Namespace", "Queue"]  # at 0, 2, 4 s; at 4 s
    assert cluster.clock.now == 4


def test_wait_that_times_out_reports_the_namespace_and_the_queues_left(monkeypatch):
    cluster = created(cluster_class=Lingering)
    cluster.clock, cluster.kinds_kept = fake_time(monkeypatch), ("Namespace", "Queue")
    with pytest.raises(Refused) as exc:
        service.run_tenant(absent(wait=True, wait_timeout=3), cluster)
    message = str(exc.value)
    assert message.startswith(
        "after 3s these objects of tenant 'a' still exist: Namespace/tenant-a, Queue/"
    )
    assert "Queue/tenant-a-spot" in message
    # the Namespace at 0, 2 and 4 s, then the Queues once with no time left
    assert cluster.lists[-4:] == ["Namespace", "Namespace", "Namespace", "Queue"]
    assert cluster.clock.now == 4


def test_delete_that_stops_part_way_says_what_was_deleted():
    cluster = created(cluster_class=Forbidding)
    cluster.put(vcjob())
    cluster.forbid = ("delete", "RoleBinding")
    with pytest.raises(PartialWrite) as exc:
        service.run_tenant(absent(), cluster)
    done = exc.value.done
    assert done[0] == "delete Job/tenant-a/train"
    assert "update ConfigMap/platform-system/platform-parent-queues" in done
    assert done[-6:] == [
        "delete ClusterRoleBinding/gpucloud-tenant-a-queues",
        "delete ClusterRole/gpucloud-tenant-a-queues",
        "delete LimitRange/tenant-a/platform-bounds",
        "delete ResourceQuota/tenant-a/platform-bounds",
        "delete ConfigMap/tenant-a/platform-queues",
        "delete NetworkPolicy/tenant-a/deny-cross-tenant",
    ]
    # the job, six queues, the parent list, the bounds (2), the queue reader (2), the queue
    # list, the policy
    assert len(done) == 1 + 6 + 1 + 2 + 2 + 1 + 1
    assert exc.value.what == "deleting tenant 'a'"
    assert exc.value.report == {"running": {"jobs": 1, "pods": 0}}
    assert set(cluster.kinds("RoleBinding")) == {"tenant-user"}
    assert set(cluster.kinds("Namespace")) == {"tenant-a"}


def test_failing_first_write_is_the_api_error_itself():
    cluster = pool(cluster_class=Forbidding)
    cluster.forbid = ("create", "ConfigMap")
    with pytest.raises(ForbiddenError):
        service.run_tenant(params(), cluster)
    assert cluster.real_writes == []


# --------------------------------------------------------------------------
# The module: input checked before connecting, one result shape
# --------------------------------------------------------------------------


def module_args(**over):
    args = {k: v for k, v in params(**over).items() if v is not None}
    args["teams"] = [{k: v for k, v in t.items() if v is not None} for t in args.get("teams", [])]
    return args


def test_module_creates_and_reports_requests(run_module):
    cluster = pool()
    result = run_module(tenant, cluster, **module_args())
    assert result["changed"] is True
    assert result["requests"] == cluster.requests > 0
    assert "api_requests" not in result
    assert "Queue/tenant-a-subscription" in [d["after_header"] for d in result["diff"]]
    assert result["added"] == {GPU: 40, "cpu": "160", "memory": "640Gi"}
    again = run_module(tenant, cluster, _ansible_diff=False, **module_args())
    assert again["changed"] is False and "diff" not in again


def test_module_check_mode_only_dry_runs(run_module):
    cluster = pool(dry_run=True)
    result = run_module(tenant, cluster, _ansible_check_mode=True, **module_args())
    assert result["changed"] is True
    assert cluster.real_writes == []
    assert {k[0] for k in cluster.store} == {"Node", "ServiceCIDR"}


def test_module_bad_input_fails_before_connecting(run_module):
    cluster = pool()
    result = run_module(
        tenant, cluster, **module_args(name="Bad_Name", node_selector={"platform.io/pool": 1})
    )
    assert result["failed"] is True and result["changed"] is False
    assert [e.split(":")[0] for e in result["errors"]] == ["name", "node_selector.platform.io/pool"]
    assert result["requests"] == 0 and cluster.requests == 0


def test_module_refuses_absent_wait_timeout_zero_before_connecting(run_module):
    cluster = created()
    cluster.writes.clear()
    result = run_module(tenant, cluster, name="a", state="absent", wait=True, wait_timeout=0)
    assert result["failed"] is True and result["changed"] is False
    assert result["errors"][0].startswith("wait_timeout: 0 must be")
    assert result["requests"] == 0 and cluster.writes == []


def test_module_refusal_reports_what_runs(run_module):
    cluster = created()
    cluster.put(vcjob())
    cluster.writes.clear()
    result = run_module(tenant, cluster, name="a", state="absent")
    assert result["failed"] is True and result["changed"] is False
    assert "1 active Volcano Job(s) and 0 active pod(s)" in result["msg"]
    assert result["running"] == {"jobs": 1, "pods": 0}
    assert result["requests"] == cluster.requests > 0
    assert cluster.writes == []


def test_module_wait_timeout_after_deleting_fails_with_changed(run_module, monkeypatch):
    fake_time(monkeypatch)
    cluster = created(cluster_class=TerminatingNamespaces)
    result = run_module(tenant, cluster, name="a", state="absent", wait=True, wait_timeout=3)
    assert result["failed"] is True
    assert result["changed"] is True
    assert result["msg"] == "after 3s these objects of tenant 'a' still exist: Namespace/tenant-a"
    assert {"kind": "Queue", "name": "tenant-a-spot", "action": "delete"} in result["objects"]


def test_module_partial_delete_fails_with_changed_and_done(run_module):
    cluster = created(cluster_class=Forbidding)
    cluster.forbid = ("delete", "Namespace")
    result = run_module(tenant, cluster, name="a", state="absent", force=True)
    assert result["failed"] is True and result["changed"] is True
    # six queues, the parent list, the bounds (2), the queue reader (2), the queue list, the
    # NetworkPolicy, the RoleBinding and the Role
    assert result["msg"].startswith("deleting tenant 'a' failed after 15 change(s): ")
    assert "namespaces is forbidden: delete" in result["msg"]
    assert result["done"][-1] == "delete Role/tenant-a/tenant-user"
    assert result["running"] == {"jobs": 0, "pods": 0}


def test_module_parses_its_options_once(run_module, monkeypatch):
    from ansible_collections.gpucloud.platform.plugins.module_utils.tenants import inputs

    parsed = []
    real = inputs.parse_present
    monkeypatch.setattr(inputs, "parse_present", lambda p: parsed.append(p) or real(p))
    result = run_module(tenant, pool(), **module_args())
    assert result["changed"] is True and len(parsed) == 1


def test_module_parsed_of_gathered_answers_as_its_check_mode_run(run_module):
    cluster = created()
    grow = module_args(subscription={GPU: 48, "cpu": 160, "memory": "640Gi"})
    gathered = run_module(tenant, cluster, **{**grow, "state": "gathered"})
    assert gathered["changed"] is False and gathered["requests"] > 0
    assert {"objects", "queues", "nodes", "pool_nodes", "parent_list"} <= set(gathered["gathered"])
    cluster.dry_run = True
    check = run_module(tenant, cluster, _ansible_check_mode=True, **grow)
    parsed = run_module(
        tenant, cluster, **{**grow, "state": "parsed", "facts": gathered["gathered"]}
    )
    assert (parsed.pop("state"), parsed.pop("changed"), parsed.pop("requests")) == (
        "parsed",
        False,
        0,
    )
    # the check-mode run makes the reads gathered made, then its two dry runs
    assert check.pop("changed") is True and check.pop("requests") == gathered["requests"] + 2
    parsed.pop("invocation"), check.pop("invocation")  # the options, state and facts differ
    assert parsed == check
    assert check["summary"][0].startswith("tenant a: would update 2 objects")


def test_rendered_is_the_catalog_of_one_and_needs_the_networks():
    from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.inputs import (
        check_tenant,
    )
    from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.rendered import (
        run_rendered,
    )
    from ansible_collections.gpucloud.platform.plugins.modules import tenant_catalog

    given = params(state="rendered", pod_cidr="10.244.0.0/16", service_cidr="10.96.0.0/12")
    alone = run_rendered(given)
    entry = {k: given[k] for k in ("name", "subscription", "egress_cidrs")}
    entry["teams"] = [{k: v for k, v in t.items() if v is not None} for t in given["teams"]]
    many = tenant_catalog.rendered(
        {
            "state": "rendered",
            "tenants": [entry],
            "pod_cidr": given["pod_cidr"],
            "service_cidr": given["service_cidr"],
        }
    )
    assert alone["manifests"] == many["manifests"]
    assert run_rendered(params()) is None  # present: the module connects
    with pytest.raises(PlatformValidationError) as exc:
        check_tenant(params(state="rendered"))
    assert [m.split(":")[0] for m in exc.value.messages] == ["pod_cidr", "service_cidr"]


def test_the_tenants_routers_in_the_gateway_go_with_it():
    """A deleted tenant leaves no A/B test or canary router routing to it."""
    cluster = created()
    for name, owner in (("a-ab", "a"), ("b-ab", "b")):
        cluster.put(
            {
                "apiVersion": "serving.kserve.io/v1alpha1",
                "kind": "InferenceGraph",
                "metadata": {
                    "name": name,
                    "namespace": "platform-serving",
                    "labels": {"platform.io/tenant": owner},
                },
                "spec": {"nodes": {"root": {"routerType": "Splitter", "steps": []}}},
            }
        )
    result = service.run_tenant(absent(), cluster)
    assert {
        "kind": "InferenceGraph",
        "name": "a-ab",
        "namespace": "platform-serving",
        "action": "delete",
    } in result["objects"]
    assert set(cluster.kinds("InferenceGraph")) == {"b-ab"}


def test_a_spot_recompute_leaves_the_tenant_s_vgpu_keys_and_the_tenant_run_is_no_change():
    """Rule vgpu-queue-capability: the recompute applies its keys of the spot capability
    under its own field manager; the vGPU keys, the tenant apply's, stay (server-side
    apply owns map keys one by one), and the next tenant run finds nothing to write."""
    cluster = created()
    cluster.apply(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "tenant-a-spot"},
            "spec": {
                "capability": {GPU: "12", "cpu": "48", "memory": "192Gi"},
                "deserved": {GPU: "0", "cpu": "0", "memory": "0"},
            },
        },
        field_manager="gpucloud-platform-capacity",
    )
    capability = cluster.kinds("Queue")["tenant-a-spot"]["spec"]["capability"]
    assert {k: capability[k] for k in NO_VGPU_RENDERED} == NO_VGPU_RENDERED
    cluster.writes.clear()
    assert service.run_tenant(params(), cluster)["changed"] is False
    assert cluster.writes == []
