# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What Karmada knows of a Volcano Job: the ResourceInterpreterCustomization the
collection ships for ``batch.volcano.sh/v1alpha1`` ``Job``.

Rule held here:

* Rule federation-job-replicas (``volcano_job_customization``).

Why the collection ships one: Karmada v1.16.0's built-in customization for a Volcano Job
(``pkg/resourceinterpreter/default/thirdparty/resourcecustomizations/batch.volcano.sh/
v1alpha1/Job/customizations.yaml``) has ``healthInterpretation``, ``statusReflection``,
``statusAggregation`` and ``componentResource``, and no ``replicaResource``. The
detector reads components only with the alpha gate ``MultiplePodTemplatesScheduling``
(``pkg/detector/detector.go`` ``applyReplicaInterpretation``), so by default a job's
binding has neither replicas nor requirements, ``pkg/scheduler/core/common.go``
``AssignReplicas`` assigns none and the job is copied whole to every member selected,
with no capacity checked. A customization object (``config.karmada.io``) is asked before
the built-in ones (``pkg/resourceinterpreter/interpreter.go``, the configurable
interpreter first, per operation), so this one adds ``replicaResource`` and
``replicaRevision`` and leaves health and status to the built-in one. Karmada's webhook
refuses a second customization of the same operation for the same kind
(``pkg/webhook/resourceinterpretercustomization/helper.go`` ``validateCustomizationRule``).
"""

from __future__ import annotations

from typing import Any

from ..common.names import JOB_API, LABEL_MANAGED_BY, MANAGED_BY
from .volcano_job_lua import GET_REPLICAS, REVISE_REPLICA

CONFIG_API = "config.karmada.io/v1alpha1"
CUSTOMIZATION_NAME = "gpucloud-platform-volcano-job"


def volcano_job_customization() -> dict[str, Any]:
    """Rule federation-job-replicas: a Volcano Job's replicas are all its pods (the sum of
    its tasks' replicas) and its per-pod requirement the largest of each resource over
    its tasks, so Karmada's capacity check (rule federation-placement) asks a member for
    the whole gang; its revision leaves the job as it is when one member gets every pod
    and fails for any other count (``volcano_job_lua``)."""
    return {
        "apiVersion": CONFIG_API,
        "kind": "ResourceInterpreterCustomization",
        "metadata": {"name": CUSTOMIZATION_NAME, "labels": {LABEL_MANAGED_BY: MANAGED_BY}},
        "spec": {
            "target": {"apiVersion": JOB_API, "kind": "Job"},
            "customizations": {
                "replicaResource": {"luaScript": GET_REPLICAS},
                "replicaRevision": {"luaScript": REVISE_REPLICA},
            },
        },
    }
