# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule run-summary for ``gpu_health``: the nodes quarantined, released and still held,
and what happened to each job on them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.summary import did


def health_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    """One line for the run, one per node quarantined or released, one per job stopped or
    left running."""
    counts = result.get("counts") or {}
    head = (
        f"GPU health: {counts.get('unhealthy', 0)} unhealthy node(s), "
        f"{counts.get('quarantined', 0)} {did(check_mode, 'quarantined', 'to quarantine')}, "
        f"{counts.get('released', 0)} {did(check_mode, 'released', 'to release')}, "
        f"{counts.get('still_quarantined', 0)} still quarantined"
    )
    lines = [head]
    for row in result.get("quarantined") or []:
        lines.append(f"  quarantine {row['node']}: {'; '.join(row.get('reasons') or [])}")
    for row in result.get("released") or []:
        how = (
            "uncordoned"
            if row.get("uncordoned")
            else "left cordoned (not cordoned by the platform)"
        )
        lines.append(f"  release {row['node']}: healthy since {row.get('healthy_since')}, {how}")
    for job in result.get("jobs") or []:
        lines.append(
            f"  {job['action']} {job['namespace']}/{job['name']} ({job['class']}, tenant "
            f"{job.get('tenant') or 'none'}) on {', '.join(job.get('nodes') or [])}"
        )
    return lines
