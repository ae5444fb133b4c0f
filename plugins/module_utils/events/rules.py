# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The events the cluster event source emits: which change of which object means work. Pure.

Every rule takes an object's old and new version (None when it is added or gone), the
``Snapshot`` as it was before the change, and the time of the change, and returns the
events to emit (their names and shape: ``events.event``). Each event's rules are a file of
their own; this file runs them, by kind:

* Rule event-paying-job-blocked (``paying_job_blocked``, ``spot_took_gpus``):
  ``events.paying_job_blocked``;
* Rule event-large-job (``large_job``): ``events.large_job``;
* Rule event-pool-changed (``pool_changed``): ``events.pool_changed``;
* Rule event-subscription-changed (``subscription_changed``, ``tenant_queues_changed``):
  ``events.subscription_changed``;
* Rule event-gpu-health-changed (``gpu_health_changed``): ``events.gpu_health_changed``.

And on a whole snapshot, here:

* Rule event-standing (``standing``): what still holds in a whole snapshot, the paying jobs
  still blocked, the large jobs still waiting and the GPU nodes whose GPUs failed and
  that are not quarantined yet, for the source to emit again on its
  periodic resync and after a re-list: an edge missed while the watch was down is acted
  on all the same.
* Rule event-relist (``relist_pairs``, ``relist``): a fresh LIST of a kind is the old/new
  pairs that take the snapshot to it, through the same rules, then the standing
  conditions not already emitted.

``observe`` applies one change to the snapshot and returns its events; a change that
leaves every field a rule reads as it was (``model.slim``) emits nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..common.names import PODGROUP_WAITING_PHASES
from .event import LARGE_JOB_WAITING, Event, Rule
from .gpu_health_changed import gpu_health_changed, unquarantined
from .large_job import large, large_event, large_job
from .model import (
    KIND_CONFIGMAP,
    KIND_NODE,
    KIND_PODGROUP,
    KIND_QUEUE,
    Object,
    Snapshot,
    key_of,
    phase_of,
    queue_name_of,
    uid_of,
)
from .paying_job_blocked import blocked, blocked_event, paying_job_blocked, spot_took_gpus
from .pool_changed import pool_changed
from .subscription_changed import subscription_changed, tenant_queues_changed

RULES: dict[str, tuple[Rule, ...]] = {
    KIND_QUEUE: (subscription_changed, spot_took_gpus),
    KIND_PODGROUP: (paying_job_blocked, large_job),
    KIND_NODE: (pool_changed, gpu_health_changed),
    KIND_CONFIGMAP: (tenant_queues_changed,),
}


def events_for(
    kind: str,
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any] | None,
    snapshot: Snapshot,
    at: str,
) -> list[Event]:
    """Every rule of the kind, on one change, against the snapshot before it."""
    return [event for rule in RULES.get(kind, ()) for event in rule(old, new, snapshot, at)]


def changes_of(old: Object | None, new: Object | None) -> list[tuple[Object | None, Object | None]]:
    """One change, or two when the name now holds another object (another uid): the old one
    gone, then the new one added."""
    if (
        old is not None
        and new is not None
        and uid_of(old)
        and uid_of(new)
        and uid_of(old) != uid_of(new)
    ):
        return [(old, None), (None, new)]
    return [(old, new)]


def observe(
    snapshot: Snapshot,
    kind: str,
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any] | None,
    at: str,
) -> list[Event]:
    """Apply one change (``old`` None: added; ``new`` None: gone) to the snapshot and return
    its events. The rules read the slim forms, so a change of nothing they read is none."""
    before = snapshot.slim(kind, old) if old is not None else None
    after = snapshot.slim(kind, new) if new is not None else None
    if before == after:
        if after is not None:
            snapshot.apply(kind, before, after)
        return []
    out: list[Event] = []
    for one_old, one_new in changes_of(before, after):
        out += events_for(kind, one_old, one_new, snapshot, at)
        snapshot.apply(kind, one_old, one_new)
    return out


# The kinds a standing condition reads: a re-list of one of them emits them again.
STANDING_KINDS = (KIND_QUEUE, KIND_PODGROUP, KIND_NODE)


def standing(snapshot: Snapshot, at: str) -> list[Event]:
    """Rule event-standing: the paying jobs still blocked and the large jobs still waiting,
    in key order, then the GPU nodes whose GPUs failed and that do not carry the taint
    ``platform.io/gpu-unhealthy`` yet (``gpu_health_changed.unquarantined``)."""
    out: list[Event] = []
    spot = snapshot.spot_gpus
    for podgroup in snapshot.all(KIND_PODGROUP):
        facts = snapshot.queue_facts(queue_name_of(podgroup))
        if facts is not None and blocked(podgroup, facts, spot):
            out.append(blocked_event(podgroup, facts, spot, at, still=True))
        if large(podgroup) and phase_of(podgroup) in PODGROUP_WAITING_PHASES:
            out.append(large_event(LARGE_JOB_WAITING, podgroup, snapshot, at, still=True))
    return out + unquarantined(snapshot, at)


def relist_pairs(
    snapshot: Snapshot, kind: str, listed: Iterable[Mapping[str, Any]]
) -> list[tuple[Object | None, Object | None]]:
    """Rule event-relist: the changes that take the snapshot's objects of ``kind`` to a
    fresh LIST of it, in key order: added, changed (another uid under the same name: gone,
    then added) and gone. An object the LIST holds as the snapshot does is no change."""
    now = {}
    for obj in listed:
        kept = snapshot.slim(kind, obj)
        now[key_of(kept)] = kept
    held = snapshot.objects.get(kind, {})
    out: list[tuple[Object | None, Object | None]] = []
    for key in sorted(set(held) | set(now)):
        old, new = held.get(key), now.get(key)
        if old != new:
            out += changes_of(old, new)
    return out


def identity(event: Mapping[str, Any]) -> tuple[str, str, str, str]:
    return (event["platform_event"], event["kind"], event["namespace"], event["name"])


def relist(
    snapshot: Snapshot, kind: str, listed: Iterable[Mapping[str, Any]], at: str
) -> list[Event]:
    """Rule event-relist: the events of a fresh LIST of ``kind`` (its changes through the
    rules, the snapshot updated), then, when the kind is one a standing condition reads
    (Queue, PodGroup, Node), the standing conditions not among them."""
    out: list[Event] = []
    for old, new in relist_pairs(snapshot, kind, listed):
        out += observe(snapshot, kind, old, new, at)
    if kind in STANDING_KINDS:
        emitted = {identity(e) for e in out}
        out += [e for e in standing(snapshot, at) if identity(e) not in emitted]
    return out
