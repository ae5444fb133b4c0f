# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Objects as a plan reads them: a Node or a Queue with only the fields the platform's
rules look at, for a module's ``gathered`` answer (small enough to keep, review and hand
back to ``parsed``) and read back unchanged by the same rules (pure: no I/O)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    return {"name": meta.get("name", ""), "labels": dict(meta.get("labels") or {})}


def node_fact(node: Mapping[str, Any]) -> dict[str, Any]:
    """A Node's name, labels, ``spec.unschedulable``, Ready condition and allocatable:
    what the pool rules (``workload/pool``) read."""
    status = node.get("status") or {}
    ready = [
        {"type": c.get("type"), "status": c.get("status")}
        for c in status.get("conditions") or []
        if isinstance(c, Mapping) and c.get("type") == "Ready"
    ]
    spec = node.get("spec") or {}
    return {
        "metadata": _meta(node),
        "spec": {"unschedulable": bool(spec.get("unschedulable"))},
        "status": {"allocatable": dict(status.get("allocatable") or {}), "conditions": ready},
    }


def queue_fact(queue: Mapping[str, Any]) -> dict[str, Any]:
    """A Queue's name, labels, spec and allocated: what the queue and capacity rules read."""
    status = queue.get("status") or {}
    return {
        "metadata": _meta(queue),
        "spec": dict(queue.get("spec") or {}),
        "status": {"allocated": dict(status.get("allocated") or {})},
    }
