# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The events the cluster event source emits: which change of which object means work.

Every rule takes an object's old and new version (None when it is added or gone), the
``Snapshot`` as it was before the change, and the time of the change, and returns the
events to emit. An event is a plain, JSON-serialisable dict::

    {"platform_event": "pool_changed", "kind": "Node", "name": "gpu-07", "namespace": "",
     "tenant": "", "reason": "GPU node gpu-07 was cordoned", "at": "2026-01-01T12:00:00Z",
     "change": "cordoned", "gpus": 8}

``platform_event``, ``kind``, ``name``, ``namespace`` ("" when cluster-scoped), ``tenant``
(the ``platform.io/tenant`` label of a managed queue, else the tenant whose namespace it
is, else ""), ``reason`` and ``at`` are always there; each event adds its own keys.

* Rule event-paying-job-blocked (``paying_job_blocked``, ``spot_took_gpus``):
  ``paying_job_blocked`` for a PodGroup Pending or Inqueue with Volcano's ``Unschedulable``
  condition in a paying queue (subscription, team or pay-as-you-go, by the Queue's own
  labels: a label on the PodGroup makes nothing paying) while the spot queues hold GPUs.
  Emitted when a PodGroup becomes so, and for every such PodGroup when the spot queues
  go from holding no GPUs to holding some or its queue becomes a paying one. Adds
  ``queue``, ``queue_type`` and ``spot_gpus``.
* Rule event-large-job (``large_job``): ``large_job_waiting`` when a PodGroup of
  PriorityClass ``large-job`` is added Pending or Inqueue or its phase changes to one of
  them, ``large_job_running`` when it is added Running or becomes Running,
  ``large_job_gone`` when it is deleted. Adds ``queue`` and ``phase``.
* Rule event-pool-changed (``pool_changed``): ``pool_changed`` when a GPU node (allocatable
  ``nvidia.com/gpu`` above 0 before or after) is added or removed, cordoned or uncordoned,
  its allocatable GPUs change or it becomes Ready or not; one event per change. Adds
  ``change`` (added, removed, cordoned, uncordoned, allocatable, ready, not-ready) and
  ``gpus`` (its allocatable GPUs, before it was removed for ``removed``).
* Rule event-subscription-changed (``subscription_changed``, ``tenant_queues_changed``):
  ``subscription_changed`` when a managed Queue of type subscription, team or
  pay-as-you-go is added or removed (or becomes or stops being one) or its
  ``spec.deserved`` or ``spec.capability`` GPUs change (one event per change; adds
  ``queue``, ``queue_type``, ``change`` (added, removed, deserved, capability),
  ``deserved_gpus`` and ``capability_gpus``, null when unset); and when the platform's
  ConfigMap ``platform-queues`` of a tenant namespace is added, removed or its data changes
  (adds ``change``: added, removed, changed).
* Rule event-standing (``standing``): what still holds in a whole snapshot, the paying jobs
  still blocked and the large jobs still waiting, for the source to emit again on its
  periodic resync and after a re-list: an edge missed while the watch was down is acted
  on all the same.
* Rule event-relist (``relist_pairs``, ``relist``): a fresh LIST of a kind is the old/new
  pairs that take the snapshot to it, through the same rules, then the standing
  conditions not already emitted.

``observe`` applies one change to the snapshot and returns its events; a change that
leaves every field a rule reads as it was (``model.slim``) emits nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Any, Optional

from ..common.names import (
    PODGROUP_RUNNING_PHASE,
    PODGROUP_UNSCHEDULABLE,
    PODGROUP_WAITING_PHASES,
)
from ..jobs.throttle import LARGE_PRIORITY_CLASS, podgroup_phase
from ..policy.admission import TENANT_QUEUES_CONFIGMAP
from ..queues.kinds import QueueFacts
from .model import (
    KIND_CONFIGMAP,
    KIND_NODE,
    KIND_PODGROUP,
    KIND_QUEUE,
    READY,
    Object,
    Snapshot,
    facts_of_queue,
    gpu_quantity,
    key_of,
    managed,
    mapping,
    paying,
    queue_name_of,
    slim,
    tenant_of,
    tenant_of_namespace,
    uid_of,
    whole,
    whole_gpus,
)

PAYING_JOB_BLOCKED = "paying_job_blocked"
LARGE_JOB_WAITING = "large_job_waiting"
LARGE_JOB_RUNNING = "large_job_running"
LARGE_JOB_GONE = "large_job_gone"
POOL_CHANGED = "pool_changed"
SUBSCRIPTION_CHANGED = "subscription_changed"
PLATFORM_EVENTS = (
    PAYING_JOB_BLOCKED,
    LARGE_JOB_WAITING,
    LARGE_JOB_RUNNING,
    LARGE_JOB_GONE,
    POOL_CHANGED,
    SUBSCRIPTION_CHANGED,
)
# The keys every event has.
EVENT_KEYS = ("platform_event", "kind", "name", "namespace", "tenant", "reason", "at")

Event = dict[str, Any]
# Runtime aliases: sanity's pylint refuses ``X | None`` outside annotations.
MaybeObject = Optional[Mapping[str, Any]]  # noqa: UP045
Change = tuple[MaybeObject, MaybeObject]
Rule = Callable[[MaybeObject, MaybeObject, Snapshot, str], list[Event]]


def platform_event(
    name: str, kind: str, obj: Mapping[str, Any], tenant: str, reason: str, at: str, **extra: Any
) -> Event:
    """One event: the keys every event has, then the event's own."""
    namespace, obj_name = key_of(obj)
    return {
        "platform_event": name,
        "kind": kind,
        "name": obj_name,
        "namespace": namespace,
        "tenant": tenant,
        "reason": reason,
        "at": at,
        **extra,
    }


# PodGroups: rule event-paying-job-blocked and rule event-large-job.


def unschedulable(podgroup: Mapping[str, Any]) -> bool:
    """Volcano's scheduler could not allocate it: an ``Unschedulable`` condition that is True."""
    conditions = mapping(podgroup.get("status")).get("conditions")
    return isinstance(conditions, list) and any(
        isinstance(c, Mapping)
        and c.get("type") == PODGROUP_UNSCHEDULABLE
        and c.get("status") == "True"
        for c in conditions
    )


def phase_of(podgroup: Mapping[str, Any]) -> str:
    """The PodGroup's phase, Pending until the scheduler gives it one (``jobs/throttle``)."""
    return podgroup_phase({"status": mapping(podgroup.get("status"))})


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


def large(podgroup: Mapping[str, Any] | None) -> bool:
    """A large job's PodGroup: PriorityClass ``large-job`` (what the throttle engages for)."""
    return (
        podgroup is not None
        and mapping(podgroup.get("spec")).get("priorityClassName") == LARGE_PRIORITY_CLASS
    )


def large_event(
    name: str, podgroup: Mapping[str, Any], snapshot: Snapshot, at: str, still: bool = False
) -> Event:
    namespace, pg_name = key_of(podgroup)
    queue, phase = queue_name_of(podgroup), phase_of(podgroup)
    what = {
        LARGE_JOB_WAITING: f"{'is still' if still else 'is'} waiting ({phase}) in queue {queue}",
        LARGE_JOB_RUNNING: f"is running in queue {queue}",
        LARGE_JOB_GONE: f"is gone from queue {queue} (it was {phase})",
    }[name]
    return platform_event(
        name,
        KIND_PODGROUP,
        podgroup,
        tenant_of(namespace, snapshot.queue_facts(queue)),
        f"large job {namespace}/{pg_name} {what}",
        at,
        queue=queue,
        phase=phase,
    )


def large_job(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, snapshot: Snapshot, at: str
) -> list[Event]:
    """Rule event-large-job: a large job's PodGroup added or changed into Pending or Inqueue
    (waiting) or Running (running), or deleted (gone); any other update emits nothing."""
    was = phase_of(old) if old is not None and large(old) else None
    if new is None or not large(new):
        return (
            [large_event(LARGE_JOB_GONE, old, snapshot, at)]
            if old is not None and was is not None
            else []
        )
    phase = phase_of(new)
    if phase == was:
        return []
    if phase in PODGROUP_WAITING_PHASES:
        return [large_event(LARGE_JOB_WAITING, new, snapshot, at)]
    if phase == PODGROUP_RUNNING_PHASE:
        return [large_event(LARGE_JOB_RUNNING, new, snapshot, at)]
    return []


# Nodes: rule event-pool-changed.


def node_gpus(node: Mapping[str, Any] | None) -> int:
    """A node's allocatable GPUs (0 for None)."""
    return whole_gpus(mapping(mapping(node).get("status")).get("allocatable"))


def node_ready(node: Mapping[str, Any]) -> bool:
    conditions = mapping(node.get("status")).get("conditions")
    return isinstance(conditions, list) and any(
        isinstance(c, Mapping) and c.get("type") == READY and c.get("status") == "True"
        for c in conditions
    )


def cordoned(node: Mapping[str, Any]) -> bool:
    return mapping(node.get("spec")).get("unschedulable") is True


def node_changes(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[str]:
    """What changed of a node that rule event-pool-changed names, in a fixed order."""
    if old is None:
        return ["added"] if new is not None else []
    if new is None:
        return ["removed"]
    changes = []
    if cordoned(old) != cordoned(new):
        changes.append("cordoned" if cordoned(new) else "uncordoned")
    if node_gpus(old) != node_gpus(new):
        changes.append("allocatable")
    if node_ready(old) != node_ready(new):
        changes.append("ready" if node_ready(new) else "not-ready")
    return changes


def pool_changed(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, snapshot: Snapshot, at: str
) -> list[Event]:
    """Rule event-pool-changed: a GPU node (allocatable GPUs above 0 before or after) added,
    removed, cordoned, uncordoned, with other allocatable GPUs, Ready or no longer Ready."""
    before, after = node_gpus(old), node_gpus(new)
    if max(before, after) <= 0:
        return []
    node = new if new is not None else old
    if node is None:
        return []
    name = key_of(node)[1]
    gpus = after if new is not None else before
    words = {
        "added": f"was added ({after} GPUs)",
        "removed": f"was removed ({before} GPUs)",
        "cordoned": "was cordoned",
        "uncordoned": "was uncordoned",
        "allocatable": f"has {after} allocatable GPUs instead of {before}",
        "ready": "became Ready",
        "not-ready": "is no longer Ready",
    }
    return [
        platform_event(
            POOL_CHANGED,
            KIND_NODE,
            node,
            "",
            f"GPU node {name} {words[change]}",
            at,
            change=change,
            gpus=gpus,
        )
        for change in node_changes(old, new)
    ]


# Queues and the tenants' queue lists: rule event-subscription-changed.


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


RULES: dict[str, tuple[Rule, ...]] = {
    KIND_QUEUE: (subscription_changed, spot_took_gpus),
    KIND_PODGROUP: (paying_job_blocked, large_job),
    KIND_NODE: (pool_changed,),
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
    before = slim(kind, old) if old is not None else None
    after = slim(kind, new) if new is not None else None
    if before == after:
        if after is not None:
            snapshot.apply(kind, before, after)
        return []
    out: list[Event] = []
    for one_old, one_new in changes_of(before, after):
        out += events_for(kind, one_old, one_new, snapshot, at)
        snapshot.apply(kind, one_old, one_new)
    return out


def standing(snapshot: Snapshot, at: str) -> list[Event]:
    """Rule event-standing: the paying jobs still blocked and the large jobs still waiting,
    in key order."""
    out: list[Event] = []
    spot = snapshot.spot_gpus
    for podgroup in snapshot.all(KIND_PODGROUP):
        facts = snapshot.queue_facts(queue_name_of(podgroup))
        if facts is not None and blocked(podgroup, facts, spot):
            out.append(blocked_event(podgroup, facts, spot, at, still=True))
        if large(podgroup) and phase_of(podgroup) in PODGROUP_WAITING_PHASES:
            out.append(large_event(LARGE_JOB_WAITING, podgroup, snapshot, at, still=True))
    return out


def relist_pairs(
    snapshot: Snapshot, kind: str, listed: Iterable[Mapping[str, Any]]
) -> list[tuple[Object | None, Object | None]]:
    """Rule event-relist: the changes that take the snapshot's objects of ``kind`` to a
    fresh LIST of it, in key order: added, changed (another uid under the same name: gone,
    then added) and gone. An object the LIST holds as the snapshot does is no change."""
    now = {}
    for obj in listed:
        kept = slim(kind, obj)
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
    (Queue, PodGroup), the standing conditions not among them."""
    out: list[Event] = []
    for old, new in relist_pairs(snapshot, kind, listed):
        out += observe(snapshot, kind, old, new, at)
    if kind in (KIND_QUEUE, KIND_PODGROUP):
        emitted = {identity(e) for e in out}
        out += [e for e in standing(snapshot, at) if identity(e) not in emitted]
    return out
