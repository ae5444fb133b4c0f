# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inference group: each KServe service's request rate, p50 and p99 latency and error
ratio, and its SLO alerts (rules inference-request-rate, inference-latency-quantiles,
inference-error-ratio, inference-slo-alerts). Pure and stdlib only (the local cluster loads
the observability package by path).

Where the series come from (the names are the exporters' own, KServe v0.20.0):

* KServe's Python model server (``kserve.metrics``, every runtime built on it: sklearn,
  xgboost, lightgbm, the HuggingFace runtime's own predict path) serves ``/metrics`` on its
  HTTP port (8080, the runtimes' ``prometheus.kserve.io/port`` annotation) with the
  histogram ``request_predict_seconds`` (label ``model_name``): the time of ``predict``
  alone, pre- and post-processing are ``request_preprocess_seconds`` and
  ``request_postprocess_seconds``. It counts every predict, failed or not, and exports no
  failure count.
* vLLM (the HuggingFace runtime's vLLM backend, on the same port) exports
  ``vllm:e2e_request_latency_seconds`` (histogram, the whole request) and
  ``vllm:request_success_total`` (counter of finished requests by ``finished_reason``:
  ``stop``, ``length``, ``abort``, ``error``; ``error`` is an internal error answered 500).
* The InferenceGraph router (the A/B tests in ``platform-serving``) exports no metrics.

The monitoring role's PodMonitor ``kserve-predictors`` gives every predictor series the
labels ``namespace``, ``inferenceservice`` (the pod's ``serving.kserve.io/inferenceservice``)
and ``tenant`` (its namespace ``tenant-<tenant>`` without the prefix), which the records
keep (``BY``). A service served by both exporters is read from KServe's (``or``).
"""

from __future__ import annotations

from typing import Any

from .alert_rules import Thresholds

INFERENCE_GROUP = "platform-inference"
BY = "namespace, inferenceservice, tenant"
# The window of every rate and quantile.
WINDOW = "5m"
KSERVE_PREDICT = "request_predict_seconds"
VLLM_E2E = "vllm:e2e_request_latency_seconds"
VLLM_FINISHED = "vllm:request_success_total"
VLLM_ERROR_REASON = "error"
# The exporters' series the rules read, for the checks of dashboards and docs.
EXPORTER_SERIES = (
    f"{KSERVE_PREDICT}_count",
    f"{KSERVE_PREDICT}_bucket",
    f"{VLLM_E2E}_count",
    f"{VLLM_E2E}_bucket",
    VLLM_FINISHED,
)

REQUESTS_RATE = "platform:inference_requests:rate5m"
LATENCY_P50 = "platform:inference_latency_seconds:p50"
LATENCY_P99 = "platform:inference_latency_seconds:p99"
ERRORS_RATIO = "platform:inference_errors:ratio5m"
QUANTILES = {LATENCY_P50: 0.5, LATENCY_P99: 0.99}
# How long an SLO must be broken before its alert fires.
LATENCY_FOR = "10m"
ERRORS_FOR = "5m"


def _per_service(series: str) -> str:
    return f"sum by ({BY}) (rate({series}[{WINDOW}]))"


def request_rate() -> dict[str, Any]:
    """Rule inference-request-rate: a service's requests per second over 5 minutes, from
    KServe's predict histogram, or vLLM's end-to-end one where KServe's has no series."""
    return {
        "record": REQUESTS_RATE,
        "expr": f"{_per_service(KSERVE_PREDICT + '_count')}\nor\n{_per_service(VLLM_E2E + '_count')}",
    }


def latency_quantile(record: str) -> dict[str, Any]:
    """Rule inference-latency-quantiles: a service's p50 or p99 latency in seconds over 5
    minutes, interpolated in the exporter's histogram buckets (all pods and versions of the
    service together); KServe's predict time, or vLLM's whole request."""
    q = QUANTILES[record]

    def quantile(histogram: str) -> str:
        return f"histogram_quantile({q}, sum by (le, {BY}) (rate({histogram}_bucket[{WINDOW}])))"

    return {"record": record, "expr": f"{quantile(KSERVE_PREDICT)}\nor\n{quantile(VLLM_E2E)}"}


def error_ratio() -> dict[str, Any]:
    """Rule inference-error-ratio: of the requests a service finished in 5 minutes, the
    share that ended in an internal error. Only vLLM counts them (``finished_reason``
    ``error``); KServe's Python model server exports no failure count, so its services have
    no error ratio."""
    finished = _per_service(VLLM_FINISHED)
    errors = _per_service(f'{VLLM_FINISHED}{{finished_reason="{VLLM_ERROR_REASON}"}}')
    # A vLLM that never failed may have no error series yet: 0, not no answer.
    return {"record": ERRORS_RATIO, "expr": f"(\n  {errors}\n  or 0 * {finished}\n)\n/ {finished}"}


def slo_alerts(t: Thresholds) -> list[dict[str, Any]]:
    """Rule inference-slo-alerts: one alert per service and SLO, labelled with the
    service's ``tenant`` (alerts are routed to the tenant by it) and a ``severity``; the
    thresholds are ``inference_p99_seconds`` and ``inference_error_ratio``."""
    return [
        {
            "alert": "InferenceLatencyHigh",
            "expr": f"{LATENCY_P99} > {t.inference_p99_seconds}",
            "for": LATENCY_FOR,
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "Inference service {{ $labels.namespace }}/{{ $labels.inferenceservice }} "
                "answers 1 request in 100 in more than {{ $value | humanizeDuration }}"
            },
        },
        {
            "alert": "InferenceErrorsHigh",
            "expr": f"{ERRORS_RATIO} > {t.inference_error_ratio}",
            "for": ERRORS_FOR,
            "labels": {"severity": "critical"},
            "annotations": {
                "summary": "Inference service {{ $labels.namespace }}/{{ $labels.inferenceservice }} "
                "failed {{ $value | humanizePercentage }} of its requests in the last 5 minutes"
            },
        },
    ]


def inference_rules(t: Thresholds) -> list[dict[str, Any]]:
    """The ``platform-inference`` group's rules, the records before the alerts that read
    them."""
    return [
        request_rate(),
        latency_quantile(LATENCY_P50),
        latency_quantile(LATENCY_P99),
        error_ratio(),
        *slo_alerts(t),
    ]
