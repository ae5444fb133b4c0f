# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule workload-queue-of-own-tenant: a long-running workload in a tenant namespace
names one of the tenant's own leaf queues for its pods.

Volcano Jobs name their queue in ``spec.queue`` (policy queue-tenant). A Deployment,
ReplicaSet or KServe InferenceService names it in the pod annotation
``scheduling.volcano.sh/queue-name``, which vc-controller-manager copies into the
PodGroup it makes for each pod. Queue-tenant refuses that PodGroup when the queue
is another tenant's, but only later and out of the tenant's sight: the pod just
stays Pending. This policy refuses the workload itself, at submission, with the
field named. A template without the annotation would land in Volcano's
``default`` queue, outside every quota, and is refused too.

For an InferenceService the predictor's annotations count; a canary's predictor
may leave the annotation out, since KServe merges the stable predictor into it.
"""

from __future__ import annotations

from typing import Any

from ..common.names import LABEL_TENANT, VOLCANO_QUEUE_ANNOTATION
from .vap import POLICY_PREFIX, policy, tenant_match

POLICY_WORKLOAD_QUEUE = POLICY_PREFIX + "workload-queue"
QUEUE_NAME_ANNOTATION = VOLCANO_QUEUE_ANNOTATION

WORKLOADS = [
    ("apps", "deployments"),
    ("apps", "replicasets"),
    ("serving.kserve.io", "inferenceservices"),
]


def _annotation(meta: str) -> str:
    return (
        f"(has({meta}.annotations) && '{QUEUE_NAME_ANNOTATION}' in {meta}.annotations ? "
        f"string({meta}.annotations['{QUEUE_NAME_ANNOTATION}']) : '')"
    )


# [where under spec, queue, 'required' or 'optional'] for each pod template the object
# carries (all strings: CEL types a list literal by its elements).
_QUEUES = (
    "request.kind.kind == 'InferenceService' ? "
    f"[['predictor.annotations', {_annotation('object.spec.predictor')}, 'required']] + "
    "(has(object.spec.canary) ? object.spec.canary.map(c, ['canary[].predictor.annotations', "
    f"{_annotation('c.predictor')}, 'optional']) : []) : "
    "[['template.metadata.annotations', has(object.spec.template.metadata) ? "
    f"{_annotation('object.spec.template.metadata')} : '', 'required']]"
)


def workload_queue_policy() -> dict[str, Any]:
    """Rule workload-queue-of-own-tenant, over Deployments, ReplicaSets and InferenceServices."""
    return policy(
        POLICY_WORKLOAD_QUEUE,
        {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": tenant_match(WORKLOADS, ["CREATE", "UPDATE"]),
            # An object on its way out is only losing finalizers (KServe's): with the
            # namespace deleted, its platform-queues parameter may be gone already, and a
            # refusal would keep the namespace terminating for good.
            "matchConditions": [
                {
                    "name": "not-being-deleted",
                    "expression": "!has(object.metadata.deletionTimestamp)",
                }
            ],
            "variables": [
                {"name": "queues", "expression": _QUEUES},
                {"name": "own", "expression": "has(params.data) ? params.data.map(q, q) : []"},
            ],
            "validations": [
                {
                    "expression": "variables.queues.all(q, q[1] != '' || q[2] != 'required')",
                    "messageExpression": (
                        "'spec.' + variables.queues.filter(q, q[1] == '' && q[2] == 'required')[0][0] + ': no "
                        f"{QUEUE_NAME_ANNOTATION}; pods without it land in Volcano\\'s default queue, outside "
                        "your quota; use one of your own queues: ' + variables.own.join(', ')"
                    ),
                    "reason": "Forbidden",
                },
                {
                    "expression": "variables.queues.all(q, q[1] == '' || q[1] in variables.own)",
                    "messageExpression": (
                        "'spec.' + variables.queues.filter(q, q[1] != '' && !(q[1] in variables.own))[0][0] + '["
                        f"{QUEUE_NAME_ANNOTATION}]: ' + variables.queues.filter(q, q[1] != '' && "
                        "!(q[1] in variables.own))[0][1] + ' is not a queue of tenant ' + "
                        f"namespaceObject.metadata.labels['{LABEL_TENANT}'] + '; use one of your own "
                        "queues: ' + variables.own.join(', ')"
                    ),
                    "reason": "Forbidden",
                },
            ],
        },
    )
