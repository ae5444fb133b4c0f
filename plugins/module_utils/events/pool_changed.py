# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule event-pool-changed (``pool_changed``): a change of the GPU nodes' pool. Pure.

``pool_changed`` when a GPU node (allocatable ``nvidia.com/gpu`` above 0 before or after)
is added or removed, cordoned or uncordoned, its allocatable GPUs change or it becomes
Ready or not; one event per change. Adds ``change`` (added, removed, cordoned,
uncordoned, allocatable, ready, not-ready) and ``gpus`` (its allocatable GPUs, before it
was removed for ``removed``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .event import POOL_CHANGED, Event, platform_event
from .model import KIND_NODE, READY, Snapshot, key_of, mapping, whole_gpus


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
