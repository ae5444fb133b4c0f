# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scheduling_policy_manifests: the scheduling policy's Kubernetes objects, and the scheduler conf text."""

from __future__ import annotations

from ansible_collections.gpucloud.platform.plugins.module_utils.policy.admission import (
    DEFAULT_PLATFORM_GROUPS,
    admission_manifests,
    parent_queues_configmap,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.priority_classes import (
    priority_class_manifests,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf import (
    DEFAULT_ACTIONS,
    DEFAULT_TIERS,
    render_scheduler_conf,
    scheduler_configmap,
)

ADMISSION_TOGGLES = (
    "queue_tenant",
    "queue_leaf",
    "queue_priority",
    "queue_billing",
    "large_job_throttle",
    "pod_placement",
    "platform_state",
)
PARTS = ("priority_classes", "scheduler_configmap", "admission_policies", "parent_queues_configmap")


def scheduler_conf_text(tiers=None, actions=None, configurations=None):
    """The YAML text of volcano-scheduler.conf from structured variables."""
    return render_scheduler_conf(
        actions=list(actions) if actions is not None else DEFAULT_ACTIONS,
        tiers=list(tiers) if tiers is not None else DEFAULT_TIERS,
        configurations=configurations or None,
    )


def scheduling_policy_manifests(conf_text, parts=PARTS, admission=None, platform_groups=None):
    """The manifests to apply: PriorityClasses, the scheduler ConfigMap holding conf_text,
    the admission policies with their bindings, and the parent-queues parameter ConfigMap."""
    admission = dict(admission or {})
    out = []
    if "priority_classes" in parts:
        out += priority_class_manifests()
    if "scheduler_configmap" in parts:
        out.append(scheduler_configmap(conf_text))
    if "admission_policies" in parts:
        toggles = {name: bool(admission.get(name, True)) for name in ADMISSION_TOGGLES}
        groups = list(platform_groups) if platform_groups else list(DEFAULT_PLATFORM_GROUPS)
        out += admission_manifests(platform_groups=groups, **toggles)
    if "parent_queues_configmap" in parts:
        out.append(parent_queues_configmap())
    return out


class FilterModule:
    def filters(self):
        return {
            "scheduling_policy_manifests": scheduling_policy_manifests,
            "scheduler_conf_text": scheduler_conf_text,
        }
