# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one place the collection talks to the Kubernetes API.

Modules get their client from ``kubernetes.core`` (same connection options,
same kubeconfig handling, server-side dry run in check mode) and go through
``Cluster`` for every read and write, so that reconciles list once per kind
with a label selector, write with server-side apply under one field manager,
and count their round trips.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..common.names import FIELD_MANAGER

try:
    from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import (
        CoreException,
    )

    HAS_KUBERNETES_CORE = True
except ImportError:  # pragma: no cover - only when kubernetes.core is absent
    AUTH_ARG_SPEC = {}
    HAS_KUBERNETES_CORE = False

try:
    from kubernetes.dynamic.exceptions import (
        ApiException,
        ConflictError,
        NotFoundError,
        ResourceNotFoundError,
    )
except ImportError:  # pragma: no cover - the module reports the missing library
    ApiException = ConflictError = NotFoundError = ResourceNotFoundError = Exception

# A request fails with the API server's answer (ApiException) or with no answer at all
# (TransportError: down, unreachable, the connection cut); every write loop catches
# both to report what it had already written (PartialWrite).
try:  # the transport's own errors: the API server is down or unreachable
    from urllib3.exceptions import HTTPError as TransportError
except ImportError:  # pragma: no cover - kubernetes always brings urllib3
    TransportError = ConnectionError


def argument_spec(**options: Any) -> dict[str, Any]:
    """The module's own options plus kubernetes.core's connection options."""
    spec = copy.deepcopy(AUTH_ARG_SPEC)
    spec.update(options)
    return spec


def platform_module(**kwargs: Any):
    """An AnsibleK8SModule: checks that kubernetes and PyYAML are importable."""
    return AnsibleK8SModule(**kwargs)


class Cluster:
    """A thin, counting wrapper around kubernetes.core's K8SClient."""

    def __init__(self, client: Any):
        self._client = client
        self.requests = 0
        self._resources: dict[tuple[str, str], Any] = {}

    @classmethod
    def from_module(cls, module: Any) -> Cluster:
        try:
            return cls(get_api_client(module=module))
        except CoreException as exc:
            module.fail_json(msg=str(exc))
            raise  # unreachable; fail_json exits

    @property
    def dry_run(self) -> bool:
        return bool(getattr(self._client, "dry_run", False))

    def resource(self, api_version: str, kind: str) -> Any:
        key = (api_version, kind)
        if key not in self._resources:
            self._resources[key] = self._client.resource(kind, api_version)
        return self._resources[key]

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[dict[str, Any]]:
        """Every object of a kind in one request (the API pages only on request)."""
        params: dict[str, Any] = {}
        if namespace:
            params["namespace"] = namespace
        if label_selector:
            params["label_selector"] = label_selector
        if field_selector:
            params["field_selector"] = field_selector
        self.requests += 1
        result = self._client.get(self.resource(api_version, kind), **params).to_dict()
        return result.get("items") or []

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        self.requests += 1
        try:
            obj = self._client.get(self.resource(api_version, kind), name=name, namespace=namespace)
        except NotFoundError:
            return None
        return obj.to_dict()

    def apply(
        self, manifest: Mapping[str, Any], field_manager: str = FIELD_MANAGER
    ) -> dict[str, Any]:
        """Server-side apply under the platform's field manager (dry run in check mode).

        A manifest that carries only some fields of an object (for example just
        a queue's capability) must use its own ``field_manager``: applying it
        under a manager that applied more fields before would remove those.
        """
        self.requests += 1
        meta = manifest["metadata"]
        params: dict[str, Any] = {"field_manager": field_manager, "force_conflicts": True}
        if self.dry_run:
            params["dry_run"] = "All"
        # Straight to the API's apply patch: kubernetes.core's k8s_apply reads
        # the object first even for a server-side apply, one request more per
        # write that the API server does not need.
        result = self._client.client.server_side_apply(
            self.resource(manifest["apiVersion"], manifest["kind"]),
            body=dict(manifest),
            namespace=meta.get("namespace"),
            **params,
        )
        return result.to_dict()

    def replace(self, manifest: Mapping[str, Any]) -> dict[str, Any]:
        """Replace an object; with ``metadata.resourceVersion`` set this fails
        with ConflictError when someone else changed it in between."""
        self.requests += 1
        meta = manifest["metadata"]
        result = self._client.replace(
            self.resource(manifest["apiVersion"], manifest["kind"]),
            dict(manifest),
            namespace=meta.get("namespace"),
            field_manager=FIELD_MANAGER,
        )
        return result.to_dict()

    def merge_patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        body: Mapping[str, Any],
        namespace: str | None = None,
    ) -> dict[str, Any]:
        """A JSON merge patch (dry run in check mode). For fields a server-side apply
        must not own, such as a node's taints: an atomic list an apply would take over
        whole and remove again on the next apply that leaves it out. A
        ``metadata.resourceVersion`` in the body makes the API server refuse
        (ConflictError) when the object changed since it was read."""
        self.requests += 1
        result = self._client.patch(
            self.resource(api_version, kind),
            dict(body),
            name=name,
            namespace=namespace,
            content_type="application/merge-patch+json",
            field_manager=FIELD_MANAGER,
        )
        return result.to_dict()

    def create(self, manifest: Mapping[str, Any]) -> dict[str, Any]:
        self.requests += 1
        meta = manifest["metadata"]
        result = self._client.create(
            self.resource(manifest["apiVersion"], manifest["kind"]),
            dict(manifest),
            namespace=meta.get("namespace"),
            field_manager=FIELD_MANAGER,
        )
        return result.to_dict()

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        propagation: str = "Foreground",
        preconditions: Mapping[str, str] | None = None,
    ) -> bool:
        """Delete one object; False when it was already gone. ``preconditions``
        (uid, resourceVersion) make the API server refuse with ConflictError
        when the object changed since it was read."""
        self.requests += 1
        body: dict[str, Any] = {"propagationPolicy": propagation}
        if preconditions:
            body["preconditions"] = dict(preconditions)
        if self.dry_run:
            # A DELETE with a body takes its options from the body alone: the
            # dryRun query parameter kubernetes.core adds is ignored there, so
            # without this a check-mode delete would delete for real.
            body["dryRun"] = ["All"]
        try:
            self._client.delete(
                self.resource(api_version, kind),
                name=name,
                namespace=namespace,
                body=body,
            )
        except NotFoundError:
            return False
        return True

    def evict(self, name: str, namespace: str, uid: str | None = None) -> bool:
        """Evict one pod through the Eviction API (``policy/v1``), so PodDisruptionBudgets
        hold and Volcano's job controller sees the eviction (its ``PodEvicted`` policies
        apply); a dry run in check mode. False when the pod was already gone. ``uid``
        makes the API server refuse (ConflictError) a pod re-created under the name."""
        self.requests += 1
        options: dict[str, Any] = {}
        if uid:
            options["preconditions"] = {"uid": uid}
        if self.dry_run:
            options["dryRun"] = ["All"]
        body: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        if options:
            body["deleteOptions"] = options
        try:
            self._client.client.request(
                "post", f"/api/v1/namespaces/{namespace}/pods/{name}/eviction", body=body
            )
        except NotFoundError:
            return False
        return True


def retry_while_denied(
    call: Callable[[], Any],
    timeout: float = 30.0,
    interval: float = 0.5,
    sleep: Callable[[float], Any] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Any:
    """Run ``call``; while an admission webhook denies it, wait and try again
    until ``timeout`` seconds have passed, then raise the last denial.

    Volcano's queue webhook judges a write against its informer cache, which
    trails the API server by a moment: a team queue written right after its
    new subscription queue, or a subscription deleted right after its last
    team, is refused until the cache catches up."""
    deadline = clock() + timeout
    while True:
        try:
            return call()
        except ApiException as exc:
            if "denied the request" not in api_error_message(exc) or clock() >= deadline:
                raise
        sleep(interval)
        interval = min(interval * 2, 4.0)


def api_error_message(exc: Exception) -> str:
    """The API server's own message (it names the field and the rule)."""
    body = getattr(exc, "body", None)
    if body:
        try:
            import json

            data = json.loads(body)
            return data.get("message") or str(body)
        except (ValueError, TypeError):
            return str(body)
    return str(exc)


__all__ = [
    "HAS_KUBERNETES_CORE",
    "ApiException",
    "Cluster",
    "ConflictError",
    "ResourceNotFoundError",
    "TransportError",
    "argument_spec",
    "platform_module",
    "retry_while_denied",
]
