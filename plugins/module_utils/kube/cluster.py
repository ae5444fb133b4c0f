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

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any, TypeVar

from ..common.errors import PartialWrite
from ..common.heap import long_lived
from ..common.names import FIELD_MANAGER

try:
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import (
        CoreException,
    )
except ImportError:  # pragma: no cover - only when kubernetes.core is absent
    get_api_client = None
    CoreException = Exception

try:
    from kubernetes.dynamic.exceptions import (
        ApiException,
        ConflictError,
        NotFoundError,
        ResourceNotFoundError,
        TooManyRequestsError,
    )
except ImportError:  # pragma: no cover - the module reports the missing library
    ApiException = ConflictError = NotFoundError = ResourceNotFoundError = Exception
    TooManyRequestsError = Exception

# A request fails with the API server's answer (ApiException) or with no answer at all
# (TransportError: down, unreachable, the connection cut); every write loop catches
# both to report what it had already written (PartialWrite).
try:  # the transport's own errors: the API server is down or unreachable
    from urllib3.exceptions import HTTPError as TransportError
except ImportError:  # pragma: no cover - kubernetes always brings urllib3
    TransportError = ConnectionError


T = TypeVar("T")


def unreachable(exc: BaseException) -> bool:
    """The API server could not be reached: a connection error anywhere in the chain
    (urllib3's, or Python's own), as the collection's modules judge it."""
    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < 10:
        if isinstance(current, ConnectionError | TransportError):
            return True
        current = current.__cause__ or current.__context__
        seen += 1
    return False


def unreachable_message(exc: BaseException) -> str:
    """One line naming the server, as every module of the collection says it."""
    return "cannot reach the Kubernetes API server: " + " ".join(str(exc).split())


# API priority and fairness answers 429 with a Retry-After when a flow's share is
# used up; the request is retried after that many seconds, this many times at most.
THROTTLE_ATTEMPTS = 8
# Seconds to wait when a 429 carries no Retry-After, and the most any one wait takes.
THROTTLE_DEFAULT_WAIT = 1.0
THROTTLE_MAX_WAIT = 30.0
# Concurrent writes of one run, unless the caller says otherwise.
DEFAULT_WORKERS = 8


def retry_after(exc: Exception) -> float:
    """The seconds a 429 asks the client to wait (header ``Retry-After``), bounded."""
    headers = getattr(exc, "headers", None) or {}
    raw = headers.get("Retry-After") if hasattr(headers, "get") else None
    try:
        wait = float(raw) if raw is not None else THROTTLE_DEFAULT_WAIT
    except (TypeError, ValueError):
        wait = THROTTLE_DEFAULT_WAIT
    return min(max(wait, 0.0), THROTTLE_MAX_WAIT)


def decode(response: Any) -> Any:
    """A raw API response's JSON body as plain dicts and lists.

    The dynamic client's ``ResourceInstance`` wraps every nested field in an object
    and ``to_dict()`` walks them all back: for a LIST of thousands of queues that is
    most of the request's cost (measured: 3.2 s against 0.5 s for the same two
    LISTs). ``json.loads`` of the body is the same data."""
    data = getattr(response, "data", response)
    if isinstance(data, bytes | bytearray):
        data = data.decode("utf-8")
    return json.loads(data) if isinstance(data, str) else data


class Cluster:
    """A thin, counting wrapper around kubernetes.core's K8SClient."""

    def __init__(self, client: Any, sleep: Callable[[float], Any] = time.sleep):
        self._client = client
        self.requests = 0
        self.throttled = 0  # 429 answers waited out
        self._resources: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()
        self._sleep = sleep

    @classmethod
    def from_module(cls, module: Any) -> Cluster:
        try:
            return cls(get_api_client(module=module))
        except Exception as exc:
            # Making the client asks the server its version when no discovery cache names
            # it yet (a mistyped host or port, a server never reached): one line, as every
            # module of the collection says it, not the client's exception.
            if unreachable(exc):
                module.fail_json(msg=unreachable_message(exc), changed=False)
            if isinstance(exc, CoreException):
                module.fail_json(msg=str(exc))
            raise  # not an error of the connection; fail_json exits for those

    @classmethod
    def from_kubeconfig(cls, kubeconfig: str, dry_run: bool = False) -> Cluster:
        """Outside a module run (tests, benchmarks): kubernetes.core's client as a module
        with only ``kubeconfig`` gets it (``dry_run``: as in check mode)."""
        return cls.from_options({"kubeconfig": kubeconfig}, dry_run)

    @classmethod
    def from_options(cls, options: Mapping[str, Any], dry_run: bool = False) -> Cluster:
        """Outside a module run (the event source): kubernetes.core's client as a module
        with these connection options gets it (``kubeconfig``, ``context``, ``host``,
        ``api_key``, ...); an option not given is read from its ``K8S_AUTH_*`` variable,
        and with none of them the kubeconfig of ``KUBECONFIG`` is used. CoreException when
        no client can be made of them."""
        module = SimpleNamespace(
            params=dict(options),
            check_mode=dry_run,
            server_side_dry_run=dry_run,
            requires=lambda *args, **kwargs: None,
        )
        return cls(get_api_client(module=module))

    @property
    def dry_run(self) -> bool:
        return bool(getattr(self._client, "dry_run", False))

    def resource(self, api_version: str, kind: str) -> Any:
        key = (api_version, kind)
        with self._lock:  # discovery is not safe to run twice at once
            if key not in self._resources:
                self._resources[key] = self._client.resource(kind, api_version)
            return self._resources[key]

    def _send(self, call: Callable[[], Any]) -> Any:
        """One request, counted; a 429 from API priority and fairness is waited out
        (its Retry-After) and sent again, up to THROTTLE_ATTEMPTS times."""
        for attempt in range(THROTTLE_ATTEMPTS):
            with self._lock:
                self.requests += 1
            try:
                return call()
            except TooManyRequestsError as exc:
                if attempt == THROTTLE_ATTEMPTS - 1:
                    raise
                with self._lock:
                    self.throttled += 1
                self._sleep(retry_after(exc))
        raise AssertionError("unreachable")  # pragma: no cover

    def concurrently(
        self, calls: Sequence[Callable[[], T]], workers: int = DEFAULT_WORKERS
    ) -> list[T | BaseException]:
        """Run ``calls`` on at most ``workers`` threads; each result, or the exception it
        raised, in the order of ``calls``. Every call runs, whatever the others do: the
        caller reports what was written and what failed. Order between calls is the
        caller's: what must come first goes in an earlier batch."""
        if not calls:
            return []
        workers = max(1, min(workers, len(calls)))
        self._widen_pool(workers)

        def guarded(call: Callable[[], T]) -> T | BaseException:
            try:
                return call()
            except Exception as exc:  # pylint: disable=broad-exception-caught
                return exc

        if workers == 1:
            return [guarded(c) for c in calls]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(guarded, calls))

    def apply_all(
        self,
        manifests: Sequence[Mapping[str, Any]],
        field_manager: str = FIELD_MANAGER,
        workers: int = DEFAULT_WORKERS,
    ) -> list[dict[str, Any] | BaseException]:
        """``apply`` every manifest, ``workers`` at a time; results in order."""
        for manifest in manifests:  # discovery before the threads start
            self.resource(manifest["apiVersion"], manifest["kind"])
        return self.concurrently(
            [lambda m=m: self.apply(m, field_manager=field_manager) for m in manifests], workers
        )

    def _widen_pool(self, workers: int) -> None:
        """urllib3 keeps ``connection_pool_maxsize`` connections per host and drops the
        rest after each request (with a warning): room for every worker."""
        api_client = getattr(getattr(self._client, "client", None), "client", None)
        rest = getattr(api_client, "rest_client", None)
        manager = getattr(rest, "pool_manager", None)
        kw = getattr(manager, "connection_pool_kw", None)
        if kw is None or kw.get("maxsize", 1) >= workers:
            return
        kw["maxsize"] = workers
        manager.clear()  # pools are made again on the next request, with the new size

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
        resource = self.resource(api_version, kind)
        response = self._send(lambda: self._client.get(resource, serialize=False, **params))
        # A Cluster lives in a module's process, which ends with its run: what a LIST
        # decodes stays frozen, so no collection walks a fleet's objects again.
        with long_lived(keep=True):
            result = decode(response)
        items = result.get("items") or []
        # The API server leaves apiVersion and kind out of a built-in kind's list items;
        # every item is given them, as a GET returns an object.
        for item in items:
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
        return items

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        resource = self.resource(api_version, kind)
        try:
            return decode(
                self._send(
                    lambda: self._client.get(
                        resource, name=name, namespace=namespace, serialize=False
                    )
                )
            )
        except NotFoundError:
            return None

    def apply(
        self, manifest: Mapping[str, Any], field_manager: str = FIELD_MANAGER
    ) -> dict[str, Any]:
        """Server-side apply under the platform's field manager (dry run in check mode).

        A manifest that carries only some fields of an object (for example just
        a queue's capability) must use its own ``field_manager``: applying it
        under a manager that applied more fields before would remove those.
        """
        meta = manifest["metadata"]
        params: dict[str, Any] = {"field_manager": field_manager, "force_conflicts": True}
        if self.dry_run:
            params["dry_run"] = "All"
        resource = self.resource(manifest["apiVersion"], manifest["kind"])
        # Straight to the API's apply patch: kubernetes.core's k8s_apply reads
        # the object first even for a server-side apply, one request more per
        # write that the API server does not need.
        return decode(
            self._send(
                lambda: self._client.client.server_side_apply(
                    resource,
                    body=dict(manifest),
                    namespace=meta.get("namespace"),
                    serialize=False,
                    **params,
                )
            )
        )

    def replace(self, manifest: Mapping[str, Any]) -> dict[str, Any]:
        """Replace an object; with ``metadata.resourceVersion`` set this fails
        with ConflictError when someone else changed it in between."""
        return self._send_whole(self._client.replace, manifest)

    def _send_whole(self, method: Callable[..., Any], manifest: Mapping[str, Any]) -> Any:
        """A whole object sent by the client's ``create`` or ``replace`` under the
        platform's field manager; the API server's answer as plain dicts."""
        resource = self.resource(manifest["apiVersion"], manifest["kind"])
        namespace = manifest["metadata"].get("namespace")
        return decode(
            self._send(
                lambda: method(
                    resource,
                    dict(manifest),
                    namespace=namespace,
                    field_manager=FIELD_MANAGER,
                    serialize=False,
                )
            )
        )

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
        resource = self.resource(api_version, kind)
        return decode(
            self._send(
                lambda: self._client.patch(
                    resource,
                    dict(body),
                    name=name,
                    namespace=namespace,
                    content_type="application/merge-patch+json",
                    field_manager=FIELD_MANAGER,
                    serialize=False,
                )
            )
        )

    def create(self, manifest: Mapping[str, Any]) -> dict[str, Any]:
        """Create an object; ConflictError when one of that name exists."""
        return self._send_whole(self._client.create, manifest)

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
        body: dict[str, Any] = {"propagationPolicy": propagation}
        if preconditions:
            body["preconditions"] = dict(preconditions)
        if self.dry_run:
            # A DELETE with a body takes its options from the body alone: the
            # dryRun query parameter kubernetes.core adds is ignored there, so
            # without this a check-mode delete would delete for real.
            body["dryRun"] = ["All"]
        resource = self.resource(api_version, kind)
        try:
            self._send(
                lambda: self._client.delete(
                    resource, name=name, namespace=namespace, body=body, serialize=False
                )
            )
        except NotFoundError:
            return False
        return True

    @property
    def server(self) -> str:
        """The API server's address, as the connection has it."""
        return str(self._client.configuration.host)

    def ca_bundle(self) -> bytes | None:
        """The certificate authority the connection trusts (the kubeconfig's
        ``certificate-authority`` or ``-data``, which the client keeps as a file), or
        None when it trusts the system's."""
        path = self._client.configuration.ssl_ca_cert
        if not path:
            return None
        with open(path, "rb") as ca:
            return ca.read()

    def request_token(self, account: str, namespace: str, seconds: int) -> str:
        """A token of a ServiceAccount (TokenRequest), valid ``seconds``; nothing
        is requested in a dry run (the API server would issue a real token)."""
        path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token"
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": seconds},
        }
        answer = decode(
            self._send(
                lambda: self._client.client.request("post", path, body=body, serialize=False)
            )
        )
        return str(answer["status"]["token"])

    def evict(self, name: str, namespace: str, uid: str | None = None) -> bool:
        """Evict one pod through the Eviction API (``policy/v1``), so PodDisruptionBudgets
        hold and Volcano's job controller sees the eviction (its ``PodEvicted`` policies
        apply); a dry run in check mode. False when the pod was already gone. ``uid``
        makes the API server refuse (ConflictError) a pod re-created under the name."""
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
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/eviction"
        try:
            self._send(lambda: self._client.client.request("post", path, body=body))
        except NotFoundError:
            return False
        return True


def written_or_raise(
    labels: Sequence[str], results: Sequence[Any], what: str, **report: Any
) -> list[str]:
    """After concurrent writes: the labels of those that succeeded; when any failed, a
    ``PartialWrite`` naming them (every write is idempotent: running again finishes)."""
    done = [
        label for label, r in zip(labels, results, strict=True) if not isinstance(r, BaseException)
    ]
    for result in results:
        if isinstance(result, ApiException | TransportError):
            raise PartialWrite(what, done, result, **report) from result
        if isinstance(result, BaseException):
            raise result
    return done


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
    "ApiException",
    "Cluster",
    "ConflictError",
    "ResourceNotFoundError",
    "TooManyRequestsError",
    "TransportError",
    "retry_while_denied",
    "unreachable",
    "unreachable_message",
    "written_or_raise",
]
