# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An in-memory stand-in for kube.Cluster, for tests of validation and
ordering only: it proves what a module reads and writes, not what the API
server or Volcano's webhooks would accept."""

from __future__ import annotations

import copy
from typing import Any


def _matches(labels: dict[str, str], selector: str | None) -> bool:
    if not selector:
        return True
    for term in selector.split(","):
        if "=" in term:
            key, value = term.split("=", 1)
            if labels.get(key) != value:
                return False
        elif term not in labels:
            return False
    return True


def _merge(into: dict[str, Any], patch: dict[str, Any]) -> None:
    for k, v in patch.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict) and v:
            _merge(into[k], v)
        else:
            into[k] = copy.deepcopy(v)


class FakeCluster:
    def __init__(self, objects: list[dict[str, Any]] | None = None, dry_run: bool = False):
        self.store: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.requests = 0
        self.dry_run = dry_run
        self.writes: list[tuple[str, str, str]] = []  # (verb, kind, name)
        self.lists: list[str] = []
        for obj in objects or []:
            self.put(obj)

    def put(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self.store[(obj["kind"], meta.get("namespace") or "", meta["name"])] = copy.deepcopy(obj)

    def kinds(self, kind: str) -> dict[str, dict[str, Any]]:
        return {k[2]: v for k, v in self.store.items() if k[0] == kind}

    def list(self, api_version, kind, namespace=None, label_selector=None, field_selector=None):
        self.requests += 1
        self.lists.append(kind)
        out = []
        for (k, ns, _unused), obj in sorted(self.store.items()):
            if k != kind or (namespace and ns != namespace):
                continue
            if _matches((obj["metadata"].get("labels") or {}), label_selector):
                out.append(copy.deepcopy(obj))
        return out

    def get(self, api_version, kind, name, namespace=None):
        self.requests += 1
        obj = self.store.get((kind, namespace or "", name))
        return copy.deepcopy(obj) if obj else None

    def apply(self, manifest, field_manager="gpucloud-platform"):
        self.requests += 1
        meta = manifest["metadata"]
        key = (manifest["kind"], meta.get("namespace") or "", meta["name"])
        merged = copy.deepcopy(self.store.get(key) or {})
        _merge(merged, manifest)
        if self.dry_run:
            self.writes.append(("dry-run", manifest["kind"], meta["name"]))
            return merged
        self.writes.append(
            (
                "apply" if field_manager == "gpucloud-platform" else f"apply:{field_manager}",
                manifest["kind"],
                meta["name"],
            )
        )
        self.store[key] = merged
        return copy.deepcopy(merged)

    def create(self, manifest):
        self.requests += 1
        meta = manifest["metadata"]
        key = (manifest["kind"], meta.get("namespace") or "", meta["name"])
        if key in self.store:
            raise AssertionError(f"{key} already exists")
        if self.dry_run:
            self.writes.append(("dry-run", manifest["kind"], meta["name"]))
            return copy.deepcopy(dict(manifest))
        self.writes.append(("create", manifest["kind"], meta["name"]))
        stored = copy.deepcopy(dict(manifest))
        stored["metadata"].setdefault("resourceVersion", "1")
        self.store[key] = stored
        return copy.deepcopy(stored)

    def delete(
        self, api_version, kind, name, namespace=None, propagation="Foreground", preconditions=None
    ):
        self.requests += 1
        if self.dry_run:
            self.writes.append(("dry-run-delete", kind, name))
            return True
        key = (kind, namespace or "", name)
        want_uid = (preconditions or {}).get("uid")
        if want_uid and key in self.store and self.store[key]["metadata"].get("uid") != want_uid:
            from kubernetes.client.rest import ApiException
            from kubernetes.dynamic.exceptions import ConflictError

            raise ConflictError(ApiException(status=409, reason="Conflict"))
        self.writes.append(("delete", kind, name))
        return self.store.pop(key, None) is not None

    @property
    def real_writes(self):
        return [w for w in self.writes if not w[0].startswith("dry-run")]
