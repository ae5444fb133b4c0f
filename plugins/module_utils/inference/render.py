# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A model service's manifests without a cluster: what inference_service would apply,
for a GitOps repository or for Knative mode, which needs Knative Serving to run.

The caller says what the cluster would have told the module: the queue's type
(``queue_type``), its GPU capability (``capability``, optional) and whether the
tenant may run critical work (``critical_allowed``, default true). Every rule the
module checks is checked here, with the same field names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.errors import FieldError, PlatformValidationError, raise_if
from ..common.names import QUEUE_TYPES, dns_label_errors
from ..jobs.classes import DEFAULT_CLASSES
from .inputs import SERVICE_OPTIONS, validate_service
from .manifests import gpu_util_hpa, inference_service, serving_network_policy
from .rules import capability_errors, class_errors, critical_errors, default_class, spec_errors
from .spec import ServiceSpec, parse_autoscaling, parse_canaries, parse_model
from .versions import with_stable

RENDER_KEYS = (
    *(
        k
        for k in SERVICE_OPTIONS
        if k
        not in (
            "state",
            "facts",
            "action",
            "traffic",
            "version",
            "wait",
            "wait_timeout",
            "wait_sleep",
        )
    ),
    "queue_type",
    "capability",
    "critical_allowed",
)


def _defaults(params: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v.get("default") for k, v in SERVICE_OPTIONS.items() if "default" in v}
    out.update(params)
    out["state"], out["action"] = "present", "deploy"
    return out


def render(params: Any) -> list[dict[str, Any]]:
    """The InferenceService, its NetworkPolicy and (with gpu_util_target) its HPA."""
    if not isinstance(params, Mapping):
        raise PlatformValidationError(
            [FieldError("", f"{params!r} must be a mapping of the module's options")]
        )
    unknown = sorted(set(params) - set(RENDER_KEYS))
    raise_if([FieldError(k, f"unknown option; known: {', '.join(RENDER_KEYS)}") for k in unknown])
    values = _defaults(params)
    validate_service(values)
    queue_type = values.get("queue_type")
    if queue_type not in QUEUE_TYPES:
        raise_if(
            [FieldError("queue_type", f"{queue_type!r} is not one of {', '.join(QUEUE_TYPES)}")]
        )
    raise_if(dns_label_errors("queue", values["queue"]))
    allowed = bool(values.get("critical_allowed", True))
    job_class = values.get("job_class") or default_class(queue_type, allowed)
    ns = f"tenant-{values['tenant']}"
    raise_if(
        class_errors(job_class, values["queue"], queue_type, DEFAULT_CLASSES)
        + critical_errors(job_class, allowed, ns)
    )
    # validate_service refused bad input already: the parsers' errors are empty here.
    stable = parse_model("model", values["model"])[0]
    if stable is None:
        raise_if([FieldError("model", "is required")])
    canaries = parse_canaries(values.get("canaries"), stable)[0]
    auto = parse_autoscaling(values.get("autoscaling"))[0]
    spec = ServiceSpec(
        name=values["name"],
        tenant=values["tenant"],
        queue=values["queue"],
        job_class=job_class,
        stable=stable,
        canaries=canaries,
        autoscaling=auto,
        mode=values["mode"],
        service_account=values.get("service_account"),
        image_pull_secrets=tuple(values.get("image_pull_secrets") or ()),
    )
    raise_if(spec_errors(spec, {}) + capability_errors(spec, values.get("capability")))
    row = DEFAULT_CLASSES[job_class]
    out = [
        inference_service(spec, row, row.billing_for(queue_type), with_stable([], spec.stable)),
        serving_network_policy(
            spec,
            list(values["gateway_namespaces"]),
            values["monitoring_namespace"],
            values["serving_port"],
            values["metrics_port"],
        ),
    ]
    hpa = gpu_util_hpa(spec)
    if hpa is not None:
        out.append(hpa)
    return out
