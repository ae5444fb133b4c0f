# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a tenant declares about one model service, parsed into typed values.

A model service is one KServe InferenceService. Its stable predictor serves one
*version* (a name such as ``v3`` and the ``storageUri`` it stands for); each
canary serves another version at a share of the traffic. The version name is
KServe's ``predictor.name``, which names the Deployment
(``<service>-<version>-predictor``), so promoting a canary to stable keeps its
pods running (KServe's own advice, ``inference_service.go``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..common.errors import FieldError
from ..common.names import dns_label_errors

MODES = ("standard", "knative")
SCALE_METRICS = ("cpu", "memory", "concurrency", "rps")
# Design 10.3: the HPA on DCGM's GPU utilisation, a Pods metric served by an adapter.
GPU_UTIL_METRIC = "DCGM_FI_DEV_GPU_UTIL"
MODEL_KEYS = ("version", "format", "runtime", "storage_uri", "gpus", "cpu", "memory", "args")
CANARY_KEYS = (*MODEL_KEYS, "traffic_percent", "min_replicas")
AUTOSCALING_KEYS = (
    "min_replicas",
    "max_replicas",
    "scale_metric",
    "scale_target",
    "gpu_util_target",
)
VERSION_MAX = 20  # <service>-<version>-predictor stays a DNS label for services up to 33


@dataclass(frozen=True)
class ModelVersion:
    """One version of the model: what the predictor loads and what it asks for."""

    version: str
    format: str
    storage_uri: str
    runtime: str | None = None
    gpus: int = 0
    cpu: str | None = None
    memory: str | None = None
    args: tuple[str, ...] = ()


@dataclass(frozen=True)
class Canary:
    model: ModelVersion
    traffic_percent: int
    min_replicas: int | None = None


@dataclass(frozen=True)
class Autoscaling:
    min_replicas: int = 1
    max_replicas: int | None = None
    scale_metric: str | None = None
    scale_target: int | None = None
    # Average GPU utilisation (percent) the platform's HPA keeps (design 10.3); None: no such HPA.
    gpu_util_target: int | None = None


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    tenant: str
    queue: str
    job_class: str
    stable: ModelVersion
    canaries: tuple[Canary, ...] = ()
    autoscaling: Autoscaling = field(default_factory=Autoscaling)
    mode: str = "standard"
    # The bid per GPU-hour of a spot service (rule inference-spot-priced); None otherwise.
    spot_price: str | None = None
    # The predictor pods' identity, the canaries' too (rule inference-pod-identity): the
    # ServiceAccount they run as (None: the namespace's default) and the Secrets of the
    # tenant's namespace they pull their images with.
    service_account: str | None = None
    image_pull_secrets: tuple[str, ...] = ()

    def with_versions(self, stable: ModelVersion, canaries: tuple[Canary, ...]) -> ServiceSpec:
        return replace(self, stable=stable, canaries=canaries)

    def all_versions(self) -> tuple[ModelVersion, ...]:
        return (self.stable, *(c.model for c in self.canaries))


def _int_errors(
    path: str, value: Any, minimum: int, maximum: int | None = None
) -> list[FieldError]:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        return [FieldError(path, f"{value!r} must be a whole number >= {minimum}")]
    if maximum is not None and value > maximum:
        return [FieldError(path, f"{value} must be at most {maximum}")]
    return []


def _unknown(path: str, value: Mapping[str, Any], keys: tuple[str, ...]) -> list[FieldError]:
    extra = sorted(set(value) - set(keys))
    return (
        [FieldError(path, f"unknown key(s) {', '.join(extra)}; known: {', '.join(keys)}")]
        if extra
        else []
    )


def parse_model(
    path: str, value: Any, base: ModelVersion | None = None
) -> tuple[ModelVersion | None, list[FieldError]]:
    """Rule model-spec: a version name, a format and a storageUri; a canary may leave out
    what it shares with the stable version (``base``), except its version and storageUri."""
    if not isinstance(value, Mapping):
        return None, [
            FieldError(path, f"{value!r} must be a mapping with version, format and storage_uri")
        ]
    keys = CANARY_KEYS if base is not None else MODEL_KEYS
    errors = _unknown(path, value, keys)
    version = value.get("version")
    errors += dns_label_errors(f"{path}.version", version, VERSION_MAX)
    uri = value.get("storage_uri")
    if not isinstance(uri, str) or "://" not in uri:
        errors.append(
            FieldError(f"{path}.storage_uri", f"{uri!r} must be a URI such as s3://models/llama/v3")
        )
    fmt = value.get("format", base.format if base else None)
    if not isinstance(fmt, str) or not fmt:
        errors.append(
            FieldError(f"{path}.format", f"{fmt!r} must name the model format, e.g. vllm")
        )
    gpus = value.get("gpus", base.gpus if base else 0)
    errors += _int_errors(f"{path}.gpus", gpus, 0)
    args = value.get("args", list(base.args) if base else [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        errors.append(FieldError(f"{path}.args", f"{args!r} must be a list of strings"))
    if errors:
        return None, errors
    return (
        ModelVersion(
            version=version,
            format=fmt,
            storage_uri=uri,
            runtime=value.get("runtime", base.runtime if base else None),
            gpus=gpus,
            cpu=_text(value.get("cpu", base.cpu if base else None)),
            memory=_text(value.get("memory", base.memory if base else None)),
            args=tuple(args),
        ),
        [],
    )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def parse_canaries(
    value: Any, stable: ModelVersion, path: str = "canaries"
) -> tuple[tuple[Canary, ...], list[FieldError]]:
    if value in (None, []):
        return (), []
    if not isinstance(value, list):
        return (), [FieldError(path, f"{value!r} must be a list of canaries")]
    canaries, errors = [], []
    for i, item in enumerate(value):
        model, errs = parse_model(f"{path}[{i}]", item, base=stable)
        errors += errs
        traffic = item.get("traffic_percent") if isinstance(item, Mapping) else None
        errors += _int_errors(f"{path}[{i}].traffic_percent", traffic, 0, 100)
        minimum = item.get("min_replicas") if isinstance(item, Mapping) else None
        if minimum is not None:
            errors += _int_errors(f"{path}[{i}].min_replicas", minimum, 0)
        if model is not None and not errs:
            canaries.append(Canary(model, traffic, minimum))
    return tuple(canaries), errors


def parse_autoscaling(
    value: Any, path: str = "autoscaling"
) -> tuple[Autoscaling, list[FieldError]]:
    if value is None:
        return Autoscaling(), []
    if not isinstance(value, Mapping):
        return Autoscaling(), [FieldError(path, f"{value!r} must be a mapping")]
    errors = _unknown(path, value, AUTOSCALING_KEYS)
    low = value.get("min_replicas", 1)
    errors += _int_errors(f"{path}.min_replicas", low, 0)
    high = value.get("max_replicas")
    if high is not None:
        errors += _int_errors(f"{path}.max_replicas", high, 1)
        if not errors and high < low:
            errors.append(
                FieldError(f"{path}.max_replicas", f"{high} is below min_replicas ({low})")
            )
    metric = value.get("scale_metric")
    if metric is not None and metric not in SCALE_METRICS:
        errors.append(
            FieldError(
                f"{path}.scale_metric", f"{metric!r} is not one of {', '.join(SCALE_METRICS)}"
            )
        )
    target = value.get("scale_target")
    if target is not None:
        errors += _int_errors(f"{path}.scale_target", target, 1)
    util = value.get("gpu_util_target")
    if util is not None:
        errors += _int_errors(f"{path}.gpu_util_target", util, 1, 100)
        if metric is not None or target is not None:
            errors.append(
                FieldError(
                    f"{path}.gpu_util_target",
                    "scales on GPU utilisation through the platform's HPA; leave scale_metric and "
                    "scale_target out (KServe would make a second HPA)",
                )
            )
        if high is None:
            errors.append(FieldError(f"{path}.max_replicas", "is required with gpu_util_target"))
    if errors:
        return Autoscaling(), errors
    return Autoscaling(low, high, metric, target, util), []


def view(spec: ServiceSpec | None, history: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The parts of a service its diff shows and its change is judged by."""
    if spec is None:
        return None
    auto = spec.autoscaling
    return {
        "mode": spec.mode,
        "queue": spec.queue,
        "job_class": spec.job_class,
        "spot_price": spec.spot_price,
        "service_account": spec.service_account,
        "image_pull_secrets": list(spec.image_pull_secrets),
        "stable": _model_view(spec.stable),
        "canaries": [
            {
                **_model_view(c.model),
                "traffic_percent": c.traffic_percent,
                "min_replicas": c.min_replicas,
            }
            for c in spec.canaries
        ],
        "autoscaling": {
            "min_replicas": auto.min_replicas,
            "max_replicas": auto.max_replicas,
            "scale_metric": auto.scale_metric,
            "scale_target": auto.scale_target,
            "gpu_util_target": auto.gpu_util_target,
        },
        "versions": [e["version"] for e in history],
    }


def _model_view(model: Any) -> dict[str, Any]:
    return {
        "version": model.version,
        "storage_uri": model.storage_uri,
        "format": model.format,
        "runtime": model.runtime,
        "gpus": model.gpus,
    }
