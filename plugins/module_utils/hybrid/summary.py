# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule run-summary for ``node_groups``: each group with its nodes, and the writes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.summary import did


def node_groups_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    """One line per group (its nodes), then how many objects the run wrote."""
    groups = result.get("groups") or {}
    lines = [
        f"node group {group}: {len(nodes)} node{'s' if len(nodes) != 1 else ''}"
        for group, nodes in sorted(groups.items())
    ]
    writes = result.get("writes") or []
    if writes:
        lines.append(
            f"{did(check_mode, 'wrote', 'would write')} {len(writes)} objects (node labels and taints, queue affinities)"
        )
    else:
        lines.append("nodes and queues already match the groups; nothing written")
    return lines
