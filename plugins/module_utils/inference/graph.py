# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``inference_graph`` through the flow contract (``kube.flow``), its pure steps:
the request, the facts as data and back, the plan and what it says (no I/O).

The reads (``graph_io.gather_graph``) and the write (``service.apply_graph``) are the
domain's I/O. Offline:

* ``gathered``: the live graph of that name, and for ``state: present`` the tenant's
  model services and their NetworkPolicies (the routes are judged by them);
* ``parsed``: the graph planned from what ``gathered`` returned.

There is no ``rendered``: every route must be a Ready service of the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..common.errors import FieldError, raise_if
from ..common.objects import differs
from ..kube.flow import fact_lists
from . import live as livemod
from .inputs import validate_graph
from .manifests import ab_graph, graph_name, network_policy_name, version_url
from .rules import admitted_namespaces, graph_namespace_errors, graph_owner_errors


@dataclass(frozen=True)
class GraphRequest:
    """One A/B graph present (``routes`` as (service, weight)) or absent."""

    name: str
    tenant: str
    namespace: str
    present: bool
    routes: tuple[tuple[str, int], ...] = ()

    @property
    def full(self) -> str:
        return graph_name(self.tenant, self.name)


@dataclass(frozen=True)
class GraphFacts:
    """The live graph of that name (None: none), the tenant's managed model services and
    NetworkPolicies (None: not read)."""

    graph: Mapping[str, Any] | None = None
    services: tuple[Mapping[str, Any], ...] | None = None
    policies: tuple[Mapping[str, Any], ...] | None = None


@dataclass(frozen=True)
class GraphPlan:
    """``action``: none, write or delete; ``desired`` the graph to write (None: absent)."""

    action: str
    full: str
    live: Mapping[str, Any] | None
    desired: Mapping[str, Any] | None
    namespace: str


def parse_graph(params: Mapping[str, Any]) -> GraphRequest:
    """The options as a request; raises for routes that break rule inference-ab-test's
    shape (``inputs.validate_graph``)."""
    state = params["state"]
    # parsed plans the graph present, as present does; gathered reads what any graph of
    # that name is judged by, whatever its routes.
    checked = "present" if state == "parsed" else state
    validate_graph({**params, "state": checked})
    present = state != "absent"
    with_routes = checked == "present"
    routes = tuple((r["service"], r["weight"]) for r in params.get("routes") or () if with_routes)
    return GraphRequest(params["name"], params["tenant"], params["namespace"], present, routes)


def stable_url(isvc: Mapping[str, Any]) -> str:
    """The address of the service's stable version (``manifests.version_url``)."""
    spec = livemod.spec_from_live(isvc, None)
    return version_url(spec, spec.stable.version)


def service_url(isvc: Mapping[str, Any]) -> str | None:
    """Where a router reaches a service: the cluster address KServe reports, at the v1
    protocol's predict path (the model's name is the service's)."""
    address = ((isvc.get("status") or {}).get("address") or {}).get("url")
    if not address:
        return None
    return f"{address.rstrip('/')}/v1/models/{isvc['metadata']['name']}:predict"


def by_name(objects: Sequence[Mapping[str, Any]] | None) -> dict[str, Mapping[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects or ()}


def routed(
    tenant: str, routes: Sequence[tuple[str, int]], services: Mapping[str, Mapping[str, Any]]
) -> tuple[list[tuple[str, str, int]], list[FieldError]]:
    """The graph's routes as (service, URL, weight), and the routes at fault: every route a
    model service of ``tenant`` that is Ready, routed to its stable version the way every
    later rollout step rewrites it (rule inference-routes-follow-versions)."""
    found: list[tuple[str, str, int]] = []
    errors: list[FieldError] = []
    for i, (name, weight) in enumerate(routes):
        svc = services.get(name)
        url = stable_url(svc) if svc and service_url(svc) else None
        if svc is None:
            errors.append(
                FieldError(
                    f"routes[{i}].service",
                    f"{name} is not a model service of tenant {tenant}; its services: "
                    f"{', '.join(sorted(services)) or 'none'}",
                )
            )
        elif url is None:
            errors.append(
                FieldError(f"routes[{i}].service", f"{name} has no address yet (not Ready)")
            )
        else:
            found.append((name, url, weight))
    return found, errors


def plan(request: GraphRequest, facts: GraphFacts) -> GraphPlan:
    """The graph to write or delete; raises for a graph that is not the tenant's (rule
    graph-of-own-tenant), a route that is not a Ready service of the tenant, or a service
    that does not admit the graph's namespace (rule graph-in-gateway-namespace)."""
    raise_if(graph_owner_errors(request.tenant, request.name, facts.graph))
    live = facts.graph
    if not request.present:
        action = "delete" if live is not None else "none"
        return GraphPlan(action, request.full, live, None, request.namespace)
    found, errors = routed(request.tenant, request.routes, by_name(facts.services))
    raise_if(errors)
    policies = by_name(facts.policies)
    admitted = {
        name: admitted_namespaces(policies.get(network_policy_name(name)))
        for name, _url, _weight in found
    }
    raise_if(graph_namespace_errors(request.namespace, admitted))
    desired = ab_graph(request.tenant, request.name, found, request.namespace)
    action = "none" if live is not None and not differs(desired, live) else "write"
    return GraphPlan(action, request.full, live, desired, request.namespace)


def written(planned: GraphPlan) -> list[str]:
    """What the plan writes or deletes, as ``<kind>/<namespace>/<name>``."""
    if planned.action == "none":
        return []
    return [f"InferenceGraph/{planned.namespace}/{planned.full}"]


def report(request: GraphRequest, planned: GraphPlan) -> dict[str, Any]:
    """What the plan does: the graph's name, its writes and (present) the routes before
    and after."""
    result: dict[str, Any] = {
        "changed": planned.action != "none",
        "graph": planned.full,
        "writes": written(planned),
    }
    if planned.desired is not None:
        before = livemod.graph_report(planned.live) if planned.live else None
        after = before if planned.action == "none" else livemod.graph_report(planned.desired)
        result["diff"] = {"before": before, "after": after}
    return result


def facts_out(facts: GraphFacts) -> dict[str, Any]:
    return {
        "inferencegraphs": [] if facts.graph is None else [dict(facts.graph)],
        "inferenceservices": [dict(s) for s in facts.services or ()],
        "networkpolicies": [dict(p) for p in facts.policies or ()],
    }


def facts_in(request: GraphRequest, data: Mapping[str, Any]) -> GraphFacts:
    """Facts given as ``gathered`` returned them; the graph is the one of that name."""
    graphs, services, policies = fact_lists(
        data, "inferencegraphs", "inferenceservices", "networkpolicies"
    )
    graph = next((g for g in graphs if (g.get("metadata") or {}).get("name") == request.full), None)
    return GraphFacts(graph, services, policies)
