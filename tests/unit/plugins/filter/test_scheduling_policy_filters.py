# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import re

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.filter import scheduler_conf_errors as f_errors
from ansible_collections.gpucloud.platform.plugins.filter import (
    scheduling_policy_manifests as f_manifests,
)


def test_filters_are_registered():
    assert set(f_errors.FilterModule().filters()) == {"scheduler_conf_errors"}
    assert set(f_manifests.FilterModule().filters()) == {
        "scheduling_policy_manifests",
        "scheduler_conf_text",
        "parameterised_admission_policies",
    }
    parameterised = f_manifests.FilterModule().filters()["parameterised_admission_policies"]
    assert "workload_queue" in parameterised(None)


def test_errors_filter_takes_text_or_mapping_and_returns_strings():
    text = f_manifests.scheduler_conf_text()
    assert f_errors.scheduler_conf_errors(text) == []
    bad = {"actions": "allocate, shuffel", "tiers": [{"plugins": [{"name": "gang"}]}]}
    errors = f_errors.scheduler_conf_errors(bad, platform_policy=False)
    assert errors == [
        "actions[1]: 'shuffel' is not an action of Volcano 1.15.1; did you mean 'shuffle'? (known: enqueue, "
        "allocate, preempt, reclaim, backfill, gangpreempt, gangreclaim, shuffle); Volcano rejects the whole configuration"
    ]
    assert all(isinstance(e, str) for e in f_errors.scheduler_conf_errors("actions: [", True))


def test_manifests_filter_returns_everything_in_apply_order():
    text = f_manifests.scheduler_conf_text()
    manifests = f_manifests.scheduling_policy_manifests(text)
    kinds = [m["kind"] for m in manifests]
    assert kinds[:5] == ["PriorityClass"] * 5
    assert kinds[5] == "ConfigMap" and manifests[5]["data"]["volcano-scheduler.conf"] == text
    assert (
        kinds.count("ValidatingAdmissionPolicy") == 10
        and kinds.count("ValidatingAdmissionPolicyBinding") == 10
    )
    assert manifests[-1]["metadata"]["name"] == "platform-parent-queues"


def test_manifests_filter_parts_and_toggles():
    manifests = f_manifests.scheduling_policy_manifests(
        "x",
        parts=["admission_policies"],
        admission={
            "queue_tenant": False,
            "large_job_throttle": False,
            "queue_billing": False,
            "pod_placement": False,
            "compliance_placement": False,
            "workload_queue": False,
            "tenant_services": False,
        },
        platform_groups=["ops:platform"],
    )
    assert {m["metadata"]["name"] for m in manifests} == {
        "gpucloud-queue-leaf",
        "gpucloud-queue-priority",
        "gpucloud-platform-state",
    }
    state = next(
        m
        for m in manifests
        if m["kind"] == "ValidatingAdmissionPolicy"
        and m["metadata"]["name"] == "gpucloud-platform-state"
    )
    assert "['ops:platform']" in state["spec"]["validations"][0]["expression"]


def test_actions_string_is_split_at_commas_never_into_characters():
    listed = f_manifests.scheduler_conf_text(actions=["enqueue", "allocate"])
    assert f_manifests.scheduler_conf_text(actions="enqueue,allocate") == listed
    assert f_manifests.scheduler_conf_text(actions=" enqueue , allocate ,") == listed
    assert "actions: enqueue, allocate\n" in listed


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"actions": {"enqueue": 1}}, "actions: {'enqueue': 1} is a mapping"),
        ({"tiers": "priority,gang"}, "tiers: 'priority,gang' is not a list"),
        (
            {"configurations": {"name": "enqueue"}},
            "configurations: {'name': 'enqueue'} is not a list",
        ),
    ],
)
def test_conf_text_refuses_a_list_option_given_as_a_string_or_mapping(kwargs, message):
    with pytest.raises(AnsibleFilterError, match=re.escape(message)):
        f_manifests.scheduler_conf_text(**kwargs)


def test_manifests_filter_reads_switches_as_ansible_booleans():
    names = {
        m["metadata"]["name"]
        for m in f_manifests.scheduling_policy_manifests(
            "x",
            parts=["admission_policies"],
            admission={"queue_leaf": "false", "pod_placement": "no"},
        )
    }
    assert "gpucloud-queue-leaf" not in names and "gpucloud-pod-placement" not in names
    assert "gpucloud-queue-tenant" in names
    with pytest.raises(
        AnsibleFilterError, match=r"admission\.queue_leaf: 'maybe' is not a boolean"
    ):
        f_manifests.scheduling_policy_manifests("x", admission={"queue_leaf": "maybe"})
    with pytest.raises(AnsibleFilterError, match="platform_groups: 'system:masters' is not a list"):
        f_manifests.scheduling_policy_manifests("x", platform_groups="system:masters")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"tiers": [["gang"]]},
            "scheduler_conf_text: tiers[0]: ['gang'] must be a mapping with a 'plugins' list",
        ),
        (
            {"tiers": [{"plugins": ["gang"]}]},
            "tiers[0].plugins[0]: 'gang' must be a mapping with a 'name'",
        ),
        ({"configurations": [1]}, "configurations[0]: 1 must be a mapping with name and arguments"),
        ({"actions": [1]}, "scheduler_conf_text: actions[0]: 1 must be an action name"),
    ],
)
def test_conf_text_names_a_malformed_entry_instead_of_a_python_error(kwargs, message):
    with pytest.raises(AnsibleFilterError, match=re.escape(message)):
        f_manifests.scheduler_conf_text(**kwargs)


def test_errors_filter_names_the_value_not_its_type():
    assert f_errors.scheduler_conf_errors(42) == [
        "volcano-scheduler.conf: 42 is neither a YAML string nor a mapping (rule conf-parses)"
    ]


def test_manifests_filter_refuses_unknown_parts_switches_and_a_conf_that_is_not_text():
    with pytest.raises(AnsibleFilterError) as caught:
        f_manifests.scheduling_policy_manifests(
            5, parts=["priority_class", "scheduler_configmap"], admission={"queue_priorty": False}
        )
    text = str(caught.value)
    assert "parts[0]: 'priority_class' is not a part" in text
    assert "did you mean 'priority_classes'?" in text
    assert "admission.queue_priorty: is not an admission switch" in text
    assert "did you mean 'queue_priority'?" in text
    assert "conf_text: 5 must be the YAML text of volcano-scheduler.conf" in text
    with pytest.raises(AnsibleFilterError, match="parts: 'priority_classes' must be a list"):
        f_manifests.scheduling_policy_manifests("x", parts="priority_classes")
