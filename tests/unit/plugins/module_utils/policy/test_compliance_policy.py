# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule compliance-pinned (policy/compliance), the cloud taint in pod_placement
(forbidden_taint_keys, cloud_burst), and the scheduler configuration's nodegroup plugin
(rule node-groups-need-nodegroup, enableHierarchy on capacity and nodegroup).

CEL is not evaluated here: the policy's structure is tested, and the conformance
suite proves the expressions on a real API server."""

from __future__ import annotations

import copy
import re

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.policy import compliance as cp
from ansible_collections.gpucloud.platform.plugins.module_utils.policy import pod_placement as pp
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.admission import (
    admission_manifests,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_builder import (
    render_scheduler_conf,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_reader import (
    parse_conf,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_rules import (
    scheduler_conf_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_tier_rules import (
    HIERARCHY_ALLOWED,
    hierarchy_errors,
    node_group_plugin_errors,
)

VK_TAINT = "virtual-kubelet.io/provider"
CONTROL_PLANE = "node-role.kubernetes.io/control-plane"
LOCATION = "platform.io/node-location"
COMPLIANCE = "platform.io/compliance"


def balanced(expression):
    """Parentheses and brackets balance outside string literals, and quotes pair up."""
    depth = {"(": 0, "[": 0}
    closing = {")": "(", "]": "["}
    in_string = False
    i = 0
    while i < len(expression):
        ch = expression[i]
        if in_string:
            if ch == "\\":
                i += 2
                continue
            if ch == "'":
                in_string = False
        elif ch == "'":
            in_string = True
        elif ch in depth:
            depth[ch] += 1
        elif ch in closing:
            depth[closing[ch]] -= 1
            if depth[closing[ch]] < 0:
                return False
        i += 1
    return not in_string and all(v == 0 for v in depth.values())


# --- the compliance-placement policy ------------------------------------------------


@pytest.fixture(scope="module")
def policy():
    return cp.compliance_placement_policy()


def test_it_is_a_validating_admission_policy(policy):
    assert policy["apiVersion"] == "admissionregistration.k8s.io/v1"
    assert policy["kind"] == "ValidatingAdmissionPolicy"
    assert policy["metadata"]["name"] == "gpucloud-compliance-placement"
    assert policy["metadata"]["labels"] == {"platform.io/managed-by": "gpucloud-platform"}
    assert policy["spec"]["failurePolicy"] == "Fail"


def test_it_matches_every_pod_template_in_tenant_namespaces(policy):
    match = policy["spec"]["matchConstraints"]
    assert match["namespaceSelector"] == {
        "matchExpressions": [{"key": "platform.io/tenant", "operator": "Exists"}]
    }
    rules = {(r["apiGroups"][0], r["resources"][0]) for r in match["resourceRules"]}
    assert rules == {
        ("", "pods"),
        ("batch.volcano.sh", "jobs"),
        ("apps", "deployments"),
        ("apps", "replicasets"),
    }
    for rule in match["resourceRules"]:
        assert rule["operations"] == ["CREATE", "UPDATE"]
        assert rule["apiVersions"] == ["*"]


def test_it_reads_the_pods_as_pod_placement_does(policy):
    assert policy["spec"]["variables"] == [{"name": "pods", "expression": pp._PODS}]


def test_it_has_two_validations_over_every_pod(policy):
    validations = policy["spec"]["validations"]
    assert len(validations) == 2
    for validation in validations:
        assert validation["expression"].startswith("variables.pods.all(p, ")
        assert validation["reason"] == "Forbidden"
        assert balanced(validation["expression"]), validation["expression"]
        assert balanced(validation["messageExpression"]), validation["messageExpression"]


def test_both_validations_apply_only_to_restricted_pods(policy):
    for validation in policy["spec"]["validations"]:
        expression = validation["expression"]
        assert f"'{COMPLIANCE}' in p[0].labels" in expression
        assert f"p[0].labels['{COMPLIANCE}'] == 'restricted'" in expression
        # A Volcano Job's own label counts for its task templates.
        assert "request.kind.kind == 'Job'" in expression
        assert f"object.metadata.labels['{COMPLIANCE}'] == 'restricted'" in expression
        assert expression.startswith("variables.pods.all(p, !((has(p[0].labels)")


def test_the_toleration_validation_forbids_the_cloud_taint_and_wildcards(policy):
    tolerations = policy["spec"]["validations"][0]
    expression = tolerations["expression"]
    assert f"t.key != '{VK_TAINT}'" in expression
    assert "has(t.key) && t.key != ''" in expression
    assert "!has(p[1].tolerations) ||" in expression
    message = tolerations["messageExpression"]
    assert ".tolerations: " in message and VK_TAINT in message
    assert "restricted" in message


def test_the_affinity_validation_requires_the_idc(policy):
    affinity = policy["spec"]["validations"][1]
    expression = affinity["expression"]
    assert f"p[1].nodeSelector['{LOCATION}'] == 'idc'" in expression
    assert "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.all(term" in expression
    assert f"e.key == '{LOCATION}'" in expression
    assert "(e.operator == 'NotIn' && 'cloud' in e.values)" in expression
    assert "(e.operator == 'In' && !('cloud' in e.values))" in expression
    # A preferred term does not pin a pod: only the required one is read.
    assert "preferredDuringScheduling" not in expression
    message = affinity["messageExpression"]
    assert ".affinity.nodeAffinity: " in message and f"{LOCATION} NotIn [cloud]" in message


def test_the_message_names_the_pod_spec_path(policy):
    for validation in policy["spec"]["validations"]:
        message = validation["messageExpression"]
        assert message.startswith("(request.kind.kind == 'Pod' ? 'spec' : ")
        assert "'spec.tasks[].template.spec'" in message and "'spec.template.spec'" in message


def test_the_policy_and_its_binding_are_in_the_admission_manifests():
    manifests = admission_manifests()
    names = [(m["kind"], m["metadata"]["name"]) for m in manifests]
    policy_at = names.index(("ValidatingAdmissionPolicy", cp.POLICY_COMPLIANCE_PLACEMENT))
    binding_at = names.index(("ValidatingAdmissionPolicyBinding", cp.POLICY_COMPLIANCE_PLACEMENT))
    assert binding_at == policy_at + 1
    binding = manifests[binding_at]
    assert binding["spec"] == {
        "policyName": "gpucloud-compliance-placement",
        "validationActions": ["Deny"],
    }
    off = admission_manifests(compliance_placement=False)
    assert cp.POLICY_COMPLIANCE_PLACEMENT not in {m["metadata"]["name"] for m in off}


# --- the cloud taint in pod_placement -----------------------------------------------


def test_the_cloud_taint_is_forbidden_unless_cloud_burst_is_on():
    assert pp.forbidden_taint_keys() == (VK_TAINT, CONTROL_PLANE)
    assert pp.forbidden_taint_keys(False) == pp.PLATFORM_TAINT_KEYS
    assert pp.forbidden_taint_keys(True) == (CONTROL_PLANE,)


def _toleration_rule(policy):
    (rule,) = [
        v for v in policy["spec"]["validations"] if v["messageExpression"].count(".tolerations:")
    ]
    return rule


def test_pod_placement_forbids_the_cloud_taint_by_default():
    rule = _toleration_rule(pp.pod_placement_policy())
    assert f"!(t.key in ['{VK_TAINT}', '{CONTROL_PLANE}'])" in rule["expression"]
    assert VK_TAINT in rule["messageExpression"]


def test_pod_placement_with_cloud_burst_allows_the_cloud_taint_only():
    rule = _toleration_rule(pp.pod_placement_policy(cloud_burst=True))
    assert f"!(t.key in ['{CONTROL_PLANE}'])" in rule["expression"]
    assert VK_TAINT not in rule["expression"] and VK_TAINT not in rule["messageExpression"]
    # Wildcards stay forbidden.
    assert "has(t.key) && t.key != ''" in rule["expression"]


def test_cloud_burst_changes_nothing_else_in_pod_placement():
    strict = pp.pod_placement_policy()
    burst = pp.pod_placement_policy(cloud_burst=True)
    others = [v for v in strict["spec"]["validations"] if v is not _toleration_rule(strict)]
    assert [v for v in burst["spec"]["validations"] if v is not _toleration_rule(burst)] == others
    assert len(burst["spec"]["validations"]) == len(strict["spec"]["validations"])


def test_cloud_burst_reaches_the_admission_manifests():
    def toleration_expression(manifests):
        (policy,) = [
            m
            for m in manifests
            if m["metadata"]["name"] == pp.POLICY_POD_PLACEMENT
            and m["kind"] == "ValidatingAdmissionPolicy"
        ]
        return _toleration_rule(policy)["expression"]

    assert VK_TAINT in toleration_expression(admission_manifests())
    assert VK_TAINT not in toleration_expression(admission_manifests(cloud_burst=True))


# --- the scheduler configuration's nodegroup plugin ---------------------------------


def default():
    return parse_conf(render_scheduler_conf())[0]


def nodegroup(conf):
    return next(p for t in conf["tiers"] for p in t["plugins"] if p["name"] == "nodegroup")


def test_the_default_tiers_have_nodegroup_with_hierarchy():
    plugin = nodegroup(default())
    assert plugin == {
        "name": "nodegroup",
        "enableHierarchy": True,
        "arguments": {"strict": False, "enablePreferredOrder": True},
    }


def test_the_default_configuration_passes_every_rule():
    text = render_scheduler_conf()
    assert scheduler_conf_errors(text) == []
    assert node_group_plugin_errors(default()) == []
    assert hierarchy_errors(default()) == []


def test_no_nodegroup_plugin_is_named():
    conf = default()
    for tier in conf["tiers"]:
        tier["plugins"] = [p for p in tier["plugins"] if p["name"] != "nodegroup"]
    (error,) = node_group_plugin_errors(conf)
    assert error.field == "tiers" and "enableHierarchy: true" in error.message
    # The rest of the configuration is still fit to write: nodegroup is asked for by node_groups.
    assert scheduler_conf_errors(conf) == []


@pytest.mark.parametrize("value", [None, False, "true", 1])
def test_nodegroup_without_hierarchy_true_is_named(value):
    conf = default()
    plugin = nodegroup(conf)
    if value is None:
        plugin.pop("enableHierarchy")
    else:
        plugin["enableHierarchy"] = value
    (error,) = node_group_plugin_errors(conf)
    assert re.fullmatch(r"tiers\[\d+\]\.plugins\[\d+\]\(nodegroup\)\.enableHierarchy", error.field)
    assert repr(value) in error.message and "root's IDC-only affinity" in error.message


def test_nodegroup_in_another_tier_is_found():
    conf = default()
    plugin = nodegroup(conf)
    for tier in conf["tiers"]:
        tier["plugins"] = [p for p in tier["plugins"] if p["name"] != "nodegroup"]
    conf["tiers"][0]["plugins"].append(copy.deepcopy(plugin))
    assert node_group_plugin_errors(conf) == []


def test_hierarchy_is_allowed_on_capacity_and_nodegroup_only():
    assert HIERARCHY_ALLOWED == ("capacity", "nodegroup")
    conf = default()
    assert hierarchy_errors(conf) == []
    plugins = [p for t in conf["tiers"] for p in t["plugins"]]
    assert {p["name"] for p in plugins if "enableHierarchy" in p} == {"capacity", "nodegroup"}
    for plugin in plugins:
        if plugin["name"] in ("drf", "gang", "predicates"):
            plugin["enableHierarchy"] = True
    errors = hierarchy_errors(conf)
    named = sorted(re.search(r"\((\w+)\)\.enableHierarchy$", e.field).group(1) for e in errors)
    assert named == sorted(p["name"] for p in plugins if p["name"] in ("drf", "gang", "predicates"))
    assert named and all("only on capacity and nodegroup" in e.message for e in errors)
