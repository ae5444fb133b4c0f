# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module federation_platform's flow (federation/platform_federation and its I/O) over the
in-memory cluster standing in for the Karmada API server; rule
federation-platform-propagation."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.federation import (
    platform_federation as flow,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.federation.platform_federation_io import (
    apply_federation_platform,
    gather_federation_platform,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.admission import (
    PARENT_QUEUES_CONFIGMAP,
    TENANT_QUEUES_CONFIGMAP,
    admission_manifests,
    parameterised_policies,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.pod_placement import (
    pod_placement_policy,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_builder import (
    DEFAULT_ACTIONS,
)
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster

FLOW = flow.federation_platform_flow(gather_federation_platform, apply_federation_platform)
LOCATION = "platform.io/node-location"
PRIORITY_CLASSES = ["critical-job", "debug-job", "large-job", "normal-job", "spot-job"]


def run(cluster, params, check_mode=False):
    return FLOW.run(params, cluster, check_mode)


def fields(exc_info):
    return {e.field for e in exc_info.value.errors}


def locations(policy):
    (expr,) = policy["spec"]["placement"]["clusterAffinity"]["labelSelector"]["matchExpressions"]
    assert expr["key"] == LOCATION and expr["operator"] == "In"
    return sorted(expr["values"])


def selected(policy):
    return sorted(s["name"] for s in policy["spec"]["resourceSelectors"])


# -- parse -----------------------------------------------------------------------------------


def test_the_defaults_are_the_platforms_scheduler_conf():
    request = flow.parse({})
    conf = yaml.safe_load(request.conf_text)
    assert conf["actions"] == ", ".join(DEFAULT_ACTIONS)
    assert request.cloud_burst_gpus is None


def test_a_scheduler_conf_that_breaks_a_rule_is_refused_naming_its_option():
    with pytest.raises(PlatformValidationError) as exc:
        flow.parse({"scheduler_actions": ["allocate", "bogus"]})
    assert fields(exc) == {"scheduler_actions[1]", "scheduler_actions"}
    assert "'bogus' is not an action" in str(exc.value)
    with pytest.raises(PlatformValidationError) as exc:
        flow.parse({"scheduler_tiers": [{"plugins": [{"name": "gang"}]}]})
    assert fields(exc) == {"scheduler_tiers"}
    assert "has no 'capacity' plugin" in str(exc.value)


def test_options_not_in_the_form_the_role_takes_are_named_at_once():
    with pytest.raises(PlatformValidationError) as exc:
        flow.parse(
            {
                "scheduler_actions": "enqueue,allocate",
                "scheduler_tiers": ["nope"],
                "cloud_burst_gpus": -1,
            }
        )
    assert fields(exc) == {"scheduler_actions", "scheduler_tiers[0]", "cloud_burst_gpus"}


@given(st.one_of(st.integers(max_value=-1), st.booleans(), st.text(max_size=3)))
def test_cloud_burst_gpus_is_a_whole_number_zero_or_more(gpus):
    with pytest.raises(PlatformValidationError) as exc:
        flow.parse({"cloud_burst_gpus": gpus})
    assert fields(exc) == {"cloud_burst_gpus"}


# -- the rule --------------------------------------------------------------------------------


def test_the_classes_and_the_conf_go_to_every_member_overwriting_theirs():
    fed = flow.platform_propagation(flow.parse({}).conf_text)
    kinds = [o["kind"] for o in fed.templates]
    assert kinds[:4] == [
        "Namespace",
        "Namespace",
        "ResourceInterpreterCustomization",
        "ClusterTaintPolicy",
    ]
    assert kinds.count("PriorityClass") == 5 and "Queue" not in kinds
    for namespace in fed.templates[:2]:
        assert namespace["metadata"]["labels"][flow.SKIP_AUTO_PROPAGATION] == "true"
    assert [n["metadata"]["name"] for n in fed.templates[:2]] == list(flow.PLATFORM_NAMESPACES)
    by_name = {p["metadata"]["name"]: p for p in fed.policies}
    assert set(by_name) == {flow.POLICY_PRIORITY_CLASSES, flow.POLICY_SCHEDULER_CONF}
    classes, conf = by_name[flow.POLICY_PRIORITY_CLASSES], by_name[flow.POLICY_SCHEDULER_CONF]
    assert selected(classes) == PRIORITY_CLASSES
    assert selected(conf) == ["volcano-scheduler-configmap"]
    assert conf["kind"] == "PropagationPolicy"
    assert conf["metadata"]["namespace"] == "volcano-system"
    for policy in fed.policies:
        assert locations(policy) == ["cloud", "idc"]
        assert policy["spec"]["conflictResolution"] == "Overwrite"
    # the customization, the lost-member taint policy and the admission policies are
    # Karmada's: no policy selects them
    assert not any(
        s["kind"]
        in (
            "ResourceInterpreterCustomization",
            "ClusterTaintPolicy",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
        )
        or (s["kind"] == "ConfigMap" and s["name"] == PARENT_QUEUES_CONFIGMAP)
        for p in fed.policies
        for s in p["spec"]["resourceSelectors"]
    )


def test_the_admission_policies_stay_in_karmada_with_every_parameter_it_must_hold():
    """Rule federation-admission: Karmada's API server enforces them on the templates, so
    each binding's policy is written, and a parameter denied when missing is Karmada's to
    hold: the parent-queues ConfigMap here, each tenant's queue list by federation_tenant.
    The throttle's is a member's own, allowed when missing."""
    fed = flow.platform_propagation(flow.parse({}).conf_text)
    policies = {
        o["metadata"]["name"] for o in fed.templates if o["kind"] == "ValidatingAdmissionPolicy"
    }
    assert {b["spec"]["policyName"] for b in fed.bindings} == policies
    assert {b["metadata"]["name"] for b in fed.bindings} == policies
    written = {
        (o["metadata"].get("namespace"), o["metadata"]["name"])
        for o in fed.templates
        if o["kind"] == "ConfigMap"
    }
    for b in fed.bindings:
        ref = b["spec"].get("paramRef")
        if ref is None or ref["parameterNotFoundAction"] == "Allow":
            continue
        if "namespace" in ref:  # a platform parameter: written here
            assert (ref["namespace"], ref["name"]) in written, b["metadata"]["name"]
        else:  # the tenant's own namespace: federation_tenant's queue list
            assert ref["name"] == TENANT_QUEUES_CONFIGMAP, b["metadata"]["name"]
    # the same policies and bindings as a member's bring-up applies, the pod-placement
    # policy as a site with cloud burst has it: a job that may go to a cloud member
    # tolerates its nodes' taint
    assert {o["metadata"]["name"] for o in admission_manifests()} == policies
    (placement,) = [
        o
        for o in fed.templates
        if o["metadata"]["name"] == pod_placement_policy()["metadata"]["name"]
    ]
    assert placement == pod_placement_policy(cloud_burst=True) != pod_placement_policy()


@given(st.integers(min_value=0, max_value=10_000))
def test_cloud_burst_goes_to_the_cloud_members_only_with_its_gpus(gpus):
    fed = flow.platform_propagation("actions: enqueue\n", gpus)
    (queue,) = [o for o in fed.templates if o["kind"] == "Queue"]
    assert queue["metadata"]["name"] == "cloud-burst"
    assert queue["spec"]["capability"] == {"nvidia.com/gpu": str(gpus)}
    (policy,) = [p for p in fed.policies if p["metadata"]["name"] == flow.POLICY_CLOUD_BURST]
    assert locations(policy) == ["cloud"] and selected(policy) == ["cloud-burst"]


# -- plan and apply --------------------------------------------------------------------------


def test_a_first_run_writes_the_namespace_then_templates_then_policies():
    planned = flow.plan(flow.parse({"cloud_burst_gpus": 8}), flow.FederationPlatformFacts())
    kinds = [[c[0]["kind"] for c in batch] for batch in planned.writes]
    assert kinds[0] == ["Namespace", "Namespace"]
    assert set(kinds[1]) == {
        "ResourceInterpreterCustomization",
        "ClusterTaintPolicy",
        "PriorityClass",
        "ConfigMap",
        "ValidatingAdmissionPolicy",
        "Queue",
    }
    # a binding after its admission policy and parameter: never a denial for want of them
    assert set(kinds[2]) == {
        "PropagationPolicy",
        "ClusterPropagationPolicy",
        "ValidatingAdmissionPolicyBinding",
    }


def test_a_run_writes_every_object_then_a_second_writes_nothing():
    cluster = FakeCluster()
    first = run(cluster, {"cloud_burst_gpus": 8})
    # 13 for the members, 22 for the federation's admission (2 + 10 policies, 10 bindings)
    assert first["changed"] and len(first["objects"]) == 35
    assert sorted(cluster.kinds("PriorityClass")) == PRIORITY_CLASSES
    writes = len(cluster.writes)
    second = run(cluster, {"cloud_burst_gpus": 8})
    assert second == {"changed": False, "objects": [], "diff": {"before": {}, "after": {}}}
    assert len(cluster.writes) == writes
    # one LIST per kind, and per platform namespace for the namespaced kinds
    expected = [
        k
        for _a, k in flow.PLATFORM_KINDS
        for _n in (flow.PLATFORM_NAMESPACES if k in flow.NAMESPACED_KINDS else (None,))
    ]
    assert cluster.lists[-len(expected) :] == expected


def test_priority_classes_as_the_api_server_returns_them_are_not_rewritten():
    cluster = FakeCluster()
    run(cluster, {})
    # the API server leaves a false globalDefault out (omitempty)
    for pc in cluster.objects("PriorityClass"):
        pc.pop("globalDefault", None)
        cluster.put(pc)
    assert run(cluster, {})["changed"] is False


def test_a_changed_conf_updates_the_configmap_alone():
    cluster = FakeCluster()
    run(cluster, {})
    # the platform's actions without backfill
    actions = [a for a in DEFAULT_ACTIONS if a != "backfill"]
    out = run(cluster, {"scheduler_actions": actions})
    assert out["objects"] == [
        {
            "kind": "ConfigMap",
            "name": "volcano-scheduler-configmap",
            "namespace": "volcano-system",
            "action": "update",
        }
    ]
    (cm,) = [
        c for c in cluster.objects("ConfigMap") if c["metadata"]["namespace"] == "volcano-system"
    ]
    assert yaml.safe_load(cm["data"]["volcano-scheduler.conf"])["actions"] == ", ".join(actions)


def test_cloud_burst_left_out_is_neither_written_nor_deleted():
    cluster = FakeCluster()
    run(cluster, {"cloud_burst_gpus": 8})
    out = run(cluster, {})
    assert out["changed"] is False
    assert list(cluster.kinds("Queue")) == ["cloud-burst"]
    assert flow.POLICY_CLOUD_BURST in cluster.kinds("ClusterPropagationPolicy")


def test_a_refused_option_writes_nothing():
    cluster = FakeCluster()
    with pytest.raises(PlatformValidationError):
        run(cluster, {"scheduler_tiers": [{"plugins": []}]})
    assert cluster.writes == []


def test_check_mode_reports_what_a_run_writes_and_writes_nothing():
    cluster = FakeCluster(dry_run=True)
    out = run(cluster, {"cloud_burst_gpus": 8}, check_mode=True)
    real = run(FakeCluster(), {"cloud_burst_gpus": 8})
    assert out["objects"] == real["objects"]
    assert cluster.real_writes == [] and cluster.store == {}
    # no volcano-system in Karmada yet: its ConfigMap and policy are reported, not dry-run
    sent = {kind for _v, kind, _n in cluster.writes}
    assert "ConfigMap" not in sent and "PropagationPolicy" not in sent
    assert "PriorityClass" in sent


def test_the_summary_says_what_was_written_and_what_became_of_cloud_burst():
    objects = [{"kind": "PriorityClass", "name": "spot-job", "action": "create"}]
    assert flow.federation_platform_summary({}, {"objects": objects}, True) == [
        "platform in the federation: would create 1 object "
        "(PriorityClasses and scheduler conf to every member, admission policies in Karmada, "
        "cloud-burst left as it is)"
    ]
    assert flow.federation_platform_summary({"cloud_burst_gpus": 8}, {"objects": []}, False) == [
        "platform in the federation: unchanged "
        "(PriorityClasses and scheduler conf to every member, admission policies in Karmada, "
        "cloud-burst 8 GPUs)"
    ]


@given(
    st.lists(st.one_of(st.none(), st.integers(min_value=0, max_value=64)), min_size=1, max_size=3)
)
def test_after_any_runs_the_last_is_held_and_cloud_burst_is_never_deleted(runs):
    cluster = FakeCluster()
    for gpus in runs:
        run(cluster, {"cloud_burst_gpus": gpus})
    given_once = [g for g in runs if g is not None]
    queues = cluster.kinds("Queue")
    if given_once:
        # the last given size is what Karmada holds, whatever came after it
        assert queues["cloud-burst"]["spec"]["capability"] == {
            "nvidia.com/gpu": str(given_once[-1])
        }
    else:
        assert queues == {}
    writes = len(cluster.writes)
    assert run(cluster, {"cloud_burst_gpus": runs[-1]})["changed"] is False
    assert len(cluster.writes) == writes


# -- the admission options (as the scheduling_policy role's) ---------------------------------

VAP, VAPB = "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"
PARAMETERISED = tuple(parameterised_policies())


def test_a_switched_off_policy_is_deleted_binding_first_and_back_when_switched_on():
    cluster = FakeCluster()
    run(cluster, {})
    assert "gpucloud-tenant-services" in cluster.kinds(VAP)
    out = run(cluster, {"admission": {"tenant_services": False}})
    assert [(o["kind"], o["action"]) for o in out["objects"]] == [(VAPB, "delete"), (VAP, "delete")]
    assert "gpucloud-tenant-services" not in cluster.kinds(VAP)
    assert "gpucloud-tenant-services" not in cluster.kinds(VAPB)
    assert run(cluster, {"admission": {"tenant_services": "no"}})["changed"] is False
    back = run(cluster, {})
    assert {(o["kind"], o["action"]) for o in back["objects"]} == {
        (VAP, "create"),
        (VAPB, "create"),
    }


def test_image_registries_add_their_policy_and_emptied_remove_it():
    cluster = FakeCluster()
    run(cluster, {"image_registries": ["registry.example/team/"]})
    policy = cluster.kinds(VAP)["gpucloud-image-registries"]
    assert "registry.example/team/" in str(policy["spec"])
    run(cluster, {"image_registries": []})
    assert "gpucloud-image-registries" not in cluster.kinds(VAP)


def test_the_platform_groups_reach_the_platform_state_policy():
    cluster = FakeCluster()
    run(cluster, {"platform_groups": ["platform-operators"]})
    assert "platform-operators" in str(cluster.kinds(VAP)["gpucloud-platform-state"]["spec"])


def test_bad_admission_options_are_named_at_once():
    with pytest.raises(PlatformValidationError) as exc:
        flow.parse(
            {
                "admission": {"tenant_servces": False, "queue_leaf": "maybe", "cloud_burst": True},
                "platform_groups": [],
                "image_registries": ["registry.example"],
            }
        )
    assert fields(exc) == {
        "admission.tenant_servces",
        "admission.queue_leaf",
        "admission.cloud_burst",
        "platform_groups",
        "image_registries[0]",
    }


def test_removing_the_last_parameterised_binding_is_refused_unless_asked():
    """Rule last-parameterised-binding in Karmada's API server: nothing is written."""
    cluster = FakeCluster()
    run(cluster, {})
    cluster.writes.clear()
    off = dict.fromkeys(PARAMETERISED, False)
    with pytest.raises(PlatformValidationError) as exc:
        run(cluster, {"admission": off})
    assert fields(exc) == {"admission"}
    assert "kubernetes/kubernetes#133827" in str(exc.value)
    assert cluster.real_writes == []
    out = run(cluster, {"admission": off, "remove_last_parameterised_policy": True})
    assert len([o for o in out["objects"] if o["action"] == "delete"]) == 2 * len(PARAMETERISED)
    # with none left in Karmada, switching them off again is no removal of the last one
    assert run(cluster, {"admission": off})["changed"] is False
