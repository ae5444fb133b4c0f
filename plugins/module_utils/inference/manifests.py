# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Manifest builders of the inference domain: the InferenceService in Standard or
Knative mode, the design's GPU-utilisation HPA, the NetworkPolicy that lets the
gateway and monitoring reach the predictors, and the A/B InferenceGraph.

Tenant placement (rule inference-placement, design 5.3 and 8.5): every predictor
pod is scheduled by Volcano, in the service's queue (annotation
``scheduling.volcano.sh/queue-name``, which vc-controller-manager copies into the
pod's PodGroup), at its class's PriorityClass, marked ``volcano.sh/preemptable:
"false"`` at critical, with no network-topology constraint, and labelled with
the tenant, class and billing type the metering rules read.
"""

from __future__ import annotations

import json
from typing import Any

from ..common.names import (
    ANNOTATION_SPOT_PRICE,
    GRAPH_API,
    LABEL_BILLING_TYPE,
    LABEL_JOB_CLASS,
    PREFIX,
    VOLCANO_QUEUE_ANNOTATION,
    namespace_name,
    tenant_labels,
)
from ..jobs.classes import JobClass
from ..jobs.manifest import pod_identity
from .rules import canary_replicas, stable_replicas, traffic_split
from .spec import GPU_UTIL_METRIC, Canary, ModelVersion, ServiceSpec
from .versions import ANNOTATION_VERSIONS

ISVC_API = "serving.kserve.io/v1beta1"
HPA_API = "autoscaling/v2"
NETPOL_API = "networking.k8s.io/v1"
DEPLOYMENT_MODE = "serving.kserve.io/deploymentMode"
AUTOSCALER_CLASS = "serving.kserve.io/autoscalerClass"
QUEUE_ANNOTATION = VOLCANO_QUEUE_ANNOTATION
PREEMPTABLE = "volcano.sh/preemptable"
LABEL_MODEL_VERSION = PREFIX + "model-version"
# On a rollout graph: the service whose canary split it routes.
LABEL_ROLLOUT_OF = PREFIX + "rollout-of"
# Labels KServe puts on every predictor pod (constants.InferenceServicePodLabelKey, KServiceComponentLabel).
KSERVE_ISVC_LABEL = "serving.kserve.io/inferenceservice"
KSERVE_COMPONENT_LABEL = "component"
KSERVE_MODES = {"standard": "Standard", "knative": "Knative"}
# Where A/B routers run: the serving gateway's namespace, which the predictors admit.
SERVING_NAMESPACE = "platform-serving"
MONITORING_NAMESPACE = "monitoring"
SERVING_PORT = 8080
GPU = "nvidia.com/gpu"
# KServe's constants.InferenceServiceContainerName: the ServingRuntime container a model
# merges into. KServe's CRD requires canary[].predictor.model.name (and its webhook
# refuses the name on the stable predictor).
MODEL_CONTAINER = "kserve-container"


def predictor_deployment(service: str, version: str) -> str:
    """KServe's ``PredictorServiceName``: the Deployment and Service of one version."""
    return f"{service}-{version}-predictor"


def network_policy_name(service: str) -> str:
    return f"inference-{service}"


def graph_name(tenant: str, graph: str) -> str:
    return f"{tenant}-{graph}"


def _resources(model: ModelVersion) -> dict[str, Any]:
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    if model.gpus:
        requests[GPU] = model.gpus
        limits[GPU] = model.gpus
    if model.cpu:
        requests["cpu"] = model.cpu
    if model.memory:
        requests["memory"] = model.memory
        limits["memory"] = model.memory
    out: dict[str, Any] = {}
    if requests:
        out["requests"] = requests
    if limits:
        out["limits"] = limits
    return out


def _model(model: ModelVersion) -> dict[str, Any]:
    out: dict[str, Any] = {"modelFormat": {"name": model.format}, "storageUri": model.storage_uri}
    if model.runtime:
        out["runtime"] = model.runtime
    if model.args:
        out["args"] = list(model.args)
    resources = _resources(model)
    if resources:
        out["resources"] = resources
    return out


def pod_labels(spec: ServiceSpec, billing_type: str, version: str) -> dict[str, str]:
    return tenant_labels(
        spec.tenant,
        **{
            LABEL_JOB_CLASS: spec.job_class,
            LABEL_BILLING_TYPE: billing_type,
            LABEL_MODEL_VERSION: version,
        },
    )


def pod_annotations(spec: ServiceSpec, row: JobClass) -> dict[str, str]:
    out = {QUEUE_ANNOTATION: spec.queue}
    if not row.preemptable:
        out[PREEMPTABLE] = "false"
    if spec.spot_price is not None:
        # Spot reclaim reads each pod's own bid (rule spot-candidate-pod).
        out[ANNOTATION_SPOT_PRICE] = spec.spot_price
    return out


def _predictor(
    spec: ServiceSpec, row: JobClass, billing_type: str, model: ModelVersion
) -> dict[str, Any]:
    """Rule inference-placement on one predictor. Its pods' identity, when given, is the
    service's (rule inference-pod-identity, ``jobs.manifest.pod_identity``)."""
    return {
        "schedulerName": "volcano",
        "priorityClassName": row.priority_class,
        **pod_identity(spec.service_account, spec.image_pull_secrets),
        "annotations": pod_annotations(spec, row),
        "labels": pod_labels(spec, billing_type, model.version),
        "model": _model(model),
    }


def _scaling(spec: ServiceSpec) -> dict[str, Any]:
    auto = spec.autoscaling
    out: dict[str, Any] = {"minReplicas": auto.min_replicas}
    if auto.max_replicas is not None:
        out["maxReplicas"] = auto.max_replicas
    if auto.scale_metric is not None:
        out["scaleMetric"] = auto.scale_metric
    if auto.scale_target is not None:
        out["scaleTarget"] = auto.scale_target
    return out


def _canary(spec: ServiceSpec, row: JobClass, billing_type: str, canary: Canary) -> dict[str, Any]:
    predictor = {"name": canary.model.version, **_predictor(spec, row, billing_type, canary.model)}
    predictor["model"] = {"name": MODEL_CONTAINER, **predictor["model"]}
    if canary.min_replicas is not None:
        predictor["minReplicas"] = canary.min_replicas
    return {"predictor": predictor, "trafficPercent": canary.traffic_percent}


def inference_service(
    spec: ServiceSpec, row: JobClass, billing_type: str, history: list[dict[str, Any]]
) -> dict[str, Any]:
    """The InferenceService of ``spec`` (its mode's shape), with its version history."""
    annotations = {
        DEPLOYMENT_MODE: KSERVE_MODES[spec.mode],
        ANNOTATION_VERSIONS: json.dumps(history, sort_keys=True, separators=(",", ":")),
    }
    if spec.autoscaling.gpu_util_target is not None:
        # The platform's HPA scales the predictor; KServe makes none of its own.
        annotations[AUTOSCALER_CLASS] = "external"
    metadata = {
        "name": spec.name,
        "namespace": namespace_name(spec.tenant),
        "labels": tenant_labels(
            spec.tenant, **{LABEL_JOB_CLASS: spec.job_class, LABEL_BILLING_TYPE: billing_type}
        ),
        "annotations": annotations,
    }
    body: dict[str, Any]
    if spec.mode == "knative":
        body = _knative_predictor(spec, row, billing_type)
    else:
        predictor = {
            "name": spec.stable.version,
            **_predictor(spec, row, billing_type, spec.stable),
        }
        predictor.update(_scaling(spec))
        body = {"predictor": predictor}
        if spec.canaries:
            body["canary"] = [_canary(spec, row, billing_type, c) for c in spec.canaries]
    return {"apiVersion": ISVC_API, "kind": "InferenceService", "metadata": metadata, "spec": body}


def _knative_predictor(spec: ServiceSpec, row: JobClass, billing_type: str) -> dict[str, Any]:
    """Knative mode: the predictor always declares the newest version; with a canary,
    ``canaryTrafficPercent`` gives it that share and Knative keeps the rest on the last
    ready revision (the stable version)."""
    if spec.canaries:
        canary = spec.canaries[0]
        predictor = _predictor(spec, row, billing_type, canary.model)
        predictor["canaryTrafficPercent"] = canary.traffic_percent
    else:
        predictor = _predictor(spec, row, billing_type, spec.stable)
    predictor.update(_scaling(spec))
    return {"predictor": predictor}


def gpu_util_hpa(spec: ServiceSpec) -> dict[str, Any] | None:
    """Design 10.3's HPA on the stable predictor, scaling on the pods' average
    ``DCGM_FI_DEV_GPU_UTIL``. The metric must be served by the custom metrics API
    (prometheus-adapter or KEDA; docs/inference.md). None without gpu_util_target."""
    auto = spec.autoscaling
    if auto.gpu_util_target is None or spec.mode != "standard":
        return None
    return {
        "apiVersion": HPA_API,
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": f"{spec.name}-gpu-util",
            "namespace": namespace_name(spec.tenant),
            "labels": tenant_labels(spec.tenant),
        },
        "spec": {
            "scaleTargetRef": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": predictor_deployment(spec.name, spec.stable.version),
            },
            "minReplicas": max(auto.min_replicas, 1),
            "maxReplicas": auto.max_replicas,
            "metrics": [
                {
                    "type": "Pods",
                    "pods": {
                        "metric": {"name": GPU_UTIL_METRIC},
                        "target": {
                            "type": "AverageValue",
                            "averageValue": str(auto.gpu_util_target),
                        },
                    },
                }
            ],
            "behavior": {
                "scaleUp": {
                    "stabilizationWindowSeconds": 60,
                    "policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}],
                },
                "scaleDown": {
                    "stabilizationWindowSeconds": 300,
                    "policies": [{"type": "Pods", "value": 1, "periodSeconds": 120}],
                },
            },
        },
    }


def _from_namespaces(names: list[str], port: int) -> dict[str, Any]:
    return {
        "from": [
            {
                "namespaceSelector": {
                    "matchExpressions": [
                        {
                            "key": "kubernetes.io/metadata.name",
                            "operator": "In",
                            "values": sorted(set(names)),
                        }
                    ]
                }
            }
        ],
        "ports": [{"protocol": "TCP", "port": port}],
    }


def serving_network_policy(
    spec: ServiceSpec,
    gateway_namespaces: list[str],
    monitoring_namespace: str | None,
    serving_port: int = SERVING_PORT,
    metrics_port: int = SERVING_PORT,
) -> dict[str, Any]:
    """Rule inference-reachable: the service's predictor pods, and only they, admit the
    gateway's namespaces on the serving port and the monitoring namespace on the
    metrics port. The tenant's own policy still keeps every other namespace out of the
    rest of the tenant; NetworkPolicies only ever add what they allow."""
    ingress = []
    if gateway_namespaces:
        ingress.append(_from_namespaces(gateway_namespaces, serving_port))
    if monitoring_namespace:
        ingress.append(_from_namespaces([monitoring_namespace], metrics_port))
    return {
        "apiVersion": NETPOL_API,
        "kind": "NetworkPolicy",
        "metadata": {
            "name": network_policy_name(spec.name),
            "namespace": namespace_name(spec.tenant),
            "labels": tenant_labels(spec.tenant),
        },
        "spec": {
            "podSelector": {
                "matchLabels": {KSERVE_ISVC_LABEL: spec.name, KSERVE_COMPONENT_LABEL: "predictor"}
            },
            "policyTypes": ["Ingress"],
            "ingress": ingress,
        },
    }


def ab_graph(
    tenant: str, graph: str, routes: list[tuple[str, str, int]], namespace: str = SERVING_NAMESPACE
) -> dict[str, Any]:
    """Rule inference-ab-test: an InferenceGraph whose root Splitter sends each request
    to one of the tenant's services by weight. ``routes`` are (service, URL, weight).

    The graph lives in the serving gateway's namespace, not the tenant's: its router
    Deployment has no scheduler or PriorityClass field KServe would copy into its pods,
    so in a tenant namespace rule pods-through-volcano would refuse it. The gateway is
    where the design places traffic routing and A/B tests (section 10.1)."""
    steps = [{"name": svc, "serviceUrl": url, "weight": weight} for svc, url, weight in routes]
    return {
        "apiVersion": GRAPH_API,
        "kind": "InferenceGraph",
        "metadata": {
            "name": graph_name(tenant, graph),
            "namespace": namespace,
            "labels": tenant_labels(tenant),
            "annotations": {DEPLOYMENT_MODE: "Standard"},
        },
        "spec": {"nodes": {"root": {"routerType": "Splitter", "steps": steps}}},
    }


def version_url(spec: ServiceSpec, version: str) -> str:
    """Where one version answers inside the cluster: its KServe Service, at the v1
    protocol's predict path (the model's name is the service's)."""
    host = f"{predictor_deployment(spec.name, version)}.{namespace_name(spec.tenant)}.svc.cluster.local"
    return f"http://{host}/v1/models/{spec.name}:predict"


def rerouted_graphs(graphs: list[dict[str, Any]], service: str, url: str) -> list[dict[str, Any]]:
    """Rule inference-routes-follow-versions: the tenant's A/B graphs with a step to
    ``service`` that names another address, each with that step sent to ``url`` (the
    service's stable version now). A route is never left on a version's Service that a
    promotion or rollback removed."""
    out = []
    for graph in graphs:
        meta = graph.get("metadata") or {}
        if LABEL_ROLLOUT_OF in (meta.get("labels") or {}):
            continue  # a canary router is the service's own, rewritten with it
        root = ((graph.get("spec") or {}).get("nodes") or {}).get("root") or {}
        steps = root.get("steps") or []
        if not any(s.get("name") == service and s.get("serviceUrl") != url for s in steps):
            continue
        new_steps = [
            {**s, "serviceUrl": url} if s.get("name") == service else dict(s) for s in steps
        ]
        out.append(
            {
                "apiVersion": GRAPH_API,
                "kind": "InferenceGraph",
                "metadata": {
                    "name": meta.get("name"),
                    "namespace": meta.get("namespace"),
                    "labels": dict(meta.get("labels") or {}),
                    "annotations": {
                        k: v
                        for k, v in (meta.get("annotations") or {}).items()
                        if k == DEPLOYMENT_MODE
                    },
                },
                "spec": {"nodes": {"root": {**root, "steps": new_steps}}},
            }
        )
    return out


def rollout_graph_name(spec: ServiceSpec) -> str:
    return graph_name(spec.tenant, f"{spec.name}-canary")


def rollout_graph(spec: ServiceSpec, namespace: str = SERVING_NAMESPACE) -> dict[str, Any] | None:
    """Rule canary-traffic-routed: the canaries' shares as a Splitter at the gateway.

    In Standard mode KServe 0.20 reads ``trafficPercent`` only to size the canary's
    Deployment; the service's address is the stable version's Service, which selects no
    canary pod, so no request reaches a canary (docs/design-differences.md). The
    platform routes the split itself: this graph sends each request to one version by
    its share, and the gateway sends the service's traffic to the graph while a canary
    runs. None without canaries (or in Knative mode, where Knative routes)."""
    if not spec.canaries or spec.mode != "standard":
        return None
    routes = [
        (version, version_url(spec, version), share)
        for version, share in traffic_split(spec).items()
    ]
    graph = ab_graph(spec.tenant, f"{spec.name}-canary", routes, namespace)
    graph["metadata"]["labels"][LABEL_ROLLOUT_OF] = spec.name
    return graph


def replicas_by_version(spec: ServiceSpec) -> dict[str, int]:
    """The minimum replicas KServe gives each version's Deployment."""
    out = {spec.stable.version: stable_replicas(spec)}
    for canary in spec.canaries:
        out[canary.model.version] = canary_replicas(canary, spec.autoscaling.min_replicas)
    return out
