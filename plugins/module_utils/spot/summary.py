# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule run-summary for ``spot_capacity`` and ``spot_reclaim``: spot capacity per tenant
old -> new, and the reclaimed jobs with their price, GPUs and the reason."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.summary import did, gpus


def capacity_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    """One line for the pool, one per tenant whose spot capability changes."""
    counts = result.get("counts") or {}
    rows = [r for r in result.get("tenants") or [] if r.get("changed")]
    # Offer unused: the idle GPUs include those bought and not used (spot/offer).
    idle = "idle" if result.get("offer") != "unused" else "unused (bought or not)"
    # Apportionment demand: shares lent to waiting spot gangs (spot/lending).
    shared = "shared" if result.get("apportion") != "demand" else "shared and lent"
    head = (
        f"spot capacity: {gpus(result.get('idle'))} {idle} GPUs of {gpus(result.get('pool'))} "
        f"{shared} by {counts.get('spot_queues', 0)} spot queues"
    )
    if not rows:
        return [f"{head}; every spot capacity {did(check_mode, 'stays', 'would stay')} as it is"]
    lines = [f"{head}; {len(rows)} {did(check_mode, 'changed', 'would change')}:"]
    for row in rows:
        old = "none" if row.get("old") is None else gpus(row["old"])
        lent = row.get("lent")
        lending = "" if not lent else f", {'borrows' if lent > 0 else 'lends'} {abs(lent)}"
        lines.append(
            f"  {row['tenant']}: {old} -> {gpus(row.get('new'))} GPUs ({row.get('queue')}{lending})"
        )
    return lines


def _victim(v: Mapping[str, Any]) -> str:
    price = v.get("price")
    bid = f"bid {price}/GPU-hour" if price not in (None, "") else "no bid"
    return f"{v['namespace']}/{v['name']} ({v.get('gpus', 0)} GPUs, {bid}, queue {v.get('queue')})"


def reclaim_summary_lines(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    """The reclaim: how many GPUs for what, and each victim with its GPUs and price."""
    reason = params.get("demand_reason") or (result.get("reclaim") or {}).get("reason") or ""
    why = f" for {reason}" if reason else ""
    victims = result.get("victims") or []
    if not victims:
        return [
            f"spot reclaim{why}: no spot job {did(check_mode, 'was', 'would be')} deleted "
            f"({result.get('free', 0)} GPUs free, shortfall {result.get('shortfall', 0)})"
        ]
    lines = [
        f"spot reclaim{why}: {did(check_mode, 'deleted', 'would delete')} {len(victims)} spot "
        f"job{'s' if len(victims) != 1 else ''}, {did(check_mode, 'freeing', 'to free')} {result.get('freed', 0)} GPUs "
        f"(shortfall {result.get('shortfall', 0)}), cheapest first:"
    ]
    lines += [f"  {_victim(v)}" for v in victims]
    return lines
