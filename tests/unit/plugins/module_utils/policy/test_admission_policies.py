# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common import names
from ansible_collections.gpucloud.platform.plugins.module_utils.policy import admission as ap


def by_kind_name(manifests):
    return {(m["kind"], m["metadata"]["name"]): m for m in manifests}


def test_each_policy_has_its_binding():
    manifests = ap.admission_manifests()
    index = by_kind_name(manifests)
    assert len(manifests) == 2 * len(ap.POLICY_NAMES) == 20
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
        # the message names the field first (for pod specs: where the spec sits in the object)
        assert message.startswith(("'spec.", "'metadata.", "(request.kind.kind")) and any(
            w in message
            for w in (
                "instead",
                "; use",
                "; set",
                "; submit",
                "; add",
                "; resubmit",
                "; remove",
                "; leave",
                "; tolerate",
            )
        )
    for var in policy["spec"].get("variables", []):
        assert var["name"] and var["expression"]
    match = policy["spec"]["matchConstraints"]
    assert match["namespaceSelector"]["matchExpressions"] == [
        {"key": "platform.io/tenant", "operator": "Exists"}
    ]


def test_tenant_policy_reads_the_tenants_own_queue_list_not_a_name_prefix():
    spec = ap.queue_tenant_policy()["spec"]
    variables = {v["name"]: v["expression"] for v in spec["variables"]}
    assert "namespaceObject.metadata.labels['platform.io/tenant']" in variables["tenant"]
    assert "object.spec.queue" in variables["queue"]
    assert "params.data" in variables["own"]
    assert spec["validations"][0]["expression"] == "variables.queue in variables.own"
    assert "startsWith" not in str(spec)
    binding = by_kind_name(ap.admission_manifests())[
        ("ValidatingAdmissionPolicyBinding", ap.POLICY_QUEUE_TENANT)
    ]
    # no namespace: the parameter is read in the namespace of the admitted object
    assert binding["spec"]["paramRef"] == {
        "name": "platform-queues",
        "parameterNotFoundAction": "Deny",
    }
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
    assert variables["spotQueue"] == "variables.queueType == 'spot'"
    assert "params.data[variables.queue]" in variables["queueType"]


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
    manifests = ap.admission_manifests(
        queue_leaf=False,
        large_job_throttle=False,
        pod_placement=False,
        platform_state=False,
        compliance_placement=False,
        workload_queue=False,
        tenant_services=False,
    )
    names = {m["metadata"]["name"] for m in manifests}
    assert names == {ap.POLICY_QUEUE_TENANT, ap.POLICY_QUEUE_PRIORITY, ap.POLICY_QUEUE_BILLING}


def test_tenant_queue_parameter_lists_the_leaves_in_the_tenants_namespace():
    cm = ap.tenant_queues_configmap(
        "alpha", {"tenant-alpha-spot": "spot", "tenant-alpha-a": "team"}
    )
    assert cm["metadata"]["namespace"] == "tenant-alpha"
    assert cm["metadata"]["name"].startswith("platform-")  # protected by rule platform-state
    assert cm["data"] == {"tenant-alpha-a": "team", "tenant-alpha-spot": "spot"}


def test_platform_state_lets_the_named_groups_and_platform_service_accounts_write():
    policy = by_kind_name(ap.admission_manifests(platform_groups=["ops:platform"]))[
        ("ValidatingAdmissionPolicy", ap.POLICY_PLATFORM_STATE)
    ]
    expression = policy["spec"]["validations"][0]["expression"]
    assert "['ops:platform']" in expression and "system:masters" not in expression
    assert "system:serviceaccount:platform-system:" in expression
    condition = policy["spec"]["matchConditions"][0]["expression"]
    assert "request.name.startsWith('platform-')" in condition
    assert "!has(request.name)" in condition  # a delete-collection is judged too
    # a namespace being deleted (its controller removes every ConfigMap) passes
    assert "namespaceObject.metadata.deletionTimestamp" in expression
    assert "system:serviceaccount:kube-system:" in expression
    rules = policy["spec"]["matchConstraints"]["resourceRules"]
    assert rules[0]["resources"] == ["configmaps"]
    assert rules[0]["operations"] == ["CREATE", "UPDATE", "DELETE"]


def test_billing_policy_ties_the_label_to_the_queue_type_and_bounds_the_price():
    policy = ap.queue_billing_policy()
    variables = {v["name"]: v["expression"] for v in policy["spec"]["variables"]}
    # Rule billing-type-of-queue, one map for the policy, the meter and the job builders.
    for queue_type, billing in names.BILLING_TYPE_OF_QUEUE_TYPE.items():
        assert f"'{queue_type}': '{billing}'" in variables["billing"]
    # A billing label is optional; one that is set must match.
    label_rule = policy["spec"]["validations"][0]["expression"]
    assert "variables.labelled == ''" in label_rule
    # A task template repeats the Job's price or names none.
    assert "variables.price" in policy["spec"]["validations"][2]["expression"]
    price_rule = policy["spec"]["validations"][1]["expression"]
    assert ap.SPOT_PRICE_PATTERN in price_rule
    import re

    pattern = re.compile(ap.SPOT_PRICE_PATTERN)
    assert all(pattern.match(p) for p in ("0", "0.35", "123456.123456"))
    assert not any(pattern.match(p) for p in ("1e400", "-1", "1234567", "0.1234567", "", ".5"))


def test_pod_placement_checks_every_pod_spec_a_tenant_can_submit():
    from ansible_collections.gpucloud.platform.plugins.module_utils.policy import pod_placement

    policy = pod_placement.pod_placement_policy()
    rules = policy["spec"]["matchConstraints"]["resourceRules"]
    assert {(r["apiGroups"][0], r["resources"][0]) for r in rules} == {
        ("", "pods"),
        ("batch.volcano.sh", "jobs"),
        ("apps", "deployments"),
        ("apps", "replicasets"),
    }
    fields = [
        v["messageExpression"].split("'.", 1)[1].split(":", 1)[0]
        for v in policy["spec"]["validations"]
    ]
    assert fields == [
        "schedulerName",
        "nodeName",
        "priorityClassName",
        "metadata volcano.sh/preemptable",
        "tolerations",
        "tolerations[].key",
        "hostNetwork",
        "volumes",
        "containers[].securityContext.privileged",
    ]
    # every rule holds for every pod spec of the object
    assert all(
        v["expression"].startswith("variables.pods.all(p, ") for v in policy["spec"]["validations"]
    )
    # an apostrophe in a message is escaped for CEL
    assert "node\\'s" in policy["spec"]["validations"][6]["messageExpression"]
    assert "virtual-kubelet.io/provider" in policy["spec"]["validations"][4]["expression"]


def test_only_a_vgpu_pod_tolerates_the_gpu_sharing_taint():
    """Rule vgpu-taint-needs-vgpu: the toleration of the sharing nodes' taint is allowed
    when a container's limits ask for at least one vGPU (what Volcano reads); the CEL
    itself is judged by the API server in tests/integration/test_tenant_security.py."""
    from ansible_collections.gpucloud.platform.plugins.module_utils.policy import pod_placement

    rule = pod_placement.pod_placement_policy()["spec"]["validations"][5]
    assert "t.key == 'platform.io/gpu-sharing'" in rule["expression"]
    assert "'volcano.sh/vgpu-number' in c.resources.limits" in rule["expression"]
    assert "compareTo(quantity('1')) >= 0" in rule["expression"]
    assert "only a pod that asks for vGPUs" in rule["messageExpression"]


def test_the_parameterised_policies_are_derived_from_their_bindings():
    """Rule last-parameterised-binding: every binding with a ConfigMap parameter, and only
    those, so the guard cannot forget one (workload_queue was forgotten by a hand list)."""
    bound = {
        m["spec"]["policyName"]
        for m in ap.admission_manifests()
        if m["kind"] == "ValidatingAdmissionPolicyBinding" and "paramRef" in m["spec"]
    }
    switches = ap.parameterised_policies()
    assert {ap.POLICY_PREFIX + s.replace("_", "-") for s in switches} == bound
    assert "workload_queue" in switches and "pod_placement" not in switches
    # each is a switch of admission_manifests: switching them all off leaves no parameter
    left = ap.admission_manifests(**dict.fromkeys(switches, False))
    assert not [m for m in left if "paramRef" in m.get("spec", {})]
