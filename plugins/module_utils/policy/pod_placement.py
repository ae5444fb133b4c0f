# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule pods-through-volcano: every pod of a tenant runs through Volcano, at a
platform class, on the nodes the platform gives it.

One ValidatingAdmissionPolicy checks the pod spec wherever a tenant can put
one: Pods themselves (whoever creates them: the Volcano job controller, a
ReplicaSet, a tenant), the task templates of Volcano Jobs, and the templates
of Deployments and ReplicaSets (inference). The template checks refuse a bad
workload when it is submitted, with the field named; the Pod check is the one
that nothing gets around.

Each pod spec:

* is scheduled by ``volcano`` (a Volcano Job's template may leave it out: the
  job controller fills in the Job's ``schedulerName``), so every GPU passes
  through a queue's quota and kube-scheduler never preempts for a tenant;
* has no ``nodeName`` (that skips every scheduler);
* names a platform PriorityClass; in a Volcano Job's template, none or the
  Job's own (the controller copies the Job's into the pod);
* carries ``volcano.sh/preemptable: "false"`` only at critical-job;
* tolerates no taint by wildcard and none of the platform's own taints
  (``PLATFORM_TAINT_KEYS``, for example the cloud-burst nodes' taint);
* tolerates the GPU-sharing nodes' taint (``platform.io/gpu-sharing``) only when a
  container asks for vGPUs (a ``volcano.sh/vgpu-number`` limit of 1 or more): those
  nodes' extended resources (vGPU memory, cores) are bounded per queue only for vGPU
  pods, and a whole-GPU or CPU pod there would take a node the vGPU tenants paid for;
* runs no privileged container and joins no host namespace or host path (Pod
  Security ``baseline`` enforces the same on Pods; checking the templates says
  so at submission, not when the controller's pod creation fails).
"""

from __future__ import annotations

from typing import Any

from ..common.names import CLOUD_TAINT_KEY, PRIORITY_CLASSES, VGPU_NUMBER
from .vap import POLICY_PREFIX, cel_list, policy, tenant_match

POLICY_POD_PLACEMENT = POLICY_PREFIX + "pod-placement"
PREEMPTABLE_KEY = "volcano.sh/preemptable"
CRITICAL_CLASS = "critical-job"
# Taints a tenant's pod may never tolerate: they keep tenants off nodes the
# platform hands out itself (Virtual Kubelet cloud nodes, the control plane).
PLATFORM_TAINT_KEYS = (
    CLOUD_TAINT_KEY,
    "node-role.kubernetes.io/control-plane",
)

# Kubernetes' own node conditions (cordoned, under pressure, not ready): no tenant pod
# tolerates them, so a drain or a failing node keeps its GPUs free. The API server's
# DefaultTolerationSeconds gives every pod a NoExecute toleration of these two, which
# only delays its eviction from a node that stopped answering.
NODE_TAINT_PREFIX = "node.kubernetes.io/"
# The taint of the nodes for GPU sharing (the nvidia_device_plugin role's
# nvidia_device_plugin_vgpu_node_label); rule vgpu-taint-needs-vgpu.
VGPU_TAINT_KEY = "platform.io/gpu-sharing"
# A container that asks for at least one vGPU (the limit Volcano reads; the value is an
# int or a string).
_ASKS_VGPU = (
    "has(p[1].containers) && p[1].containers.exists(c, has(c.resources) && "
    f"has(c.resources.limits) && '{VGPU_NUMBER}' in c.resources.limits && "
    f"isQuantity(string(c.resources.limits['{VGPU_NUMBER}'])) && "
    f"quantity(string(c.resources.limits['{VGPU_NUMBER}'])).compareTo(quantity('1')) >= 0)"
)
API_SERVER_TOLERATIONS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")

WORKLOADS = [
    ("", "pods"),
    ("batch.volcano.sh", "jobs"),
    ("apps", "deployments"),
    ("apps", "replicasets"),
]

# (pod metadata, pod spec, PriorityClass it runs at) for each pod the object makes.
_PODS = (
    "request.kind.kind == 'Pod' ? [[object.metadata, object.spec]] : "
    "request.kind.kind == 'Job' ? object.spec.tasks.map(t, "
    "[has(t.template.metadata) ? t.template.metadata : {}, has(t.template.spec) ? t.template.spec : {}]) : "
    "[[has(object.spec.template.metadata) ? object.spec.template.metadata : {}, object.spec.template.spec]]"
)
_JOB_CLASS = "request.kind.kind == 'Job' && has(object.spec.priorityClassName) ? object.spec.priorityClassName : ''"
# The class a pod runs at: its own, else (in a Volcano Job) the Job's.
_CLASS_OF = "(has(p[1].priorityClassName) && p[1].priorityClassName != '' ? p[1].priorityClassName : variables.jobClass)"
_SPEC_PATH = (
    "(request.kind.kind == 'Pod' ? 'spec' : request.kind.kind == 'Job' ? "
    "'spec.tasks[].template.spec' : 'spec.template.spec')"
)


def _rule(
    expression: str, field: str, problem: str, fix: str, reason: str = "Forbidden"
) -> dict[str, str]:
    """One validation over every pod spec ``p`` ([metadata, spec]) of the object."""
    text = f"{field}: {problem}; {fix}".replace("'", "\\'")
    return {
        "expression": f"variables.pods.all(p, {expression})",
        "messageExpression": f"{_SPEC_PATH} + '.{text}'",
        "reason": reason,
    }


def forbidden_taint_keys(cloud_burst: bool = False) -> tuple[str, ...]:
    """The platform taints no tenant pod tolerates. With cloud burst on (a hybrid cluster
    whose queues are bound to node groups, ``hybrid/queues``) a pod may tolerate the cloud
    nodes' taint: the scheduler's node groups decide which queues reach cloud nodes, and
    the compliance policy keeps restricted pods off them."""
    if cloud_burst:
        return tuple(k for k in PLATFORM_TAINT_KEYS if k != CLOUD_TAINT_KEY)
    return PLATFORM_TAINT_KEYS


def pod_placement_policy(cloud_burst: bool = False) -> dict[str, Any]:
    """Rule pods-through-volcano, as one policy over Pods and every pod template."""
    return policy(
        POLICY_POD_PLACEMENT,
        {
            "matchConstraints": tenant_match(WORKLOADS, ["CREATE", "UPDATE"]),
            # An update of a pod that leaves its spec alone (a label, a finalizer, the
            # garbage collector releasing a dependent) is no placement: judging a bound
            # pod's nodeName there would block its deletion for good.
            "matchConditions": [
                {
                    "name": "pod-spec-written",
                    "expression": "request.kind.kind != 'Pod' || request.operation != 'UPDATE' "
                    "|| object.spec != oldObject.spec",
                }
            ],
            "variables": [
                {"name": "pods", "expression": _PODS},
                {"name": "jobClass", "expression": _JOB_CLASS},
            ],
            "validations": [
                *_scheduling_validations(),
                *_toleration_validations(cloud_burst),
                *_host_validations(),
            ],
        },
    )


def _scheduling_validations() -> list[dict[str, Any]]:
    """Volcano schedules the pod, on no node of its own choosing, at a platform class
    (in a Volcano Job's template, the Job's), non-preemptable only at critical-job."""
    classes = cel_list(tuple(PRIORITY_CLASSES))
    preemptable_off = (
        f"((has(p[0].annotations) && '{PREEMPTABLE_KEY}' in p[0].annotations && "
        f"p[0].annotations['{PREEMPTABLE_KEY}'] == 'false') || (has(p[0].labels) && "
        f"'{PREEMPTABLE_KEY}' in p[0].labels && p[0].labels['{PREEMPTABLE_KEY}'] == 'false'))"
    )
    volcano_scheduler = (
        "(has(p[1].schedulerName) && p[1].schedulerName == 'volcano') || "
        "(request.kind.kind == 'Job' && (!has(p[1].schedulerName) || p[1].schedulerName == ''))"
    )
    return [
        _rule(
            volcano_scheduler,
            "schedulerName",
            "pods in tenant namespaces are scheduled by Volcano",
            "set schedulerName: volcano (a Volcano Job may leave it out)",
        ),
        _rule(
            # A pod update cannot change nodeName (the scheduler sets it through
            # the binding), and a bound pod carries one.
            "(request.kind.kind == 'Pod' && request.operation == 'UPDATE') || "
            "!has(p[1].nodeName) || p[1].nodeName == ''",
            "nodeName",
            "a pod may not pick its node",
            "leave nodeName out and use a nodeSelector or the job class instead",
        ),
        # A Volcano Job's template runs at the Job's class, never another (a higher
        # one would bypass queue-priority, which judges the Job's).
        _rule(
            "request.kind.kind == 'Job' ? (!has(p[1].priorityClassName) || "
            "p[1].priorityClassName == '' || p[1].priorityClassName == variables.jobClass) : "
            f"(has(p[1].priorityClassName) && p[1].priorityClassName in {classes})",
            "priorityClassName",
            "not a platform PriorityClass (or, in a Volcano Job template, not the Job's own)",
            f"set one of {', '.join(PRIORITY_CLASSES)}; in a Volcano Job set it on the Job only",
            "Invalid",
        ),
        _rule(
            f"!{preemptable_off} || {_CLASS_OF} == '{CRITICAL_CLASS}'",
            f"metadata {PREEMPTABLE_KEY}",
            f'only a {CRITICAL_CLASS} may be marked non-preemptable ({PREEMPTABLE_KEY}: "false")',
            "remove the mark, or submit a critical job",
        ),
    ]


def _toleration_validations(cloud_burst: bool) -> list[dict[str, Any]]:
    """No toleration by wildcard, of a platform taint (``forbidden_taint_keys``) or of a
    node condition; the GPU-sharing nodes' taint only for a pod that asks for vGPUs."""
    forbidden = forbidden_taint_keys(cloud_burst)
    taints = cel_list(forbidden)
    return [
        _rule(
            "!has(p[1].tolerations) || p[1].tolerations.all(t, has(t.key) && t.key != '' "
            f"&& !(t.key in {taints}) && (!t.key.startsWith('{NODE_TAINT_PREFIX}') || "
            f"(t.key in {cel_list(API_SERVER_TOLERATIONS)} && has(t.effect) && t.effect == 'NoExecute')))",
            "tolerations",
            "a toleration without a key, of a platform taint "
            f"({', '.join(forbidden)}), or of a {NODE_TAINT_PREFIX}* taint (a cordoned, "
            "draining or failing node) is not allowed",
            "tolerate only the taints of your own nodes, by key",
        ),
        # Rule vgpu-taint-needs-vgpu.
        _rule(
            "!has(p[1].tolerations) || !p[1].tolerations.exists(t, has(t.key) && "
            f"t.key == '{VGPU_TAINT_KEY}') || ({_ASKS_VGPU})",
            "tolerations[].key",
            f"only a pod that asks for vGPUs may tolerate {VGPU_TAINT_KEY} (the nodes for "
            "GPU sharing)",
            f"remove the toleration, or ask for vGPUs (a container limit {VGPU_NUMBER} of 1 "
            "or more)",
        ),
    ]


def _host_validations() -> list[dict[str, Any]]:
    """No host namespace, no hostPath volume, no privileged container."""
    return [
        _rule(
            "!(has(p[1].hostNetwork) && p[1].hostNetwork) && !(has(p[1].hostPID) && p[1].hostPID) "
            "&& !(has(p[1].hostIPC) && p[1].hostIPC)",
            "hostNetwork",
            "a tenant pod may not join the node's network, PID or IPC namespace",
            "remove hostNetwork, hostPID and hostIPC",
        ),
        _rule(
            "!has(p[1].volumes) || p[1].volumes.all(v, !has(v.hostPath))",
            "volumes",
            "a tenant pod may not mount a path of the node (hostPath)",
            "use a PersistentVolumeClaim instead",
        ),
        _rule(
            "!has(p[1].containers) || p[1].containers.all(c, !has(c.securityContext) || "
            "!has(c.securityContext.privileged) || !c.securityContext.privileged)",
            "containers[].securityContext.privileged",
            "a tenant container may not run privileged",
            "remove privileged: true",
        ),
    ]
