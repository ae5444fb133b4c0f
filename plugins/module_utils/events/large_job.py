# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule event-large-job (``large_job``): what a large job's PodGroup does. Pure.

``large_job_waiting`` when a PodGroup of PriorityClass ``large-job`` is added Pending or
Inqueue or its phase changes to one of them, ``large_job_running`` when it is added
Running or becomes Running, ``large_job_gone`` when it is deleted. Adds ``queue`` and
``phase``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.names import PODGROUP_RUNNING_PHASE, PODGROUP_WAITING_PHASES
from ..jobs.large_job import LARGE_PRIORITY_CLASS
from .event import LARGE_JOB_GONE, LARGE_JOB_RUNNING, LARGE_JOB_WAITING, Event, platform_event
from .model import KIND_PODGROUP, Snapshot, key_of, mapping, phase_of, queue_name_of, tenant_of


def large(podgroup: Mapping[str, Any] | None) -> bool:
    """A large job's PodGroup: PriorityClass ``large-job`` (what the throttle engages for)."""
    return (
        podgroup is not None
        and mapping(podgroup.get("spec")).get("priorityClassName") == LARGE_PRIORITY_CLASS
    )


def large_event(
    name: str, podgroup: Mapping[str, Any], snapshot: Snapshot, at: str, still: bool = False
) -> Event:
    namespace, pg_name = key_of(podgroup)
    queue, phase = queue_name_of(podgroup), phase_of(podgroup)
    what = {
        LARGE_JOB_WAITING: f"{'is still' if still else 'is'} waiting ({phase}) in queue {queue}",
        LARGE_JOB_RUNNING: f"is running in queue {queue}",
        LARGE_JOB_GONE: f"is gone from queue {queue} (it was {phase})",
    }[name]
    return platform_event(
        name,
        KIND_PODGROUP,
        podgroup,
        tenant_of(namespace, snapshot.queue_facts(queue)),
        f"large job {namespace}/{pg_name} {what}",
        at,
        queue=queue,
        phase=phase,
    )


def large_job(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, snapshot: Snapshot, at: str
) -> list[Event]:
    """Rule event-large-job: a large job's PodGroup added or changed into Pending or Inqueue
    (waiting) or Running (running), or deleted (gone); any other update emits nothing."""
    was = phase_of(old) if old is not None and large(old) else None
    if new is None or not large(new):
        return (
            [large_event(LARGE_JOB_GONE, old, snapshot, at)]
            if old is not None and was is not None
            else []
        )
    phase = phase_of(new)
    if phase == was:
        return []
    if phase in PODGROUP_WAITING_PHASES:
        return [large_event(LARGE_JOB_WAITING, new, snapshot, at)]
    if phase == PODGROUP_RUNNING_PHASE:
        return [large_event(LARGE_JOB_RUNNING, new, snapshot, at)]
    return []
