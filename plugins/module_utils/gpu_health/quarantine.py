# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Taking an unhealthy GPU node out of service and bringing it back (pure: no I/O).

A quarantined node carries the taint ``platform.io/gpu-unhealthy:NoSchedule``, is
cordoned (``spec.unschedulable``) and holds the annotations ``platform.io/gpu-quarantined-at``,
``platform.io/gpu-quarantine-reason`` and ``platform.io/gpu-quarantine-cordoned`` (whether
the platform cordoned it); ``platform.io/gpu-healthy-since`` says since when its GPUs have
been healthy again. Every write is a JSON merge patch against the version read: a node's
taints are an atomic list, which a server-side apply would take over whole.

* Rule quarantine (``quarantine_patch``).
* Rule quarantine-guard (``guard_refusal``).
* Rule quarantine-release (``release_step``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..common.names import (
    ANNOTATION_GPU_HEALTHY_SINCE,
    ANNOTATION_GPU_QUARANTINE_CORDONED,
    ANNOTATION_GPU_QUARANTINE_REASON,
    ANNOTATION_GPU_QUARANTINED_AT,
    TAINT_GPU_UNHEALTHY,
)
from ..common.quantity import GPU
from ..common.times import as_utc, read_rfc3339, write_rfc3339

# A fleet-wide signal glitch (an exporter upgrade, a Prometheus answering stale series, a
# problem detector misconfigured everywhere) must not cordon the fleet: one failing node
# per run is the usual case, two lets a pair that fail together (one chassis, one switch)
# go in one run; a real wider outage is for a person, who raises the limit.
DEFAULT_MAX_QUARANTINE = 2
DEFAULT_HEALTHY_PERIOD = "30m"
TAINT_EFFECT = "NoSchedule"
ANNOTATIONS = (
    ANNOTATION_GPU_QUARANTINED_AT,
    ANNOTATION_GPU_QUARANTINE_REASON,
    ANNOTATION_GPU_QUARANTINE_CORDONED,
    ANNOTATION_GPU_HEALTHY_SINCE,
)
# The longest reason kept in the annotation (the rest is in the result and the Event).
REASON_MAX = 1000

QUARANTINE = "quarantine"
RELEASE = "release"
MARK_HEALTHY = "mark-healthy"
CLEAR_HEALTHY = "clear-healthy"
HOLD = "hold"


@dataclass(frozen=True)
class NodeAction:
    """What a run does to one node: ``action`` one of quarantine, release, mark-healthy
    (its first healthy run), clear-healthy (unhealthy again), hold (nothing to write);
    ``patch`` the merge patch (None for hold); ``before``/``after`` its taints,
    unschedulable and quarantine annotations."""

    name: str
    action: str
    reasons: tuple[str, ...] = ()
    patch: Mapping[str, Any] | None = None
    before: Mapping[str, Any] = field(default_factory=dict)
    after: Mapping[str, Any] = field(default_factory=dict)
    cordoned_by_platform: bool = False
    since: str = ""
    healthy_since: str = ""


def _meta(node: Mapping[str, Any]) -> Mapping[str, Any]:
    return node.get("metadata") or {}


def annotations_of(node: Mapping[str, Any]) -> Mapping[str, str]:
    return _meta(node).get("annotations") or {}


def gpu_allocatable(node: Mapping[str, Any]) -> int:
    """The node's allocatable ``nvidia.com/gpu`` (0 when none or not a number)."""
    raw = ((node.get("status") or {}).get("allocatable") or {}).get(GPU, "0")
    try:
        return int(str(raw))
    except ValueError:
        return 0


def is_quarantined(node: Mapping[str, Any]) -> bool:
    """The platform quarantined the node (its quarantined-at annotation is there)."""
    return ANNOTATION_GPU_QUARANTINED_AT in annotations_of(node)


def cordoned_by_platform(node: Mapping[str, Any]) -> bool:
    return annotations_of(node).get(ANNOTATION_GPU_QUARANTINE_CORDONED) == "true"


def healthy_since(node: Mapping[str, Any]) -> datetime | None:
    moment = read_rfc3339(annotations_of(node).get(ANNOTATION_GPU_HEALTHY_SINCE))
    return as_utc(moment) if moment is not None else None


def view(node: Mapping[str, Any]) -> dict[str, Any]:
    """What a diff shows of a node: its taints, whether it is cordoned, and the
    quarantine annotations."""
    spec = node.get("spec") or {}
    notes = annotations_of(node)
    return {
        "unschedulable": bool(spec.get("unschedulable")),
        "taints": [dict(t) for t in spec.get("taints") or []],
        "annotations": {k: notes[k] for k in ANNOTATIONS if k in notes},
    }


def _after(before: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    spec = patch.get("spec") or {}
    notes = dict(before["annotations"])
    for key, value in ((patch.get("metadata") or {}).get("annotations") or {}).items():
        if value is None:
            notes.pop(key, None)
        else:
            notes[key] = value
    return {
        "unschedulable": bool(spec.get("unschedulable", before["unschedulable"])),
        "taints": list(spec["taints"] or []) if "taints" in spec else list(before["taints"]),
        "annotations": notes,
    }


def _patch(node: Mapping[str, Any], **parts: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"metadata": {"resourceVersion": _meta(node).get("resourceVersion")}}
    if "annotations" in parts:
        body["metadata"]["annotations"] = parts.pop("annotations")
    if parts:
        body["spec"] = parts
    return body


def _other_taints(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        dict(t)
        for t in (node.get("spec") or {}).get("taints") or []
        if t.get("key") != TAINT_GPU_UNHEALTHY
    ]


def quarantine_patch(
    node: Mapping[str, Any], reasons: Sequence[str], now: datetime
) -> dict[str, Any]:
    """Rule quarantine: an unhealthy GPU node is tainted
    ``platform.io/gpu-unhealthy:NoSchedule`` (its other taints kept), cordoned, and
    annotated with when and why it was quarantined and whether the platform cordoned it
    (a node an admin had cordoned already says "false", so the release never uncordons
    it)."""
    taint = {"key": TAINT_GPU_UNHEALTHY, "value": "true", "effect": TAINT_EFFECT}
    cordoned_already = bool((node.get("spec") or {}).get("unschedulable"))
    return _patch(
        node,
        taints=[*_other_taints(node), taint],
        unschedulable=True,
        annotations={
            ANNOTATION_GPU_QUARANTINED_AT: write_rfc3339(now),
            ANNOTATION_GPU_QUARANTINE_REASON: "; ".join(reasons)[:REASON_MAX],
            ANNOTATION_GPU_QUARANTINE_CORDONED: "false" if cordoned_already else "true",
            ANNOTATION_GPU_HEALTHY_SINCE: None,
        },
    )


def plan_quarantine(node: Mapping[str, Any], reasons: Sequence[str], now: datetime) -> NodeAction:
    """The quarantine of one node (rule quarantine) with its before and after."""
    patch = quarantine_patch(node, reasons, now)
    before = view(node)
    return NodeAction(
        name=str(_meta(node).get("name")),
        action=QUARANTINE,
        reasons=tuple(reasons),
        patch=patch,
        before=before,
        after=_after(before, patch),
        cordoned_by_platform=not before["unschedulable"],
        since=write_rfc3339(now),
    )


def guard_refusal(new: Sequence[str], limit: int) -> str | None:
    """Rule quarantine-guard: at most ``limit`` nodes are newly quarantined in one run
    (nodes quarantined already do not count); more, and the run refuses before any write,
    naming the nodes and the option that allows it. None when the run may go on."""
    if len(new) <= limit:
        return None
    return (
        f"{len(new)} GPU nodes would be quarantined in one run ({', '.join(new)}), more than "
        f"max_quarantine {limit}: a signal that fails on many nodes at once is more likely a "
        "fault of the signal than of the GPUs; nothing was written. Check the nodes, then run "
        f"again with max_quarantine {len(new)} or more to quarantine them"
    )


def release_step(
    node: Mapping[str, Any],
    reasons: Sequence[str],
    now: datetime,
    healthy_period: int,
) -> NodeAction:
    """Rule quarantine-release: a quarantined node stays quarantined while it is unhealthy (its
    healthy-since annotation cleared when it had one); on its first healthy run it is
    marked healthy since now; once healthy continuously for ``healthy_period`` seconds
    its taint and annotations are removed, and it is uncordoned only when the platform
    cordoned it."""
    name = str(_meta(node).get("name"))
    notes = annotations_of(node)
    since = notes.get(ANNOTATION_GPU_QUARANTINED_AT, "")
    ours = cordoned_by_platform(node)
    before = view(node)
    common = {"name": name, "before": before, "cordoned_by_platform": ours, "since": since}
    healthy = healthy_since(node)
    if reasons:
        if ANNOTATION_GPU_HEALTHY_SINCE not in notes:
            return NodeAction(action=HOLD, reasons=tuple(reasons), after=before, **common)
        patch = _patch(node, annotations={ANNOTATION_GPU_HEALTHY_SINCE: None})
        return NodeAction(
            action=CLEAR_HEALTHY, reasons=tuple(reasons), patch=patch,
            after=_after(before, patch), **common,
        )  # fmt: skip
    if healthy is None:
        stamp = write_rfc3339(now)
        patch = _patch(node, annotations={ANNOTATION_GPU_HEALTHY_SINCE: stamp})
        return NodeAction(
            action=MARK_HEALTHY, patch=patch, after=_after(before, patch), healthy_since=stamp,
            **common,
        )  # fmt: skip
    stamp = write_rfc3339(healthy)
    if (now - healthy).total_seconds() < healthy_period:
        return NodeAction(action=HOLD, after=before, healthy_since=stamp, **common)
    parts: dict[str, Any] = {"taints": _other_taints(node) or None}
    if ours:
        parts["unschedulable"] = None
    patch = _patch(node, annotations=dict.fromkeys(ANNOTATIONS), **parts)
    return NodeAction(
        action=RELEASE, patch=patch, after=_after(before, patch), healthy_since=stamp, **common
    )


def replan(
    node: Mapping[str, Any], previous: NodeAction, now: datetime, healthy_period: int
) -> NodeAction:
    """A node's step planned again from the node read after a write conflict: a node
    quarantined meanwhile (another run) is held, not quarantined twice (its record of who
    cordoned it stays); a quarantined node released meanwhile by hand is left alone;
    otherwise the same step over what the node carries now (a taint added meanwhile is
    kept)."""
    state = view(node)
    if is_quarantined(node) == (previous.action == QUARANTINE):
        return NodeAction(previous.name, HOLD, previous.reasons, None, state, state)
    if previous.action == QUARANTINE:
        return plan_quarantine(node, previous.reasons, now)
    return release_step(node, previous.reasons, now, healthy_period)
