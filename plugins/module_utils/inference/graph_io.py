# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the ``inference_graph`` module reads through a ``Cluster`` (I/O, reads only):
the tenant's model services and their NetworkPolicies (one LIST each), checked into the
A/B graph's routes before anything is written (rule inference-ab-test: each route a
Ready model service of the tenant, reached at its stable version, admitting the graph's
namespace).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..common.errors import FieldError, raise_if
from ..common.names import MANAGED_SELECTOR, namespace_name
from ..kube.cluster import Cluster
from . import live as livemod
from .manifests import ISVC_API, NETPOL_API, network_policy_name, version_url
from .rules import admitted_namespaces, graph_namespace_errors


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


def managed_by_name(
    cluster: Cluster, api: str, kind: str, tenant: str
) -> dict[str, dict[str, Any]]:
    """The platform's objects of ``kind`` in the tenant's namespace, by name (one LIST)."""
    return {
        o["metadata"]["name"]: o
        for o in cluster.list(
            api, kind, namespace=namespace_name(tenant), label_selector=MANAGED_SELECTOR
        )
    }


def read_routes(
    cluster: Cluster, tenant: str, routes: Sequence[Mapping[str, Any]], namespace: str
) -> list[tuple[str, str, int]]:
    """The graph's routes as (service, URL, weight): every route a model service of
    ``tenant`` that is Ready, routed to its stable version the way every later rollout
    step rewrites it (rule inference-routes-follow-versions), and whose NetworkPolicy
    admits ``namespace``, the graph's. Refused, naming each route at fault, otherwise."""
    services = managed_by_name(cluster, ISVC_API, "InferenceService", tenant)
    found: list[tuple[str, str, int]] = []
    errors: list[FieldError] = []
    for i, route in enumerate(routes):
        svc = services.get(route["service"])
        # Ready (KServe reports an address), then routed to its stable version the way
        # every later rollout step rewrites it (rule inference-routes-follow-versions).
        url = stable_url(svc) if svc and service_url(svc) else None
        if svc is None:
            errors.append(
                FieldError(
                    f"routes[{i}].service",
                    f"{route['service']} is not a model service of tenant {tenant}; its services: "
                    f"{', '.join(sorted(services)) or 'none'}",
                )
            )
        elif url is None:
            errors.append(
                FieldError(
                    f"routes[{i}].service", f"{route['service']} has no address yet (not Ready)"
                )
            )
        else:
            found.append((route["service"], url, route["weight"]))
    raise_if(errors)
    policies = managed_by_name(cluster, NETPOL_API, "NetworkPolicy", tenant)
    admitted = {
        name: admitted_namespaces(policies.get(network_policy_name(name)))
        for name, _url, _weight in found
    }
    raise_if(graph_namespace_errors(namespace, admitted))
    return found
