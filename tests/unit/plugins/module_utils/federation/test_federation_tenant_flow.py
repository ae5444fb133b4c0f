# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module federation_tenant's flow (federation/tenant_federation and its I/O) over the
in-memory cluster standing in for the Karmada API server."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.federation import (
    tenant_federation as flow,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.federation.tenant_federation_io import (
    apply_federation_tenant,
    gather_federation_tenant,
)
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster

GPU = "nvidia.com/gpu"
FLOW = flow.federation_tenant_flow(gather_federation_tenant, apply_federation_tenant)


def params(name="alpha", teams=("algo",), payg=4, cloud=0, burst=None, **extra):
    out = {
        "name": name,
        "state": "present",
        "subscription": {GPU: 16, "cpu": 64, "memory": "256Gi"},
        "teams": [{"name": t, "deserved": {GPU: 4}} for t in teams],
        "payg": {GPU: payg},
        "payg_cloud_gpus": cloud,
        "burst_gpus": burst,
        "pod_cidr": "10.0.0.0/8",
        "service_cidr": "172.16.0.0/12",
        "node_cidrs": [],
    }
    out.update(extra)
    return out


def run(cluster, p, check_mode=False):
    return FLOW.run(p, cluster, check_mode)


def names(cluster, kind):
    return sorted(cluster.kinds(kind))


def fields(exc_info):
    return {e.field for e in exc_info.value.errors}


# -- parse -----------------------------------------------------------------------------------


def test_the_networks_are_required_since_karmada_tells_none():
    with pytest.raises(PlatformValidationError) as exc:
        flow.parse(params(pod_cidr=None, service_cidr=""))
    assert fields(exc) == {"pod_cidr", "service_cidr"}
    assert "Karmada API server tells no cluster network" in str(exc.value)


def test_every_bad_option_is_named_at_once():
    with pytest.raises(PlatformValidationError) as exc:
        flow.parse(
            params(burst=-1, cloud=-2, node_cidrs=["192.168.0.0/16", "nope"], subscription=None)
        )
    assert fields(exc) == {"burst_gpus", "payg_cloud_gpus", "node_cidrs[1]", "subscription"}


def test_absent_needs_only_the_name():
    request = flow.parse({"name": "alpha", "state": "absent"})
    assert request.absent and request.spec is None
    with pytest.raises(PlatformValidationError) as exc:
        flow.parse({"name": "Alpha!", "state": "absent"})
    assert fields(exc) == {"name"}


def test_the_node_networks_are_cut_out_of_the_egress():
    request = flow.parse(params(node_cidrs=["192.168.0.0/16"]))
    fed = flow.desired(request, flow.FederationTenantFacts())
    (policy,) = [o for o in fed.templates if o["kind"] == "NetworkPolicy"]
    blocks = [
        b["ipBlock"]
        for rule in policy["spec"]["egress"]
        for b in rule.get("to", [])
        if "ipBlock" in b
    ]
    assert any("192.168.0.0/16" in b.get("except", []) for b in blocks)


# -- plan and apply --------------------------------------------------------------------------


def test_a_first_run_writes_the_namespace_first_then_templates_then_policies():
    request = flow.parse(params(cloud=2, burst=8))
    planned = flow.plan(request, flow.FederationTenantFacts())
    kinds = [[c[0]["kind"] for c in batch] for batch in planned.writes]
    assert kinds[0] == ["Namespace"]
    assert "Queue" in kinds[1] and not {"PropagationPolicy", "Namespace"} & set(kinds[1])
    assert set(kinds[2]) == {
        "PropagationPolicy",
        "ClusterPropagationPolicy",
        "ClusterOverridePolicy",
    }
    assert planned.deletes == ()


def test_a_run_writes_every_object_then_a_second_writes_nothing():
    cluster = FakeCluster()
    first = run(cluster, params(cloud=2, burst=8))
    assert first["changed"] and len(first["objects"]) == 20
    assert names(cluster, "Queue") == [
        "tenant-alpha-algo",
        "tenant-alpha-burst",
        "tenant-alpha-payg",
        "tenant-alpha-spot",
        "tenant-alpha-subscription",
    ]
    assert names(cluster, "ClusterPropagationPolicy") == [
        "tenant-alpha",
        "tenant-alpha-burst",
        "tenant-alpha-idc-queues",
        "tenant-alpha-payg",
    ]
    writes = len(cluster.writes)
    second = run(cluster, params(cloud=2, burst=8))
    assert second == {"changed": False, "objects": [], "diff": {"before": {}, "after": {}}}
    assert len(cluster.writes) == writes
    # one LIST per kind, and no GET: every queue is the tenant's already
    assert cluster.lists[-len(flow.FEDERATION_KINDS) :] == [k for _a, k in flow.FEDERATION_KINDS]


def test_a_change_writes_only_what_differs_with_its_diff():
    cluster = FakeCluster()
    run(cluster, params(cloud=2, burst=8))
    out = run(cluster, params(cloud=3, burst=8))
    assert out["objects"] == [
        {"kind": "ClusterOverridePolicy", "name": "tenant-alpha-payg", "action": "update"}
    ]
    rules = out["diff"]["after"]["ClusterOverridePolicy/tenant-alpha-payg"]["spec"]["overrideRules"]
    assert [r["overriders"]["plaintext"][0]["value"] for r in rules] == [1, 3]


def test_what_the_tenant_no_longer_has_is_deleted():
    cluster = FakeCluster()
    run(cluster, params(teams=("algo", "eng"), cloud=2, burst=8))
    out = run(cluster, params(teams=("algo",), cloud=0, burst=None))
    deleted = {(o["kind"], o["name"]) for o in out["objects"] if o["action"] == "delete"}
    assert deleted == {
        ("Queue", "tenant-alpha-eng"),
        ("Queue", "tenant-alpha-burst"),
        ("ClusterPropagationPolicy", "tenant-alpha-burst"),
    }
    assert "tenant-alpha-eng" not in names(cluster, "Queue")
    assert run(cluster, params(teams=("algo",)))["changed"] is False


def test_a_cloud_part_larger_than_the_grant_is_refused_before_any_write():
    cluster = FakeCluster()
    with pytest.raises(PlatformValidationError) as exc:
        run(cluster, params(payg=4, cloud=5))
    assert fields(exc) == {"payg_cloud_gpus"}
    assert cluster.writes == []


def test_a_queue_name_another_tenant_has_is_refused():
    other = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {
            "name": "tenant-alpha-algo",
            "labels": {
                "platform.io/tenant": "alpha-x",
                "platform.io/managed-by": "gpucloud-platform",
            },
        },
        "spec": {"parent": "root"},
    }
    cluster = FakeCluster([other])
    with pytest.raises(PlatformValidationError) as exc:
        run(cluster, params())
    assert "tenant-alpha-algo" in str(exc.value)
    assert cluster.writes == []


def test_check_mode_reports_what_a_run_writes_and_writes_nothing():
    cluster = FakeCluster(dry_run=True)
    out = run(cluster, params(cloud=2, burst=8), check_mode=True)
    real = run(FakeCluster(), params(cloud=2, burst=8))
    assert out["objects"] == real["objects"]
    assert cluster.real_writes == [] and cluster.store == {}
    # no namespace yet: its objects are reported, not dry-run
    assert all(kind not in ("Role", "PropagationPolicy") for _v, kind, _n in cluster.writes)
    assert flow.report(
        flow.parse(params(cloud=2, burst=8)),
        flow.plan(flow.parse(params(cloud=2, burst=8)), flow.FederationTenantFacts()),
    ) == {k: real[k] for k in ("changed", "objects", "diff")}


def test_absent_deletes_children_first_the_namespace_last_and_only_what_the_platform_made():
    foreign = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "theirs",
            "namespace": "tenant-alpha",
            "labels": {"platform.io/tenant": "alpha"},
        },
    }
    cluster = FakeCluster()
    run(cluster, params(cloud=2, burst=8))
    cluster.put(foreign)
    check = FakeCluster(list(cluster.store.values()), dry_run=True)
    would = run(check, {"name": "alpha", "state": "absent"}, check_mode=True)
    assert check.real_writes == []
    out = run(cluster, {"name": "alpha", "state": "absent"})
    assert would["objects"] == out["objects"]
    order = [(o["kind"], o["name"]) for o in out["objects"]]
    assert order[-1] == ("Namespace", "tenant-alpha")
    assert order.index(("Queue", "tenant-alpha-algo")) < order.index(
        ("Queue", "tenant-alpha-subscription")
    )
    assert order.index(("Queue", "tenant-alpha-burst")) < order.index(
        ("ClusterPropagationPolicy", "tenant-alpha-burst")
    )
    assert ("ConfigMap", "theirs") not in order
    assert [k for k, _ns, _n in cluster.store] == ["ConfigMap"]
    assert run(cluster, {"name": "alpha", "state": "absent"})["changed"] is False


def test_the_summary_is_one_line():
    said = flow.federation_tenant_summary(
        params(cloud=2, burst=8), {"objects": [{"kind": "Queue", "action": "create"}]}, True
    )
    assert said == [
        "tenant alpha in the federation: would create 1 object "
        "(payg cloud part 2 GPUs, burst leaf 8 GPUs)"
    ]


# -- properties ------------------------------------------------------------------------------

TEAMS = st.lists(st.sampled_from(["algo", "eng", "data"]), unique=True, max_size=3)


@st.composite
def tenants(draw):
    payg = draw(st.integers(0, 8))
    return params(
        teams=tuple(draw(TEAMS)),
        payg=payg,
        cloud=draw(st.integers(0, payg)),
        burst=draw(st.none() | st.integers(0, 8)),
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=tenants(), then=tenants())
def test_any_change_lands_exactly_the_desired_objects_and_a_rerun_writes_nothing(first, then):
    cluster = FakeCluster()
    run(cluster, first)
    run(cluster, then)
    request = flow.parse(then)
    wanted = flow.desired(request, gather_federation_tenant(request, cluster))
    held = {
        (kind, name)
        for kind, _ns, name in cluster.store
        if kind != "Namespace" or name == "tenant-alpha"
    }
    assert held == {
        (o["kind"], o["metadata"]["name"]) for o in [*wanted.templates, *wanted.policies]
    }
    writes = list(cluster.writes)
    assert run(cluster, then)["changed"] is False
    assert cluster.writes == writes


# -- the federation's parent-queues list (rule parent-queues-list) ----------------------------

PARENT_LIST = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {
        "name": "platform-parent-queues",
        "namespace": "platform-system",
        "labels": {"platform.io/managed-by": "gpucloud-platform"},
    },
    "data": {"queues": "tenant-other-subscription"},
}


def parent_list(cluster):
    (cm,) = [
        c for c in cluster.objects("ConfigMap") if c["metadata"]["name"] == "platform-parent-queues"
    ]
    return (cm.get("data") or {}).get("queues")


def test_a_tenant_with_teams_lists_its_subscription_queue_as_a_parent_and_absent_unlists_it():
    """As module tenant keeps a cluster's: the federation's leaf policy refuses a job to a
    parent queue by this list; another tenant's entry stays."""
    cluster = FakeCluster([PARENT_LIST])
    out = run(cluster, params(teams=("algo",)))
    assert parent_list(cluster) == "tenant-alpha-subscription,tenant-other-subscription"
    # the list is written before the queues (a parent listed before its first child)
    assert out["objects"][0]["name"] == "platform-parent-queues"
    cluster.writes.clear()
    assert run(cluster, params(teams=("algo",)))["changed"] is False
    assert cluster.writes == []
    run(cluster, params(teams=()))
    assert parent_list(cluster) == "tenant-other-subscription"
    run(cluster, params(teams=("algo",)))
    run(cluster, {"name": "alpha", "state": "absent"})
    assert parent_list(cluster) == "tenant-other-subscription"


def test_check_mode_says_the_parent_list_change_and_writes_nothing():
    cluster = FakeCluster([PARENT_LIST], dry_run=True)
    out = run(cluster, params(teams=("algo",)), check_mode=True)
    key = "ConfigMap/platform-system/platform-parent-queues"
    assert out["diff"]["after"][key]["data"]["queues"] == (
        "tenant-alpha-subscription,tenant-other-subscription"
    )
    assert cluster.real_writes == []
    assert parent_list(cluster) == "tenant-other-subscription"


def test_without_the_federations_admission_no_parent_list_is_made():
    """federation_platform writes the ConfigMap; before it has run, nothing is listed."""
    cluster = FakeCluster()
    run(cluster, params(teams=("algo",)))
    assert "platform-parent-queues" not in [
        c["metadata"]["name"] for c in cluster.objects("ConfigMap")
    ]
