# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A live InferenceService read back into the domain's terms: its spec (for the
rollout actions, which start from what runs) and its report (for the info module)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..common.names import ANNOTATION_SPOT_PRICE, LABEL_JOB_CLASS, LABEL_TENANT
from ..common.quantity import parse_quantity
from .manifests import (
    AUTOSCALER_CLASS,
    DEPLOYMENT_MODE,
    GPU,
    LABEL_MODEL_VERSION,
    QUEUE_ANNOTATION,
    predictor_deployment,
)
from .rules import canary_replicas, stable_replicas, traffic_split
from .spec import Autoscaling, Canary, ModelVersion, ServiceSpec
from .versions import previous, read_history


def _model(version: str, predictor: Mapping[str, Any]) -> ModelVersion:
    model = predictor.get("model") or {}
    requests = (model.get("resources") or {}).get("requests") or {}
    gpus = requests.get(GPU)
    return ModelVersion(
        version=version,
        format=(model.get("modelFormat") or {}).get("name", ""),
        storage_uri=model.get("storageUri", ""),
        runtime=model.get("runtime"),
        gpus=int(parse_quantity(gpus)) if gpus is not None else 0,
        cpu=None if requests.get("cpu") is None else str(requests["cpu"]),
        memory=None if requests.get("memory") is None else str(requests["memory"]),
        args=tuple(model.get("args") or ()),
    )


def mode_of(obj: Mapping[str, Any]) -> str:
    mode = ((obj.get("metadata") or {}).get("annotations") or {}).get(DEPLOYMENT_MODE, "Standard")
    return "knative" if mode in ("Knative", "Serverless") else "standard"


def spec_from_live(obj: Mapping[str, Any], gpu_util_target: int | None = None) -> ServiceSpec:
    """The ServiceSpec a live Standard-mode InferenceService stands for."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    predictor = spec.get("predictor") or {}
    stable = _model(predictor.get("name") or "default", predictor)
    canaries = tuple(
        Canary(
            _model((c.get("predictor") or {}).get("name", ""), c.get("predictor") or {}),
            int(c.get("trafficPercent", 0)),
            (c.get("predictor") or {}).get("minReplicas"),
        )
        for c in spec.get("canary") or []
    )
    if mode_of(obj) == "knative":
        stable, canaries = _knative_versions(meta, predictor)
    labels = meta.get("labels") or {}
    auto = Autoscaling(
        min_replicas=predictor.get("minReplicas", 1),
        max_replicas=predictor.get("maxReplicas") or None,
        scale_metric=predictor.get("scaleMetric"),
        scale_target=predictor.get("scaleTarget"),
        gpu_util_target=gpu_util_target,
    )
    return ServiceSpec(
        name=meta.get("name", ""),
        tenant=labels.get(LABEL_TENANT, ""),
        queue=(predictor.get("annotations") or {}).get(QUEUE_ANNOTATION, ""),
        job_class=labels.get(LABEL_JOB_CLASS, ""),
        stable=stable,
        canaries=canaries,
        autoscaling=auto,
        mode=mode_of(obj),
        spot_price=(predictor.get("annotations") or {}).get(ANNOTATION_SPOT_PRICE),
        service_account=predictor.get("serviceAccountName") or None,
        image_pull_secrets=tuple(
            str(secret["name"])
            for secret in predictor.get("imagePullSecrets") or ()
            if isinstance(secret, Mapping) and secret.get("name")
        ),
    )


def _knative_versions(
    meta: Mapping[str, Any], predictor: Mapping[str, Any]
) -> tuple[ModelVersion, tuple[Canary, ...]]:
    """Knative mode names no predictor: the predictor declares the latest version (its
    model-version label); with canaryTrafficPercent that is the canary, and the stable
    version is the history's last entry, with the resources the manifest carries."""
    version = (predictor.get("labels") or {}).get(LABEL_MODEL_VERSION) or "default"
    latest = _model(version, predictor)
    share = predictor.get("canaryTrafficPercent")
    if share is None:
        return latest, ()
    history = read_history(meta.get("annotations"))
    last = history[-1] if history else {}
    stable = replace(
        latest,
        version=last.get("version") or "default",
        storage_uri=last.get("storage_uri") or latest.storage_uri,
        format=last.get("format") or latest.format,
        runtime=last.get("runtime"),
    )
    return stable, (Canary(latest, int(share)),)


def hpa_target(hpa: Mapping[str, Any] | None) -> int | None:
    """The gpu_util_target of the platform's HPA, read back."""
    for metric in ((hpa or {}).get("spec") or {}).get("metrics") or []:
        target = ((metric.get("pods") or {}).get("target") or {}).get("averageValue")
        if target is not None:
            return int(parse_quantity(target))
    return None


def _conditions(status: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        c["type"]: {k: c.get(k) for k in ("status", "reason", "message") if c.get(k) is not None}
        for c in status.get("conditions") or []
        if "type" in c
    }


def replica_counts(
    live: ServiceSpec, deployments: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, int]]:
    """Rule inference-replicas-reported: per version, the ready and desired replicas of
    its predictor Deployment and the minimum the service keeps of it."""
    low = live.autoscaling.min_replicas
    minimums = {live.stable.version: stable_replicas(live)}
    for canary in live.canaries:
        minimums[canary.model.version] = canary_replicas(canary, low)
    out = {}
    for version, minimum in minimums.items():
        deployment = deployments.get(predictor_deployment(live.name, version)) or {}
        out[version] = {
            "ready": int((deployment.get("status") or {}).get("readyReplicas") or 0),
            "desired": int((deployment.get("spec") or {}).get("replicas") or 0),
            "minimum": minimum,
        }
    return out


def report(
    obj: Mapping[str, Any],
    hpa: Mapping[str, Any] | None = None,
    deployments: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """What inference_service_info says about one service (docs/inference.md).
    ``deployments``: the namespace's predictor Deployments by name; with them each
    version's replicas are reported, and a service below a version's minimum is not
    ready, whatever KServe's condition says."""
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    history = read_history(meta.get("annotations"))
    conditions = _conditions(status)
    mode = mode_of(obj)
    out: dict[str, Any] = {
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "mode": mode,
        "ready": (conditions.get("Ready") or {}).get("status") == "True",
        "conditions": conditions,
        "url": status.get("url"),
        "address": (status.get("address") or {}).get("url"),
        "versions": [e["version"] for e in history],
        "previous_version": (previous(history) or {}).get("version"),
        "autoscaler_class": (meta.get("annotations") or {}).get(AUTOSCALER_CLASS, "hpa"),
    }
    if mode == "knative":
        predictor = (obj.get("spec") or {}).get("predictor") or {}
        share = predictor.get("canaryTrafficPercent")
        out["current_version"] = history[-1]["version"] if history else None
        out["canaries"] = []
        out["traffic"] = (
            {"latest": share, "previous": 100 - share} if share is not None else {"latest": 100}
        )
        return out
    live = spec_from_live(obj, hpa_target(hpa))
    by_name = {c.get("name"): c for c in status.get("canaryStatuses") or []}
    out["current_version"] = live.stable.version
    out["storage_uri"] = live.stable.storage_uri
    out["queue"] = live.queue
    out["job_class"] = live.job_class
    out["canaries"] = [
        {
            "version": c.model.version,
            "storage_uri": c.model.storage_uri,
            "traffic_percent": c.traffic_percent,
            "ready": bool((by_name.get(c.model.version) or {}).get("ready")),
            "deployment": predictor_deployment(live.name, c.model.version),
        }
        for c in live.canaries
    ]
    out["traffic"] = traffic_split(live)
    out["deployment"] = predictor_deployment(live.name, live.stable.version)
    out["gpu_util_target"] = live.autoscaling.gpu_util_target
    if deployments is not None:
        out["replicas"] = replica_counts(live, deployments)
        short = [v for v, r in out["replicas"].items() if r["ready"] < r["minimum"]]
        if short:
            out["ready"] = False
            out["below_minimum"] = short
    return out


def graph_report(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    root = (((obj.get("spec") or {}).get("nodes") or {}).get("root")) or {}
    return {
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "ready": (_conditions(status).get("Ready") or {}).get("status") == "True",
        "conditions": _conditions(status),
        "url": status.get("url"),
        "router": root.get("routerType"),
        "routes": [
            {"service": s.get("name"), "url": s.get("serviceUrl"), "weight": s.get("weight")}
            for s in root.get("steps") or []
        ],
    }
