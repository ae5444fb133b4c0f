# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Volcano Queue as the platform sees it, and its manifest form.

A ``Queue`` holds exactly the fields the platform owns on a
``scheduling.volcano.sh/v1beta1`` Queue: parent, guarantee, deserved,
capability, weight and reclaimable, plus the tenant/type/team it belongs to
(carried as ``platform.io/`` labels). ``spec.parent`` is always written,
``root`` included: Volcano's queue controller fills in ``root`` when it is
missing, and a manifest without it would then differ from the live object on
every run.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..common import quantity
from ..common.errors import FieldError, PlatformValidationError
from ..common.names import (
    FIELD_MANAGER,
    LABEL_MANAGED_BY,
    LABEL_QUEUE_TYPE,
    LABEL_TEAM,
    MANAGED_BY,
    QUEUE_API,
    ROOT_QUEUE,
    VGPU_QUEUE_RESOURCES,
    VOLCANO_FIELD_MANAGERS,
    owner_tenant,
    queue_labels,
)

KIND = "Queue"
DEFAULT_WEIGHT = 1
RESOURCE_FIELDS = ("guarantee", "deserved", "capability")
# Rule vgpu-queue-capability: the vGPU resources of every tenant queue are the tenant's
# (its purchase, or what its pods hold), also inside the capacity fields of pay-as-you-go
# and spot queues. The tenant apply owns those keys and the capacity field manager the
# rest of each map (server-side apply owns map keys one by one), so neither the scaler
# nor the spot recompute, which never name vGPU, removes them.
TENANT_OWNED_RESOURCES = VGPU_QUEUE_RESOURCES


def _owned_part(resources: Mapping[str, Decimal], owned: bool) -> quantity.Resources:
    return {k: v for k, v in resources.items() if (k in TENANT_OWNED_RESOURCES) == owned}


@dataclass
class Queue:
    """One Volcano queue.

    ``capability`` empty means "not set": Volcano reads a missing capability
    as unlimited (bounded by the parent). ``source`` is the path of the input
    this queue was built from (``teams[1]``, ``subscription``); rule errors
    use it as their field prefix so they point at what the user wrote.
    """

    name: str
    parent: str = ROOT_QUEUE
    queue_type: str | None = None
    tenant: str | None = None
    team: str | None = None
    guarantee: quantity.Resources = field(default_factory=dict)
    deserved: quantity.Resources = field(default_factory=dict)
    capability: quantity.Resources = field(default_factory=dict)
    weight: int = DEFAULT_WEIGHT
    reclaimable: bool = True
    source: str | None = None
    # Spec fields the platform's capacity modules own (pay-as-you-go
    # deserved/capability, spot capability). They are left out of
    # ``to_manifest`` and written only through ``capacity_manifest`` under
    # the capacity field manager, so a tenant run never takes them over or,
    # by leaving them out later, removes them.
    capacity_fields: tuple[str, ...] = ()
    # Whether this run writes the capacity fields (at creation, or when the
    # caller gave them explicitly).
    write_capacity: bool = False

    @property
    def prefix(self) -> str:
        """The prefix rule errors name: the input path, or the queue's name
        (an empty ``source`` means the queue's fields are top-level options)."""
        return self.name if self.source is None else self.source

    def path(self, rest: str) -> str:
        """A field path under this queue, for error messages."""
        return f"{self.prefix}.{rest}" if self.prefix else rest

    def labels(self) -> dict[str, str]:
        if self.tenant and self.queue_type:
            return queue_labels(self.tenant, self.queue_type, self.team)
        return {LABEL_MANAGED_BY: MANAGED_BY}

    def _resource_spec(self, fields: tuple[str, ...]) -> dict[str, Any]:
        spec: dict[str, Any] = {}
        if "deserved" in fields and self.deserved:
            spec["deserved"] = quantity.render(self.deserved)
        if "capability" in fields and self.capability:
            spec["capability"] = quantity.render(self.capability)
        if "guarantee" in fields and self.guarantee:
            spec["guarantee"] = {"resource": quantity.render(self.guarantee)}
        return spec

    def to_manifest(self) -> dict[str, Any]:
        """The Queue manifest the platform applies (server-side apply); the
        capacity fields are left out."""
        spec: dict[str, Any] = {
            "parent": self.parent,
            "reclaimable": self.reclaimable,
            "weight": self.weight,
        }
        owned = tuple(f for f in RESOURCE_FIELDS if f not in self.capacity_fields)
        spec.update(self._resource_spec(owned))
        for name in self.capacity_fields:
            part = _owned_part(getattr(self, name), owned=True)
            if part and name != "guarantee":
                spec[name] = quantity.render(part)
        return {
            "apiVersion": QUEUE_API,
            "kind": KIND,
            "metadata": {"name": self.name, "labels": self.labels()},
            "spec": spec,
        }

    def whole_manifest(self) -> dict[str, Any]:
        """The queue whole: its labels, the platform's fields and its capacity. A new
        queue with capacity fields is created from this, in one write (rule
        queue-created-whole), so no fault can leave it unlabelled or unlimited."""
        manifest = self.to_manifest()
        if self.capacity_fields and self.write_capacity:
            for name, value in self.capacity_manifest()["spec"].items():
                mine = manifest["spec"].get(name)
                manifest["spec"][name] = {**mine, **value} if isinstance(mine, dict) else value
            manifest["spec"] = dict(sorted(manifest["spec"].items()))
        return manifest

    def capacity_manifest(self) -> dict[str, Any]:
        """Only the capacity fields, for a partial apply under the capacity field manager
        (without the tenant's vGPU keys)."""
        spec = self._resource_spec(self.capacity_fields)
        for name in ("deserved", "capability"):
            if name in spec:
                spec[name] = {
                    k: v for k, v in spec[name].items() if k not in TENANT_OWNED_RESOURCES
                }
        for name in self.capacity_fields:
            # An empty capacity field is written as an empty list, never left out:
            # leaving it out would not clear what was there.
            spec.setdefault(name, {"resource": {}} if name == "guarantee" else {})
        return {
            "apiVersion": QUEUE_API,
            "kind": KIND,
            "metadata": {"name": self.name},
            "spec": spec,
        }

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any], source: str | None = None) -> Queue:
        """Read a Queue manifest (desired or live); every bad field is reported
        at once. Resource names are not restricted here: a live queue may carry
        resources this collection does not manage."""
        meta = manifest.get("metadata") or {}
        spec = manifest.get("spec") or {}
        name = meta.get("name") or ""
        prefix = source or name or "queue"
        errors: list[FieldError] = []
        if not name:
            errors.append(FieldError(f"{prefix}.metadata.name", "a Queue needs a name"))
        labels = meta.get("labels") or {}

        def resources(raw: Any, path: str) -> quantity.Resources:
            try:
                return _parse_any_resources(raw, path)
            except PlatformValidationError as exc:
                errors.extend(exc.errors)
                return {}

        guarantee_raw = (spec.get("guarantee") or {}).get("resource")
        queue = cls(
            name=name,
            parent=spec.get("parent") or "",
            queue_type=labels.get(LABEL_QUEUE_TYPE),
            tenant=owner_tenant(labels) or None,
            team=labels.get(LABEL_TEAM),
            guarantee=resources(guarantee_raw, f"{prefix}.spec.guarantee.resource"),
            deserved=resources(spec.get("deserved"), f"{prefix}.spec.deserved"),
            capability=resources(spec.get("capability"), f"{prefix}.spec.capability"),
            weight=_weight(spec.get("weight", DEFAULT_WEIGHT), f"{prefix}.spec.weight", errors),
            reclaimable=bool(spec.get("reclaimable", True)),
            source=source,
        )
        if errors:
            raise PlatformValidationError(errors)
        return queue


def allocated(manifest: Mapping[str, Any]) -> quantity.Resources:
    """``status.allocated`` of a live Queue (what its running pods hold now)."""
    raw = (manifest.get("status") or {}).get("allocated") or {}
    try:
        return _parse_any_resources(raw, "status.allocated")
    except PlatformValidationError:
        return {}


def same_spec(desired: Queue, live: Mapping[str, Any] | None) -> bool:
    """True when the live Queue already carries exactly what ``desired`` owns
    (its capacity fields aside).

    Stricter than a subset check: a resource dropped from deserved, guarantee
    or capability is a change too (server-side apply removes it).
    """
    current = read_live(live)
    if current is None or live is None:
        return False
    live_labels = (live.get("metadata") or {}).get("labels") or {}
    owned = [f for f in RESOURCE_FIELDS if f not in desired.capacity_fields]
    return (
        current.parent == desired.parent
        and current.weight == desired.weight
        and current.reclaimable == desired.reclaimable
        and all(_same_resources(getattr(current, f), getattr(desired, f)) for f in owned)
        and all(
            _same_resources(
                _owned_part(getattr(current, f), True), _owned_part(getattr(desired, f), True)
            )
            for f in desired.capacity_fields
        )
        and all(live_labels.get(k) == v for k, v in desired.labels().items())
    )


def same_capacity(desired: Queue, live: Mapping[str, Any] | None) -> bool:
    """True when the live Queue's capacity fields equal ``desired``'s."""
    current = read_live(live)
    if current is None:
        return False
    return all(
        _same_resources(
            _owned_part(getattr(current, f), False), _owned_part(getattr(desired, f), False)
        )
        for f in desired.capacity_fields
    )


def field_managers(manifest: Mapping[str, Any]) -> set[str]:
    """The managers other than Volcano's own components that own fields of the queue
    itself (its ``managedFields``; status writes are left out)."""
    entries = (manifest.get("metadata") or {}).get("managedFields") or []
    return {
        e.get("manager", "")
        for e in entries
        if not e.get("subresource") and e.get("manager") not in VOLCANO_FIELD_MANAGERS
    }


def written_by_platform_only(manifest: Mapping[str, Any]) -> bool:
    """Every field of the queue was written by one of the platform's field managers
    (``gpucloud-platform`` and its ``-capacity``/``-burst``/… siblings)."""
    managers = field_managers(manifest)
    return bool(managers) and all(
        m == FIELD_MANAGER or m.startswith(FIELD_MANAGER + "-") for m in managers
    )


def needs_adoption(manifest: Mapping[str, Any]) -> bool:
    """Rule queue-adopted: a queue the platform wrote part-way (a fault stopped a run
    after the capacity write and before the platform's own apply; its managedFields
    show it) is written again under the platform's field manager, so every field the
    platform sets has that owner and a later capacity-only apply never drops one."""
    managers = field_managers(manifest)
    return bool(managers) and FIELD_MANAGER not in managers


def foreign_owner(manifest: Mapping[str, Any], tenant: str) -> str | None:
    """Rule queue-name-owned: who other than ``tenant`` owns this live queue, in words
    (None when it is the tenant's). A queue without a tenant label that only the
    platform ever wrote is one a run created part-way: the tenant adopts it."""
    owner = owner_tenant((manifest.get("metadata") or {}).get("labels"))
    if owner == tenant:
        return None
    if owner:
        return f"tenant {owner!r}"
    if written_by_platform_only(manifest):
        return None
    return "no tenant of the platform"


def read_live(live: Mapping[str, Any] | None) -> Queue | None:
    """A live Queue manifest as a ``Queue``; None when there is none or it cannot be read
    (a queue the platform does not manage may carry anything). Inside ``reading_once``
    each manifest is parsed once."""
    if live is None:
        return None
    memo = _READ_ONCE.memo
    if memo is not None:
        entry = memo.get(id(live))
        if entry is not None and entry[0] is live:
            return entry[1]
    try:
        queue: Queue | None = Queue.from_manifest(live)
    except PlatformValidationError:
        queue = None
    if memo is not None:
        memo[id(live)] = (live, queue)  # holding ``live`` keeps its id from being reused
    return queue


class _ReadOnce(threading.local):
    memo: dict[int, tuple[Mapping[str, Any], Queue | None]] | None = None


_READ_ONCE = _ReadOnce()


@contextlib.contextmanager
def reading_once() -> Iterator[None]:
    """Within the block, ``read_live`` parses each live manifest once: a fleet plan reads
    a tenant's queues for its steps, its comparison and its teams (measured: 13 parses
    per tenant of three queues). Live manifests are never changed while planning; the
    memo ends with the block, so nothing is held after it."""
    outer = _READ_ONCE.memo
    _READ_ONCE.memo = {} if outer is None else outer
    try:
        yield
    finally:
        _READ_ONCE.memo = outer


def _same_resources(a: Mapping[str, Decimal], b: Mapping[str, Decimal]) -> bool:
    return set(a) == set(b) and all(a[k] == b[k] for k in a)


def _parse_any_resources(raw: Any, path: str) -> quantity.Resources:
    if raw is None:
        return {}
    # ``dict`` first: the Mapping ABC check costs a Python call per value in a fleet read.
    if not isinstance(raw, (dict, Mapping)):
        raise PlatformValidationError(
            [FieldError(path, f"{raw!r} must be a mapping of resource name to quantity")]
        )
    return quantity.parse_resources(raw, path, extra_resources=[str(k) for k in raw])


def _weight(raw: Any, path: str, errors: list[FieldError]) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        errors.append(FieldError(path, f"{raw!r} must be a whole number of at least 1"))
        return DEFAULT_WEIGHT
    return raw
