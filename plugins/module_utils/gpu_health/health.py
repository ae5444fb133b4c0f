# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``gpu_health`` through the flow contract (``kube.flow``), its pure steps: the
request, the facts as data and back, the plan (every node's quarantine, hold or release,
and every job on a quarantined node) and what the plan says (no I/O).

The rules are ``signals``' (gpu-unhealthy), ``quarantine``'s (quarantine,
quarantine-guard, release) and ``disruption``'s (quarantine-jobs, quarantine-count);
the reads (``gather``) and the writes (``apply``) are ``gpu_health/service``'s and
``write_io``'s. Offline, ``gathered`` returns the Nodes, the Prometheus series, the
moment they were read (``read_at``) and, when a GPU node is or becomes quarantined, the
Pods, Volcano Jobs and Queues; ``parsed`` plans from such facts, as of ``read_at``.
There is no ``rendered``: an empty cluster has no node to judge.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from ..bringup.rollout import go_duration_seconds
from ..common.errors import FieldError, PlatformValidationError, Refused, raise_if
from ..common.times import as_utc, read_rfc3339, write_rfc3339
from ..kube.flow import fact_lists
from ..workload.pool import node_matches, selector_errors
from .disruption import LEFT_RUNNING, JobAction, disrupted_jobs, jobs_on_nodes, stopped_per_queue
from .quarantine import (
    QUARANTINE,
    RELEASE,
    NodeAction,
    gpu_allocatable,
    guard_refusal,
    is_quarantined,
    plan_quarantine,
    release_step,
)
from .signals import unhealthy_nodes

Objects = tuple[Mapping[str, Any], ...]
_PROM_DURATION = re.compile(r"^([0-9]+(ms|s|m|h|d|w|y))+$")


@dataclass(frozen=True)
class HealthRequest:
    """What a ``gpu_health`` run asks for (``healthy_period`` in seconds)."""

    prometheus_url: str
    timeout: int
    unhealthy_conditions: tuple[str, ...]
    fatal_xids: frozenset[int]
    xid_window: str
    max_quarantine: int
    healthy_period: int
    node_selector: Mapping[str, str]
    history_size: int


@dataclass(frozen=True)
class HealthFacts:
    """The cluster and Prometheus as a run reads them, at ``read_at``. Pods, Volcano Jobs
    and Queues are read only when a GPU node is or becomes quarantined."""

    read_at: datetime
    nodes: Objects = ()
    xid_series: Objects = ()
    row_remap_series: Objects = ()
    pods: Objects = ()
    vcjobs: Objects = ()
    queues: Objects = ()


@dataclass(frozen=True)
class HealthPlan:
    """Every node the run writes or holds, every job on a quarantined node, the pods left
    alone, and each Queue's disrupted count before and after."""

    read_at: datetime
    nodes: tuple[NodeAction, ...]
    jobs: tuple[JobAction, ...]
    unowned: tuple[str, ...]
    counts: Mapping[str, Mapping[str, int]]
    unhealthy: Mapping[str, tuple[str, ...]]
    not_gpu: tuple[str, ...]
    queues: Objects = ()


def _int_errors(params: Mapping[str, Any], key: str, least: int) -> list[FieldError]:
    value = params.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        return [FieldError(key, f"{value!r} must be a whole number, {least} or more")]
    return []


def input_errors(params: Mapping[str, Any]) -> list[FieldError]:
    """Every check before the first request: ``prometheus_url`` an http(s) URL when
    given, ``xid_window`` a PromQL duration, ``healthy_period`` a duration,
    ``fatal_xids`` whole numbers, the limits whole numbers, the node selector (rule
    node-selector)."""
    errors: list[FieldError] = []
    url = params.get("prometheus_url")
    parts = urlsplit(url) if isinstance(url, str) else None
    if url and (parts is None or parts.scheme not in ("http", "https") or not parts.netloc):
        errors.append(
            FieldError(
                "prometheus_url",
                f"{url!r} is not an http(s) URL; for example http://prometheus:9090, or none "
                "to judge by the node conditions only",
            )
        )
    window = params.get("xid_window")
    if not isinstance(window, str) or not _PROM_DURATION.match(window):
        errors.append(FieldError("xid_window", f"{window!r} is not a PromQL duration such as 10m"))
    try:
        go_duration_seconds(params.get("healthy_period"), "healthy_period")
    except PlatformValidationError as exc:
        errors += exc.errors
    for index, xid in enumerate(params.get("fatal_xids") or []):
        if isinstance(xid, bool) or not isinstance(xid, int) or xid < 1:
            errors.append(FieldError(f"fatal_xids[{index}]", f"{xid!r} is not an XID code"))
    errors += _int_errors(params, "max_quarantine", 0)
    errors += _int_errors(params, "history_size", 0)
    errors += _int_errors(params, "timeout", 1)
    return errors + selector_errors(params.get("node_selector") or {})


def parse_health(params: Mapping[str, Any]) -> HealthRequest:
    """The options as a request, or PlatformValidationError naming every broken check."""
    raise_if(input_errors(params))
    return HealthRequest(
        prometheus_url=str(params.get("prometheus_url") or "").rstrip("/"),
        timeout=int(params["timeout"]),
        unhealthy_conditions=tuple(params.get("unhealthy_conditions") or ()),
        fatal_xids=frozenset(int(x) for x in params.get("fatal_xids") or ()),
        xid_window=str(params["xid_window"]),
        max_quarantine=int(params["max_quarantine"]),
        healthy_period=go_duration_seconds(params["healthy_period"], "healthy_period"),
        node_selector=dict(params.get("node_selector") or {}),
        history_size=int(params["history_size"]),
    )


# --- the plan ------------------------------------------------------------------------


def judged(request: HealthRequest, facts: HealthFacts) -> dict[str, tuple[str, ...]]:
    """Rule gpu-unhealthy over the facts' nodes of the node selector."""
    nodes = [n for n in facts.nodes if node_matches(n, request.node_selector)]
    return unhealthy_nodes(
        nodes,
        request.unhealthy_conditions,
        request.fatal_xids,
        facts.xid_series,
        facts.row_remap_series,
    )


def needs_workload(request: HealthRequest, facts: HealthFacts) -> bool:
    """Whether the run reads Pods, Volcano Jobs and Queues: a GPU node is quarantined
    already or unhealthy now."""
    sick = judged(request, facts)
    return any(
        is_quarantined(n) or (gpu_allocatable(n) > 0 and n["metadata"]["name"] in sick)
        for n in facts.nodes
        if node_matches(n, request.node_selector)
    )


def plan_health(request: HealthRequest, facts: HealthFacts) -> HealthPlan:
    """Every node's step (rules quarantine, quarantine-guard, release) and every job's
    on the nodes that stay or become quarantined (rules quarantine-jobs,
    quarantine-count), as of ``facts.read_at``. Refused, before any write, when more
    nodes would be newly quarantined than ``max_quarantine``."""
    now = facts.read_at
    sick = judged(request, facts)
    nodes = sorted(
        (n for n in facts.nodes if node_matches(n, request.node_selector)),
        key=lambda n: str(n["metadata"]["name"]),
    )
    new = [n for n in nodes if not is_quarantined(n) and n["metadata"]["name"] in sick]
    not_gpu = tuple(str(n["metadata"]["name"]) for n in new if gpu_allocatable(n) <= 0)
    new = [n for n in new if gpu_allocatable(n) > 0]
    names = [str(n["metadata"]["name"]) for n in new]
    refusal = guard_refusal(names, request.max_quarantine)
    if refusal:
        raise Refused(refusal, refused=names, max_quarantine=request.max_quarantine)
    actions = [plan_quarantine(n, sick[str(n["metadata"]["name"])], now) for n in new]
    actions += [
        release_step(n, sick.get(str(n["metadata"]["name"]), ()), now, request.healthy_period)
        for n in nodes
        if is_quarantined(n)
    ]
    actions.sort(key=lambda a: a.name)
    held = [a.name for a in actions if a.action != RELEASE]
    jobs, unowned = jobs_on_nodes(facts.pods, facts.vcjobs, facts.queues, held)
    by_queue = {str(q["metadata"]["name"]): q for q in facts.queues}
    counts = {
        name: {
            "before": disrupted_jobs(by_queue[name]),
            "after": disrupted_jobs(by_queue[name]) + n,
        }
        for name, n in stopped_per_queue(jobs).items()
        if name in by_queue
    }
    return HealthPlan(
        now, tuple(actions), tuple(jobs), tuple(unowned), counts, sick, not_gpu, facts.queues
    )


def warnings_of(planned: HealthPlan) -> list[str]:
    """A critical job left running on a quarantined node, and an unhealthy node without
    GPUs, each said."""
    out = [
        f"critical job {j.namespace}/{j.name} ({j.tenant or 'no tenant'}) is left running on "
        f"quarantined node(s) {', '.join(j.nodes)}; move it when its owner agrees"
        for j in planned.jobs
        if j.action == LEFT_RUNNING
    ]
    out += [
        f"node {name} is unhealthy ({'; '.join(planned.unhealthy[name])}) but has no "
        "allocatable nvidia.com/gpu; it is not quarantined"
        for name in planned.not_gpu
    ]
    return out


# --- what the plan says --------------------------------------------------------------


def _node_dict(a: NodeAction) -> dict[str, Any]:
    out: dict[str, Any] = {"node": a.name, "reasons": list(a.reasons)}
    if a.action == QUARANTINE:
        out["cordoned"] = a.cordoned_by_platform
    elif a.action == RELEASE:
        out.update(uncordoned=a.cordoned_by_platform, healthy_since=a.healthy_since)
    else:
        out.update(since=a.since, healthy_since=a.healthy_since or None)
    return out


def report_health(request: HealthRequest, planned: HealthPlan) -> dict[str, Any]:
    """The module's result for the plan."""
    by = {
        kind: [_node_dict(a) for a in planned.nodes if a.action == kind]
        for kind in (QUARANTINE, RELEASE)
    }
    still = [_node_dict(a) for a in planned.nodes if a.action not in (QUARANTINE, RELEASE)]
    jobs = [j.as_dict() for j in planned.jobs]
    writes = [a for a in planned.nodes if a.patch is not None]
    stopped = [j for j in planned.jobs if j.stopped]
    return {
        "changed": bool(writes or stopped),
        "quarantined": by[QUARANTINE],
        "released": by[RELEASE],
        "still_quarantined": still,
        "unhealthy": {name: list(why) for name, why in planned.unhealthy.items()},
        "jobs": jobs,
        "unowned_pods": list(planned.unowned),
        "disrupted": {k: dict(v) for k, v in planned.counts.items()},
        "refused": [],
        "counts": {
            "unhealthy": len(planned.unhealthy),
            "quarantined": len(by[QUARANTINE]),
            "released": len(by[RELEASE]),
            "still_quarantined": len(still),
            "jobs_deleted": sum(j["action"] == "delete" for j in jobs),
            "jobs_evicted": sum(j["action"] == "evict" for j in jobs),
            "jobs_left_running": sum(j["action"] == LEFT_RUNNING for j in jobs),
            "unowned_pods": len(planned.unowned),
        },
        "read_at": write_rfc3339(planned.read_at),
        "diff": diff_of(planned),
    }


def diff_of(planned: HealthPlan) -> dict[str, Any]:
    """Per node written, its taints, unschedulable and quarantine annotations before and
    after; per stopped job, running -> deleted or evicted."""
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    for a in planned.nodes:
        if a.patch is not None:
            before[f"Node/{a.name}"], after[f"Node/{a.name}"] = dict(a.before), dict(a.after)
    for j in planned.jobs:
        if j.stopped:
            key = f"Job/{j.namespace}/{j.name}"
            before[key], after[key] = "running", "deleted" if j.action == "delete" else "evicted"
    return {"before": before, "after": after}


# --- the facts as data ---------------------------------------------------------------


def _kept(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {**obj, "metadata": meta} if "metadata" in obj else dict(obj)


def facts_out(facts: HealthFacts) -> dict[str, Any]:
    """The facts as ``gathered`` returns them: the objects as read (without
    ``managedFields``), the Prometheus series and the moment they were read."""
    return {
        "read_at": write_rfc3339(facts.read_at, micro=True),
        "nodes": [_kept(o) for o in facts.nodes],
        "xid_series": [dict(s) for s in facts.xid_series],
        "row_remap_series": [dict(s) for s in facts.row_remap_series],
        "pods": [_kept(o) for o in facts.pods],
        "jobs": [_kept(o) for o in facts.vcjobs],
        "queues": [_kept(o) for o in facts.queues],
    }


def facts_in(
    request: HealthRequest, data: Mapping[str, Any], now: datetime | None = None
) -> HealthFacts:
    """Facts given as ``gathered`` returned them; without ``read_at``, as of ``now``."""
    nodes, xids, remaps, pods, vcjobs, queues = fact_lists(
        data, "nodes", "xid_series", "row_remap_series", "pods", "jobs", "queues"
    )
    value = data.get("read_at")
    moment = read_rfc3339(value) if isinstance(value, str) else None
    if value is not None and moment is None:
        raise_if([FieldError("facts.read_at", f"{value!r} is not an RFC 3339 time")])
    read_at = as_utc(moment) if moment is not None else (now or datetime.now(UTC))
    return HealthFacts(read_at, nodes, xids, remaps, pods, vcjobs, queues)
