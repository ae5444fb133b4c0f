# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cloud node pool's autoscaler: manifests that scale it on how long a queue's
oldest job has waited (pure: no I/O).

The cloud pool is a Deployment of Virtual Kubelets (one replica, one cloud node).
The design scales it on ``volcano_queue_pending_jobs_duration_seconds``, which
Volcano 1.15.1 does not have; the signal here is the collection's recording rule
``platform:queue_oldest_pending_job:age_seconds`` (rule oldest-pending-job in
``observability/alert_rules.py``): per queue, the age of the oldest job whose scheduling
started and that was never allocated. Two ways to serve it to an HPA, pick one
(both claim the APIService ``v1beta1.external.metrics.k8s.io``):

* KEDA (``keda_scaled_object``): KEDA queries Prometheus itself and owns the HPA.
* prometheus-adapter (``prometheus_adapter_rule`` + ``external_hpa``): the adapter
  serves the recording rule as the external metric ``EXTERNAL_METRIC``.

Rules held here:

* Rule scale-signal (the builders): scale up when the queue's oldest pending job
  waited more than ``threshold_seconds`` (target AverageValue = threshold, so about
  one cloud node per threshold waited, up to ``max_replicas``); scale down only after
  ``cooldown_seconds`` of a lower signal (``stabilizationWindowSeconds``), by at most
  10 % of the replicas per 60 s. No pending job reads as 0.
* Rule scale-signal-inputs (``scale_signal_errors``): the object names are DNS-1123
  subdomains, the namespace and the queue DNS-1123 labels (the queue is a label
  value of the metric selector and a string in PromQL), the threshold a whole number
  of seconds of 1 or more, the cooldown 1 to 3600 seconds (the HPA's limit),
  ``0 <= min_replicas <= max_replicas``, ``max_replicas`` 1 or more, the Prometheus
  URL http(s) with a host and no query or fragment (KEDA appends ``/api/v1/query``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from difflib import get_close_matches
from typing import Any
from urllib.parse import urlsplit

from ..common.errors import FieldError, raise_if
from ..common.names import (
    LABEL_MANAGED_BY,
    MANAGED_BY,
    dns_label_errors,
    dns_subdomain_errors,
)
from ..observability.alert_rules import QUEUE_DEPTH, QUEUE_OLDEST_PENDING

KEDA_API = "keda.sh/v1alpha1"
HPA_API = "autoscaling/v2"
DEPLOYMENT_API = "apps/v1"

# The external metric prometheus-adapter serves (no ':' in an API metric name).
EXTERNAL_METRIC = "platform_queue_oldest_pending_job_age_seconds"
QUEUE_LABEL = "queue"  # the recording rule's only label

DEFAULT_THRESHOLD_SECONDS = 300
DEFAULT_COOLDOWN_SECONDS = 600
DEFAULT_MIN_REPLICAS = 0
DEFAULT_MAX_REPLICAS = 20
SCALE_DOWN_PERCENT = 10
SCALE_DOWN_PERIOD_SECONDS = 60
MAX_STABILIZATION_SECONDS = 3600  # autoscaling/v2 validation

RULE = "rule scale-signal-inputs"
PARAMS = (
    "name",
    "namespace",
    "target_deployment",
    "queue",
    "prometheus_url",
    "threshold_seconds",
    "cooldown_seconds",
    "min_replicas",
    "max_replicas",
)
REQUIRED = ("name", "namespace", "target_deployment", "queue")
DEFAULTS: dict[str, int] = {
    "threshold_seconds": DEFAULT_THRESHOLD_SECONDS,
    "cooldown_seconds": DEFAULT_COOLDOWN_SECONDS,
    "min_replicas": DEFAULT_MIN_REPLICAS,
    "max_replicas": DEFAULT_MAX_REPLICAS,
}


def _is_whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _whole_errors(
    field: str, value: object, what: str, low: int, high: int | None = None
) -> list[FieldError]:
    if _is_whole(value) and value >= low and (high is None or value <= high):
        return []
    bound = f"from {low} to {high}" if high is not None else f"{low} or more"
    return [FieldError(field, f"{value!r} must be a whole number of {what}, {bound}")]


def _url_errors(url: object) -> list[FieldError]:
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        return [
            FieldError(
                "prometheus_url",
                f"{url!r} is not an http(s) URL with a host; for example "
                "http://kube-prometheus-stack-prometheus.monitoring.svc:9090",
            )
        ]
    if parts.query or parts.fragment:
        return [
            FieldError(
                "prometheus_url",
                f"{url!r} has a query or fragment; give the base URL, KEDA adds /api/v1/query",
            )
        ]
    return []


def scale_signal_errors(params: object, url_required: bool = False) -> list[FieldError]:
    """Rule scale-signal-inputs (see the module docstring): every problem of the
    scaler's parameters, each naming the field, the value and the rule; [] when
    they are valid. ``url_required``: the KEDA path, which queries Prometheus."""
    if not isinstance(params, Mapping):
        return [
            FieldError("params", f"{params!r} must be a mapping of {', '.join(PARAMS)} ({RULE})")
        ]
    errors: list[FieldError] = []
    for key in params:
        if key not in PARAMS:
            close = get_close_matches(str(key), PARAMS, n=1)
            hint = f"; did you mean {close[0]}?" if close else f"; known: {', '.join(PARAMS)}"
            errors.append(FieldError(str(key), f"is not a parameter of the scaler{hint}"))
    for key in REQUIRED:
        if key not in params:
            errors.append(FieldError(key, "is required"))
    if "name" in params:
        errors += dns_subdomain_errors("name", params["name"])
    if "target_deployment" in params:
        errors += dns_subdomain_errors("target_deployment", params["target_deployment"])
    if "namespace" in params:
        errors += dns_label_errors("namespace", params["namespace"])
    if "queue" in params:
        errors += dns_label_errors("queue", params["queue"])
    if url_required and "prometheus_url" not in params:
        errors.append(FieldError("prometheus_url", "is required: KEDA queries Prometheus"))
    elif "prometheus_url" in params:
        errors += _url_errors(params["prometheus_url"])
    values = {**DEFAULTS, **{k: v for k, v in params.items() if k in DEFAULTS}}
    errors += _whole_errors("threshold_seconds", values["threshold_seconds"], "seconds", 1)
    errors += _whole_errors(
        "cooldown_seconds", values["cooldown_seconds"], "seconds", 1, MAX_STABILIZATION_SECONDS
    )
    low = _whole_errors("min_replicas", values["min_replicas"], "replicas", 0)
    high = _whole_errors("max_replicas", values["max_replicas"], "replicas", 1)
    errors += low + high
    if not low and not high and values["min_replicas"] > values["max_replicas"]:
        errors.append(
            FieldError(
                "min_replicas",
                f"{values['min_replicas']} exceeds max_replicas {values['max_replicas']}",
            )
        )
    return [FieldError(e.field, f"{e.message} ({RULE})") for e in errors]


def oldest_pending_query(queue: str) -> str:
    """The signal for one queue as one number: the age in seconds of its oldest
    job waiting to be scheduled; no series (nothing waits) is read as 0 by both paths."""
    return f'max({QUEUE_OLDEST_PENDING}{{{QUEUE_LABEL}="{queue}"}})'


def _metadata(name: str, namespace: str) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": {LABEL_MANAGED_BY: MANAGED_BY}}


def _target(deployment: str) -> dict[str, str]:
    return {"apiVersion": DEPLOYMENT_API, "kind": "Deployment", "name": deployment}


def scale_down_behavior(cooldown_seconds: int) -> dict[str, Any]:
    """Rule scale-signal: the HPA's ``behavior``; scale-up keeps the HPA's default."""
    return {
        "scaleDown": {
            "stabilizationWindowSeconds": cooldown_seconds,
            "policies": [
                {
                    "type": "Percent",
                    "value": SCALE_DOWN_PERCENT,
                    "periodSeconds": SCALE_DOWN_PERIOD_SECONDS,
                }
            ],
        }
    }


def keda_scaled_object(
    name: str,
    namespace: str,
    target_deployment: str,
    queue: str,
    prometheus_url: str,
    threshold_seconds: int = DEFAULT_THRESHOLD_SECONDS,
    cooldown_seconds: int = DEFAULT_COOLDOWN_SECONDS,
    min_replicas: int = DEFAULT_MIN_REPLICAS,
    max_replicas: int = DEFAULT_MAX_REPLICAS,
) -> dict[str, Any]:
    """Rule scale-signal, served by KEDA: a ScaledObject with one prometheus trigger.

    ``activationThreshold`` = ``threshold``: the pool leaves 0 only once a job waited
    longer than the threshold; ``cooldownPeriod`` is how long KEDA waits, after the
    signal dropped to the activation threshold or below, before it takes the last
    replica (KEDA's HPA itself never goes below 1). Raises PlatformValidationError
    (rule scale-signal-inputs)."""
    raise_if(
        scale_signal_errors(
            {
                "name": name,
                "namespace": namespace,
                "target_deployment": target_deployment,
                "queue": queue,
                "prometheus_url": prometheus_url,
                "threshold_seconds": threshold_seconds,
                "cooldown_seconds": cooldown_seconds,
                "min_replicas": min_replicas,
                "max_replicas": max_replicas,
            },
            url_required=True,
        )
    )
    return {
        "apiVersion": KEDA_API,
        "kind": "ScaledObject",
        "metadata": _metadata(name, namespace),
        "spec": {
            "scaleTargetRef": _target(target_deployment),
            "minReplicaCount": min_replicas,
            "maxReplicaCount": max_replicas,
            "cooldownPeriod": cooldown_seconds,
            "advanced": {
                "horizontalPodAutoscalerConfig": {
                    "behavior": scale_down_behavior(cooldown_seconds),
                },
            },
            "triggers": [
                {
                    "type": "prometheus",
                    "metricType": "AverageValue",
                    "metadata": {
                        "serverAddress": prometheus_url.rstrip("/"),
                        "query": oldest_pending_query(queue),
                        "threshold": str(threshold_seconds),
                        "activationThreshold": str(threshold_seconds),
                        "ignoreNullValues": "true",
                    },
                }
            ],
        },
    }


def external_hpa(
    name: str,
    namespace: str,
    target_deployment: str,
    queue: str,
    threshold_seconds: int = DEFAULT_THRESHOLD_SECONDS,
    cooldown_seconds: int = DEFAULT_COOLDOWN_SECONDS,
    min_replicas: int = DEFAULT_MIN_REPLICAS,
    max_replicas: int = DEFAULT_MAX_REPLICAS,
) -> dict[str, Any]:
    """Rule scale-signal, served by prometheus-adapter: an autoscaling/v2 HPA on the
    external metric ``EXTERNAL_METRIC`` selected by the queue.

    ``minReplicas: 0`` is accepted by the API server only with the feature gate
    HPAScaleToZero (alpha in Kubernetes 1.35); at 0 replicas the HPA starts the first
    node as soon as any job waits (it has no activation threshold). Raises
    PlatformValidationError (rule scale-signal-inputs)."""
    raise_if(
        scale_signal_errors(
            {
                "name": name,
                "namespace": namespace,
                "target_deployment": target_deployment,
                "queue": queue,
                "threshold_seconds": threshold_seconds,
                "cooldown_seconds": cooldown_seconds,
                "min_replicas": min_replicas,
                "max_replicas": max_replicas,
            }
        )
    )
    return {
        "apiVersion": HPA_API,
        "kind": "HorizontalPodAutoscaler",
        "metadata": _metadata(name, namespace),
        "spec": {
            "scaleTargetRef": _target(target_deployment),
            "minReplicas": min_replicas,
            "maxReplicas": max_replicas,
            "metrics": [
                {
                    "type": "External",
                    "external": {
                        "metric": {
                            "name": EXTERNAL_METRIC,
                            "selector": {"matchLabels": {QUEUE_LABEL: queue}},
                        },
                        "target": {"type": "AverageValue", "averageValue": str(threshold_seconds)},
                    },
                }
            ],
            "behavior": scale_down_behavior(cooldown_seconds),
        },
    }


def prometheus_adapter_rule() -> dict[str, Any]:
    """Rule scale-signal, the adapter's side: one ``externalRules`` entry serving the
    recording rule as ``EXTERNAL_METRIC`` for every queue (the HPA's selector picks one).

    * ``namespaced: false``: the series has no namespace label; without it the adapter
      adds the HPA's namespace to the query and finds nothing.
    * Discovered through ``platform:queue_depth:jobs``, which exists for every queue
      (0 included): the adapter lists a metric only while a series of its
      ``seriesQuery`` exists, and the oldest-pending series vanish when nothing
      waits; an HPA whose metric is not listed stops scaling (it would never scale
      the pool back down).
    * The query names the recording rule itself: for external rules ``<<.Series>>``
      is the API name, not the series'; ``or vector(0)``: nothing waits reads as 0.
    """
    return {
        "seriesQuery": QUEUE_DEPTH,
        "resources": {"namespaced": False},
        "name": {"matches": f"^{re.escape(QUEUE_DEPTH)}$", "as": EXTERNAL_METRIC},
        "metricsQuery": f"max({QUEUE_OLDEST_PENDING}{{<<.LabelMatchers>>}}) or vector(0)",
    }
