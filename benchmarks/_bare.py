# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The physical-limit baseline of the API benchmarks: a bare Python client (the
kubernetes package's ``ApiClient``, no Ansible, no dynamic client, no object model)
sending server-side applies and LISTs, decoding the raw JSON, with a thread pool
of the same size as the run it is compared with. Nothing here is timed; the
benchmarks time it."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

# Kind -> (API path prefix, plural, namespaced), for the kinds the benchmarks write.
RESOURCES = {
    "Namespace": ("/api/v1", "namespaces", False),
    "ConfigMap": ("/api/v1", "configmaps", True),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "NetworkPolicy": ("/apis/networking.k8s.io/v1", "networkpolicies", True),
    "ResourceQuota": ("/api/v1", "resourcequotas", True),
    "LimitRange": ("/api/v1", "limitranges", True),
    "Queue": ("/apis/scheduling.volcano.sh/v1beta1", "queues", False),
    "PodGroup": ("/apis/scheduling.volcano.sh/v1beta1", "podgroups", True),
    "Node": ("/api/v1", "nodes", False),
    "ServiceCIDR": ("/apis/networking.k8s.io/v1", "servicecidrs", False),
}


def collection_path(kind: str, namespace: str | None = None) -> str:
    prefix, plural, namespaced = RESOURCES[kind]
    if namespaced and namespace:
        return f"{prefix}/namespaces/{namespace}/{plural}"
    return f"{prefix}/{plural}"


def object_path(manifest: Mapping[str, Any]) -> str:
    meta = manifest["metadata"]
    return f"{collection_path(manifest['kind'], meta.get('namespace'))}/{meta['name']}"


class Bare:
    """Raw requests through one ``ApiClient`` (its urllib3 pool sized for the workers)."""

    def __init__(self, api_client: Any, workers: int):
        self.api = api_client
        self.workers = workers
        pool = self.api.rest_client.pool_manager
        pool.connection_pool_kw["maxsize"] = max(workers, pool.connection_pool_kw.get("maxsize", 1))
        pool.clear()
        self.requests = 0

    def _call(self, method: str, path: str, body: Any = None, query=(), content_type=None) -> Any:
        self.requests += 1
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        resp = self.api.call_api(
            path,
            method,
            query_params=list(query),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=True,
        )
        return json.loads(resp.data)

    def apply(self, manifest: Mapping[str, Any], manager: str = "gpucloud-bench") -> Any:
        return self._call(
            "PATCH",
            object_path(manifest),
            body=dict(manifest),
            query=[("fieldManager", manager), ("force", "true")],
            content_type="application/apply-patch+yaml",
        )

    def merge_patch(self, manifest: Mapping[str, Any]) -> Any:
        return self._call(
            "PATCH",
            object_path(manifest),
            body=dict(manifest),
            content_type="application/merge-patch+json",
        )

    def list(self, kind: str, label_selector: str | None = None) -> list[Any]:
        query = [("labelSelector", label_selector)] if label_selector else []
        return self._call("GET", collection_path(kind), query=query).get("items") or []

    def get(self, manifest: Mapping[str, Any]) -> Any:
        return self._call("GET", object_path(manifest))

    def get_or_none(self, manifest: Mapping[str, Any]) -> Any:
        """``get``, None when the object does not exist (the request still counts)."""
        from kubernetes.client.rest import ApiException

        try:
            return self.get(manifest)
        except ApiException as exc:
            if exc.status != 404:
                raise
            return None

    def in_pool(self, calls: Sequence[Callable[[], Any]]) -> list[Any]:
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            return list(pool.map(lambda call: call(), calls))


def cluster_networks(bare: Bare) -> Any:
    """What the platform's egress rules cut out (``ClusterNetworks``), discovered as the
    modules discover it: the nodes' pod CIDRs and addresses, the ServiceCIDRs. Objects
    planned without it would lack the node addresses the modules' NetworkPolicies carry,
    so a baseline would not write the very objects the module writes."""
    from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.network import (
        discovered_networks,
    )

    return discovered_networks(bare.list("Node"), bare.list("ServiceCIDR"))
