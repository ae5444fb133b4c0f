# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The local cluster's way to the Kubernetes API: the kubernetes client as the
admin (its client certificate), kinds found by discovery, server-side apply."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import kubernetes.client
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import (
    DynamicApiError,
    NotFoundError,
    ResourceNotFoundError,
)

from settings import APISERVER, FIELD_MANAGER

REQUEST_TIMEOUT = 30  # seconds, per request


def _as_dict(_client: Any, data: Any) -> Any:
    """The dynamic client's serializer for plain dicts: its ResourceInstance
    wraps every field, slow on the 1.9 MB InferenceService CRD."""
    return data


class Kube:
    """The kubernetes client as the admin. Kinds are found by discovery
    (DynamicClient), made on first use: `up` makes this before the API server runs."""

    def __init__(self, state: Path, server: str | None = None, discovery: Path | None = None):
        """The admin of the cluster whose certificates are in ``state``/pki: this local
        cluster's API server, or ``server`` (the federation's, or a member's) with its
        discovery cached in ``discovery`` instead of ``state``/discovery.json."""
        p = state / "pki"
        cfg = kubernetes.client.Configuration()
        cfg.host = server or APISERVER
        cfg.ssl_ca_cert = str(p / "ca.crt")
        cfg.cert_file = str(p / "admin.crt")
        cfg.key_file = str(p / "admin.key")
        cfg.retries = False  # as before: a failed request fails; the callers poll or stop
        self.client = kubernetes.client.ApiClient(cfg)
        self.core = kubernetes.client.CoreV1Api(self.client)
        self._discovery_cache = discovery or state / "discovery.json"
        self._dynamic: DynamicClient | None = None
        # `up` applies KServe's CRDs from a second thread; discovery is not thread-safe.
        self._lock = threading.Lock()

    def resource(self, api_version: str, kind: str) -> Any:
        with self._lock:
            if self._dynamic is None:
                self._dynamic = DynamicClient(self.client, cache_file=str(self._discovery_cache))
            # On a kind it has not cached (a CRD applied since), the lazy
            # discoverer discovers afresh before it gives up.
            return self._dynamic.resources.get(api_version=api_version, kind=kind)

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        """The object as a dict, or None when it does not exist."""
        try:
            resource = self.resource(api_version, kind)
            return resource.get(
                name=name,
                namespace=namespace,
                serializer=_as_dict,
                _request_timeout=REQUEST_TIMEOUT,
            )
        except (ResourceNotFoundError, NotFoundError):
            return None

    def apply(self, obj: dict[str, Any], subresource: str | None = None) -> Any:
        """Server-side apply (CRDs are too large for client-side apply)."""
        kind, name = obj["kind"], obj["metadata"]["name"]
        try:
            resource = self.resource(obj["apiVersion"], kind)
            if subresource:
                resource = resource.subresources[subresource]
            return resource.server_side_apply(
                body=obj,
                field_manager=FIELD_MANAGER,
                force_conflicts=True,
                serializer=_as_dict,
                _request_timeout=REQUEST_TIMEOUT,
            )
        except ResourceNotFoundError:
            message = f"the API server serves no {obj['apiVersion']} {kind}"
        except DynamicApiError as exc:
            message = exc.summary()
        raise SystemExit(f"localcluster: applying {kind} {name}: {message}")
