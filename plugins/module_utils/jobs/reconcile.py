# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``large_job_throttle`` through the flow contract (``kube.flow``), its pure steps:
the request, the facts as data and back, the plan (every namespace's throttle ConfigMap
after reconciling) and what the plan says (no I/O).

The rules are ``throttle``'s (throttle-state, throttle-reconcile, throttle-engage,
tenant-namespace-live) and ``large_job``'s (throttle-large-job, throttle-can-help); the
reads (``gather``) and the writes (``apply``) are ``jobs/service``'s and ``throttle_io``'s.
Offline, ``gathered`` returns the tenant Namespaces, PodGroups, Volcano Jobs and throttle
ConfigMaps, the moment they were read (``read_at``) and, when an admitted large job waits,
what rule throttle-can-help judges it by (Nodes, unfinished Pods, Queues, PVCs,
HyperNodes); ``parsed`` plans the reconcile from such facts, as of ``read_at``. There is
no ``rendered``: an empty cluster has no tenant namespace to reconcile.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..common.errors import FieldError, raise_if
from ..common.names import LABEL_MANAGED_BY, LABEL_TENANT, MANAGED_BY
from ..common.quantity import GPU
from ..common.times import as_utc, read_rfc3339, write_rfc3339
from ..kube.flow import fact_lists
from ..topology.manifests import tree_from_manifests
from ..topology.tree import node_infos
from ..workload.pool import allocated_from_pods, pool_from_nodes, pool_node_resources
from .feasibility import Supply, chain_of, claim_names, queue_limits, required_groups, usable_gpus
from .large_job import (
    LargeJob,
    Room,
    cannot_help,
    is_large_podgroup,
    large_jobs,
    largest_domains,
    preemptible_gpus,
)
from .throttle import (
    CONFIGMAP,
    Change,
    check_reconcile_input,
    not_engaged,
    plan_namespace,
    reconcile_report,
    unknown_namespace_errors,
)

Objects = tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class ThrottleRequest:
    """What a ``large_job_throttle`` run asks for."""

    timeout: int
    namespaces: tuple[str, ...] = ()


@dataclass(frozen=True)
class RoomFacts:
    """What rule throttle-can-help judges the waiting admitted large jobs by: the Nodes,
    the unfinished Pods, the Queues, the PVCs (None: not read, no waiting job mounts
    any) and the HyperNodes (None: not read, no waiting job has a hard topology)."""

    nodes: Objects = ()
    pods: Objects = ()
    queues: Objects = ()
    claims: Objects | None = None
    hypernodes: Objects | None = None


@dataclass(frozen=True)
class ThrottleFacts:
    """The cluster as a reconcile reads it, at ``read_at``. ``room`` None: not read (no
    admitted large job waits) or this identity may not read it."""

    read_at: datetime
    namespaces: Objects = ()
    podgroups: Objects = ()
    vcjobs: Objects = ()
    configmaps: Objects = ()
    room: RoomFacts | None = None


@dataclass(frozen=True)
class ThrottlePlan:
    """Every reconciled namespace's change, in write order; the namespaces whose ConfigMap
    is not the platform's; the waiting large jobs the throttle does not hold for."""

    changes: tuple[Change, ...]
    skipped: tuple[str, ...]
    turned_away: tuple[dict[str, str], ...]


def parse_throttle(params: Mapping[str, Any]) -> ThrottleRequest:
    """The options as a request; raises for a negative timeout or a namespace that is not
    a tenant's (rule tenant-namespace), before any connection."""
    check_reconcile_input(params)
    return ThrottleRequest(
        timeout=int(params["timeout"]), namespaces=tuple(params.get("namespaces") or ())
    )


# --- what the reads decide (used by gather too, so that it reads what it read before) ---


def tenants_of(namespaces: Iterable[Mapping[str, Any]], only: Sequence[str]) -> dict[str, str]:
    """Namespace -> tenant of the tenant Namespaces (all, or ``only`` these)."""
    wanted = set(only)
    out = {}
    for ns in namespaces:
        meta = ns.get("metadata") or {}
        if wanted and meta.get("name") not in wanted:
            continue
        out[meta["name"]] = (meta.get("labels") or {})[LABEL_TENANT]
    return out


def has_large_podgroup(podgroups: Iterable[Mapping[str, Any]], namespaces: Iterable[str]) -> bool:
    """Whether the Volcano Jobs are read: only a large-job PodGroup needs them."""
    wanted = set(namespaces)
    return any(is_large_podgroup(pg, wanted) for pg in podgroups)


def large_jobs_of(
    podgroups: Iterable[Mapping[str, Any]],
    namespaces: Iterable[str],
    vcjobs: Iterable[Mapping[str, Any]],
) -> list[LargeJob]:
    """The large jobs of ``namespaces`` (none without a large-job PodGroup)."""
    podgroups = list(podgroups)
    if not has_large_podgroup(podgroups, namespaces):
        return []
    return large_jobs(podgroups, set(namespaces), vcjobs)


def split_configmaps(configmaps: Iterable[Mapping[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """(namespace -> managed throttle ConfigMap, namespaces whose ConfigMap is not managed)."""
    managed: dict[str, Any] = {}
    foreign: list[str] = []
    for cm in configmaps:
        meta = cm["metadata"]
        if meta["name"] != CONFIGMAP:
            continue
        if (meta.get("labels") or {}).get(LABEL_MANAGED_BY) == MANAGED_BY:
            managed[meta["namespace"]] = cm
        else:
            foreign.append(meta["namespace"])
    return managed, sorted(foreign)


def supplies_from(
    jobs: Sequence[LargeJob],
    nodes: Sequence[Mapping[str, Any]],
    queues: Iterable[Mapping[str, Any]],
    claims: Iterable[Mapping[str, Any]] | None,
) -> dict[str, Supply]:
    """What rule job-never-runs judges each waiting large job by."""
    if not jobs:
        return {}
    by_name = {q["metadata"]["name"]: q for q in queues}
    limits = queue_limits(by_name.values())
    mounted = claim_names(list(claims)) if claims is not None else {}
    return {
        j.uid: Supply(
            chain=chain_of(limits, j.queue),
            node_gpus=usable_gpus(nodes, required_groups(by_name, j.queue), j.local_only),
            claims=mounted.get(j.namespace, frozenset()),
        )
        for j in jobs
    }


def room_from(
    facts: RoomFacts, jobs: Sequence[LargeJob], vcjobs: Iterable[Mapping[str, Any]]
) -> Room:
    """What preemption could give the waiting admitted large jobs ``jobs``."""
    nodes = list(facts.nodes)
    supplies = supplies_from(jobs, nodes, facts.queues, facts.claims)
    pool, members = pool_from_nodes(nodes, None)
    held, _leaving = allocated_from_pods(list(facts.pods), members)
    per_node = pool_node_resources(nodes)
    domains = None
    if any(j.hard_tier is not None for j in jobs) and facts.hypernodes is not None:
        tree, _errors = tree_from_manifests(list(facts.hypernodes))
        gpus = {name: int(r[GPU]) for name, r in per_node.items()}
        domains = largest_domains(tree, node_infos(nodes), gpus)
    pool_gpus = int(pool[GPU])
    return Room(
        pool_gpus=pool_gpus,
        free_gpus=max(0, pool_gpus - int(held[GPU])),
        preemptible=preemptible_gpus(vcjobs),
        domains=domains,
        nodes=list(per_node.values()),
        supplies=supplies,
    )


# --- the plan ------------------------------------------------------------------------


def plan_throttle(request: ThrottleRequest, facts: ThrottleFacts) -> ThrottlePlan:
    """Every tenant namespace's throttle after reconciling (rules tenant-namespace-live,
    throttle-large-job, throttle-can-help, throttle-state), as of ``facts.read_at``.
    Every waiting job is judged, an engaged one too: one that can no longer be helped
    (enqueue never admitted it) is released."""
    now = facts.read_at
    namespaces = tenants_of(facts.namespaces, request.namespaces)
    raise_if(unknown_namespace_errors(list(request.namespaces), namespaces))
    jobs = large_jobs_of(facts.podgroups, namespaces, facts.vcjobs)
    configmaps, foreign = split_configmaps(facts.configmaps)
    waiting = [j for j in jobs if j.waiting]
    room = room_from(facts.room, waiting, facts.vcjobs) if waiting and facts.room else None
    blocked = {j.uid: why for j in waiting if (why := cannot_help(j, room, now))}
    changes = tuple(
        plan_namespace(ns, tenant, configmaps.get(ns), jobs, now, request.timeout, blocked)
        for ns, tenant in sorted(namespaces.items())
        if ns not in foreign
    )
    return ThrottlePlan(
        changes=changes,
        skipped=tuple(ns for ns in foreign if ns in namespaces),
        turned_away=tuple(not_engaged(jobs, blocked)),
    )


def report_throttle(request: ThrottleRequest, planned: ThrottlePlan) -> dict[str, Any]:
    """The module's result for the plan: engaged, released, expired, not_engaged, skipped,
    throttles, changed and diff."""
    return reconcile_report(list(planned.changes), list(planned.skipped), list(planned.turned_away))


# --- the facts as data ---------------------------------------------------------------


def _kept(obj: Mapping[str, Any]) -> dict[str, Any]:
    """An object without the server's bookkeeping of field managers."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {**obj, "metadata": meta}


def _out(objects: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [_kept(o) for o in objects]


def facts_out(facts: ThrottleFacts) -> dict[str, Any]:
    """The facts as ``gathered`` returns them: the objects as read (without
    ``managedFields``) and the moment they were read; the room's lists only when read."""
    out: dict[str, Any] = {
        "read_at": write_rfc3339(facts.read_at, micro=True),
        "namespaces": _out(facts.namespaces),
        "podgroups": _out(facts.podgroups),
        "jobs": _out(facts.vcjobs),
        "configmaps": _out(facts.configmaps),
    }
    room = facts.room
    if room is not None:
        out.update(nodes=_out(room.nodes), pods=_out(room.pods), queues=_out(room.queues))
        if room.claims is not None:
            out["persistentvolumeclaims"] = _out(room.claims)
        if room.hypernodes is not None:
            out["hypernodes"] = _out(room.hypernodes)
    return out


def _read_at(data: Mapping[str, Any], now: datetime) -> datetime:
    value = data.get("read_at")
    if value is None:
        return now
    moment = read_rfc3339(value) if isinstance(value, str) else None
    if moment is None:
        raise_if([FieldError("facts.read_at", f"{value!r} is not an RFC 3339 time")])
    return as_utc(moment)


def facts_in(
    request: ThrottleRequest, data: Mapping[str, Any], now: datetime | None = None
) -> ThrottleFacts:
    """Facts given as ``gathered`` returned them; without ``read_at``, as of ``now``. The
    room is there when ``nodes`` is."""
    namespaces, podgroups, vcjobs, configmaps = fact_lists(
        data, "namespaces", "podgroups", "jobs", "configmaps"
    )
    room = None
    if "nodes" in data:
        nodes, pods, queues = fact_lists(data, "nodes", "pods", "queues")
        claims, hypernodes = fact_lists(data, "persistentvolumeclaims", "hypernodes")
        room = RoomFacts(
            nodes,
            pods,
            queues,
            claims if "persistentvolumeclaims" in data else None,
            hypernodes if "hypernodes" in data else None,
        )
    return ThrottleFacts(
        _read_at(data, now or datetime.now(UTC)),
        namespaces,
        podgroups,
        vcjobs,
        configmaps,
        room,
    )
