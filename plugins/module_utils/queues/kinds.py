# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What kind of queue a name is, and the rule every module that takes a tenant's queue checks.

* Rule leaf-queue-of-tenant (``leaf_queue_errors``): a queue a tenant's work is put in or
  acted for (``vcjob`` ``queue`` and ``manifest.spec.queue``, ``inference_service``
  ``queue``, ``queue_arbiter`` ``queue``) is one of that tenant's leaf queues. Volcano's
  ``root`` and ``default``, a subscription queue with team queues under it (Volcano runs
  jobs only in leaf queues), another tenant's queue, a queue the platform does not manage
  and a name no queue has are each refused, named as what they are.
  ``queue_name_errors`` is the part a name alone decides, checked before the first request.

The kind is derived from what the module already reads: the tenant's ``platform-queues``
list (name -> queue type of its leaf queues; what a tenant's identity can read) or, where
the module lists the managed Queues anyway, their ``platform.io/tenant`` and
``platform.io/queue-type`` labels and parents. Both are platform state a tenant cannot
write, so a tenant cannot make a queue look like one of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..common.errors import FieldError
from ..common.names import (
    LABEL_QUEUE_TYPE,
    QUEUE_TYPE_SUBSCRIPTION,
    ROOT_QUEUE,
    is_managed,
    namespace_name,
    owner_tenant,
    queue_name,
)

RULE = "(rule leaf-queue-of-tenant)"
DEFAULT_QUEUE = "default"
_TENANT_PREFIX = namespace_name("")
_PARENT = "a parent with {} queues under it (Volcano runs work only in leaf queues)"


@dataclass(frozen=True)
class QueueFacts:
    """One live queue as the kind rules see it: its labels' tenant and type ("" when
    unlabelled), whether the platform manages it, and whether another queue names it
    as its parent."""

    tenant: str
    queue_type: str
    managed: bool
    parent: bool


def queue_facts(rows: Iterable[tuple[str, str, Mapping[str, Any]]]) -> dict[str, QueueFacts]:
    """(name, spec.parent, labels) of listed queues -> ``QueueFacts`` by name."""
    listed = list(rows)
    parents = {parent for _name, parent, _labels in listed}
    return {
        name: QueueFacts(
            tenant=owner_tenant(labels),
            queue_type=str(labels.get(LABEL_QUEUE_TYPE) or ""),
            managed=is_managed(labels),
            parent=name in parents,
        )
        for name, _parent, labels in listed
    }


def facts_from_manifests(queues: Iterable[Mapping[str, Any]]) -> dict[str, QueueFacts]:
    """``queue_facts`` of Queue objects as the API server returns them."""
    return queue_facts(
        (
            str((q.get("metadata") or {}).get("name") or ""),
            str((q.get("spec") or {}).get("parent") or ROOT_QUEUE),
            (q.get("metadata") or {}).get("labels") or {},
        )
        for q in queues
    )


def tenant_leaves(tenant: str, facts: Mapping[str, QueueFacts]) -> dict[str, str]:
    """The tenant's leaf queues among listed managed queues: name -> queue type (what
    its ``platform-queues`` list holds)."""
    return {
        name: f.queue_type
        for name, f in facts.items()
        if f.managed and f.tenant == tenant and not f.parent
    }


def describe_queue(name: str, tenant: str, facts: Mapping[str, QueueFacts] | None = None) -> str:
    """What ``name`` is, in the caller's terms, for a message about tenant ``tenant``.
    ``facts`` None: only the name and the tenant's leaf list are known."""
    if name == ROOT_QUEUE:
        return "Volcano's root queue, the parent of every queue"
    if name == DEFAULT_QUEUE:
        return "Volcano's default queue, outside every tenant's quota"
    if facts is None:
        if name == queue_name(tenant, QUEUE_TYPE_SUBSCRIPTION):
            return "this tenant's subscription queue, " + _PARENT.format("team")
        if name.startswith(f"{namespace_name(tenant)}-"):
            return "no queue of this tenant"
        if name.startswith(_TENANT_PREFIX):
            return "another tenant's queue name"
        return "no tenant's queue"
    found = facts.get(name)
    if found is None:
        return "no queue the platform manages"
    if not found.managed:
        return "a queue the platform does not manage"
    kind = f"{found.queue_type or 'untyped'} queue"
    if found.parent:
        below = "team" if found.queue_type == QUEUE_TYPE_SUBSCRIPTION else "other"
        kind += ", " + _PARENT.format(below)
    if not found.tenant:
        return f"the platform's {kind}, of no tenant"
    whose = "this tenant's" if found.tenant == tenant else f"tenant {found.tenant}'s"
    return f"{whose} {kind}"


def _expected(tenant: str, leaves: Mapping[str, str]) -> str:
    names = ", ".join(sorted(leaves)) or "none yet"
    return f"one of tenant {tenant}'s leaf queues ({names})"


def queue_name_errors(option: str, name: object, tenant: str) -> list[FieldError]:
    """Rule leaf-queue-of-tenant, as far as the name decides it before anything is read:
    every queue of tenant ``t`` is named ``tenant-<t>-<name>``."""
    if not isinstance(name, str) or not name:
        return [FieldError(option, f"{name!r} is not a queue name {RULE}")]
    if name.startswith(f"{namespace_name(tenant)}-"):
        return []
    return [
        FieldError(
            option,
            f"{name!r} is {describe_queue(name, tenant)}; expected a leaf queue of tenant "
            f"{tenant} ({namespace_name(tenant)}-<team>, -payg or -spot) {RULE}",
        )
    ]


def leaf_queue_errors(
    option: str,
    name: str,
    tenant: str,
    leaves: Mapping[str, str],
    facts: Mapping[str, QueueFacts] | None = None,
) -> list[FieldError]:
    """Rule leaf-queue-of-tenant: ``name`` (option ``option``) is one of ``leaves``, the
    tenant's leaf queues (name -> queue type). ``facts``, when the module listed the
    managed Queues, says exactly what a refused name is."""
    if name in leaves:
        return []
    return [
        FieldError(
            option,
            f"{name!r} is {describe_queue(name, tenant, facts)}; expected "
            f"{_expected(tenant, leaves)} {RULE}",
        )
    ]


def leaf_queue_type(
    queue: str, leaves: Mapping[str, str], tenant: str, option: str = "queue"
) -> tuple[str | None, list[FieldError]]:
    """Rule leaf-queue-of-tenant over the tenant's leaf queues: the queue's type, or the
    errors that name what the queue is instead."""
    errors = leaf_queue_errors(option, queue, tenant, leaves)
    return (None, errors) if errors else (leaves[queue], [])
