# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule reclaim-hold: keep the evicted jobs from taking back what was reclaimed (pure).

An evicted Volcano Job restarts (its ``PodEvicted`` policy), and its PodGroup stays
admitted. The victims' GPUs free over several scheduling cycles; in a cycle where fewer
than the waiting job needs are free, Volcano places a restarted victim that fits
(measured: team a's 3-pod job took its GPUs back and team b's job waited). While the
waiting job has not started, the arbiter therefore sets the GPU capability of each
sibling queue it took from to what that queue keeps (``held_capability``: its allocation
less the GPUs taken, never below its deserved), so the restarted victims wait; it puts
the capability back as soon as the job runs, or after ``hold_seconds``, and in any case
before it gives the Lease back. Nothing running is touched: a capability bounds what a
queue may be given, it never evicts, and Volcano does not reclaim from team queues
(rule team-reclaim-by-platform).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from ..common.names import PREFIX
from ..common.quantity import GPU
from .model import QueueState, RunningJob


def held_capability(state: QueueState, taken: int) -> int:
    """Rule reclaim-hold: the GPU capability a victim queue is held at while the waiting
    job has not started, its allocation less ``taken``, never below its deserved."""
    return max(state.deserved, state.allocated_gpus - taken)


def taken_by_queue(victims: Iterable[RunningJob]) -> dict[str, int]:
    """GPUs taken from each victim queue."""
    out: dict[str, int] = {}
    for victim in victims:
        out[victim.queue] = out.get(victim.queue, 0) + victim.gpus
    return out


# On a held queue: why, and the capability to put back (for an operator, should the run
# die before it puts it back).
ANNOTATION_HOLD = PREFIX + "arbiter-hold"


def with_gpu_capability(
    queue: Mapping[str, Any], gpus: int | str | None, hold: str | None = None
) -> dict[str, Any]:
    """The Queue object with its ``spec.capability`` GPUs set to ``gpus`` (None: removed)
    and the hold annotation set to ``hold`` (None: removed), for a replace that keeps its
    resourceVersion."""
    out = copy.deepcopy(dict(queue))
    annotations = out.setdefault("metadata", {}).setdefault("annotations", {}) or {}
    out["metadata"]["annotations"] = annotations
    if hold is None:
        annotations.pop(ANNOTATION_HOLD, None)
    else:
        annotations[ANNOTATION_HOLD] = hold
    capability = out.setdefault("spec", {}).setdefault("capability", {})
    if gpus is None:
        capability.pop(GPU, None)
    else:
        capability[GPU] = str(gpus)
    return out


def gpu_capability(queue: Mapping[str, Any]) -> str | None:
    """The Queue's ``spec.capability`` GPUs as written (None: not set)."""
    value = ((queue.get("spec") or {}).get("capability") or {}).get(GPU)
    return None if value is None else str(value)


def hold_text(job_ref: str, before: str | None) -> str:
    """The hold annotation: the job the room is held for and the capability to put back."""
    return f"held for {job_ref}; GPU capability before: {before if before is not None else 'unset'}"
