# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inference modules' writes through a ``Cluster`` (I/O): server-side applies in
order (dry runs in check mode), the removal of what a service no longer needs or of
the whole service, and the A/B graphs that follow a service's stable version. A write
the cluster refuses stops the run: ``PartialWrite`` names what was written before it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.errors import PartialWrite
from ..common.names import LABEL_TENANT, MANAGED_SELECTOR
from ..kube.cluster import ApiException, Cluster, TransportError
from .manifests import GRAPH_API, HPA_API, ISVC_API, NETPOL_API, rerouted_graphs, version_url
from .spec import ServiceSpec

# What a service removes once it no longer needs it, by kind.
REMOVABLE = {"HorizontalPodAutoscaler": HPA_API, "InferenceGraph": GRAPH_API}


def write_in_order(cluster: Cluster, writes: list[dict[str, Any]], what: str) -> list[str]:
    """Apply each manifest in turn; ``<kind>/<namespace>/<name>`` of each written."""
    done: list[str] = []
    try:
        for manifest in writes:
            cluster.apply(manifest)
            meta = manifest["metadata"]
            done.append(f"{manifest['kind']}/{meta.get('namespace')}/{meta['name']}")
    except (ApiException, TransportError) as exc:
        raise PartialWrite(what, done, exc) from exc
    return done


def remove_unwanted(
    cluster: Cluster, manifests: list[dict[str, Any]], live: Mapping[str, Any], done: list[str]
) -> list[str]:
    """The HPA once gpu_util_target is gone, the canary router once no canary runs."""
    wanted = {m["kind"] for m in manifests}
    removed: list[str] = []
    for kind, api in REMOVABLE.items():
        obj = live.get(kind)
        if obj is None or kind in wanted:
            continue
        name, ns = obj["metadata"]["name"], obj["metadata"]["namespace"]
        try:
            cluster.delete(api, kind, name, namespace=ns, propagation="Background")
        except (ApiException, TransportError) as exc:
            raise PartialWrite(
                "removing what the service no longer needs", done + removed, exc
            ) from exc
        removed.append(f"{kind}/{ns}/{name}")
    return removed


def reroute_ab_tests(cluster: Cluster, gateway: str | None, desired: ServiceSpec) -> list[str]:
    """Rule inference-routes-follow-versions against the gateway: the tenant's A/B graphs
    that route to this service follow its stable version (one LIST)."""
    if gateway is None:
        return []
    graphs = cluster.list(
        GRAPH_API,
        "InferenceGraph",
        namespace=gateway,
        label_selector=f"{LABEL_TENANT}={desired.tenant},{MANAGED_SELECTOR}",
    )
    url = version_url(desired, desired.stable.version)
    return write_in_order(
        cluster, rerouted_graphs(graphs, desired.name, url), f"inference service {desired.name}"
    )


def remove_service(cluster: Cluster, live: Mapping[str, Any], before: Any) -> dict[str, Any]:
    """``state: absent``: the router first, the InferenceService last (KServe removes its
    Deployments)."""
    done: list[str] = []
    for kind, api in (
        ("InferenceGraph", GRAPH_API),
        ("HorizontalPodAutoscaler", HPA_API),
        ("NetworkPolicy", NETPOL_API),
        ("InferenceService", ISVC_API),
    ):
        obj = live.get(kind)
        if obj is None:
            continue
        name, ns = obj["metadata"]["name"], obj["metadata"]["namespace"]
        try:
            if cluster.delete(api, kind, name, namespace=ns, propagation="Background"):
                done.append(f"{kind}/{ns}/{name}")
        except (ApiException, TransportError) as exc:
            raise PartialWrite("removing the inference service", done, exc) from exc
    return {"changed": bool(done), "writes": done, "diff": {"before": before, "after": None}}
