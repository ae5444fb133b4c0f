# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inference modules' options, and their checks before the cluster is read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.errors import FieldError, raise_if
from ..common.names import dns_label_errors, tenant_name_errors
from ..jobs.request_rules import pod_identity_errors
from .manifests import MONITORING_NAMESPACE, SERVING_NAMESPACE, SERVING_PORT
from .rules import INFERENCE_CLASSES, peer_namespace_errors
from .spec import MODES, ModelVersion, parse_autoscaling, parse_canaries, parse_model
from .versions import ACTIONS

# <service>-<version>-predictor must stay a DNS label (63).
SERVICE_NAME_MAX = 63 - len("--predictor") - 20

SERVICE_OPTIONS: dict[str, dict[str, Any]] = {
    "name": {"type": "str", "required": True},
    "tenant": {"type": "str", "required": True},
    "state": {
        "type": "str",
        "choices": ["present", "absent", "gathered", "parsed"],
        "default": "present",
    },
    "facts": {"type": "dict"},
    "action": {"type": "str", "choices": list(ACTIONS), "default": "deploy"},
    "queue": {"type": "str"},
    "job_class": {"type": "str", "choices": list(INFERENCE_CLASSES)},
    "spot_price": {"type": "raw"},
    "mode": {"type": "str", "choices": list(MODES), "default": "standard"},
    "model": {"type": "dict"},
    "canaries": {"type": "list", "elements": "dict", "default": []},
    "autoscaling": {"type": "dict"},
    "service_account": {"type": "str"},
    # Names of Secrets, not their contents: nothing to hide in the logs.
    "image_pull_secrets": {"type": "list", "elements": "str", "default": [], "no_log": False},
    "traffic": {"type": "dict"},
    "version": {"type": "str"},
    "gateway_namespaces": {"type": "list", "elements": "str", "default": [SERVING_NAMESPACE]},
    "monitoring_namespace": {"type": "str", "default": MONITORING_NAMESPACE},
    "serving_port": {"type": "int", "default": SERVING_PORT},
    "metrics_port": {"type": "int", "default": SERVING_PORT},
    "wait": {"type": "bool", "default": False},
    "wait_timeout": {"type": "int", "default": 600},
    "wait_sleep": {"type": "int", "default": 2},
}

INFO_OPTIONS: dict[str, dict[str, Any]] = {
    "tenant": {"type": "str"},
    "name": {"type": "str"},
    "serving_namespace": {"type": "str", "default": SERVING_NAMESPACE},
}

GRAPH_OPTIONS: dict[str, dict[str, Any]] = {
    "name": {"type": "str", "required": True},
    "tenant": {"type": "str", "required": True},
    "state": {
        "type": "str",
        "choices": ["present", "absent", "gathered", "parsed"],
        "default": "present",
    },
    "facts": {"type": "dict"},
    "routes": {"type": "list", "elements": "dict"},
    "namespace": {"type": "str", "default": SERVING_NAMESPACE},
}


def model_of(params: Mapping[str, Any]) -> tuple[ModelVersion | None, list[FieldError]]:
    if params.get("model") is None:
        return None, []
    return parse_model("model", params["model"])


def _traffic_errors(traffic: Any) -> list[FieldError]:
    errors = []
    for version, share in (traffic or {}).items():
        if isinstance(share, bool) or not isinstance(share, int) or not 0 <= share <= 100:
            errors.append(
                FieldError(f"traffic.{version}", f"{share!r} must be a whole percent, 0 to 100")
            )
    return errors


def port_errors(params: Mapping[str, Any]) -> list[FieldError]:
    """Rule inference-ports: the serving and metrics ports are TCP ports, 1 to 65535,
    checked before anything is written (a port the API server refuses would otherwise
    fail the run after the service's other objects were written)."""
    errors = []
    for field in ("serving_port", "metrics_port"):
        port = params.get(field, SERVING_PORT)
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            errors.append(
                FieldError(
                    field,
                    f"{port!r} is not a TCP port; 1 to 65535 is accepted (rule inference-ports)",
                )
            )
    return errors


def identity_errors(params: Mapping[str, Any]) -> list[FieldError]:
    """Rule inference-pod-identity: ``service_account`` (when given) and ``image_pull_secrets``
    (a list, each Secret named once) are DNS-1123 subdomains, as for a job (rule
    pod-identity). Every predictor pod, the canaries' too, runs as that ServiceAccount of
    the tenant's namespace and pulls its images with those Secrets."""
    return pod_identity_errors(params.get("service_account"), params.get("image_pull_secrets"))


def validate_service(params: dict[str, Any]) -> None:
    """Rules service-name, model-spec, inference-pod-identity and the action's required
    options, before the cluster is read. Rules that need the queue or the live service come later, still
    before any write (service.run_service)."""
    errors = tenant_name_errors(params.get("tenant"), "tenant")
    errors += dns_label_errors("name", params.get("name"), SERVICE_NAME_MAX)
    for i, ns in enumerate(params.get("gateway_namespaces") or []):
        errors += dns_label_errors(f"gateway_namespaces[{i}]", ns)
        errors += peer_namespace_errors(f"gateway_namespaces[{i}]", ns)
    errors += peer_namespace_errors("monitoring_namespace", params.get("monitoring_namespace"))
    errors += port_errors(params)
    action = params.get("action", "deploy")
    if params.get("state", "present") == "present":
        stable, model_errors = model_of(params)
        errors += model_errors
        errors += identity_errors(params)
        if action == "deploy":
            if params.get("model") is None:
                errors.append(FieldError("model", "is required with action: deploy"))
            if not params.get("queue"):
                errors.append(
                    FieldError(
                        "queue", "is required with action: deploy (one of the tenant's leaf queues)"
                    )
                )
            if stable is not None:
                errors += parse_canaries(params.get("canaries"), stable)[1]
            errors += parse_autoscaling(params.get("autoscaling"))[1]
        elif action == "canary":
            if not params.get("canaries"):
                errors.append(FieldError("canaries", "is required with action: canary"))
        elif action == "step":
            if not params.get("traffic"):
                errors.append(FieldError("traffic", "is required with action: step, e.g. {v2: 40}"))
            errors += _traffic_errors(params.get("traffic"))
    raise_if(errors)


def validate_graph(params: dict[str, Any]) -> None:
    """Rule inference-ab-test's shape: services named once, weights that add up to 100
    (KServe's Splitter refuses any other sum)."""
    errors = tenant_name_errors(params.get("tenant"), "tenant")
    errors += dns_label_errors("name", params.get("name"))
    errors += dns_label_errors("namespace", params.get("namespace"))
    if params.get("state", "present") == "present":
        routes = params.get("routes")
        if not isinstance(routes, list) or len(routes) < 2:
            errors.append(FieldError("routes", "needs two or more {service, weight} entries"))
            routes = []
        seen, total = set(), 0
        for i, route in enumerate(routes):
            svc, weight = route.get("service"), route.get("weight")
            errors += dns_label_errors(f"routes[{i}].service", svc)
            if svc in seen:
                errors.append(FieldError(f"routes[{i}].service", f"{svc!r} is named twice"))
            seen.add(svc)
            if isinstance(weight, bool) or not isinstance(weight, int) or not 0 <= weight <= 100:
                errors.append(
                    FieldError(f"routes[{i}].weight", f"{weight!r} must be a whole percent")
                )
            else:
                total += weight
        if routes and not errors and total != 100:
            errors.append(FieldError("routes[].weight", f"the weights add up to {total}, not 100"))
    raise_if(errors)
