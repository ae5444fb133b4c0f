# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The platform's five PriorityClasses as scheduling.k8s.io/v1 manifests."""

from __future__ import annotations

from typing import Any

from ..common.names import LABEL_MANAGED_BY, MANAGED_BY, PRIORITY_CLASSES

DESCRIPTIONS = {
    "critical-job": "Online inference and top-grade training; never preempted (submit with volcano.sh/preemptable: 'false').",
    "large-job": "Large distributed training (32+ GPUs); preempts normal-job and debug-job in its own queue.",
    "normal-job": "Restartable training and inference; preempts debug-job in its own queue.",
    "debug-job": "Development and debugging; lowest priority, never preempts (preemptionPolicy Never).",
    "spot-job": "Spot jobs in spot queues only; the platform deletes them when capacity is sold.",
}


def priority_class_manifest(name: str) -> dict[str, Any]:
    """Rule priority-classes: the value and preemptionPolicy of names.PRIORITY_CLASSES."""
    value, policy = PRIORITY_CLASSES[name]
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name, "labels": {LABEL_MANAGED_BY: MANAGED_BY}},
        "value": value,
        "preemptionPolicy": policy,
        "globalDefault": False,
        "description": DESCRIPTIONS[name],
    }


def priority_class_manifests() -> list[dict[str, Any]]:
    """All five, highest value first."""
    return [
        priority_class_manifest(n)
        for n in sorted(PRIORITY_CLASSES, key=lambda n: (-PRIORITY_CLASSES[n][0], n))
    ]
