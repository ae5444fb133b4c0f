# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule event-subscription-changed (``subscription_changed``, ``tenant_queues_changed``):
what a tenant pays for changed. Pure.

``subscription_changed`` when a managed Queue of type subscription, team or pay-as-you-go
is added or removed (or becomes or stops being one) or its ``spec.deserved`` or
``spec.capability`` GPUs change (one event per change; adds ``queue``, ``queue_type``,
``change`` (added, removed, deserved, capability), ``deserved_gpus`` and
``capability_gpus``, null when unset); and when the platform's ConfigMap
``platform-queues`` of a tenant namespace is added, removed or its data changes (adds
``change``: added, removed, changed).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from ..common.names import TENANT_QUEUES_CONFIGMAP
from .event import SUBSCRIPTION_CHANGED, Event, platform_event
from .model import (
    KIND_CONFIGMAP,
    KIND_QUEUE,
    Snapshot,
    facts_of_queue,
    gpu_quantity,
    key_of,
    managed,
    mapping,
    paying,
    tenant_of,
    tenant_of_namespace,
    whole,
)


def queue_gpus(queue: Mapping[str, Any], field: str) -> Decimal | None:
    """The GPUs of ``spec.<field>`` (deserved or capability); None when unset."""
    return gpu_quantity(mapping(queue.get("spec")).get(field))


def subscription_changed(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, snapshot: Snapshot, at: str
) -> list[Event]:
    """Rule event-subscription-changed, a Queue: a paying queue (``model.paying``) added,
    removed, or its deserved or capability GPUs changed."""
    old_facts, new_facts = facts_of_queue(old), facts_of_queue(new)
    was, now = paying(old_facts), paying(new_facts)
    if old is None or not was:
        changes = ["added"] if now else []
    elif new is None or not now:
        changes = ["removed"]
    else:
        changes = [
            f for f in ("deserved", "capability") if queue_gpus(old, f) != queue_gpus(new, f)
        ]
    queue, facts = (new, new_facts) if now else (old, old_facts)
    if not changes or queue is None or facts is None:
        return []
    name = key_of(queue)[1]
    deserved, capability = (
        whole(queue_gpus(queue, "deserved")),
        whole(queue_gpus(queue, "capability")),
    )
    words = {
        "added": "was added",
        "removed": "was removed",
        "deserved": f"deserves {deserved} GPUs",
        "capability": f"is capped at {capability} GPUs",
    }
    return [
        platform_event(
            SUBSCRIPTION_CHANGED,
            KIND_QUEUE,
            queue,
            tenant_of("", facts),
            f"{facts.queue_type} queue {name} {words[change]}",
            at,
            queue=name,
            queue_type=facts.queue_type,
            change=change,
            deserved_gpus=deserved,
            capability_gpus=capability,
        )
        for change in changes
    ]


def tenant_queue_list(configmap: Mapping[str, Any] | None) -> bool:
    """The platform's list of a tenant's queues: ConfigMap ``platform-queues``, managed by
    the platform, in a tenant's namespace."""
    if configmap is None or not managed(configmap):
        return False
    namespace, name = key_of(configmap)
    return name == TENANT_QUEUES_CONFIGMAP and bool(tenant_of_namespace(namespace))


def tenant_queues_changed(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, snapshot: Snapshot, at: str
) -> list[Event]:
    """Rule event-subscription-changed, a tenant's queue list: ``platform-queues`` added,
    removed, or its data changed."""
    was, now = tenant_queue_list(old), tenant_queue_list(new)
    if old is None or not was:
        change = "added" if now else ""
    elif new is None or not now:
        change = "removed"
    else:
        change = "changed" if mapping(old.get("data")) != mapping(new.get("data")) else ""
    configmap = new if now else old
    if not change or configmap is None:
        return []
    namespace = key_of(configmap)[0]
    return [
        platform_event(
            SUBSCRIPTION_CHANGED,
            KIND_CONFIGMAP,
            configmap,
            tenant_of_namespace(namespace),
            f"the queue list of tenant namespace {namespace} was {change}",
            at,
            change=change,
        )
    ]
