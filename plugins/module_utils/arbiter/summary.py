# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule run-summary for ``queue_arbiter``: its decision for the waiting job, and why."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.summary import did

_DECISIONS = {
    "preempt": ("preempted", "would preempt"),
    "reclaim": ("reclaimed from sibling teams", "would reclaim from sibling teams"),
}


def arbiter_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    """The decision, the victims with their GPUs, and the reason in the arbiter's words."""
    job = result.get("job")
    decision = result.get("decision") or "none"
    waiting = result.get("waiting") or []
    if not job:
        return ["queue arbiter: no job is held back by a queue's capability; nothing to do"]
    reason = result.get("reason") or ""
    if decision in _DECISIONS:
        victims = result.get("victims") or []
        lines = [
            f"queue arbiter: {did(check_mode, *_DECISIONS[decision])} for {job} "
            f"(needs {result.get('need', 0)} GPUs): {did(check_mode, 'evicted', 'would evict')} "
            f"{len(victims)} job{'s' if len(victims) != 1 else ''} holding {result.get('freed', 0)} GPUs"
        ]
        lines += [
            f"  {v['namespace']}/{v['name']} ({v.get('gpus', 0)} GPUs, {v.get('priority_class')}, queue {v.get('queue')})"
            for v in victims
        ]
    elif decision == "refuse":
        lines = [f"queue arbiter: cannot make room for {job} (needs {result.get('need', 0)} GPUs)"]
    else:
        lines = [f"queue arbiter: nothing to do for {job}"]
    if reason:
        lines.append(f"why: {reason}")
    if waiting:
        lines.append(f"waiting after it: {', '.join(waiting)}")
    return lines
