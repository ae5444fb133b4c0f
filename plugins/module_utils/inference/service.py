# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inference domain's service: the ``inference_service``, ``inference_service_info``
and ``inference_graph`` modules (``run_service``, ``INFO_FLOW`` through ``kube.flow``, its
pure steps ``inference/info``, and ``GRAPH_FLOW``, its pure steps ``inference/graph``). With
``inference/write_io.py`` (the writes) and ``inference/graph_io.py`` (what the graph's
routes are judged by) it is the only code of the domain that talks to the cluster. Every rule
is checked before the first write; the writes are server-side applies of what differs
(dry runs in check mode)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ..common.errors import Refused, raise_if
from ..common.names import (
    LABEL_TENANT,
    MANAGED_SELECTOR,
    QUEUE_API,
    ROOT_QUEUE,
    TENANT_QUEUES_CONFIGMAP,
    namespace_name,
)
from ..common.objects import differs
from ..hybrid.burst import capability_gpus
from ..jobs.classes import DEFAULT_CLASSES
from ..jobs.spot_price import price_text
from ..kube.cluster import Cluster
from ..kube.flow import Flow
from ..kube.waiting import wait_for
from ..policy.admission import LABEL_ALLOW_CRITICAL
from ..queues.capability import effective_limit
from ..queues.kinds import leaf_queue_type
from ..queues.ownership import listed_leaves
from . import live as livemod
from .graph import GraphFacts, GraphPlan, GraphRequest, parse_graph
from .graph import facts_in as graph_facts_in
from .graph import facts_out as graph_facts_out
from .graph import plan as plan_graph
from .graph import report as graph_report
from .graph_io import gather_graph
from .info import InfoFacts, InfoRequest, parse_info, plan_info, report_info
from .info import facts_in as info_facts_in
from .info import facts_out as info_facts_out
from .inputs import model_of
from .manifests import (
    GRAPH_API,
    HPA_API,
    ISVC_API,
    KSERVE_ISVC_LABEL,
    NETPOL_API,
    gpu_util_hpa,
    graph_name,
    inference_service,
    network_policy_name,
    predictor_deployment,
    rollout_graph,
    serving_network_policy,
)
from .rules import (
    capability_errors,
    class_errors,
    critical_errors,
    default_class,
    graph_owner_errors,
    replica_bound_errors,
    spec_errors,
    spot_priced_errors,
    traffic_split,
)
from .spec import ServiceSpec, parse_autoscaling, parse_canaries
from .versions import known_versions, plan, read_history
from .write_io import remove_service, remove_unwanted, reroute_ab_tests, write_in_order


def _tenant_queue_type(cluster: Cluster, tenant: str, queue: str) -> str:
    """The queue's type, read from the tenant's ``platform-queues`` list (the same parameter
    the admission policies read) and judged by rule leaf-queue-of-tenant
    (``queues/ownership``)."""
    cm = cluster.get("v1", "ConfigMap", TENANT_QUEUES_CONFIGMAP, namespace=namespace_name(tenant))
    queue_type, errors = leaf_queue_type(queue, listed_leaves(cm, tenant), tenant)
    raise_if(errors)
    return str(queue_type)


def _effective_capability(cluster: Cluster, queue: str) -> int | None:
    """The GPUs the queue can ever hold, rule effective-capability (``queues.capability``)
    over the queue and its ancestors, read one GET per level (a tenant's identity may not
    list Queues). None: no bound."""
    chain: list[int | None] = []
    name: str | None = queue
    for _depth in range(8):  # the platform's trees are 3 deep; a loop cannot run away
        if not name or name == ROOT_QUEUE:
            break
        obj = cluster.get(QUEUE_API, "Queue", name)
        chain.append(capability_gpus(obj))
        name = ((obj or {}).get("spec") or {}).get("parent")
    return effective_limit(chain)


def _view(spec: ServiceSpec | None, history: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The parts of a service its diff shows and its change is judged by."""
    if spec is None:
        return None
    auto = spec.autoscaling
    return {
        "mode": spec.mode,
        "queue": spec.queue,
        "job_class": spec.job_class,
        "spot_price": spec.spot_price,
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


def _requested(params: Mapping[str, Any], queue: str, job_class: str) -> ServiceSpec | None:
    stable = model_of(params)[0]
    if stable is None:
        return None
    canaries = parse_canaries(params.get("canaries"), stable)[0]
    auto = parse_autoscaling(params.get("autoscaling"))[0]
    return ServiceSpec(
        name=params["name"],
        tenant=params["tenant"],
        queue=queue,
        job_class=job_class,
        stable=stable,
        canaries=canaries,
        autoscaling=auto,
        mode=params.get("mode", "standard"),
        spot_price=None if params.get("spot_price") is None else price_text(params["spot_price"]),
    )


def _gateway(params: Mapping[str, Any]) -> str | None:
    """The namespace the canary router runs in: the first gateway namespace."""
    gateways = params.get("gateway_namespaces") or []
    return gateways[0] if gateways else None


def _live_state(cluster: Cluster, params: Mapping[str, Any]) -> dict[str, dict | None]:
    """The service's objects as they are, by kind (one GET each)."""
    name, ns = params["name"], namespace_name(params["tenant"])
    live = {
        "InferenceService": cluster.get(ISVC_API, "InferenceService", name, namespace=ns),
        "HorizontalPodAutoscaler": cluster.get(
            HPA_API, "HorizontalPodAutoscaler", f"{name}-gpu-util", namespace=ns
        ),
        "NetworkPolicy": cluster.get(
            NETPOL_API, "NetworkPolicy", network_policy_name(name), namespace=ns
        ),
        "InferenceGraph": None,
    }
    gateway = _gateway(params)
    if gateway:
        graph = graph_name(params["tenant"], f"{name}-canary")
        live["InferenceGraph"] = cluster.get(GRAPH_API, "InferenceGraph", graph, namespace=gateway)
    return live


def _checked_class(
    cluster: Cluster,
    params: Mapping[str, Any],
    live_spec: ServiceSpec | None,
    queue: str,
    queue_type: str,
) -> str:
    """The service's class: the one asked for, else the live service's (a rollout step),
    else the queue type's default (``rules.default_class``, with the Namespace's label
    read in one GET); refused (rules inference-class-fits-queue, inference-critical-allowed,
    inference-spot-priced) when it does not fit the queue, is critical where the tenant
    may not run critical, or is spot without a price."""
    ns = namespace_name(params["tenant"])
    namespace = cluster.get("v1", "Namespace", ns) or {}
    labels = (namespace.get("metadata") or {}).get("labels") or {}
    critical_allowed = labels.get(LABEL_ALLOW_CRITICAL) == "true"
    job_class = params.get("job_class") or (
        live_spec.job_class
        if live_spec and params["action"] != "deploy"
        else default_class(queue_type, critical_allowed)
    )
    spot_price = (
        params.get("spot_price")
        if params["action"] == "deploy" or live_spec is None
        else live_spec.spot_price
    )
    raise_if(
        class_errors(job_class, queue, queue_type, DEFAULT_CLASSES)
        + critical_errors(job_class, critical_allowed, ns)
        + spot_priced_errors(job_class, spot_price)
    )
    return job_class


def run_service(params: dict[str, Any], cluster: Cluster, check_mode: bool) -> dict[str, Any]:
    """The ``inference_service`` module."""
    name, tenant = params["name"], params["tenant"]
    ns = namespace_name(tenant)
    live = _live_state(cluster, params)
    # The canary router is named <tenant>-<service>-canary: another tenant's may share it.
    raise_if(graph_owner_errors(tenant, name, live["InferenceGraph"]))
    isvc, hpa = live["InferenceService"], live["HorizontalPodAutoscaler"]
    live_spec = livemod.spec_from_live(isvc, livemod.hpa_target(hpa)) if isvc else None
    history = read_history((isvc or {}).get("metadata", {}).get("annotations"))
    before = _view(live_spec, history)
    if params["state"] == "absent":
        return remove_service(cluster, live, before)
    if live_spec is None and params["action"] != "deploy":
        # Said before the queue is looked up: a rollout step needs a service to step.
        plan(params["action"], None, None, history)
    queue = params.get("queue") or (live_spec.queue if live_spec else "")
    queue_type = _tenant_queue_type(cluster, tenant, queue)
    job_class = _checked_class(cluster, params, live_spec, queue, queue_type)
    requested = _requested(params, queue, job_class) if params["action"] == "deploy" else None
    added: tuple = ()
    if params["action"] == "canary" and live_spec is not None:
        added, errors = parse_canaries(params.get("canaries"), live_spec.stable)
        raise_if(errors)
    desired, new_history = plan(
        params["action"],
        requested,
        live_spec,
        history,
        params.get("traffic"),
        params.get("version"),
        added,
    )
    capability = _effective_capability(cluster, queue)
    raise_if(
        spec_errors(desired, known_versions(history, live_spec))
        + capability_errors(desired, capability)
        + replica_bound_errors(desired, capability)
    )
    row = DEFAULT_CLASSES[job_class]
    billing = row.billing_for(queue_type)
    manifests = _desired_manifests(params, desired, row, billing, new_history)
    after = _view(desired, new_history)
    writes = _changed(manifests, live)
    if before != after and not any(m["kind"] == "InferenceService" for m in writes):
        writes.insert(0, manifests[0])
    done = write_in_order(cluster, writes, f"inference service {name}")
    done += remove_unwanted(cluster, manifests, live, done)
    done += reroute_ab_tests(cluster, _gateway(params), desired)
    result: dict[str, Any] = {
        "changed": bool(done),
        "writes": done,
        "service": {
            "name": name,
            "namespace": ns,
            "queue": queue,
            "job_class": job_class,
            "billing_type": billing,
            "current_version": desired.stable.version,
            "deployment": predictor_deployment(name, desired.stable.version),
            "traffic": traffic_split(desired),
            "router": next(
                (m["metadata"]["name"] for m in manifests if m["kind"] == "InferenceGraph"), None
            ),
        },
        "diff": {"before": before, "after": after},
    }
    if params.get("wait") and not check_mode:
        result["status"] = _wait_ready(
            cluster, name, ns, desired, params["wait_timeout"], params["wait_sleep"]
        )
    return result


def _desired_manifests(
    params: Mapping[str, Any],
    spec: ServiceSpec,
    row: Any,
    billing: str,
    history: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """InferenceService first; the NetworkPolicy before the pods need it; the HPA last."""
    out = [inference_service(spec, row, billing, history)]
    out.append(
        serving_network_policy(
            spec,
            list(params.get("gateway_namespaces") or []),
            params.get("monitoring_namespace"),
            params.get("serving_port", 8080),
            params.get("metrics_port", 8080),
        )
    )
    hpa = gpu_util_hpa(spec)
    if hpa is not None:
        out.append(hpa)
    gateway = _gateway(params)
    router = rollout_graph(spec, gateway) if gateway else None
    if router is not None:
        out.append(router)
    return out


def _changed(manifests: list[dict[str, Any]], live: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [m for m in manifests if live.get(m["kind"]) is None or differs(m, live[m["kind"]])]


def _wait_ready(
    cluster: Cluster, name: str, ns: str, spec: ServiceSpec, timeout: int, sleep: int
) -> dict[str, Any]:
    """Until the service is Ready with every canary ready, or ``timeout`` seconds (one GET
    a poll)."""

    def ready(obj: Mapping[str, Any] | None) -> bool:
        return _serves(_status(obj), spec)

    started = time.monotonic()
    done, obj, _elapsed = wait_for(
        cluster, ISVC_API, "InferenceService", ready, timeout, sleep, name=name, namespace=ns
    )
    report = _status(obj)
    if not done:
        raise Refused(
            f"{name} is not Ready after {timeout}s; conditions: {report.get('conditions')}",
            status=report,
        )
    # Measured here, not the Waiter's whole seconds: the result has always had tenths.
    report["waited_seconds"] = round(time.monotonic() - started, 1)
    return report


def _status(obj: Mapping[str, Any] | None) -> dict[str, Any]:
    """The service's report as ``status`` returns it; empty while it does not exist."""
    return livemod.report(obj) if obj else {}


def _serves(report: Mapping[str, Any], spec: ServiceSpec) -> bool:
    """Ready, every canary ready, and the stable version the one asked for."""
    canaries_ready = all(c["ready"] for c in report.get("canaries", []))
    same = report.get("current_version") == spec.stable.version
    return bool(report.get("ready") and canaries_ready and same)


def gather_info(request: InfoRequest, cluster: Cluster) -> InfoFacts:
    """The ``inference_service_info`` module's reads: one LIST per kind (InferenceServices,
    HPAs, KServe's predictor Deployments, InferenceGraphs of the serving namespace)."""
    tenant = request.tenant
    ns = namespace_name(tenant) if tenant else None
    selector = f"{LABEL_TENANT}={tenant},{MANAGED_SELECTOR}" if tenant else MANAGED_SELECTOR
    services = cluster.list(ISVC_API, "InferenceService", namespace=ns, label_selector=selector)
    hpas = cluster.list(HPA_API, "HorizontalPodAutoscaler", namespace=ns, label_selector=selector)
    # KServe's predictor Deployments (its own label), for the replicas per version.
    predictors = cluster.list(
        "apps/v1", "Deployment", namespace=ns, label_selector=KSERVE_ISVC_LABEL
    )
    graphs = cluster.list(
        GRAPH_API, "InferenceGraph", namespace=request.serving_namespace, label_selector=selector
    )
    return InfoFacts(tuple(services), tuple(hpas), tuple(predictors), tuple(graphs))


def apply_info(
    request: InfoRequest,
    planned: Mapping[str, list[dict[str, Any]]],
    cluster: Cluster,
    check_mode: bool,
) -> dict[str, Any]:
    """Nothing to write: the services and the A/B InferenceGraphs."""
    return {"changed": False, **report_info(request, planned)}


# Module inference_service_info: the tenants' model services; it never writes.
INFO_FLOW: Flow[InfoRequest, InfoFacts, Mapping[str, list[dict[str, Any]]]] = Flow(
    parse=parse_info,
    gather=gather_info,
    plan=plan_info,
    apply=apply_info,
    report=report_info,
    facts_out=info_facts_out,
    facts_in=info_facts_in,
)


def apply_graph(
    request: GraphRequest, planned: GraphPlan, cluster: Cluster, check_mode: bool
) -> dict[str, Any]:
    """The ``inference_graph`` module's one write or delete (the cluster's dry run in check
    mode)."""
    del check_mode  # the cluster's dry run
    result = graph_report(request, planned)
    if planned.action == "delete":
        cluster.delete(
            GRAPH_API,
            "InferenceGraph",
            planned.full,
            namespace=planned.namespace,
            propagation="Background",
        )
    elif planned.action == "write" and planned.desired is not None:
        result["writes"] = write_in_order(
            cluster, [dict(planned.desired)], f"inference graph {planned.full}"
        )
    return result


# Module inference_graph: an A/B split between a tenant's services.
GRAPH_FLOW: Flow[GraphRequest, GraphFacts, GraphPlan] = Flow(
    parse=parse_graph,
    gather=gather_graph,
    plan=plan_graph,
    apply=apply_graph,
    report=graph_report,
    facts_out=graph_facts_out,
    facts_in=graph_facts_in,
)


def run_graph(params: dict[str, Any], cluster: Cluster, check_mode: bool) -> dict[str, Any]:
    """The ``inference_graph`` module through its flow (``GRAPH_FLOW``)."""
    return GRAPH_FLOW.run(params, cluster, check_mode)
