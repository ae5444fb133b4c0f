# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule federation-tenant-propagation (federation/propagation)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.federation.platform_federation import (
    platform_propagation,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.federation.propagation import (
    tenant_propagation,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.federation_placement import (
    MEMBER_NOT_READY_TAINT,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.plan import plan_tenant
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.spec import (
    parse_tenant_spec,
)

GPU = "nvidia.com/gpu"
IDC = {"platform.io/node-location": "idc"}
CLOUD = {"platform.io/node-location": "cloud"}


def plan(payg=None, teams=("algo",)):
    params = {
        "name": "alpha",
        "subscription": {GPU: 16, "cpu": 256, "memory": "2Ti"},
        "teams": [{"name": t, "deserved": {GPU: 4}} for t in teams],
        "pod_cidr": "10.244.0.0/16",
        "service_cidr": "10.96.0.0/12",
    }
    if payg is not None:
        params["payg"] = {GPU: payg}
    return plan_tenant(parse_tenant_spec(params), {})


def selects(term, labels):
    """The policies' selectors: matchExpressions of In only."""
    return all(
        labels.get(e["key"]) in e["values"]
        for e in term["labelSelector"]["matchExpressions"]
        if e["operator"] == "In"
    )


def where(federation, kind, name, namespace=None):
    """The locations the one policy selecting this object sends it to."""
    found = []
    for policy in federation.policies:
        if policy["kind"] not in ("PropagationPolicy", "ClusterPropagationPolicy"):
            continue
        for sel in policy["spec"]["resourceSelectors"]:
            if sel["kind"] == kind and sel["name"] == name and sel.get("namespace") == namespace:
                term = policy["spec"]["placement"]["clusterAffinity"]
                found.append(
                    {
                        loc
                        for loc, labels in (("idc", IDC), ("cloud", CLOUD))
                        if selects(term, labels)
                    }
                )
    assert len(found) <= 1, f"{kind}/{name} is claimed by {len(found)} policies"
    return found[0] if found else None


def gpu_override(federation, labels):
    (cop,) = [p for p in federation.policies if p["kind"] == "ClusterOverridePolicy"]
    values = [
        {o["path"]: o["value"] for o in rule["overriders"]["plaintext"]}
        for rule in cop["spec"]["overrideRules"]
        if selects(rule["targetCluster"], labels)
    ]
    return values[0] if values else None


def test_the_tenant_objects_go_everywhere_and_the_namespace_needs_no_policy():
    fed = tenant_propagation(plan(), burst_gpus=8)
    ns = "tenant-alpha"
    for kind, name in [
        ("Role", None),
        ("RoleBinding", None),
        ("NetworkPolicy", None),
        ("ConfigMap", "platform-queues"),
        ("ResourceQuota", None),
        ("LimitRange", None),
    ]:
        (obj,) = [
            o
            for o in fed.templates
            if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)
        ]
        assert where(fed, kind, obj["metadata"]["name"], ns) == {"idc", "cloud"}
    for kind in ("ClusterRole", "ClusterRoleBinding"):
        assert where(fed, kind, "gpucloud-tenant-alpha-queues") == {"idc", "cloud"}
    assert where(fed, "Namespace", ns) is None  # Karmada's namespace sync controller copies it
    assert any(o["kind"] == "Namespace" for o in fed.templates)


def test_subscription_teams_and_spot_in_the_idc_only():
    fed = tenant_propagation(plan(), burst_gpus=8)
    for queue in ("tenant-alpha-subscription", "tenant-alpha-algo", "tenant-alpha-spot"):
        assert where(fed, "Queue", queue) == {"idc"}
    (sub,) = [o for o in fed.templates if o["metadata"]["name"] == "tenant-alpha-subscription"]
    assert sub["spec"]["capability"][GPU] == 16  # what was bought


def test_the_burst_leaf_in_the_cloud_only_and_listed_as_payg():
    fed = tenant_propagation(plan(), burst_gpus=8)
    assert where(fed, "Queue", "tenant-alpha-burst") == {"cloud"}
    (leaf,) = [o for o in fed.templates if o["metadata"]["name"] == "tenant-alpha-burst"]
    assert leaf["spec"]["parent"] == "cloud-burst"
    assert leaf["spec"]["capability"] == {GPU: "8"}
    (queue_list,) = [o for o in fed.templates if o["kind"] == "ConfigMap"]
    assert queue_list["data"]["tenant-alpha-burst"] == "payg"
    assert queue_list["data"]["tenant-alpha-algo"] == "team"


def test_without_a_cloud_quota_no_burst_leaf():
    fed = tenant_propagation(plan())
    assert where(fed, "Queue", "tenant-alpha-burst") is None
    assert not any(o["metadata"]["name"] == "tenant-alpha-burst" for o in fed.templates)


def test_payg_in_the_idc_only_when_no_part_of_it_is_cloud():
    fed = tenant_propagation(plan(payg=10))
    assert where(fed, "Queue", "tenant-alpha-payg") == {"idc"}
    assert gpu_override(fed, IDC) == {
        "/spec/capability/nvidia.com~1gpu": 10,
        "/spec/deserved/nvidia.com~1gpu": 10,
    }
    assert gpu_override(fed, CLOUD) is None


def test_payg_split_where_it_was_bought():
    fed = tenant_propagation(plan(payg=30), burst_gpus=16, payg_cloud_gpus=6)
    assert where(fed, "Queue", "tenant-alpha-payg") == {"idc", "cloud"}
    assert set(gpu_override(fed, IDC).values()) == {24}
    assert set(gpu_override(fed, CLOUD).values()) == {6}


@pytest.mark.parametrize("cloud", [-1, 31, 1.5, True])
def test_a_cloud_part_outside_the_grant_is_refused(cloud):
    with pytest.raises(PlatformValidationError, match="payg_cloud_gpus"):
        tenant_propagation(plan(payg=30), payg_cloud_gpus=cloud)


def test_the_policies_are_named_from_the_tenant():
    fed = tenant_propagation(plan(payg=4), burst_gpus=2, payg_cloud_gpus=1)
    names = sorted((p["kind"], p["metadata"]["name"]) for p in fed.policies)
    assert names == [
        ("ClusterOverridePolicy", "tenant-alpha-payg"),
        ("ClusterPropagationPolicy", "tenant-alpha"),
        ("ClusterPropagationPolicy", "tenant-alpha-burst"),
        ("ClusterPropagationPolicy", "tenant-alpha-idc-queues"),
        ("ClusterPropagationPolicy", "tenant-alpha-payg"),
        ("PropagationPolicy", "tenant-alpha"),
    ]
    for p in fed.policies:
        assert p["apiVersion"] == "policy.karmada.io/v1alpha1"
        assert p["metadata"]["labels"]["platform.io/tenant"] == "alpha"


@given(
    payg=st.integers(0, 40),
    cloud_share=st.floats(0, 1),
    burst=st.one_of(st.none(), st.integers(0, 32)),
    teams=st.lists(st.sampled_from(["algo", "vision", "nlp"]), unique=True, max_size=3),
)
def test_every_template_but_the_namespace_has_exactly_one_policy(payg, cloud_share, burst, teams):
    cloud = int(payg * cloud_share)
    fed = tenant_propagation(plan(payg=payg, teams=teams), burst, cloud)
    for obj in fed.templates:
        meta = obj["metadata"]
        placed = where(fed, obj["kind"], meta["name"], meta.get("namespace"))
        if obj["kind"] == "Namespace":
            assert placed is None
        else:
            assert placed, f"{obj['kind']}/{meta['name']} goes nowhere"
        if obj["kind"] == "Queue" and obj["metadata"]["labels"]["platform.io/queue-type"] in (
            "subscription",
            "team",
            "spot",
        ):
            assert placed == {"idc"}
    idc, in_cloud = gpu_override(fed, IDC), gpu_override(fed, CLOUD)
    total = sum(set(idc.values())) + (sum(set(in_cloud.values())) if in_cloud else 0)
    assert total == payg  # every pay-as-you-go GPU sold once, in one place


@given(
    payg=st.integers(0, 40),
    burst=st.one_of(st.none(), st.integers(0, 32)),
    cloud_burst=st.one_of(st.none(), st.integers(0, 32)),
)
def test_no_platform_or_tenant_object_leaves_a_lost_member(payg, burst, cloud_burst):
    """Rule federation-member-failover: every policy of a tenant and of the platform
    tolerates the lost-member taint for ever, so Karmada's taint manager never evicts a
    tenant's queues or cloud-burst from a member (it would delete them there, under
    running jobs, once the member answers)."""
    tenant = tenant_propagation(plan(payg=payg), burst, payg // 2)
    platform = platform_propagation("actions: enqueue\n", cloud_burst)
    for policy in (*tenant.policies, *platform.policies):
        if policy["kind"] == "ClusterOverridePolicy":
            continue  # places nothing
        assert policy["spec"]["placement"]["clusterTolerations"] == [
            {"key": MEMBER_NOT_READY_TAINT, "operator": "Exists", "effect": "NoExecute"}
        ], policy["metadata"]["name"]
