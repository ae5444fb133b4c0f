# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule arbiter-eviction-count (pure: no I/O): each Queue counts the jobs the queue
arbiter evicted from it, ever, in its annotation ``platform.io/arbiter-evicted-jobs``,
which kube-state-metrics exports (``platform_queue_arbiter_evicted_jobs``) so that the
tenant's alert route hears of each eviction (alert ``ArbiterJobsEvicted``). Kept as the
spot reclaim keeps its count (rule stop-count, ``common/stop_counts``): a merge patch against
the version read, raised in the run that evicts; ``arbiter/write_io.count_evictions`` writes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..common import stop_counts
from ..common.names import ANNOTATION_ARBITER_EVICTED


def evicted_jobs(queue: Mapping[str, Any]) -> int:
    """Rule arbiter-eviction-count: the jobs the arbiter evicted from this Queue so far, its
    ``platform.io/arbiter-evicted-jobs`` annotation (rule stop-count)."""
    return stop_counts.stopped_jobs(queue, ANNOTATION_ARBITER_EVICTED)


def evictions_per_queue(victims: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many of the victims (as the result names them) each Queue loses, by name."""
    return stop_counts.per_queue(v.get("queue") for v in victims)


def raised_count(queue: Mapping[str, Any], jobs: int) -> dict[str, int]:
    """The Queue's count before and after ``jobs`` more evictions."""
    return stop_counts.raised_count(queue, ANNOTATION_ARBITER_EVICTED, jobs)


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
