# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``team_queue`` through the flow contract (``kube.flow``), its pure steps: the
request, the facts as data and back, the plan and what it says (no I/O).

The reads (``gather``) and the writes (``apply``) are ``tenants/service``'s. The reads stop
where the plan refuses (``refusal``), so a refused run reads what it read before. Offline:

* ``gathered``: the tenant's Queues and PodGroups, the live queue of a new team's name, the
  parent-queues ConfigMap, the tenant's queue list and its queue-reader ClusterRole;
* ``parsed``: the team added or resized (as ``state: present``) from what ``gathered``
  returned.

No ``rendered``: a team is a child of a tenant's subscription queue that must exist.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..common.errors import PlatformValidationError, raise_if
from ..common.names import QUEUE_TYPE_TEAM, queue_name
from ..common.objects import differs, index_by_name
from ..kube.flow import fact_lists
from ..policy.admission import PARAM_KEY_QUEUES, parent_queues_configmap, tenant_queues_configmap
from ..queues.model import Queue
from ..queues.parent_list import parent_queue_names, updated_queue_list
from ..queues.plan import CREATE, DELETE, UPDATE, QueueStep, queue_steps
from .changes import Changes, ObjectChange, queue_list_stale, step_action, step_manifest
from .inputs import parse_team_queue
from .live import busy_queues
from .rbac import queue_reader
from .tenant_queues import TeamSpec, leaf_queue_types, plan_team_change, queue_name_collisions


@dataclass(frozen=True)
class TeamQueueRequest:
    """One team of a tenant added or resized (``team``) or removed (None)."""

    tenant: str
    name: str
    team: TeamSpec | None
    force: bool


@dataclass(frozen=True)
class TeamQueueFacts:
    """What the run reads, in order: the tenant's Queues; its PodGroups (when it has
    queues); the live queues of the names it is to get and lacks (``taken``); the
    parent-queues ConfigMap, the tenant's queue list and its queue-reader ClusterRole (each
    a list of at most one). None: not read."""

    queues: tuple[Mapping[str, Any], ...] = ()
    podgroups: tuple[Mapping[str, Any], ...] | None = None
    taken: tuple[Mapping[str, Any], ...] | None = None
    parent_list: tuple[Mapping[str, Any], ...] | None = None
    queue_list: tuple[Mapping[str, Any], ...] | None = None
    reader: tuple[Mapping[str, Any], ...] | None = None


@dataclass(frozen=True)
class TeamQueuePlan:
    """The tenant's queues after the change, the queue steps in order, the parent-queues
    list's parents and the names this run decides there, and the queue list and
    queue-reader writes (``access``), with the live objects they are planned from."""

    queues: tuple[Queue, ...]
    steps: tuple[QueueStep, ...]
    live_queues: Mapping[str, Mapping[str, Any]]
    parent_list: Mapping[str, Any] | None
    parents: tuple[str, ...]
    owned: tuple[str, ...]
    access: tuple[ObjectChange, ...]


def parse_team(params: Mapping[str, Any]) -> TeamQueueRequest:
    """The options as a request; raises for a bad tenant or team. ``gathered`` and
    ``parsed`` are the team added or resized."""
    absent = params.get("state", "present") == "absent"
    team = parse_team_queue({**params, "state": "absent" if absent else "present"})
    return TeamQueueRequest(
        tenant=str(params["tenant"]),
        name=str(params["name"]),
        team=team,
        force=bool(params.get("force", False)),
    )


def _one(objects: tuple[Mapping[str, Any], ...] | None) -> Mapping[str, Any] | None:
    return next(iter(objects or ()), None)


def team_queues(request: TeamQueueRequest, facts: TeamQueueFacts) -> list[Queue]:
    """The tenant's queues after the change; raises with every rule it would break."""
    live = index_by_name(facts.queues)
    busy = busy_queues(facts.podgroups or (), live)
    remove = request.name if request.team is None else None
    return plan_team_change(request.tenant, request.team, remove, live, busy, force=request.force)


def new_queue_names(request: TeamQueueRequest, facts: TeamQueueFacts) -> list[str]:
    """The queues the tenant is to get and does not have: one GET each (rule
    queue-name-owned)."""
    live = index_by_name(facts.queues)
    return [q.name for q in team_queues(request, facts) if q.name not in live]


def refusal(request: TeamQueueRequest, facts: TeamQueueFacts) -> Exception | None:
    """What the run refuses from the facts read so far (None: nothing yet); the reads stop
    at it, and the plan raises it."""
    if facts.podgroups is None and facts.queues:
        return None  # the PodGroups come next
    try:
        queues = team_queues(request, facts)
        if facts.taken is not None:
            found = index_by_name(facts.taken)
            raise_if(queue_name_collisions(request.tenant, queues, found))
    except PlatformValidationError as exc:
        return exc
    return None


def access_objects(tenant: str) -> list[tuple[str, str, str, str | None]]:
    """The tenant's queue list and queue-reader ClusterRole: (apiVersion, kind, name,
    namespace) of each, read once before they are planned."""
    manifests = (tenant_queues_configmap(tenant, {}), queue_reader(tenant, [], [])[0])
    return [
        (m["apiVersion"], m["kind"], m["metadata"]["name"], m["metadata"].get("namespace"))
        for m in manifests
    ]


def access_changes(
    tenant: str,
    queues: Sequence[Queue],
    live_list: Mapping[str, Any] | None,
    live_reader: Mapping[str, Any] | None,
) -> list[ObjectChange]:
    """The tenant's queue list (the queue policies' parameter) and the ClusterRole that
    lets it read its queues, naming the queues it has after the change: each that
    differs from the live one, with its action."""
    desired = [
        (tenant_queues_configmap(tenant, leaf_queue_types(queues)), live_list),
        (queue_reader(tenant, [], sorted(q.name for q in queues))[0], live_reader),
    ]
    return [
        (manifest, CREATE if live is None else UPDATE, live)
        for manifest, live in desired
        if live is None or differs(manifest, live) or queue_list_stale(manifest, live)
    ]


def plan(request: TeamQueueRequest, facts: TeamQueueFacts) -> TeamQueuePlan:
    """The change in the order it is written: the subscription queue listed as a parent
    before its first team is created, the queue steps, unlisted after its last team is
    removed, then the tenant's queue list and queue reader."""
    refused = refusal(request, facts)
    if refused is not None:
        raise refused
    queues = team_queues(request, facts)
    live = index_by_name(facts.queues)
    remove = request.name if request.team is None else None
    deletes = [queue_name(request.tenant, QUEUE_TYPE_TEAM, remove)] if remove else []
    parents = parent_queue_names(queues)
    owned = set(live) | {q.name for q in queues}
    access = access_changes(request.tenant, queues, _one(facts.queue_list), _one(facts.reader))
    return TeamQueuePlan(
        queues=tuple(queues),
        steps=tuple(queue_steps(queues, live, deletes)),
        live_queues=live,
        parent_list=_one(facts.parent_list),
        parents=tuple(sorted(set(parents))),
        owned=tuple(sorted(owned)),
        access=tuple(access),
    )


def parent_list_change(
    changes: Changes, live: Mapping[str, Any] | None, parents: Sequence[str], owned: Sequence[str]
) -> Mapping[str, Any] | None:
    """Rule parent-queues-list as ``write_io.sync_parent_queues`` applies it, recorded;
    the ConfigMap as it would be afterwards."""
    manifest = parent_list_manifest(live, parents, owned)
    if manifest is None:
        return live
    changes.record(manifest, CREATE if live is None else UPDATE, live)
    return parent_list_after(live, manifest)


def parent_list_manifest(
    live: Mapping[str, Any] | None, parents: Sequence[str], owned: Sequence[str]
) -> dict[str, Any] | None:
    """The parent-queues ConfigMap listing ``parents`` and not the rest of ``owned``
    (rule parent-queues-list), or None when its value already says that."""
    data = (live or {}).get("data") or {}
    value = updated_queue_list(data.get(PARAM_KEY_QUEUES), parents, owned)
    if value is None:
        return None
    manifest = parent_queues_configmap()
    manifest["data"] = {PARAM_KEY_QUEUES: value}
    return manifest


def parent_list_after(
    live: Mapping[str, Any] | None, manifest: Mapping[str, Any]
) -> dict[str, Any]:
    """The ConfigMap as it is once ``manifest``'s value is written over ``live``."""
    data = (live or {}).get("data") or {}
    return {**(live or manifest), "data": {**data, **manifest["data"]}}


def report(request: TeamQueueRequest, planned: TeamQueuePlan) -> dict[str, Any]:
    """What the change does, as a check-mode run says it: the objects in order, the diff."""
    changes = Changes()
    after = parent_list_change(changes, planned.parent_list, planned.parents, planned.parents)
    for step in planned.steps:
        if step.final or step.action == DELETE:
            live = planned.live_queues.get(step.name)
            changes.record(step_manifest(step), step_action(step, live), live)
    parent_list_change(changes, after, planned.parents, planned.owned)
    for manifest, action, live in planned.access:
        changes.record(manifest, action, live)
    return {"changed": changes.changed, "objects": changes.objects, "diff": changes.diff()}


FACT_KEYS = ("queues", "podgroups", "taken", "parent_queues", "queue_list", "queue_reader")


def facts_out(facts: TeamQueueFacts) -> dict[str, Any]:
    read = (
        facts.queues,
        facts.podgroups,
        facts.taken,
        facts.parent_list,
        facts.queue_list,
        facts.reader,
    )
    return {
        key: [dict(o) for o in objects]
        for key, objects in zip(FACT_KEYS, read, strict=True)
        if objects is not None
    }


def facts_in(request: TeamQueueRequest, data: Mapping[str, Any]) -> TeamQueueFacts:
    """Facts given as ``gathered`` returned them (a key left out: not read)."""
    (queues,) = fact_lists(data, "queues")
    rest = [
        fact_lists(data, key)[0] if data.get(key) is not None else None for key in FACT_KEYS[1:]
    ]
    return TeamQueueFacts(queues, *rest)
