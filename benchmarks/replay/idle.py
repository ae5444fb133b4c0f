# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why GPUs stood idle while jobs waited, and why each job waited, one look at a time.
Pure: the replayer hands each look's Queues, its waiting jobs and its idle GPUs here.

Rule waiting-cause (``why_waiting``), the first that applies to a job that has not run:

- **held at submission**: the platform's submission has not let it in yet (the
  large-job throttle holds its queue, or its pay-as-you-go purchase is under way);
- **awaiting the job controller**: Volcano's job controller has not given it a status;
- **<billing> queue full**: its queue, or one of its ancestors, has less room
  (capability less what Volcano says it holds) than the job asks: a team or a
  subscription at its capability, a pay-as-you-go grant too small, spot offered no more;
- **not admitted by Volcano's enqueue**: its queues have room, and its PodGroup is still
  Pending: Volcano's enqueue action counts the jobs it has admitted and not yet placed
  against the queue's capability too;
- **larger than the idle GPUs**: its queues have room, but fewer GPUs are idle than the
  gang asks;
- **idle GPUs spread over nodes**: enough GPUs are idle, but its pods do not fit the
  nodes' idle GPUs (rule gang-fits-nodes, first fit, largest pod first);
- **not yet placed**: its queues have room and its pods fit the nodes' idle GPUs, and the
  scheduler has not placed it yet (its next cycle, or the network tier it must stay
  under).

Rule idle-attribution (``idle_by_cause``): the idle GPUs of a look go to the waiting jobs
in submission order, each taking up to what it asks, under its cause; what no waiting
job asks for is "no job waiting". So a figure under a cause is GPUs that sat idle while a
job that asked for them waited for that reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ansible_collections.gpucloud.platform.plugins.module_utils.arbiter.model import (
    ancestry,
    queue_states,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.workload.fit import (
    gang_fits_nodes,
)

STAGE_SUBMITTING = "submitting"  # in the platform's submission, not on the cluster yet
STAGE_CONTROLLER = "controller"  # on the cluster, no status from Volcano's job controller
STAGE_PENDING = "pending"  # its PodGroup is Pending: Volcano's enqueue has not admitted it
STAGE_QUEUED = "queued"  # its PodGroup is admitted (Inqueue); its pods are not all running

HELD_AT_SUBMISSION = "held at submission"
AWAITING_CONTROLLER = "awaiting the job controller"
NOT_ADMITTED = "not admitted by Volcano's enqueue"
LARGER_THAN_IDLE = "larger than the idle GPUs"
SPREAD_OVER_NODES = "idle GPUs spread over nodes"
NOT_YET_PLACED = "not yet placed"
NO_JOB_WAITING = "no job waiting"


def queue_full(billing: str) -> str:
    return f"{billing} queue full"


@dataclass(frozen=True)
class Waiting:
    """A job of the replay that has not run yet, as one look sees it."""

    name: str
    queue: str
    billing: str
    gpus: int
    stage: str  # one of the STAGE_ values
    pods: tuple[int, ...] = ()  # the GPUs of each of its pods; () when not known


def queue_rooms(queues: Iterable[Mapping[str, Any]]) -> dict[str, int | None]:
    """Each queue's room in GPUs: the least, over the queue and its ancestors, of
    capability less what it holds (rule effective-capability, with rule
    parent-allocation's holdings); None when no queue on the chain limits GPUs."""
    states = queue_states(queues)
    out: dict[str, int | None] = {}
    for name in states:
        rooms = [
            states[q].capability_gpus - states[q].allocated_gpus
            for q in ancestry(states, name)
            if states[q].capability_gpus is not None
        ]
        out[name] = max(0, min(rooms)) if rooms else None
    return out


def why_waiting(
    job: Waiting, room: int | None, idle: int, free_by_node: Sequence[int] | None = None
) -> str:
    """Rule waiting-cause (see the module docstring); ``free_by_node`` the idle GPUs of
    each node, when known."""
    if job.stage == STAGE_SUBMITTING:
        return HELD_AT_SUBMISSION
    if job.stage == STAGE_CONTROLLER:
        return AWAITING_CONTROLLER
    if room is not None and room < job.gpus:
        return queue_full(job.billing)
    if job.stage == STAGE_PENDING:
        return NOT_ADMITTED
    if idle < job.gpus:
        return LARGER_THAN_IDLE
    if free_by_node is not None and job.pods and not gang_fits_nodes(job.pods, free_by_node):
        return SPREAD_OVER_NODES
    return NOT_YET_PLACED


def look_causes(
    waiting: Sequence[Waiting],
    rooms: Mapping[str, int | None],
    idle: int,
    free_by_node: Sequence[int] | None = None,
) -> dict[str, str]:
    """Each waiting job's cause at one look, by job name."""
    return {job.name: why_waiting(job, rooms.get(job.queue), idle, free_by_node) for job in waiting}


def idle_by_cause(
    waiting: Sequence[Waiting], causes: Mapping[str, str], idle: int
) -> dict[str, int]:
    """Rule idle-attribution: the look's ``idle`` GPUs by the cause of the waiting jobs
    that asked for them, in the order given (submission order); the rest under
    NO_JOB_WAITING. Nothing when no GPU is idle."""
    out: dict[str, int] = {}
    left = max(0, idle)
    for job in waiting:
        if left <= 0:
            break
        taken = min(job.gpus, left)
        if taken > 0:
            cause = causes[job.name]
            out[cause] = out.get(cause, 0) + taken
            left -= taken
    if left > 0:
        out[NO_JOB_WAITING] = left
    return out
