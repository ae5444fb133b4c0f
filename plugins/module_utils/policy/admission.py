# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ValidatingAdmissionPolicies (CEL, enforced by the API server for every client).

The queue policies, each with its binding (the workload and platform-state
policies are in ``pod_placement.py`` and ``platform_state.py``):

* queue-tenant: a Volcano Job or PodGroup names one of its own tenant's leaf
  queues. The tenant's queues are the policy's parameter: ConfigMap
  ``platform-queues`` in the tenant's own namespace (queue name -> queue
  type), written by the tenant modules and unwritable by tenants (rule
  platform-state), so no tenant name can reach another tenant's queues.
* queue-leaf: never a queue that has children. The parent queues are the
  policy's parameter: ConfigMap ``platform-parent-queues`` in
  ``platform-system``, key ``queues``, comma-separated, kept by the tenant
  modules.
* queue-priority: every Job and PodGroup names a platform PriorityClass, and
  it fits the queue type (spot queues only spot-job; spot-job only in spot
  queues; critical-job only where the namespace has
  ``platform.io/allow-critical: "true"``, and only on task templates marked
  ``volcano.sh/preemptable: "false"`` so that neither preempt nor reclaim
  takes it); debug-job and spot-job never carry an sla waiting time (rule
  sla-wait-by-class, ``jobs/sla``).
* queue-billing: a Job needs no ``platform.io/billing-type`` label (billing
  follows the queue, rule billing-follows-queue), but one it carries is its
  queue's (spot, payg for pay-as-you-go and burst queues, subscription for team
  and subscription queues); a spot Job carries a finite
  ``platform.io/spot-price``, so no job in a spot queue escapes reclaim, and a
  task template that repeats the price repeats it unchanged (the meter reads
  the Job's, and a stopping pod's own).
* large-job-throttle: while a queue is listed in the namespace's ConfigMap
  ``platform-throttle`` (key ``queues``), new Jobs below priority 800 are
  refused until ``until`` (written by the platform, which deletes the
  ConfigMap when the large job runs or the wait times out).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..common.names import (
    ANNOTATION_SPOT_PRICE,
    BILLING_TYPE_OF_QUEUE_TYPE,
    LABEL_BILLING_TYPE,
    LABEL_TENANT,
    PLATFORM_NAMESPACE,
    PREFIX,
    PRIORITY_CLASSES,
    SLA_FORBIDDEN_PRIORITY_CLASSES,
    SLA_WAITING_ANNOTATIONS,
    SPOT_PRICE_DECIMALS,
    SPOT_PRICE_LIMIT,
    TENANT_QUEUES_CONFIGMAP,
    namespace_name,
    tenant_labels,
)
from .compliance import POLICY_COMPLIANCE_PLACEMENT, compliance_placement_policy
from .image_registries import POLICY_IMAGE_REGISTRIES, image_registries_policy
from .platform_state import DEFAULT_PLATFORM_GROUPS, POLICY_PLATFORM_STATE, platform_state_policy
from .pod_placement import POLICY_POD_PLACEMENT, pod_placement_policy
from .tenant_services import POLICY_TENANT_SERVICES, tenant_services_policy
from .vap import POLICY_PREFIX, binding, cel_list, managed_labels, policy, tenant_match
from .workload_queue import POLICY_WORKLOAD_QUEUE, workload_queue_policy

LABEL_ALLOW_CRITICAL = PREFIX + "allow-critical"
PARENT_QUEUES_CONFIGMAP = "platform-parent-queues"
THROTTLE_CONFIGMAP = "platform-throttle"
PARAM_KEY_QUEUES = "queues"
PREEMPTABLE_ANNOTATION = "volcano.sh/preemptable"
THROTTLE_EXEMPT_CLASSES = ("critical-job", "large-job")

POLICY_QUEUE_TENANT = POLICY_PREFIX + "queue-tenant"
POLICY_QUEUE_LEAF = POLICY_PREFIX + "queue-leaf"
POLICY_QUEUE_PRIORITY = POLICY_PREFIX + "queue-priority"
POLICY_QUEUE_BILLING = POLICY_PREFIX + "queue-billing"
POLICY_LARGE_JOB_THROTTLE = POLICY_PREFIX + "large-job-throttle"
QUEUE_POLICY_NAMES = (
    POLICY_QUEUE_TENANT,
    POLICY_QUEUE_LEAF,
    POLICY_QUEUE_PRIORITY,
    POLICY_QUEUE_BILLING,
    POLICY_LARGE_JOB_THROTTLE,
)
POLICY_NAMES = (
    *QUEUE_POLICY_NAMES,
    POLICY_POD_PLACEMENT,
    POLICY_PLATFORM_STATE,
    POLICY_COMPLIANCE_PLACEMENT,
    POLICY_WORKLOAD_QUEUE,
    POLICY_TENANT_SERVICES,
)
# The largest spot price admitted, per GPU-hour: a bound, so that a price is a
# number every consumer can compare (no 1e400, no negative, at most 6 decimals).
SPOT_PRICE_PATTERN = (
    f"^[0-9]{{1,{len(str(SPOT_PRICE_LIMIT)) - 1}}}([.][0-9]{{1,{SPOT_PRICE_DECIMALS}}})?$"
)


_QUEUE = "has(object.spec.queue) && object.spec.queue != '' ? object.spec.queue : 'default'"
_TENANT = f"namespaceObject.metadata.labels['{LABEL_TENANT}']"
_PRIORITY_CLASS = "has(object.spec.priorityClassName) && object.spec.priorityClassName != '' ? object.spec.priorityClassName : ''"
# The namespace's own leaf queues (the platform-queues parameter: queue -> type).
_OWN_QUEUES = "has(params.data) ? params.data.map(q, q) : []"
_QUEUE_TYPE = (
    "has(params.data) && variables.queue in params.data ? params.data[variables.queue] : ''"
)
# Comma-separated list in a ConfigMap parameter, trimmed, empties dropped.
_PARAM_QUEUES = (
    f"has(params.data) && '{PARAM_KEY_QUEUES}' in params.data ? "
    f"params.data['{PARAM_KEY_QUEUES}'].split(',').map(q, q.trim()).filter(q, q != '') : []"
)

# Rule billing-type-of-queue, as a CEL map literal.
_BILLING_OF_QUEUE = (
    "{" + ", ".join(f"'{q}': '{b}'" for q, b in BILLING_TYPE_OF_QUEUE_TYPE.items()) + "}"
)

JOBS_AND_PODGROUPS = [("batch.volcano.sh", "jobs"), ("scheduling.volcano.sh", "podgroups")]


def queue_tenant_policy() -> dict[str, Any]:
    """The admission policy of rule leaf-queue-of-tenant (``queues/kinds``): a Job or PodGroup
    names a leaf queue listed in its namespace's ``platform-queues`` parameter (rule
    queue-ownership), which holds exactly the queues the platform made for the
    namespace's tenant (not a name prefix, which two tenants can share)."""
    return policy(
        POLICY_QUEUE_TENANT,
        {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": tenant_match(JOBS_AND_PODGROUPS, ["CREATE", "UPDATE"]),
            "variables": [
                {"name": "queue", "expression": _QUEUE},
                {"name": "tenant", "expression": _TENANT},
                {"name": "own", "expression": _OWN_QUEUES},
            ],
            "validations": [
                {
                    "expression": "variables.queue in variables.own",
                    "messageExpression": (
                        "'spec.queue: ' + variables.queue + ' is not a queue of tenant ' + variables.tenant + "
                        "'; submit to one of your own queues: ' + variables.own.join(', ')"
                    ),
                    "reason": "Forbidden",
                }
            ],
        },
    )


def queue_leaf_policy() -> dict[str, Any]:
    """Rule leaf-queue-only: never a queue listed as a parent queue (one PodGroup in a parent
    queue stops capacity's hierarchical scheduling for the whole cluster)."""
    return policy(
        POLICY_QUEUE_LEAF,
        {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": tenant_match(JOBS_AND_PODGROUPS, ["CREATE", "UPDATE"]),
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
    return policy(
        POLICY_QUEUE_PRIORITY,
        {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": tenant_match(JOBS_AND_PODGROUPS, ["CREATE", "UPDATE"]),
            "variables": [
                {"name": "queue", "expression": _QUEUE},
                {"name": "pc", "expression": _PRIORITY_CLASS},
                {"name": "queueType", "expression": _QUEUE_TYPE},
                {"name": "spotQueue", "expression": "variables.queueType == 'spot'"},
                {
                    "name": "criticalAllowed",
                    "expression": (
                        f"has(namespaceObject.metadata.labels) && '{LABEL_ALLOW_CRITICAL}' in namespaceObject.metadata.labels "
                        f"&& namespaceObject.metadata.labels['{LABEL_ALLOW_CRITICAL}'] == 'true'"
                    ),
                },
            ],
            "validations": _queue_priority_validations(),
        },
    )


def _queue_priority_validations() -> list[dict[str, Any]]:
    """queue-priority's checks: a platform class, spot only with spot, critical-job only
    where allowed and marked non-preemptable, no sla waiting time on debug or spot jobs."""
    classes = cel_list(tuple(PRIORITY_CLASSES))
    non_preemptable = (
        "object.spec.tasks.all(t, has(t.template.metadata) && has(t.template.metadata.annotations) && "
        f"'{PREEMPTABLE_ANNOTATION}' in t.template.metadata.annotations && "
        f"t.template.metadata.annotations['{PREEMPTABLE_ANNOTATION}'] == 'false')"
    )
    return [
        {
            "expression": f"variables.pc in {classes}",
            "messageExpression": (
                "'spec.priorityClassName: ' + (variables.pc == '' ? '(none)' : variables.pc) + ' is not a "
                "platform PriorityClass; set one of " + ", ".join(PRIORITY_CLASSES) + "'"
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
        {
            # Rule sla-wait-by-class (jobs/sla): debug and spot jobs are never
            # admitted past their queue's capability.
            "expression": (
                f"!(variables.pc in {cel_list(SLA_FORBIDDEN_PRIORITY_CLASSES)}) || "
                "!has(object.metadata.annotations) || "
                f"!object.metadata.annotations.exists(k, k in {cel_list(SLA_WAITING_ANNOTATIONS)})"
            ),
            "messageExpression": (
                "'metadata.annotations: a ' + variables.pc + ' never takes GPUs from other jobs, so "
                f"it may not carry {' or '.join(SLA_WAITING_ANNOTATIONS)} (which admits a job past the "
                "capability of its queue); remove the annotation'"
            ),
            "reason": "Forbidden",
        },
    ]


def queue_billing_policy() -> dict[str, Any]:
    """Rule billing-fits-queue: a Job's billing-type label, when it has one, is its queue's;
    a spot Job has a finite spot price, so every job in a spot queue is a reclaim
    candidate, and its task templates carry no other price."""
    return policy(
        POLICY_QUEUE_BILLING,
        {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": tenant_match([("batch.volcano.sh", "jobs")], ["CREATE", "UPDATE"]),
            "variables": [
                {"name": "queue", "expression": _QUEUE},
                {"name": "queueType", "expression": _QUEUE_TYPE},
                {
                    "name": "billing",
                    "expression": (
                        f"variables.queueType in {_BILLING_OF_QUEUE} ? "
                        f"{_BILLING_OF_QUEUE}[variables.queueType] : 'subscription'"
                    ),
                },
                {
                    "name": "labelled",
                    "expression": (
                        f"has(object.metadata.labels) && '{LABEL_BILLING_TYPE}' in object.metadata.labels "
                        f"? object.metadata.labels['{LABEL_BILLING_TYPE}'] : ''"
                    ),
                },
                {
                    "name": "price",
                    "expression": (
                        f"has(object.metadata.annotations) && '{ANNOTATION_SPOT_PRICE}' in object.metadata.annotations "
                        f"? object.metadata.annotations['{ANNOTATION_SPOT_PRICE}'] : ''"
                    ),
                },
            ],
            "validations": [
                {
                    "expression": (
                        "variables.queueType == '' || variables.labelled == '' || "
                        "variables.labelled == variables.billing"
                    ),
                    "messageExpression": (
                        f"'metadata.labels.{LABEL_BILLING_TYPE}: ' + variables.labelled + ' does not match "
                        "queue ' + variables.queue + ', which bills as ' + variables.billing + '; set "
                        f"{LABEL_BILLING_TYPE}: ' + variables.billing + ' or leave the label out (billing "
                        "follows the queue)'"
                    ),
                    "reason": "Invalid",
                },
                {
                    "expression": (
                        f"variables.billing != 'spot' || variables.price.matches('{SPOT_PRICE_PATTERN}')"
                    ),
                    "messageExpression": (
                        f"'metadata.annotations.{ANNOTATION_SPOT_PRICE}: ' + (variables.price == '' ? '(none)' : "
                        "variables.price) + ' is not a spot price; set a decimal price per GPU-hour, for "
                        "example 0.35 (at most 6 digits before and after the point)'"
                    ),
                    "reason": "Invalid",
                },
                {
                    "expression": (
                        "variables.billing != 'spot' || !has(object.spec.tasks) || object.spec.tasks.all(t, "
                        "!has(t.template.metadata) || !has(t.template.metadata.annotations) || "
                        f"!('{ANNOTATION_SPOT_PRICE}' in t.template.metadata.annotations) || "
                        f"t.template.metadata.annotations['{ANNOTATION_SPOT_PRICE}'] == variables.price)"
                    ),
                    "messageExpression": (
                        f"'spec.tasks[].template.metadata.annotations.{ANNOTATION_SPOT_PRICE}: a task template "
                        "names a price other than the Job\\'s ' + variables.price + '; leave it out or repeat "
                        "the Job\\'s'"
                    ),
                    "reason": "Invalid",
                },
            ],
        },
    )


def large_job_throttle_policy() -> dict[str, Any]:
    """Rule large-job-throttle: while the namespace's ConfigMap platform-throttle lists a queue,
    Jobs below priority 800 are not admitted to it."""
    exempt = cel_list(THROTTLE_EXEMPT_CLASSES)
    return policy(
        POLICY_LARGE_JOB_THROTTLE,
        {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": tenant_match([("batch.volcano.sh", "jobs")], ["CREATE"]),
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
            "labels": managed_labels(),
        },
    }


def tenant_queues_configmap(tenant: str, leaves: Mapping[str, str]) -> dict[str, Any]:
    """The queue policies' parameter for one tenant: its leaf queues, name -> queue type,
    in the tenant's own namespace (rules queue-ownership and leaf-queue-of-tenant)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": TENANT_QUEUES_CONFIGMAP,
            "namespace": namespace_name(tenant),
            "labels": tenant_labels(tenant),
        },
        "data": dict(sorted(leaves.items())),
    }


# The tenant's own queue list, read in the namespace of the object admitted.
_TENANT_QUEUES_PARAM = {"name": TENANT_QUEUES_CONFIGMAP, "parameterNotFoundAction": "Deny"}


# The switches of ``admission_manifests``, as the scheduling_policy role's
# scheduling_policy_admission and module federation_platform's ``admission`` name them;
# every one is on unless given, but cloud_burst (a hybrid cluster's pod placement).
ADMISSION_SWITCHES = (
    "queue_tenant",
    "queue_leaf",
    "queue_priority",
    "queue_billing",
    "large_job_throttle",
    "pod_placement",
    "platform_state",
    "compliance_placement",
    "workload_queue",
    "tenant_services",
    "cloud_burst",
)
ADMISSION_OFF_BY_DEFAULT = ("cloud_burst",)


def parameterised_policies() -> list[str]:
    """Rule last-parameterised-binding: the switches (as ``admission_manifests`` names
    them) of the policies whose binding reads a ConfigMap parameter, derived from the
    bindings themselves, so a new parameterised policy joins the guard on its own. Removing
    the last such binding freezes the API server's parameter informer
    (kubernetes/kubernetes#133827), which the scheduling_policy role refuses."""
    return [
        manifest["spec"]["policyName"].removeprefix(POLICY_PREFIX).replace("-", "_")
        for manifest in admission_manifests()
        if manifest["kind"] == "ValidatingAdmissionPolicyBinding" and "paramRef" in manifest["spec"]
    ]


def admission_manifests(
    queue_tenant: bool = True,
    queue_leaf: bool = True,
    queue_priority: bool = True,
    queue_billing: bool = True,
    large_job_throttle: bool = True,
    pod_placement: bool = True,
    platform_state: bool = True,
    compliance_placement: bool = True,
    workload_queue: bool = True,
    tenant_services: bool = True,
    cloud_burst: bool = False,
    platform_groups: Sequence[str] = DEFAULT_PLATFORM_GROUPS,
    image_registries: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Policies and bindings, each binding after its policy. ``cloud_burst`` lets tenant
    pods tolerate the cloud nodes' taint (``pod_placement.forbidden_taint_keys``);
    ``image_registries``, when given, is the list of registry prefixes tenant pods may
    pull from (rule images-from-allowed-registries)."""
    out: list[dict[str, Any]] = []
    if queue_tenant:
        out += [queue_tenant_policy(), binding(POLICY_QUEUE_TENANT, _TENANT_QUEUES_PARAM)]
    if queue_leaf:
        out += [
            queue_leaf_policy(),
            binding(
                POLICY_QUEUE_LEAF,
                {
                    "name": PARENT_QUEUES_CONFIGMAP,
                    "namespace": PLATFORM_NAMESPACE,
                    "parameterNotFoundAction": "Deny",
                },
            ),
        ]
    if queue_priority:
        out += [queue_priority_policy(), binding(POLICY_QUEUE_PRIORITY, _TENANT_QUEUES_PARAM)]
    if queue_billing:
        out += [queue_billing_policy(), binding(POLICY_QUEUE_BILLING, _TENANT_QUEUES_PARAM)]
    if large_job_throttle:
        out += [
            large_job_throttle_policy(),
            binding(
                POLICY_LARGE_JOB_THROTTLE,
                {"name": THROTTLE_CONFIGMAP, "parameterNotFoundAction": "Allow"},
            ),
        ]
    if pod_placement:
        out += [pod_placement_policy(cloud_burst), binding(POLICY_POD_PLACEMENT)]
    if compliance_placement:
        out += [compliance_placement_policy(), binding(POLICY_COMPLIANCE_PLACEMENT)]
    if workload_queue:
        # Allow without the parameter: in a namespace being deleted the queue list goes
        # first, and KServe must still remove its finalizers; PodGroups stay checked by
        # queue-tenant, which denies without it.
        out += [
            workload_queue_policy(),
            binding(
                POLICY_WORKLOAD_QUEUE,
                {"name": TENANT_QUEUES_CONFIGMAP, "parameterNotFoundAction": "Allow"},
            ),
        ]
    if tenant_services:
        out += [tenant_services_policy(), binding(POLICY_TENANT_SERVICES)]
    if platform_state:
        out += [platform_state_policy(platform_groups), binding(POLICY_PLATFORM_STATE)]
    if image_registries:
        out += [image_registries_policy(image_registries), binding(POLICY_IMAGE_REGISTRIES)]
    return out
