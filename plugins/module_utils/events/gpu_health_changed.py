# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule event-gpu-health-changed (``gpu_health_changed``): a GPU node's GPUs fail or
recover. Pure.

A node's GPUs have failed while one of its conditions of the GPU-fault types (the
snapshot's ``gpu_unhealthy_conditions``, the source's argument of that name, by default
``GpuUnhealthy`` as module ``gpu_health`` reads it) has status ``True``.
``gpu_health_changed`` when a GPU node (allocatable ``nvidia.com/gpu`` above 0 before or
after) is added with its GPUs failed or its GPUs fail (``change: unhealthy``), or when
every such condition stops being True or is removed (``change: healthy``); one event per
change, none while the node stays as it was (another condition type failing beside the
first, a condition's message or heartbeat) and none for a node removed. Adds ``change``,
``conditions`` (the types True now, sorted; empty for ``healthy``) and ``gpus``.

Rule event-standing (``events.rules.standing``) emits ``unhealthy`` again, on each resync
and re-list, for a GPU node whose GPUs have failed and that does not carry the taint
``platform.io/gpu-unhealthy`` yet (``unquarantined``): the quarantine is still to do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..common.names import TAINT_GPU_UNHEALTHY
from .event import GPU_HEALTH_CHANGED, Event, platform_event
from .model import KIND_NODE, Snapshot, key_of, mapping
from .pool_changed import node_gpus

UNHEALTHY = "unhealthy"
HEALTHY = "healthy"


def failing(node: Mapping[str, Any] | None, types: Iterable[str]) -> tuple[str, ...]:
    """The node's conditions of the types ``types`` whose status is True, sorted, each
    once (none for None)."""
    wanted = set(types)
    conditions = mapping(mapping(node).get("status")).get("conditions")
    if not isinstance(conditions, list):
        return ()
    return tuple(
        sorted(
            {
                c["type"]
                for c in conditions
                if isinstance(c, Mapping)
                and c.get("type") in wanted
                and isinstance(c.get("type"), str)
                and c.get("status") == "True"
            }
        )
    )


def tainted(node: Mapping[str, Any]) -> bool:
    """The node carries the quarantine's taint ``platform.io/gpu-unhealthy``."""
    taints = mapping(node.get("spec")).get("taints")
    return isinstance(taints, list) and any(
        isinstance(t, Mapping) and t.get("key") == TAINT_GPU_UNHEALTHY for t in taints
    )


def gpu_health_event(
    node: Mapping[str, Any], change: str, conditions: tuple[str, ...], at: str, still: bool = False
) -> Event:
    name = key_of(node)[1]
    if change == UNHEALTHY:
        what = f"{'are still' if still else 'have'} failed ({', '.join(conditions)})"
        what += ", and it is not quarantined yet" if still else ""
    else:
        what = "are healthy again"
    return platform_event(
        GPU_HEALTH_CHANGED,
        KIND_NODE,
        node,
        "",
        f"the GPUs of GPU node {name} {what}",
        at,
        change=change,
        conditions=list(conditions),
        gpus=node_gpus(node),
    )


def gpu_health_changed(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, snapshot: Snapshot, at: str
) -> list[Event]:
    """Rule event-gpu-health-changed: a GPU node (allocatable GPUs above 0 before or after)
    added with a GPU-fault condition True or one turning True (unhealthy), or its last one
    no longer True or removed (healthy); a removed node emits nothing."""
    if new is None or max(node_gpus(old), node_gpus(new)) <= 0:
        return []
    types = snapshot.gpu_unhealthy_conditions
    was, now = failing(old, types), failing(new, types)
    if now and not was:
        return [gpu_health_event(new, UNHEALTHY, now, at)]
    if was and not now:
        return [gpu_health_event(new, HEALTHY, now, at)]
    return []


def unquarantined(snapshot: Snapshot, at: str) -> list[Event]:
    """For rule event-standing: the GPU nodes whose GPUs have failed and that do not carry
    the taint ``platform.io/gpu-unhealthy`` yet, in key order."""
    out = []
    for node in snapshot.all(KIND_NODE):
        now = failing(node, snapshot.gpu_unhealthy_conditions)
        if now and node_gpus(node) > 0 and not tainted(node):
            out.append(gpu_health_event(node, UNHEALTHY, now, at, still=True))
    return out
