# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inference modules' writes through a ``Cluster`` (I/O): server-side applies in
order (dry runs in check mode), and the removal of what a service no longer needs or of
the whole service, as the plan says (``inference/rollout``). A write the cluster refuses
stops the run: ``PartialWrite`` names what was written before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..common.errors import PartialWrite
from ..kube.cluster import ApiException, Cluster, TransportError
from .manifests import GRAPH_API, HPA_API, ISVC_API, NETPOL_API

# The API of each kind the inference modules delete.
APIS = {
    "InferenceGraph": GRAPH_API,
    "HorizontalPodAutoscaler": HPA_API,
    "NetworkPolicy": NETPOL_API,
    "InferenceService": ISVC_API,
}


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
    cluster: Cluster, removals: Sequence[tuple[str, str, str]], done: list[str]
) -> list[str]:
    """What the plan says the service no longer needs ((kind, namespace, name)): the HPA
    once gpu_util_target is gone, the canary router once no canary runs."""
    removed: list[str] = []
    for kind, ns, name in removals:
        try:
            cluster.delete(APIS[kind], kind, name, namespace=ns, propagation="Background")
        except (ApiException, TransportError) as exc:
            raise PartialWrite(
                "removing what the service no longer needs", done + removed, exc
            ) from exc
        removed.append(f"{kind}/{ns}/{name}")
    return removed


def remove_service(
    cluster: Cluster, deletes: Sequence[tuple[str, str, str]], before: Any
) -> dict[str, Any]:
    """``state: absent``: the plan's deletions in order, the router first, the
    InferenceService last (KServe removes its Deployments)."""
    done: list[str] = []
    for kind, ns, name in deletes:
        try:
            if cluster.delete(APIS[kind], kind, name, namespace=ns, propagation="Background"):
                done.append(f"{kind}/{ns}/{name}")
        except (ApiException, TransportError) as exc:
            raise PartialWrite("removing the inference service", done, exc) from exc
    return {"changed": bool(done), "writes": done, "diff": {"before": before, "after": None}}
