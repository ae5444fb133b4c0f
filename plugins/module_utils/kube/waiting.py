# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubernetes.core's ``Waiter`` polling through the platform's ``Cluster``.

The Waiter asks its client ``get(resource, name=..., namespace=..., label_selector=...)``
and expects kubernetes.core's K8SClient with a discovered ``Resource``. A service has a
``Cluster``: ``ClusterClient`` answers the Waiter's GET (or LIST) with the Cluster's own
request, so a poll stays one request, counted in the module's ``requests``, a 429 waited
out, the body read with ``json.loads`` (not walked as a ``ResourceInstance``).

``get_waiter`` is not used: it picks a predicate by kind (Deployment, Pod...) or reads a
condition through a ``ResourceInstance``'s attributes; the services' predicates are their
own (a Job's phase, an InferenceService serving the asked-for version).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from .cluster import Cluster, TransportError

try:
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import (
        CoreException,
    )
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.waiter import (
        Waiter,
        resource_absent,
    )
except ImportError:  # pragma: no cover - only when kubernetes.core is absent
    CoreException = Exception
    Waiter = resource_absent = None


class Kind(NamedTuple):
    """The Waiter's ``resource``: it only hands it back to the client's ``get``."""

    api_version: str
    kind: str


class Answer(dict):
    """An object, or a ``<Kind>List`` with its ``items``, as the Waiter's predicates read
    it (``exists`` and ``resource_absent`` index it like a dict); ``to_dict`` is what the
    Waiter returns."""

    def to_dict(self) -> dict[str, Any]:
        return dict(self)


class ClusterClient:
    """The part of kubernetes.core's K8SClient the Waiter uses: ``get``, over a Cluster."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster

    def get(
        self,
        resource: Kind,
        name: str | None = None,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Answer | None:
        """One GET by name (None when absent) or one LIST."""
        if name:
            obj = self._cluster.get(resource.api_version, resource.kind, name, namespace)
            return None if obj is None else Answer(obj)
        items = self._cluster.list(
            resource.api_version,
            resource.kind,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
        )
        return Answer(apiVersion=resource.api_version, kind=f"{resource.kind}List", items=items)


def wait_for(
    cluster: Cluster,
    api_version: str,
    kind: str,
    predicate: Callable[[Mapping[str, Any] | None], bool],
    timeout: float,
    sleep: float,
    name: str | None = None,
    namespace: str | None = None,
    label_selectors: Sequence[str] | None = None,
) -> tuple[bool, dict[str, Any], int]:
    """``Waiter(...).wait``: poll at once, then every ``sleep`` seconds until ``predicate``
    holds or ``timeout`` seconds passed (a ``timeout`` of 0 looks once). Returns whether it
    holds, the last answer (``{}`` when the object was absent) and the whole seconds waited.

    The Waiter retries a poll the transport failed (the connection cut) and, when the last
    poll failed so, raises CoreException; the transport's own error is raised instead, so
    that the runner reports it as every other unreachable API server."""
    waiter = Waiter(ClusterClient(cluster), Kind(api_version, kind), predicate)
    try:
        return waiter.wait(
            timeout=timeout,  # annotated int; its clock compares and sleeps floats as well
            sleep=sleep,
            name=name,
            namespace=namespace,
            label_selectors=list(label_selectors or []),
        )
    except CoreException as exc:
        cause = exc.__cause__
        if isinstance(cause, TransportError):
            raise cause from None  # pylint: disable=raising-non-exception
        raise


__all__ = ["Answer", "ClusterClient", "Kind", "resource_absent", "wait_for"]
