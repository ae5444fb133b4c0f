# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule compliance-pinned: a compliance-restricted pod never reaches a cloud node,
and the API server, not a convention, says so.

A pod is compliance-restricted when it (or, for a Volcano Job's task template,
the Job) carries ``platform.io/compliance: restricted``. One
ValidatingAdmissionPolicy over Pods and every pod template (the workloads of
``pod_placement``) refuses such a pod spec that

* tolerates Virtual Kubelet's taint ``virtual-kubelet.io/provider`` (or every
  taint, with a toleration without a key), or
* does not require the IDC: neither ``nodeSelector`` ``platform.io/node-location:
  idc`` nor a required node affinity whose every term excludes the cloud
  (``platform.io/node-location`` NotIn a list holding ``cloud``, or In a list
  without it).

The scheduler's node groups keep every IDC queue off cloud nodes already
(``hybrid/queues``); this policy holds even for a job in a queue that may burst.
"""

from __future__ import annotations

from typing import Any

from ..common.names import (
    CLOUD_TAINT_KEY,
    COMPLIANCE_RESTRICTED,
    LABEL_COMPLIANCE,
    LABEL_NODE_LOCATION,
)
from .pod_placement import _PODS, WORKLOADS, _rule
from .vap import POLICY_PREFIX, policy, tenant_match

POLICY_COMPLIANCE_PLACEMENT = POLICY_PREFIX + "compliance-placement"

_RESTRICTED = (
    f"((has(p[0].labels) && '{LABEL_COMPLIANCE}' in p[0].labels && "
    f"p[0].labels['{LABEL_COMPLIANCE}'] == '{COMPLIANCE_RESTRICTED}') || "
    f"(request.kind.kind == 'Job' && has(object.metadata.labels) && '{LABEL_COMPLIANCE}' in object.metadata.labels "
    f"&& object.metadata.labels['{LABEL_COMPLIANCE}'] == '{COMPLIANCE_RESTRICTED}'))"
)
_NO_CLOUD_TOLERATION = f"!has(p[1].tolerations) || p[1].tolerations.all(t, has(t.key) && t.key != '' && t.key != '{CLOUD_TAINT_KEY}')"
_IDC_SELECTOR = (
    f"(has(p[1].nodeSelector) && '{LABEL_NODE_LOCATION}' in p[1].nodeSelector && "
    f"p[1].nodeSelector['{LABEL_NODE_LOCATION}'] == 'idc')"
)
_IDC_AFFINITY = (
    "(has(p[1].affinity) && has(p[1].affinity.nodeAffinity) && "
    "has(p[1].affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution) && "
    "p[1].affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.all(term, "
    "has(term.matchExpressions) && term.matchExpressions.exists(e, "
    f"e.key == '{LABEL_NODE_LOCATION}' && has(e.values) && "
    "((e.operator == 'NotIn' && 'cloud' in e.values) || (e.operator == 'In' && !('cloud' in e.values))))))"
)


def compliance_placement_policy() -> dict[str, Any]:
    """Rule compliance-pinned, as one policy over Pods and every pod template."""
    return policy(
        POLICY_COMPLIANCE_PLACEMENT,
        {
            "matchConstraints": tenant_match(WORKLOADS, ["CREATE", "UPDATE"]),
            "variables": [{"name": "pods", "expression": _PODS}],
            "validations": [
                _rule(
                    f"!{_RESTRICTED} || ({_NO_CLOUD_TOLERATION})",
                    "tolerations",
                    f"a compliance-restricted pod ({LABEL_COMPLIANCE}: {COMPLIANCE_RESTRICTED}) may not tolerate "
                    f"the cloud nodes' taint {CLOUD_TAINT_KEY} or every taint",
                    "remove the toleration; restricted data stays in the IDC",
                ),
                _rule(
                    f"!{_RESTRICTED} || {_IDC_SELECTOR} || {_IDC_AFFINITY}",
                    "affinity.nodeAffinity",
                    "a compliance-restricted pod must require IDC nodes",
                    f"add a required node affinity {LABEL_NODE_LOCATION} NotIn [cloud] "
                    "(vcjob compliance: true does)",
                ),
            ],
        },
    )
