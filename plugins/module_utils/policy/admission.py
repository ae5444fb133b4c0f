# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ValidatingAdmissionPolicies (CEL, enforced by the API server for every client).

Four policies, each with its binding:

* queue-tenant: a Volcano Job or PodGroup names a queue of its own tenant
  (the namespace's ``platform.io/tenant`` label; queue names start with
  ``tenant-<tenant>-``).
* queue-leaf: never a queue that has children. The parent queues are the
  policy's parameter: ConfigMap ``platform-parent-queues`` in
  ``platform-system``, key ``queues``, comma-separated, kept by the tenant
  modules.
* queue-priority: the PriorityClass fits the queue type (spot queues only
  spot-job; spot-job only in spot queues; critical-job only where the
  namespace has ``platform.io/allow-critical: "true"``, and only on task
  templates marked ``volcano.sh/preemptable: "false"`` so that neither
  preempt nor reclaim takes it).
* large-job-throttle: while a queue is listed in the namespace's ConfigMap
  ``platform-throttle`` (key ``queues``), new Jobs below priority 800 are
  refused until ``until`` (written by the platform, which deletes the
  ConfigMap when the large job runs or the wait times out).
"""

from __future__ import annotations

from typing import Any

from ..common.names import (
    ADMISSION_API,
    LABEL_MANAGED_BY,
    LABEL_TENANT,
    MANAGED_BY,
    PLATFORM_NAMESPACE,
    PREFIX,
    PRIORITY_CLASSES,
)

POLICY_PREFIX = "gpucloud-"
LABEL_ALLOW_CRITICAL = PREFIX + "allow-critical"
PARENT_QUEUES_CONFIGMAP = "platform-parent-queues"
THROTTLE_CONFIGMAP = "platform-throttle"
PARAM_KEY_QUEUES = "queues"
PREEMPTABLE_ANNOTATION = "volcano.sh/preemptable"
THROTTLE_EXEMPT_CLASSES = ("critical-job", "large-job")

POLICY_QUEUE_TENANT = POLICY_PREFIX + "queue-tenant"
POLICY_QUEUE_LEAF = POLICY_PREFIX + "queue-leaf"
POLICY_QUEUE_PRIORITY = POLICY_PREFIX + "queue-priority"
POLICY_LARGE_JOB_THROTTLE = POLICY_PREFIX + "large-job-throttle"
POLICY_NAMES = (
    POLICY_QUEUE_TENANT,
    POLICY_QUEUE_LEAF,
    POLICY_QUEUE_PRIORITY,
    POLICY_LARGE_JOB_THROTTLE,
)


def _cel_list(values: list[str] | tuple[str, ...]) -> str:
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


_QUEUE = "has(object.spec.queue) && object.spec.queue != '' ? object.spec.queue : 'default'"
_TENANT = f"namespaceObject.metadata.labels['{LABEL_TENANT}']"
_PRIORITY_CLASS = "has(object.spec.priorityClassName) && object.spec.priorityClassName != '' ? object.spec.priorityClassName : ''"
# Comma-separated list in a ConfigMap parameter, trimmed, empties dropped.
_PARAM_QUEUES = (
    f"has(params.data) && '{PARAM_KEY_QUEUES}' in params.data ? "
    f"params.data['{PARAM_KEY_QUEUES}'].split(',').map(q, q.trim()).filter(q, q != '') : []"
)


def _labels() -> dict[str, str]:
    return {LABEL_MANAGED_BY: MANAGED_BY}


def _match(resources: list[tuple[str, str]], operations: list[str]) -> dict[str, Any]:
    """Volcano Jobs and/or PodGroups in namespaces that carry a tenant label."""
    return {
        "namespaceSelector": {"matchExpressions": [{"key": LABEL_TENANT, "operator": "Exists"}]},
        "resourceRules": [
            {
                "apiGroups": [group],
                "apiVersions": ["*"],
                "operations": list(operations),
                "resources": [resource],
            }
            for group, resource in resources
        ],
    }


JOBS_AND_PODGROUPS = [("batch.volcano.sh", "jobs"), ("scheduling.volcano.sh", "podgroups")]


def _policy(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": ADMISSION_API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": _labels()},
        "spec": {"failurePolicy": "Fail", **spec},
    }


def _binding(policy: str, param_ref: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"policyName": policy, "validationActions": ["Deny"]}
    if param_ref is not None:
        spec["paramRef"] = param_ref
    return {
        "apiVersion": ADMISSION_API,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": policy, "labels": _labels()},
        "spec": spec,
    }


def queue_tenant_policy() -> dict[str, Any]:
    """Rule queue-of-own-tenant: a Job or PodGroup names a queue of its namespace's tenant."""
    return _policy(
        POLICY_QUEUE_TENANT,
        {
            "matchConstraints": _match(JOBS_AND_PODGROUPS, ["CREATE", "UPDATE"]),
            "variables": [
                {"name": "queue", "expression": _QUEUE},
                {"name": "tenant", "expression": _TENANT},
            ],
            "validations": [
                {
                    "expression": "variables.queue.startsWith('tenant-' + variables.tenant + '-')",
                    "messageExpression": (
                        "'spec.queue: ' + variables.queue + ' is not a queue of tenant ' + variables.tenant + "
                        "'; submit to one of your own queues: tenant-' + variables.tenant + '-<team>, tenant-' + "
                        "variables.tenant + '-payg or tenant-' + variables.tenant + '-spot'"
                    ),
                    "reason": "Forbidden",
                }
            ],
        },
    )


def queue_leaf_policy() -> dict[str, Any]:
    """Rule leaf-queue-only: never a queue listed as a parent queue (one PodGroup in a parent
    queue stops capacity's hierarchical scheduling for the whole cluster)."""
    return _policy(
        POLICY_QUEUE_LEAF,
        {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": _match(JOBS_AND_PODGROUPS, ["CREATE", "UPDATE"]),
            "variables": [
                {"name": "queue", "expression": _QUEUE},
                {"name": "parents", "expression": _PARAM_QUEUES},
            ],
            "validations": [
                {
                    "expression": "!(variables.queue in variables.parents)",
                    "messageExpression": (
                        "'spec.queue: ' + variables.queue + ' has team sub-queues and takes no jobs; submit to one "
                        "of its team queues (tenant-<tenant>-<team>) instead'"
                    ),
                    "reason": "Forbidden",
                }
            ],
        },
    )


def queue_priority_policy() -> dict[str, Any]:
    """Rule priority-fits-queue: spot queues take only spot-job, spot-job only spot queues,
    critical-job only where the tenant is allowed it, marked non-preemptable."""
    classes = _cel_list(tuple(PRIORITY_CLASSES))
    non_preemptable = (
        "object.spec.tasks.all(t, has(t.template.metadata) && has(t.template.metadata.annotations) && "
        f"'{PREEMPTABLE_ANNOTATION}' in t.template.metadata.annotations && "
        f"t.template.metadata.annotations['{PREEMPTABLE_ANNOTATION}'] == 'false')"
    )
    return _policy(
        POLICY_QUEUE_PRIORITY,
        {
            "matchConstraints": _match(JOBS_AND_PODGROUPS, ["CREATE", "UPDATE"]),
            "variables": [
                {"name": "queue", "expression": _QUEUE},
                {"name": "pc", "expression": _PRIORITY_CLASS},
                {"name": "spotQueue", "expression": "variables.queue.endsWith('-spot')"},
                {
                    "name": "criticalAllowed",
                    "expression": (
                        f"has(namespaceObject.metadata.labels) && '{LABEL_ALLOW_CRITICAL}' in namespaceObject.metadata.labels "
                        f"&& namespaceObject.metadata.labels['{LABEL_ALLOW_CRITICAL}'] == 'true'"
                    ),
                },
            ],
            "validations": [
                {
                    "expression": f"variables.pc == '' || variables.pc in {classes}",
                    "messageExpression": (
                        "'spec.priorityClassName: ' + variables.pc + ' is not a platform PriorityClass; use one of "
                        + ", ".join(PRIORITY_CLASSES)
                        + "'"
                    ),
                    "reason": "Invalid",
                },
                {
                    "expression": "!variables.spotQueue || variables.pc == 'spot-job'",
                    "messageExpression": (
                        "'spec.priorityClassName: ' + (variables.pc == '' ? '(none)' : variables.pc) + ' cannot run in "
                        "spot queue ' + variables.queue + '; set priorityClassName: spot-job, or submit to a team or "
                        "pay-as-you-go queue'"
                    ),
                    "reason": "Invalid",
                },
                {
                    "expression": "variables.pc != 'spot-job' || variables.spotQueue",
                    "messageExpression": (
                        "'spec.priorityClassName: spot-job runs only in a spot queue, not in ' + variables.queue + "
                        "'; submit to tenant-<tenant>-spot, or use normal-job, large-job or debug-job here'"
                    ),
                    "reason": "Invalid",
                },
                {
                    "expression": "variables.pc != 'critical-job' || variables.criticalAllowed",
                    "messageExpression": (
                        "'spec.priorityClassName: critical-job is not enabled for namespace ' + namespaceObject.metadata.name"
                        f" + '; use large-job or normal-job, or ask the platform to allow critical jobs for this tenant "
                        f'(namespace label {LABEL_ALLOW_CRITICAL}: "true")\''
                    ),
                    "reason": "Forbidden",
                },
                {
                    "expression": (
                        f"variables.pc != 'critical-job' || request.kind.kind != 'Job' || {non_preemptable}"
                    ),
                    "messageExpression": (
                        "'spec.tasks: a critical-job must mark every task template with annotation "
                        f'{PREEMPTABLE_ANNOTATION}: "false" so that neither preempt nor reclaim can evict it; add it '
                        "to each task template metadata'"
                    ),
                    "reason": "Invalid",
                },
            ],
        },
    )


def large_job_throttle_policy() -> dict[str, Any]:
    """Rule large-job-throttle: while the namespace's ConfigMap platform-throttle lists a queue,
    Jobs below priority 800 are not admitted to it."""
    exempt = _cel_list(THROTTLE_EXEMPT_CLASSES)
    return _policy(
        POLICY_LARGE_JOB_THROTTLE,
        {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": _match([("batch.volcano.sh", "jobs")], ["CREATE"]),
            "variables": [
                {"name": "queue", "expression": _QUEUE},
                {"name": "pc", "expression": _PRIORITY_CLASS},
                {"name": "throttled", "expression": _PARAM_QUEUES},
                {
                    "name": "until",
                    "expression": "has(params.data) && 'until' in params.data ? params.data['until'] : 'the large job runs'",
                },
                {
                    "name": "why",
                    "expression": (
                        "has(params.data) && 'reason' in params.data ? params.data['reason'] : "
                        "'a large job is waiting for the GPUs that preemption is freeing in this queue'"
                    ),
                },
            ],
            "validations": [
                {
                    "expression": f"!(variables.queue in variables.throttled) || variables.pc in {exempt}",
                    "messageExpression": (
                        "'spec.queue: ' + variables.queue + ' accepts no jobs below large-job until ' + variables.until "
                        "+ ' because ' + variables.why + '; resubmit after that time, or submit to another of your "
                        "queues'"
                    ),
                    "reason": "Forbidden",
                }
            ],
        },
    )


def parent_queues_configmap() -> dict[str, Any]:
    """The leaf policy's parameter, without the ``queues`` key (owned by the tenant modules)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": PARENT_QUEUES_CONFIGMAP,
            "namespace": PLATFORM_NAMESPACE,
            "labels": _labels(),
        },
    }


def admission_manifests(
    queue_tenant: bool = True,
    queue_leaf: bool = True,
    queue_priority: bool = True,
    large_job_throttle: bool = True,
) -> list[dict[str, Any]]:
    """Policies and bindings, each binding after its policy."""
    out: list[dict[str, Any]] = []
    if queue_tenant:
        out += [queue_tenant_policy(), _binding(POLICY_QUEUE_TENANT)]
    if queue_leaf:
        out += [
            queue_leaf_policy(),
            _binding(
                POLICY_QUEUE_LEAF,
                {
                    "name": PARENT_QUEUES_CONFIGMAP,
                    "namespace": PLATFORM_NAMESPACE,
                    "parameterNotFoundAction": "Deny",
                },
            ),
        ]
    if queue_priority:
        out += [queue_priority_policy(), _binding(POLICY_QUEUE_PRIORITY)]
    if large_job_throttle:
        out += [
            large_job_throttle_policy(),
            _binding(
                POLICY_LARGE_JOB_THROTTLE,
                {"name": THROTTLE_CONFIGMAP, "parameterNotFoundAction": "Allow"},
            ),
        ]
    return out
