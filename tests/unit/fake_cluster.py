# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one in-memory stand-in for ``kube.cluster.Cluster``, for unit tests.

It answers like the API server where the collection depends on the answer,
and ``tests/cluster_contract.py`` runs the same cases against it and against
the local cluster's real API server, so it cannot drift:

* objects are keyed by (kind, namespace, name), ``namespace`` "" when cluster-scoped;
* ``create`` of an existing object raises ``ConflictError`` (409 AlreadyExists);
* ``apply`` is server-side apply: each field manager owns what it last applied
  (maps merge, lists and scalars are replaced), and applying again under the
  same manager drops the fields it no longer names;
* ``replace`` with a stale ``resourceVersion`` and ``delete`` with a stale uid
  precondition raise ``ConflictError``; ``replace`` of a missing object raises
  ``NotFoundError``;
* every write bumps ``resourceVersion``; ``create`` and a first ``apply`` set
  ``uid`` and ``creationTimestamp``; a dry run (``dry_run=True``) answers with
  the would-be object and stores nothing.

It proves what a module reads and writes and in which order, not what
Volcano's webhooks or the admission policies would accept.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping
from typing import Any

from kubernetes.client.rest import ApiException
from kubernetes.dynamic.exceptions import ConflictError, NotFoundError

FIELD_MANAGER = "gpucloud-platform"
_SERVER_OWNED = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")


def conflict(reason: str = "Conflict") -> ConflictError:
    return ConflictError(ApiException(status=409, reason=reason))


def not_found() -> NotFoundError:
    return NotFoundError(ApiException(status=404, reason="NotFound"))


def selector_terms(selector: str | None) -> list[str]:
    """A label selector's terms: split at the commas outside ``in (...)`` sets."""
    terms, depth, term = [], 0, ""
    for char in selector or "":
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            terms.append(term.strip())
            term = ""
        else:
            term += char
    terms.append(term.strip())
    return [t for t in terms if t]


def selector_matches(labels: Mapping[str, str], selector: str | None) -> bool:
    """Label selectors as the API server reads them: ``k=v``, ``k==v``, ``k!=v``, ``k``,
    ``!k``, ``k in (a,b)`` and ``k notin (a,b)``."""
    for term in selector_terms(selector):
        if " in (" in term or " notin (" in term:
            key, _op, values = term.partition(" notin (" if " notin (" in term else " in (")
            allowed = {v.strip() for v in values.rstrip(")").split(",")}
            inside = labels.get(key.strip()) in allowed
            if inside != (" in (" in term):
                return False
        elif "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, value = term.replace("==", "=").split("=", 1)
            if labels.get(key) != value:
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def field_matches(obj: Mapping[str, Any], selector: str | None) -> bool:
    """Field selectors as the API server reads them: ``path=x`` and ``path!=x`` terms, all
    of which must hold (``status.phase!=Succeeded,status.phase!=Failed``)."""
    for term in (selector or "").split(","):
        if not term.strip():
            continue
        unequal = "!=" in term
        path, value = term.split("!=" if unequal else "=", 1)
        node: Any = obj
        for part in path.strip().split("."):
            node = (node or {}).get(part)
        if (node == value) == unequal:
            return False
    return True


def merge(into: dict[str, Any], patch: Mapping[str, Any]) -> None:
    """Server-side apply's merge for untyped fields: maps merge, the rest replaces."""
    for key, value in patch.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)


def json_merge(into: dict[str, Any], patch: Mapping[str, Any]) -> None:
    """A JSON merge patch (RFC 7386) applied in place."""
    for key, value in patch.items():
        if value is None:
            into.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(into.get(key), dict):
            json_merge(into[key], value)
        elif isinstance(value, Mapping):
            into[key] = {}
            json_merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)


class FakeCluster:
    """``Cluster``'s interface over a dict: list, get, apply, create, replace, delete."""

    def __init__(self, objects: list[dict[str, Any]] | tuple = (), dry_run: bool = False):
        self.store: dict[tuple[str, str, str], dict[str, Any]] = {}
        # per object, per field manager, the manifest that manager applied last
        self.applied: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = {}
        self.base: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.requests = 0
        self.dry_run = dry_run
        self.writes: list[tuple[str, str, str]] = []  # (verb, kind, name)
        self.lists: list[str] = []
        self._version = itertools.count(1)
        for obj in objects:
            self.put(obj)

    # -- test set-up and inspection -------------------------------------------------------
    @staticmethod
    def key(kind: str, namespace: str | None, name: str) -> tuple[str, str, str]:
        return (kind, namespace or "", name)

    def put(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Store an object as if someone else had created it."""
        stored = copy.deepcopy(dict(obj))
        meta = stored.setdefault("metadata", {})
        meta.setdefault("uid", f"uid-{meta['name']}")
        meta["resourceVersion"] = str(next(self._version))
        key = self.key(stored["kind"], meta.get("namespace"), meta["name"])
        self.store[key] = stored
        self.base[key] = copy.deepcopy(stored)
        self.applied.pop(key, None)
        return copy.deepcopy(stored)

    def kinds(self, kind: str) -> dict[str, dict[str, Any]]:
        return {k[2]: v for k, v in self.store.items() if k[0] == kind}

    def objects(self, kind: str) -> list[dict[str, Any]]:
        return [copy.deepcopy(o) for k, o in sorted(self.store.items()) if k[0] == kind]

    @property
    def real_writes(self) -> list[tuple[str, str, str]]:
        return [w for w in self.writes if not w[0].startswith("dry-run")]

    # -- the Cluster interface --------------------------------------------------------------
    def concurrently(self, calls, workers=8):
        """Serial here: the order of a real run's results is the order of ``calls``."""
        out = []
        for call in calls:
            try:
                out.append(call())
            except Exception as exc:  # the real Cluster returns exceptions too
                out.append(exc)
        return out

    def apply_all(self, manifests, field_manager=FIELD_MANAGER, workers=8):
        return self.concurrently(
            [lambda m=m: self.apply(m, field_manager=field_manager) for m in manifests], workers
        )

    def list(self, api_version, kind, namespace=None, label_selector=None, field_selector=None):
        self.requests += 1
        self.lists.append(kind)
        return [
            copy.deepcopy(obj)
            for (k, ns, _name), obj in sorted(self.store.items())
            if k == kind
            and (not namespace or ns == namespace)
            and selector_matches((obj["metadata"].get("labels") or {}), label_selector)
            and field_matches(obj, field_selector)
        ]

    def get(self, api_version, kind, name, namespace=None):
        self.requests += 1
        obj = self.store.get(self.key(kind, namespace, name))
        return copy.deepcopy(obj) if obj else None

    def apply(self, manifest, field_manager=FIELD_MANAGER):
        self.requests += 1
        meta = manifest["metadata"]
        key = self.key(manifest["kind"], meta.get("namespace"), meta["name"])
        applied = copy.deepcopy(self.applied.get(key, {}))
        applied[field_manager] = copy.deepcopy(dict(manifest))
        live = self.store.get(key)
        obj = copy.deepcopy(self.base.get(key) or {})
        for owned in applied.values():
            merge(obj, owned)
        obj_meta = obj.setdefault("metadata", {})
        for server_field in _SERVER_OWNED:
            if live and server_field in live["metadata"]:
                obj_meta[server_field] = live["metadata"][server_field]
        if live and "status" in live:
            obj["status"] = copy.deepcopy(live["status"])
        verb = "apply" if field_manager == FIELD_MANAGER else f"apply:{field_manager}"
        if self.dry_run:
            self.writes.append(("dry-run", manifest["kind"], meta["name"]))
            return obj
        obj_meta.setdefault("uid", f"uid-{meta['name']}")
        obj_meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
        if live is None or obj != live:
            obj_meta["resourceVersion"] = str(next(self._version))
        self.writes.append((verb, manifest["kind"], meta["name"]))
        self.store[key] = obj
        self.applied[key] = applied
        self.base.setdefault(key, {"apiVersion": obj["apiVersion"], "kind": obj["kind"]})
        return copy.deepcopy(obj)

    def create(self, manifest):
        self.requests += 1
        meta = manifest["metadata"]
        key = self.key(manifest["kind"], meta.get("namespace"), meta["name"])
        if key in self.store:
            raise conflict("AlreadyExists")
        if self.dry_run:
            self.writes.append(("dry-run", manifest["kind"], meta["name"]))
            return copy.deepcopy(dict(manifest))
        self.writes.append(("create", manifest["kind"], meta["name"]))
        stored = copy.deepcopy(dict(manifest))
        stored["metadata"].setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
        return self.put(stored)

    def merge_patch(self, api_version, kind, name, body, namespace=None):
        """RFC 7386: maps merge, null removes, the rest replaces; a resourceVersion in
        the body must be the live one."""
        self.requests += 1
        key = self.key(kind, namespace, name)
        live = self.store.get(key)
        if live is None:
            raise not_found()
        wanted = (body.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != live["metadata"]["resourceVersion"]:
            raise conflict()
        obj = copy.deepcopy(live)
        json_merge(obj, {k: v for k, v in body.items() if k != "metadata"})
        json_merge(
            obj["metadata"],
            {k: v for k, v in (body.get("metadata") or {}).items() if k != "resourceVersion"},
        )
        if self.dry_run:
            self.writes.append(("dry-run", kind, name))
            return obj
        self.writes.append(("merge-patch", kind, name))
        if obj != live:
            obj["metadata"]["resourceVersion"] = str(next(self._version))
        self.store[key] = obj
        return copy.deepcopy(obj)

    def replace(self, manifest):
        self.requests += 1
        meta = manifest["metadata"]
        key = self.key(manifest["kind"], meta.get("namespace"), meta["name"])
        live = self.store.get(key)
        if live is None:
            raise not_found()
        wanted = meta.get("resourceVersion")
        if wanted and wanted != live["metadata"]["resourceVersion"]:
            raise conflict()
        if self.dry_run:
            self.writes.append(("dry-run", manifest["kind"], meta["name"]))
            return copy.deepcopy(dict(manifest))
        self.writes.append(("replace", manifest["kind"], meta["name"]))
        stored = copy.deepcopy(dict(manifest))
        stored["metadata"]["uid"] = live["metadata"]["uid"]
        return self.put(stored)

    def delete(
        self, api_version, kind, name, namespace=None, propagation="Foreground", preconditions=None
    ):
        self.requests += 1
        key = self.key(kind, namespace, name)
        live = self.store.get(key)
        if live is None:
            return False
        want_uid = (preconditions or {}).get("uid")
        if want_uid and live["metadata"].get("uid") != want_uid:
            raise conflict()
        if self.dry_run:
            self.writes.append(("dry-run-delete", kind, name))
            return True
        self.writes.append(("delete", kind, name))
        self.store.pop(key)
        self.applied.pop(key, None)
        self.base.pop(key, None)
        return True

    def evict(self, name, namespace, uid=None):
        """The Eviction API: the pod is deleted (a dry run leaves it), as the API server
        does when no PodDisruptionBudget stands in the way."""
        self.requests += 1
        key = self.key("Pod", namespace, name)
        live = self.store.get(key)
        if live is None:
            return False
        if uid and live["metadata"].get("uid") != uid:
            raise conflict()
        if self.dry_run:
            self.writes.append(("dry-run-evict", "Pod", name))
            return True
        self.writes.append(("evict", "Pod", name))
        self.store.pop(key)
        self.applied.pop(key, None)
        self.base.pop(key, None)
        return True
