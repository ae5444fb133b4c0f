# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module federation_platform on the real local federation (``conftest.federation``:
members ``fed-idc`` and ``fed-cloud``, joined as idc and cloud), run as a playbook runs it
(``ansible -m``) against the Karmada API server, once per suite run by
``conftest.federation_platform`` (a check-mode run first, then a run):

* check mode writes nothing in Karmada or either member: on a new federation nothing
  appears, and a change later moves no resourceVersion;
* the run puts the five PriorityClasses and the Volcano scheduler ConfigMap in both members
  (each member's own ConfigMap taken over by Karmada, and copied by the member's local
  cluster into vc-scheduler's conf file), ``cloud-burst`` in the cloud member only, and
  keeps the interpreter customization and the lost-member ClusterTaintPolicy in Karmada;
* a second run writes nothing (no resourceVersion in Karmada moves);
* a bad option fails naming it, and writes nothing.
"""

from __future__ import annotations

import time

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.federation_placement import (
    MEMBER_FAILOVER_POLICY,
    MEMBER_NOT_READY_TAINT,
    POLICY_API,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_builder import (
    DEFAULT_ACTIONS,
)
from ansible_collections.gpucloud.platform.tests.federation.federation_helpers import (
    PLATFORM_ARGS,
    member_platform,
    platform_versions,
)
from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    state_dir,
    wait_until,
)

pytestmark = pytest.mark.federation

IDC, CLOUD = "fed-idc", "fed-cloud"
PRIORITY_CLASSES = {"critical-job", "large-job", "normal-job", "debug-job", "spot-job"}
CUSTOMIZATION = "gpucloud-platform-volcano-job"
# 1 Namespace, 1 customization, 1 ClusterTaintPolicy, 5 PriorityClasses, 1 ConfigMap,
# 1 Queue and 3 policies for the members; for the federation's admission (rule
# federation-admission) 1 Namespace, 1 ConfigMap, 10 admission policies and 10 bindings
OBJECTS = 35


def test_check_mode_writes_nothing_in_karmada_or_either_member(federation_platform):
    check = federation_platform["check"]
    assert check.get("failed") is not True, check
    assert check["changed"] is True and len(check["objects"]) == OBJECTS
    assert check["summary"] == [
        f"platform in the federation: would create {OBJECTS} objects "
        "(PriorityClasses and scheduler conf to every member, admission policies in Karmada, "
        "cloud-burst 8 GPUs)"
    ]
    before, after = federation_platform["before"], federation_platform["after_check"]
    assert before["karmada"] == {} and after["karmada"] == {}
    for name in (IDC, CLOUD):
        assert after[name] == before[name], name
        assert after[name]["priority_classes"] == {}
        assert after[name]["cloud_burst_gpus"] is None
        # the member's own scheduler ConfigMap, from its bring-up, untouched
        assert after[name]["karmada_made"] is None


def test_a_run_puts_the_platform_in_each_member_where_it_belongs(federation_platform):
    done = federation_platform["result"]
    assert done["changed"] is True
    assert done["objects"] == federation_platform["check"]["objects"]
    assert done["summary"] == [
        f"platform in the federation: created {OBJECTS} objects "
        "(PriorityClasses and scheduler conf to every member, admission policies in Karmada, "
        "cloud-burst 8 GPUs)"
    ]
    members, conf = federation_platform["members"], federation_platform["conf"]
    for name in (IDC, CLOUD):
        held = member_platform(members[name])
        assert set(held["priority_classes"]) == PRIORITY_CLASSES, name
        # the member's ConfigMap is Karmada's now, holding what was written, and the
        # member's vc-scheduler reads it (the local cluster copies it to its conf file)
        assert held["conf"] == conf and held["karmada_made"] == "true", name
        conf_file = state_dir(name) / "volcano-scheduler.conf"
        wait_until(lambda f=conf_file: f.read_text() == conf, 10, 1, f"{name}'s conf file")
    assert member_platform(members[CLOUD])["cloud_burst_gpus"] == "8"
    assert member_platform(members[IDC])["cloud_burst_gpus"] is None
    # the customization is Karmada's: in Karmada, in no member
    karmada = federation_platform["karmada"]
    api = "config.karmada.io/v1alpha1"
    assert karmada.get(api, "ResourceInterpreterCustomization", CUSTOMIZATION) is not None
    # so is the policy that marks a lost member (rule federation-member-failover)
    taint_policy = karmada.get(POLICY_API, "ClusterTaintPolicy", MEMBER_FAILOVER_POLICY)
    assert taint_policy["spec"]["taints"] == [
        {"key": MEMBER_NOT_READY_TAINT, "effect": "NoExecute"}
    ]
    print(
        "federation_platform: check mode, the run and both members ready "
        f"{federation_platform['seconds']:.1f}s"
    )


def test_a_change_in_check_mode_writes_nothing(federation_platform, run_on_federation):
    karmada, members = federation_platform["karmada"], federation_platform["members"]
    before = platform_versions(karmada)
    held = {name: member_platform(m) for name, m in members.items()}
    # the platform's actions without backfill, and a smaller cloud
    actions = [a for a in DEFAULT_ACTIONS if a != "backfill"]
    changed = {"scheduler_actions": actions, "cloud_burst_gpus": 6}
    would = run_on_federation("federation_platform", changed, check=True, diff=True)
    assert would.get("failed") is not True, would
    assert {(o["kind"], o["name"], o["action"]) for o in would["objects"]} == {
        ("ConfigMap", "volcano-scheduler-configmap", "update"),
        ("Queue", "cloud-burst", "update"),
    }
    # one entry per object: a one-value change is one line ("prepared"), headed the same
    headers = [(d.get("before_header") or d["prepared"]).split(":")[0] for d in would["diff"]]
    assert headers == [
        "ConfigMap/volcano-system/volcano-scheduler-configmap",
        "Queue/cloud-burst",
    ]
    time.sleep(5)  # what Karmada would push, it has pushed by now
    assert platform_versions(karmada) == before
    assert {name: member_platform(m) for name, m in members.items()} == held


def test_a_second_run_writes_nothing(federation_platform, run_on_federation):
    karmada = federation_platform["karmada"]
    before = platform_versions(karmada)
    assert len(before) == OBJECTS
    again = run_on_federation("federation_platform", PLATFORM_ARGS)
    assert again.get("failed") is not True, again
    assert again["changed"] is False and again["objects"] == []
    assert platform_versions(karmada) == before


def test_a_bad_option_fails_naming_it_and_writes_nothing(federation_platform, run_on_federation):
    karmada, members = federation_platform["karmada"], federation_platform["members"]
    before = platform_versions(karmada)
    held = {name: member_platform(m) for name, m in members.items()}
    bad = run_on_federation(
        "federation_platform", {"scheduler_actions": ["enqueue", "alocate"], "cloud_burst_gpus": 4}
    )
    assert bad.get("failed") is True
    assert "scheduler_actions[1]: 'alocate' is not an action" in bad["msg"]
    time.sleep(2)
    assert platform_versions(karmada) == before
    assert {name: member_platform(m) for name, m in members.items()} == held


def test_a_switched_off_admission_policy_leaves_karmada_and_comes_back(
    federation_platform, run_on_federation
):
    """Option ``admission``, as a member's scheduling_policy_admission: switched off, the
    policy and its binding are deleted from Karmada's API server (the binding first);
    switched on again, both are back and a further run writes nothing."""
    karmada = federation_platform["karmada"]
    names = ("gpucloud-tenant-services",)

    def held() -> set[tuple[str, str]]:
        return {
            (kind, obj["metadata"]["name"])
            for kind in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
            for obj in karmada.list("admissionregistration.k8s.io/v1", kind)
            if obj["metadata"]["name"] in names
        }

    assert len(held()) == 2
    off = run_on_federation(
        "federation_platform", {**PLATFORM_ARGS, "admission": {"tenant_services": False}}
    )
    assert off.get("failed") is not True, off
    assert [(o["kind"], o["action"]) for o in off["objects"]] == [
        ("ValidatingAdmissionPolicyBinding", "delete"),
        ("ValidatingAdmissionPolicy", "delete"),
    ]
    assert "deleted 2 objects" in off["summary"][0]
    assert held() == set()
    back = run_on_federation("federation_platform", PLATFORM_ARGS)
    assert back.get("failed") is not True, back
    assert len(held()) == 2
    assert run_on_federation("federation_platform", PLATFORM_ARGS)["changed"] is False
