# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a tenant run changes and how it reports it: the ``objects`` list, the
before/after ``diff``, what was really written (for a failure part-way), and
which planned queue writes the API server can dry-run alone in check mode.
Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

from ..common.names import ROOT_QUEUE, TENANT_QUEUES_CONFIGMAP
from ..common.objects import differs, strip_server_fields
from ..queues.plan import CAPACITY, CREATE, DELETE, UPDATE, QueueStep
from .live import TenantLive


def project(live: Any, desired: Any) -> Any:
    """``live`` cut down to the keys ``desired`` has, for a readable diff."""
    if isinstance(desired, Mapping) and isinstance(live, Mapping):
        return {k: project(live.get(k), v) for k, v in desired.items() if k in live}
    return live


def object_ref(manifest: Mapping[str, Any], action: str) -> dict[str, Any]:
    meta = manifest.get("metadata") or {}
    ref = {"kind": manifest.get("kind"), "name": meta.get("name"), "action": action}
    if meta.get("namespace"):
        ref["namespace"] = meta["namespace"]
    return ref


def diff_key(manifest: Mapping[str, Any]) -> str:
    """``Kind/namespace/name`` (``Kind/name`` when cluster-scoped)."""
    meta = manifest.get("metadata") or {}
    parts = [manifest.get("kind") or "", meta.get("namespace") or "", meta.get("name") or ""]
    return "/".join(p for p in parts if p)


class Changes:
    """The objects a run changed, the before/after of each for ``diff``, and
    ``done``: the writes the API server really made (none in check mode)."""

    def __init__(self) -> None:
        self.objects: list[dict[str, Any]] = []
        self.before: dict[str, Any] = {}
        self.after: dict[str, Any] = {}
        self.done: list[str] = []

    def record(
        self, manifest: Mapping[str, Any], action: str, live: Mapping[str, Any] | None
    ) -> None:
        ref = object_ref(manifest, action)
        if ref not in self.objects:
            self.objects.append(ref)
        key = diff_key(manifest)
        if action == DELETE:
            self.before[key] = strip_server_fields(live)
            return
        if live is not None and key not in self.before:
            self.before[key] = project(strip_server_fields(live), manifest)
        merged = dict(self.after.get(key) or {})
        _merge(merged, manifest)
        self.after[key] = merged

    def wrote(self, manifest: Mapping[str, Any], action: str) -> None:
        """A write the API server made for real (``delete Queue/tenant-a-ml``)."""
        self.done.append(f"{action} {diff_key(manifest)}")

    @property
    def changed(self) -> bool:
        return bool(self.objects)

    def diff(self) -> dict[str, Any]:
        return {"before": self.before, "after": self.after}


def _merge(into: dict[str, Any], extra: Mapping[str, Any]) -> None:
    for k, v in extra.items():
        if isinstance(v, Mapping) and isinstance(into.get(k), dict):
            _merge(into[k], v)
        else:
            into[k] = v


# One object to write: the manifest, its action (create or update) and the live object.
# Optional, not ``| None``: a runtime alias, which pylint reads for every Python.
ObjectChange = tuple[Mapping[str, Any], str, Optional[Mapping[str, Any]]]  # noqa: UP045


def object_changes(desired: Sequence[Mapping[str, Any]], live: TenantLive) -> list[ObjectChange]:
    """(manifest, create|update, live) for each non-queue object that differs."""
    out = []
    for manifest in desired:
        current = live.objects.get(manifest["kind"], {}).get(manifest["metadata"]["name"])
        if current is None:
            out.append((manifest, CREATE, None))
        elif differs(manifest, current):
            out.append((manifest, UPDATE, current))
    return out


def queue_list_stale(manifest: Mapping[str, Any], live: Mapping[str, Any] | None) -> bool:
    """The tenant's queue list (the queue policies' parameter) names a queue the tenant no
    longer has. ``differs`` sees only what the live object lacks or contradicts, but this
    list must be exactly the tenant's queues: a removed team's name left in it would admit
    the tenant's jobs to any later queue of that name, another tenant's too."""
    meta = manifest.get("metadata") or {}
    if (
        live is None
        or manifest.get("kind") != "ConfigMap"
        or meta.get("name") != TENANT_QUEUES_CONFIGMAP
    ):
        return False
    return set(live.get("data") or {}) != set(manifest.get("data") or {})


def tenant_object_changes(
    desired: Sequence[Mapping[str, Any]], live: TenantLive
) -> list[ObjectChange]:
    """``object_changes``, with the tenant's queue list also updated when it is stale."""
    found = {id(change[0]): change for change in object_changes(desired, live)}
    out = []
    for manifest in desired:
        current = live.objects.get(manifest["kind"], {}).get(manifest["metadata"]["name"])
        if id(manifest) in found:
            out.append(found[id(manifest)])
        elif queue_list_stale(manifest, current):
            out.append((manifest, UPDATE, current))
    return out


def dry_run_possible(
    step: QueueStep, steps: Sequence[QueueStep], live_queues: Mapping[str, Any]
) -> bool:
    """In check mode the API server can judge a queue write alone only when no
    other write in the same run (its parent's or a child's) changes what the
    webhook compares it with."""
    names = {s.name for s in steps}
    queue = step.queue
    if queue is None:
        return False
    if queue.parent not in (ROOT_QUEUE, "") and (
        queue.parent in names or queue.parent not in live_queues
    ):
        return False
    children = [s for s in steps if s.queue is not None and s.queue.parent == step.name]
    return not children and not (step.action == CAPACITY and step.name not in live_queues)


def step_manifest(step: QueueStep) -> dict[str, Any]:
    """What a queue step writes (``QueueStep.manifest``)."""
    return step.manifest()


def step_action(step: QueueStep, live: Mapping[str, Any] | None) -> str:
    """The action a queue step is reported as: create, update or delete."""
    if step.action == DELETE:
        return DELETE
    return CREATE if live is None else UPDATE
