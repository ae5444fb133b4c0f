# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the ``inference_graph`` module reads through a ``Cluster`` (I/O, reads only): the
live graph of that name (one GET) and, to judge the routes (rule inference-ab-test: each
route a Ready model service of the tenant, reached at its stable version, admitting the
graph's namespace), the tenant's model services and their NetworkPolicies (one LIST
each). The judging is ``graph``'s.
"""

from __future__ import annotations

from typing import Any

from ..common.names import MANAGED_SELECTOR, namespace_name
from ..kube.cluster import Cluster
from .graph import GraphFacts, GraphRequest, by_name, routed
from .manifests import GRAPH_API, ISVC_API, NETPOL_API
from .rules import graph_owner_errors


def managed(cluster: Cluster, api: str, kind: str, tenant: str) -> tuple[dict[str, Any], ...]:
    """The platform's objects of ``kind`` in the tenant's namespace (one LIST)."""
    return tuple(
        cluster.list(api, kind, namespace=namespace_name(tenant), label_selector=MANAGED_SELECTOR)
    )


def gather_graph(request: GraphRequest, cluster: Cluster) -> GraphFacts:
    """The live graph; for a graph present, the tenant's services and then their
    NetworkPolicies. Nothing more is read once the plan refuses by what was read: a graph
    of another tenant, or a route that is not a Ready service of the tenant."""
    live = cluster.get(GRAPH_API, "InferenceGraph", request.full, namespace=request.namespace)
    if not request.present or graph_owner_errors(request.tenant, request.name, live):
        return GraphFacts(live)
    services = managed(cluster, ISVC_API, "InferenceService", request.tenant)
    if routed(request.tenant, request.routes, by_name(services))[1]:
        return GraphFacts(live, services)
    policies = managed(cluster, NETPOL_API, "NetworkPolicy", request.tenant)
    return GraphFacts(live, services, policies)
