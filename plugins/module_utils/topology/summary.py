# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule run-summary for ``topology``: the HyperNodes created, updated and deleted, and
the nodes no leaf HyperNode holds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.summary import count, did, names


def sync_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    """One line for the tree's changes, one for the nodes left out of it."""
    parts = []
    for key, done, would in (
        ("created", "created", "would create"),
        ("updated", "updated", "would update"),
        ("deleted", "deleted", "would delete"),
    ):
        if result.get(key):
            parts.append(f"{did(check_mode, done, would)} {names(result[key])}")
    unchanged = len(result.get("unchanged") or [])
    if parts:
        lines = [f"HyperNodes: {'; '.join(parts)} ({unchanged} unchanged)"]
    else:
        lines = [f"HyperNodes: the {unchanged} in the tree match the topology; nothing to change"]
    if result.get("unplaced_nodes"):
        lines.append(f"nodes in no leaf HyperNode: {names(result['unplaced_nodes'])}")
    return lines


def hypernode_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    """One line: the HyperNode, its tier and members as asked, and what the run did to it."""
    name = params.get("name")
    action = result.get("action") or "none"
    if action == "none":
        if params.get("state") == "absent":
            return [f"HyperNode {name}: not in the cluster; nothing to delete"]
        return [f"HyperNode {name}: as asked already; nothing to change"]
    verb = {"created": "create", "updated": "update", "deleted": "delete"}.get(action, action)
    done = did(check_mode, action, f"would {verb}")
    if action == "deleted":
        return [f"HyperNode {name}: {done}"]
    members = params.get("members") or []
    kinds = names(sorted({str(m.get("type")) for m in members}))
    return [
        f"HyperNode {name}: {done} (tier {params.get('tier')}, "
        f"{count(len(members), 'member')} of type {kinds})"
    ]


def render_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    """The tree drawn (its HyperNodes, the rules it breaks, the nodes left out), then the
    files: written, already as drawn, or (check mode, rendered, parsed) would be written."""
    errors = result.get("errors") or []
    kept = "keeps every topology rule" if not errors else f"breaks {count(len(errors), 'rule')}"
    lines = [f"topology drawn: {count(len(result.get('hypernodes') or []), 'HyperNode')}; {kept}"]
    if result.get("unplaced_nodes"):
        lines.append(f"nodes in no leaf HyperNode: {names(result['unplaced_nodes'])}")
    files = result.get("files") or []
    if files:
        if check_mode:
            lines.append(f"would write: {names(files)}")
        elif result.get("changed"):
            lines.append(f"files written: {names(files)}")
        else:
            lines.append(f"files already as drawn: {names(files)}")
    return lines
