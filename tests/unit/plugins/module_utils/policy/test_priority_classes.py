# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

from ansible_collections.gpucloud.platform.plugins.module_utils.policy.priority_classes import (
    priority_class_manifests,
)


def test_five_priority_classes_with_the_designs_values():
    by_name = {m["metadata"]["name"]: m for m in priority_class_manifests()}
    assert {n: (m["value"], m["preemptionPolicy"]) for n, m in by_name.items()} == {
        "critical-job": (1000, "PreemptLowerPriority"),
        "large-job": (800, "PreemptLowerPriority"),
        "normal-job": (100, "PreemptLowerPriority"),
        "debug-job": (50, "Never"),
        "spot-job": (50, "PreemptLowerPriority"),
    }


def test_priority_class_manifests_are_well_formed_and_labelled():
    manifests = priority_class_manifests()
    assert [m["value"] for m in manifests] == sorted((m["value"] for m in manifests), reverse=True)
    for m in manifests:
        assert m["apiVersion"] == "scheduling.k8s.io/v1" and m["kind"] == "PriorityClass"
        assert m["metadata"]["labels"] == {"platform.io/managed-by": "gpucloud-platform"}
        assert m["globalDefault"] is False and m["description"]
