# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules images-from-allowed-registries and registry-prefix-shape. The CEL itself is
judged by the real API server (tests/integration/test_tenant_security.py); here, its
shape and the prefix checks."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.filter import (
    scheduling_policy_manifests as f_manifests,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy import admission as ap
from ansible_collections.gpucloud.platform.plugins.module_utils.policy import (
    image_registries as ir,
)


@pytest.mark.parametrize(
    "prefix",
    [
        "registry.example.com/",
        "registry.example.com:5000/team/",
        "docker.io/library/",
        "localhost:5000/",
        "mirror.corp.internal/nvcr.io/nvidia/",
    ],
)
def test_a_registry_host_with_a_path_ending_in_a_slash_is_a_prefix(prefix):
    assert ir.registry_prefix_errors([prefix]) == []


@pytest.mark.parametrize(
    ("prefixes", "message"),
    [
        (
            ["registry.example.com"],
            "ending in / (such as registry.example.com/ or docker.io/library/); write registry.example.com/",
        ),
        (["busybox/"], "must be a registry host"),
        (["https://registry.example.com/"], "must be a registry host"),
        (["reg.example.com/a'b/"], "must be a registry host"),
        ([""], "must be a registry host"),
        ([5], "must be a registry host"),
        ("registry.example.com/", "must be a list of registry prefixes"),
    ],
)
def test_a_prefix_that_would_allow_more_than_it_says_is_refused(prefixes, message):
    errors = ir.registry_prefix_errors(prefixes)
    assert len(errors) == 1 and message in str(errors[0]), errors


def test_the_policy_is_applied_only_with_prefixes_given_and_lists_them():
    assert not any(
        m["metadata"]["name"] == ir.POLICY_IMAGE_REGISTRIES for m in ap.admission_manifests()
    )
    manifests = ap.admission_manifests(image_registries=["registry.example.com/"])
    policy, binding = manifests[-2:]
    assert policy["kind"] == "ValidatingAdmissionPolicy"
    assert policy["metadata"]["name"] == binding["spec"]["policyName"] == ir.POLICY_IMAGE_REGISTRIES
    assert "paramRef" not in binding["spec"]  # not parameterised: removing it freezes nothing
    refused = policy["spec"]["variables"][0]["expression"]
    assert "['registry.example.com/']" in refused
    # every kind of container, in pods and in each task of a Volcano Job
    for kind in ("containers", "initContainers", "ephemeralContainers"):
        assert f".{kind}[" in refused
    assert "object.spec.tasks" in refused
    rules = policy["spec"]["matchConstraints"]["resourceRules"]
    assert {(r["apiGroups"][0], r["resources"][0]) for r in rules} == {
        ("", "pods"),
        ("", "pods/ephemeralcontainers"),
        ("batch.volcano.sh", "jobs"),
    }
    message = policy["spec"]["validations"][0]["messageExpression"]
    assert "(registry.example.com/)" in message and "; use an image" in message


def test_short_names_are_judged_as_the_runtime_reads_them():
    qualified = ir._qualified("i")
    assert "'docker.io/library/' + i" in qualified and "'docker.io/' + i" in qualified
    assert "== 'localhost'" in qualified


def test_the_filter_refuses_a_bad_prefix_and_passes_good_ones_through():
    with pytest.raises(AnsibleFilterError, match=r"image_registries\[1\]: 'quay.io' must be"):
        f_manifests.scheduling_policy_manifests(
            "x", parts=["admission_policies"], image_registries=["ghcr.io/", "quay.io"]
        )
    names = [
        m["metadata"]["name"]
        for m in f_manifests.scheduling_policy_manifests(
            "x", parts=["admission_policies"], image_registries=["ghcr.io/"]
        )
    ]
    assert names.count(ir.POLICY_IMAGE_REGISTRIES) == 2
