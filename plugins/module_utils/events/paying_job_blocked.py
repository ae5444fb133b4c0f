# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule event-paying-job-blocked (``paying_job_blocked``, ``spot_took_gpus``): a paying
job that waits unschedulable while the spot queues hold GPUs. Pure.

``paying_job_blocked`` for a PodGroup Pending or Inqueue with Volcano's ``Unschedulable``
condition in a paying queue (subscription, team or pay-as-you-go, by the Queue's own
labels: a label on the PodGroup makes nothing paying) while the spot queues hold GPUs.
Emitted when a PodGroup becomes so, and for every such PodGroup when the spot queues go
from holding no GPUs to holding some or its queue becomes a paying one. Adds ``queue``,
``queue_type`` and ``spot_gpus``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.names import PODGROUP_UNSCHEDULABLE, PODGROUP_WAITING_PHASES
from ..queues.kinds import QueueFacts
from .event import PAYING_JOB_BLOCKED, Event, platform_event
from .model import (
    KIND_PODGROUP,
    Snapshot,
    facts_of_queue,
    key_of,
    mapping,
    paying,
    phase_of,
    queue_name_of,
    tenant_of,
)


def unschedulable(podgroup: Mapping[str, Any]) -> bool:
    """Volcano's scheduler could not allocate it: an ``Unschedulable`` condition that is True."""
    conditions = mapping(podgroup.get("status")).get("conditions")
    return isinstance(conditions, list) and any(
        isinstance(c, Mapping)
        and c.get("type") == PODGROUP_UNSCHEDULABLE
        and c.get("status") == "True"
        for c in conditions
    )


def blocked(podgroup: Mapping[str, Any] | None, facts: QueueFacts | None, spot_gpus: int) -> bool:
    """Rule event-paying-job-blocked, the condition: the PodGroup is Pending or Inqueue and
    unschedulable, its queue (``facts``) is a paying one, and spot holds GPUs."""
    return (
        podgroup is not None
        and spot_gpus > 0
        and paying(facts)
        and phase_of(podgroup) in PODGROUP_WAITING_PHASES
        and unschedulable(podgroup)
    )


def blocked_event(
    podgroup: Mapping[str, Any], facts: QueueFacts, spot_gpus: int, at: str, still: bool = False
) -> Event:
    namespace, name = key_of(podgroup)
    queue = queue_name_of(podgroup)
    waits = "still waits" if still else "waits"
    return platform_event(
        PAYING_JOB_BLOCKED,
        KIND_PODGROUP,
        podgroup,
        tenant_of(namespace, facts),
        f"PodGroup {namespace}/{name} {waits} unschedulable ({phase_of(podgroup)}) in "
        f"{facts.queue_type} queue {queue} while spot queues hold {spot_gpus} GPUs",
        at,
        queue=queue,
        queue_type=facts.queue_type,
        spot_gpus=spot_gpus,
    )


def paying_job_blocked(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, snapshot: Snapshot, at: str
) -> list[Event]:
    """Rule event-paying-job-blocked: a PodGroup that becomes blocked (see ``blocked``),
    judged by its Queue's labels in the snapshot, never by the PodGroup's own."""
    if new is None:
        return []
    spot = snapshot.spot_gpus
    facts = snapshot.queue_facts(queue_name_of(new))
    if facts is None or not blocked(new, facts, spot):
        return []
    if old is not None and blocked(old, snapshot.queue_facts(queue_name_of(old)), spot):
        return []
    return [blocked_event(new, facts, spot, at)]


def spot_took_gpus(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, snapshot: Snapshot, at: str
) -> list[Event]:
    """Rule event-paying-job-blocked, from a Queue's side: when the spot queues go from
    holding no GPUs to holding some, every PodGroup then blocked is; when a queue becomes
    a paying one, each of its PodGroups then blocked is."""
    name = key_of(new if new is not None else old or {})[1]
    old_facts, new_facts = facts_of_queue(old), facts_of_queue(new)
    before, after = snapshot.spot_gpus, snapshot.spot_after(old, new)
    if after <= 0:
        return []
    if before <= 0:
        podgroups = snapshot.all(KIND_PODGROUP)
    elif paying(new_facts) and not paying(old_facts):
        podgroups = [pg for pg in snapshot.all(KIND_PODGROUP) if queue_name_of(pg) == name]
    else:
        return []
    out = []
    for podgroup in podgroups:
        queue = queue_name_of(podgroup)
        facts = new_facts if queue == name else snapshot.queue_facts(queue)
        if facts is not None and blocked(podgroup, facts, after):
            out.append(blocked_event(podgroup, facts, after, at))
    return out
