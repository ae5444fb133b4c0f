# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule stop-count (pure: no I/O): a Queue counts, ever, the jobs a platform action
stopped in it, one annotation per action, which kube-state-metrics exports so that the
tenant's alert route hears of each (rule disruption-count, ``observability/disruptions``):

* the spot reclaim's ``platform.io/spot-reclaimed-jobs`` (rule spot-reclaim-count),
* the queue arbiter's ``platform.io/arbiter-evicted-jobs`` (rule arbiter-eviction-count),
* a GPU quarantine's ``platform.io/gpu-quarantine-disrupted-jobs`` (rule quarantine-count).

A count is raised in the run that stops the jobs, by a merge patch made against the
version read: a concurrent change is a conflict, and the count is read again rather than
lost (``kube/run_record.raise_stop_counts`` writes it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any


def stopped_jobs(queue: Mapping[str, Any], annotation: str) -> int:
    """Rule stop-count: the Queue's count so far in ``annotation``; missing, or not a whole
    number of 0 or more, counts 0, so a hand-edited value restarts the count instead of
    stopping it."""
    raw = ((queue.get("metadata") or {}).get("annotations") or {}).get(annotation)
    text = raw.strip() if isinstance(raw, str) else ""
    return int(text) if text.isascii() and text.isdigit() else 0


def per_queue(queues: Iterable[object]) -> dict[str, int]:
    """Rule stop-count: how many stopped jobs each Queue counts, by name, from the queue
    name of each (empty names count nothing)."""
    return dict(sorted(Counter(str(q) for q in queues if q).items()))


def raised_count(queue: Mapping[str, Any], annotation: str, jobs: int) -> dict[str, int]:
    """Rule stop-count: the Queue's count before and after ``jobs`` more stopped jobs."""
    before = stopped_jobs(queue, annotation)
    return {"before": before, "after": before + jobs}


def count_patch(queue: Mapping[str, Any], annotation: str, jobs: int) -> dict[str, Any]:
    """Rule stop-count: the merge patch that adds ``jobs`` to the Queue's count, against
    the version read."""
    meta = queue.get("metadata") or {}
    return {
        "metadata": {
            "resourceVersion": meta.get("resourceVersion"),
            "annotations": {annotation: str(raised_count(queue, annotation, jobs)["after"])},
        }
    }
