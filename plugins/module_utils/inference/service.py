# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inference domain's service: the ``inference_service``, ``inference_service_info``
and ``inference_graph`` modules through ``kube.flow``: ``SERVICE_FLOW`` (its pure steps
``inference/rollout``), ``INFO_FLOW`` (``inference/info``) and ``GRAPH_FLOW``
(``inference/graph``). With ``inference/write_io.py`` (the writes) and
``inference/graph_io.py`` (what the graph's routes are judged by) it is the only code of
the domain that talks to the cluster. Every rule is checked before the first write; the
writes are server-side applies of what differs (dry runs in check mode).

``inference_service``'s gather reads one object at a time, as ``rollout.next_read`` names
them; its apply writes, removes what the service no longer needs, then lists the
tenant's A/B graphs (after the writes, as the run always has; ``gathered`` reads them
with the rest) and re-routes those that follow the service, and with ``wait`` polls the
service until it is Ready."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, cast

from ..common.errors import Refused
from ..common.names import (
    LABEL_TENANT,
    MANAGED_SELECTOR,
    OBJECT_STORE_NAME,
    QUEUE_API,
    TENANT_QUEUES_CONFIGMAP,
    namespace_name,
)
from ..kube.cluster import Cluster
from ..kube.flow import Flow
from ..kube.waiting import wait_for
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
from .manifests import (
    GRAPH_API,
    HPA_API,
    ISVC_API,
    KSERVE_ISVC_LABEL,
    NETPOL_API,
    network_policy_name,
)
from .rollout import (
    ServiceFacts,
    ServicePlan,
    ServiceRequest,
    next_read,
    parse_service,
    plan_service,
    report,
    rerouted,
)
from .rollout import facts_in as service_facts_in
from .rollout import facts_out as service_facts_out
from .spec import ServiceSpec
from .write_io import remove_service, remove_unwanted, write_in_order


def _read(
    cluster: Cluster, request: ServiceRequest, facts: ServiceFacts, kind: str, name: str | None
) -> ServiceFacts:
    """``facts`` with the one read the decision needs next (``rollout.next_read``)."""
    ns = request.namespace
    if kind == "queues":
        obj = cluster.get(QUEUE_API, "Queue", name or "")
        return replace(facts, queues=(*(facts.queues or ()), (name or "", obj)))
    if kind == "graphs":
        graphs = cluster.list(
            GRAPH_API,
            "InferenceGraph",
            namespace=request.gateway,
            label_selector=request.graph_selector,
        )
        return replace(facts, graphs=tuple(graphs))
    gets = {
        "service": (ISVC_API, "InferenceService", request.name, ns),
        "hpa": (HPA_API, "HorizontalPodAutoscaler", f"{request.name}-gpu-util", ns),
        "policy": (NETPOL_API, "NetworkPolicy", network_policy_name(request.name), ns),
        "router": (GRAPH_API, "InferenceGraph", request.router_name, request.gateway),
        "queue_list": ("v1", "ConfigMap", TENANT_QUEUES_CONFIGMAP, ns),
        "namespace": ("v1", "Namespace", ns, None),
        "store_account": ("v1", "ServiceAccount", OBJECT_STORE_NAME, ns),
    }
    api, what, obj_name, namespace = gets[kind]
    obj = cluster.get(api, what, obj_name, namespace=namespace)
    return replace(facts, **{kind: () if obj is None else (obj,)})


def gather_service(request: ServiceRequest, cluster: Cluster) -> ServiceFacts:
    """The ``inference_service`` module's reads, one GET each, in the order its decision
    needs them (``rollout.next_read``), and nothing once it refuses."""
    facts = ServiceFacts()
    while (needed := next_read(request, facts)) is not None:
        facts = _read(cluster, request, facts, *needed)
    return facts


def apply_service(
    request: ServiceRequest, planned: ServicePlan, cluster: Cluster, check_mode: bool
) -> dict[str, Any]:
    """The plan's writes in order (the cluster's dry runs in check mode), then what the
    service no longer needs; then the tenant's A/B graphs listed (one LIST, after the
    writes, unless the facts held them) and re-routed to the stable version; with
    ``wait``, until the service is Ready (not in check mode)."""
    if not planned.present:
        return remove_service(cluster, planned.removals, planned.before)
    what = f"inference service {request.name}"
    done = write_in_order(cluster, list(planned.writes), what)
    done += remove_unwanted(cluster, planned.removals, done)
    desired = cast(ServiceSpec, planned.desired)  # a plan present has its service
    reroutes = planned.reroutes
    if reroutes is None:
        graphs = cluster.list(
            GRAPH_API,
            "InferenceGraph",
            namespace=request.gateway,
            label_selector=request.graph_selector,
        )
        reroutes = rerouted(request, desired, graphs)
    done += write_in_order(cluster, list(reroutes), what)
    result = {**report(request, planned), "changed": bool(done), "writes": done}
    if request.wait and not check_mode:
        result["status"] = _wait_ready(
            cluster,
            request.name,
            request.namespace,
            desired,
            request.wait_timeout,
            request.wait_sleep,
        )
    return result


# Module inference_service: a tenant's model service deployed, rolled out or removed.
SERVICE_FLOW: Flow[ServiceRequest, ServiceFacts, ServicePlan] = Flow(
    parse=parse_service,
    gather=gather_service,
    plan=plan_service,
    apply=apply_service,
    report=report,
    facts_out=service_facts_out,
    facts_in=service_facts_in,
)


def run_service(params: dict[str, Any], cluster: Cluster, check_mode: bool) -> dict[str, Any]:
    """The ``inference_service`` module through its flow (``SERVICE_FLOW``)."""
    return SERVICE_FLOW.run(params, cluster, check_mode)


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
