# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.policy import admission as ap


def by_kind_name(manifests):
    return {(m["kind"], m["metadata"]["name"]): m for m in manifests}


def test_each_policy_has_its_binding():
    manifests = ap.admission_manifests()
    index = by_kind_name(manifests)
    assert len(manifests) == 8
    for name in ap.POLICY_NAMES:
        policy = index[("ValidatingAdmissionPolicy", name)]
        binding = index[("ValidatingAdmissionPolicyBinding", name)]
        assert policy["apiVersion"] == binding["apiVersion"] == "admissionregistration.k8s.io/v1"
        assert binding["spec"]["policyName"] == name
        assert binding["spec"]["validationActions"] == ["Deny"]
        assert policy["spec"]["failurePolicy"] == "Fail"
        assert manifests.index(policy) < manifests.index(binding)
        assert policy["metadata"]["labels"]["platform.io/managed-by"] == "gpucloud-platform"


@pytest.mark.parametrize("name", ap.POLICY_NAMES)
def test_every_validation_has_cel_and_a_message_saying_what_to_do(name):
    policy = by_kind_name(ap.admission_manifests())[("ValidatingAdmissionPolicy", name)]
    validations = policy["spec"]["validations"]
    assert validations
    for v in validations:
        assert isinstance(v["expression"], str) and v["expression"].strip()
        assert v["expression"].count("(") == v["expression"].count(")")
        message = v["messageExpression"]
        assert message.startswith("'spec.") and any(
            w in message for w in ("instead", "; use", "; set", "; submit", "; add", "; resubmit")
        )
    for var in policy["spec"].get("variables", []):
        assert var["name"] and var["expression"]
    match = policy["spec"]["matchConstraints"]
    assert match["namespaceSelector"]["matchExpressions"] == [
        {"key": "platform.io/tenant", "operator": "Exists"}
    ]


def test_tenant_policy_reads_the_namespace_label_and_queue_prefix():
    spec = ap.queue_tenant_policy()["spec"]
    variables = {v["name"]: v["expression"] for v in spec["variables"]}
    assert "namespaceObject.metadata.labels['platform.io/tenant']" in variables["tenant"]
    assert "object.spec.queue" in variables["queue"]
    assert "startsWith('tenant-' + variables.tenant + '-')" in spec["validations"][0]["expression"]
    groups = {
        (r["apiGroups"][0], r["resources"][0]) for r in spec["matchConstraints"]["resourceRules"]
    }
    assert groups == {("batch.volcano.sh", "jobs"), ("scheduling.volcano.sh", "podgroups")}


def test_leaf_policy_takes_the_parent_queue_configmap_as_parameter():
    policy = ap.queue_leaf_policy()
    assert policy["spec"]["paramKind"] == {"apiVersion": "v1", "kind": "ConfigMap"}
    assert "params.data['queues'].split(',')" in policy["spec"]["variables"][1]["expression"]
    binding = by_kind_name(ap.admission_manifests())[
        ("ValidatingAdmissionPolicyBinding", ap.POLICY_QUEUE_LEAF)
    ]
    assert binding["spec"]["paramRef"] == {
        "name": "platform-parent-queues",
        "namespace": "platform-system",
        "parameterNotFoundAction": "Deny",
    }
    cm = ap.parent_queues_configmap()
    assert cm["metadata"]["namespace"] == "platform-system" and "data" not in cm


def test_priority_policy_covers_spot_and_critical_rules():
    expressions = " ".join(
        v["expression"] for v in ap.queue_priority_policy()["spec"]["validations"]
    )
    assert "variables.pc == 'spot-job'" in expressions
    assert "variables.pc != 'spot-job' || variables.spotQueue" in expressions
    assert "variables.criticalAllowed" in expressions
    assert "volcano.sh/preemptable" in expressions
    variables = {
        v["name"]: v["expression"] for v in ap.queue_priority_policy()["spec"]["variables"]
    }
    assert (
        "platform.io/allow-critical" in variables["criticalAllowed"]
        and "'true'" in variables["criticalAllowed"]
    )
    assert "endsWith('-spot')" in variables["spotQueue"]


def test_throttle_policy_is_namespace_scoped_and_allows_without_params():
    policy = ap.large_job_throttle_policy()
    assert [r["resources"] for r in policy["spec"]["matchConstraints"]["resourceRules"]] == [
        ["jobs"]
    ]
    assert "['critical-job', 'large-job']" in policy["spec"]["validations"][0]["expression"]
    message = policy["spec"]["validations"][0]["messageExpression"]
    assert "variables.until" in message and "variables.why" in message
    binding = by_kind_name(ap.admission_manifests())[
        ("ValidatingAdmissionPolicyBinding", ap.POLICY_LARGE_JOB_THROTTLE)
    ]
    assert binding["spec"]["paramRef"] == {
        "name": "platform-throttle",
        "parameterNotFoundAction": "Allow",
    }


def test_policies_can_be_switched_off():
    manifests = ap.admission_manifests(queue_leaf=False, large_job_throttle=False)
    names = {m["metadata"]["name"] for m in manifests}
    assert names == {ap.POLICY_QUEUE_TENANT, ap.POLICY_QUEUE_PRIORITY}
