# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``inference_service_info`` through the flow contract (``kube.flow``), its pure
steps: the request, the facts as data and back, and the plan (each service as
``live.report`` shows it, with its canary router, and the A/B InferenceGraphs; no I/O).

The reads (``gather``) are ``inference/service``'s; nothing is written. Offline,
``gathered`` returns the InferenceServices, their GPU-utilisation HPAs, KServe's predictor
Deployments and the InferenceGraphs with only the fields the report reads, and ``parsed``
reports the services of such facts without connecting, only the tenant's (and the one
named) when they hold more.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..common.names import LABEL_TENANT, namespace_name
from ..kube.flow import fact_lists
from . import live as livemod
from .inputs import SERVING_NAMESPACE
from .manifests import LABEL_ROLLOUT_OF


@dataclass(frozen=True)
class InfoRequest:
    """What an ``inference_service_info`` run asks for: one tenant's services (None for
    every tenant's), one service (None for all) and where the A/B InferenceGraphs live."""

    tenant: str | None
    name: str | None
    serving_namespace: str


@dataclass(frozen=True)
class InfoFacts:
    """The managed InferenceServices and HPAs, KServe's predictor Deployments and the
    managed InferenceGraphs of the serving namespace."""

    services: tuple[Mapping[str, Any], ...] = ()
    hpas: tuple[Mapping[str, Any], ...] = ()
    predictors: tuple[Mapping[str, Any], ...] = ()
    graphs: tuple[Mapping[str, Any], ...] = ()


def parse_info(params: Mapping[str, Any]) -> InfoRequest:
    """The options as a request (nothing to refuse: a tenant or service that does not
    exist is reported as no service)."""
    return InfoRequest(
        tenant=params.get("tenant") or None,
        name=params.get("name"),
        serving_namespace=params.get("serving_namespace") or SERVING_NAMESPACE,
    )


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _labels(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _meta(obj).get("labels") or {}


def _in_scope(request: InfoRequest, obj: Mapping[str, Any], labelled: bool = True) -> bool:
    """The object is of the tenant asked for (every object when none is): in its namespace
    and, when the reads select it by label, labelled with it."""
    if request.tenant is None:
        return True
    if labelled and _labels(obj).get(LABEL_TENANT) != request.tenant:
        return False
    return _meta(obj).get("namespace") == namespace_name(request.tenant)


def plan_info(request: InfoRequest, facts: InfoFacts) -> dict[str, list[dict[str, Any]]]:
    """Each service (only the one named) with its HPA's target, its versions' replicas and
    its canary router (rule canary-traffic-routed), sorted by namespace and name; and the
    A/B InferenceGraphs, sorted by name."""
    by_hpa = {
        (_meta(h).get("namespace"), _meta(h).get("name")): h
        for h in facts.hpas
        if _in_scope(request, h)
    }
    by_namespace: dict[str, dict[str, Any]] = {}
    for d in facts.predictors:
        if _in_scope(request, d, labelled=False):
            by_namespace.setdefault(_meta(d)["namespace"], {})[_meta(d)["name"]] = d
    services = [
        s
        for s in facts.services
        if _in_scope(request, s) and (request.name is None or _meta(s).get("name") == request.name)
    ]
    graphs = [
        g
        for g in facts.graphs
        if _meta(g).get("namespace") == request.serving_namespace
        and (request.tenant is None or _labels(g).get(LABEL_TENANT) == request.tenant)
    ]
    # A service's canary router (rule canary-traffic-routed) is reported with the service.
    routers = {
        (_labels(g).get(LABEL_TENANT), _labels(g)[LABEL_ROLLOUT_OF]): g
        for g in graphs
        if LABEL_ROLLOUT_OF in _labels(g)
    }
    reports = []
    for svc in services:
        ns = _meta(svc)["namespace"]
        report = livemod.report(
            svc, by_hpa.get((ns, f"{_meta(svc)['name']}-gpu-util")), by_namespace.get(ns, {})
        )
        router = routers.get((_labels(svc).get(LABEL_TENANT), report["name"]))
        report["router"] = livemod.graph_report(router) if router else None
        reports.append(report)
    ab_tests = [g for g in graphs if LABEL_ROLLOUT_OF not in _labels(g)]
    return {
        "services": sorted(reports, key=lambda r: (r["namespace"], r["name"])),
        "graphs": sorted((livemod.graph_report(g) for g in ab_tests), key=lambda r: r["name"]),
    }


def report_info(
    request: InfoRequest, planned: Mapping[str, list[dict[str, Any]]]
) -> dict[str, Any]:
    """The module's result: the services and the A/B InferenceGraphs."""
    return {"services": planned["services"], "graphs": planned["graphs"]}


def _named(obj: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    meta = _meta(obj)
    return {key: meta[key] for key in ("name", "namespace", *keys) if key in meta}


def _read(obj: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    """``obj`` with only its name, namespace, labels, annotations and ``keys``."""
    out: dict[str, Any] = {"metadata": _named(obj, "labels", "annotations")}
    out.update({key: obj[key] for key in keys if key in obj})
    return out


def _hpa_fact(hpa: Mapping[str, Any]) -> dict[str, Any]:
    """An HPA by name, namespace and labels, with its metrics (the target is read back)."""
    return {
        "metadata": _named(hpa, "labels"),
        "spec": {"metrics": (hpa.get("spec") or {}).get("metrics") or []},
    }


def _predictor_fact(deployment: Mapping[str, Any]) -> dict[str, Any]:
    """A predictor Deployment by name and namespace, with its desired and ready replicas."""
    return {
        "metadata": _named(deployment),
        "spec": {"replicas": (deployment.get("spec") or {}).get("replicas")},
        "status": {"readyReplicas": (deployment.get("status") or {}).get("readyReplicas")},
    }


def facts_out(facts: InfoFacts) -> dict[str, Any]:
    """The facts as data, what ``gathered`` returns and ``parsed`` takes."""
    return {
        "services": [_read(s, "spec", "status") for s in facts.services],
        "hpas": [_hpa_fact(h) for h in facts.hpas],
        "predictors": [_predictor_fact(d) for d in facts.predictors],
        "graphs": [_read(g, "spec", "status") for g in facts.graphs],
    }


def facts_in(request: InfoRequest, data: Mapping[str, Any]) -> InfoFacts:
    """Facts given as ``gathered`` returned them."""
    return InfoFacts(*fact_lists(data, "services", "hpas", "predictors", "graphs"))
