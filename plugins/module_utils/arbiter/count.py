# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule arbiter-eviction-count (pure: no I/O): each Queue counts the jobs the queue
arbiter evicted from it, ever, in its annotation ``platform.io/arbiter-evicted-jobs``,
which kube-state-metrics exports (``platform_queue_arbiter_evicted_jobs``) so that the
tenant's alert route hears of each eviction (alert ``ArbiterJobsEvicted``). Kept as the
spot reclaim keeps its count (rule spot-reclaim-count): a merge patch against the version
read, raised in the run that evicts; ``arbiter/write_io.count_evictions`` writes it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from ..common.names import ANNOTATION_ARBITER_EVICTED


def evicted_jobs(queue: Mapping[str, Any]) -> int:
    """Rule arbiter-eviction-count: the jobs the arbiter evicted from this Queue so far (its
    ``platform.io/arbiter-evicted-jobs`` annotation; missing or not a whole number of 0 or
    more counts 0, so a hand-edited value restarts the count instead of stopping it)."""
    raw = ((queue.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_ARBITER_EVICTED)
    text = raw.strip() if isinstance(raw, str) else ""
    return int(text) if text.isascii() and text.isdigit() else 0


def evictions_per_queue(victims: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many of the victims (as the result names them) each Queue loses, by name."""
    return dict(sorted(Counter(str(v["queue"]) for v in victims if v.get("queue")).items()))


def raised_count(queue: Mapping[str, Any], jobs: int) -> dict[str, int]:
    """The Queue's count before and after ``jobs`` more evictions."""
    before = evicted_jobs(queue)
    return {"before": before, "after": before + jobs}


def eviction_count_patch(queue: Mapping[str, Any], jobs: int) -> dict[str, Any]:
    """The merge patch that adds ``jobs`` to the Queue's count, made against the version
    read (a concurrent change, such as Volcano's status, is a conflict, and the count is
    read again rather than lost)."""
    meta = queue.get("metadata") or {}
    return {
        "metadata": {
            "resourceVersion": meta.get("resourceVersion"),
            "annotations": {ANNOTATION_ARBITER_EVICTED: str(raised_count(queue, jobs)["after"])},
        }
    }


def counts_to_raise(
    queues: Iterable[Mapping[str, Any]], victims: Iterable[Mapping[str, Any]]
) -> dict[str, dict[str, int]]:
    """Check mode: each victim queue's count now and after the evictions, by queue, from
    the Queues the run read (a queue not among them counts nothing)."""
    by_name = {str((q.get("metadata") or {}).get("name")): q for q in queues}
    return {
        name: raised_count(by_name[name], jobs)
        for name, jobs in evictions_per_queue(victims).items()
        if name in by_name
    }
