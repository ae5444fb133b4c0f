# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A trace's job as the Volcano Job the replay submits: the platform's own builder
(``jobs/manifest.build_job``, what ``vcjob`` builds from the same options), with the two
things a trace adds: kwok's delay annotation on every pod, so that kwok completes it after
its (compressed) duration, and a time-to-live, so that finished jobs leave the cluster.
Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpucloud.platform.benchmarks.traces.model import Job
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.placement import (
    CLOUD_PLACEMENTS,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.manifest import build_job
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.request import JobRequest

# kwok's own annotation (its pod-complete stage): how long after Running a pod completes.
# tools/localcluster/stages/pod-complete-after-delay.yaml completes only pods that carry it.
DELAY_ANNOTATION = "pod-complete.stage.kwok.x-k8s.io/delay"
# Long enough for a sample or two to see a job Completed, short enough to keep LISTs small.
FINISHED_TTL_S = 30
# What a trace leaves to the replay (docs/trace-replay.md): kwok runs no container.
IMAGE = "replay.invalid/trace-job:1"
COMMAND = ["sleep", "infinity"]
CHECKPOINT = ["true"]  # a cloud placement requires a checkpoint command
PREFIX = "replay-"


def job_name(index: int) -> str:
    """The job's name: its index in the trace, so a name says which entry it is."""
    return f"{PREFIX}{index:04d}"


def index_of(name: str) -> int | None:
    """The trace index of a replay job's name, or None for any other job."""
    digits = name[len(PREFIX) :]
    if not name.startswith(PREFIX) or not (digits.isascii() and digits.isdigit()):
        return None
    return int(name[len(PREFIX) :])


def delay_text(duration_s: float, factor: float) -> str:
    """The kwok delay of a traced duration compressed ``factor`` times, in whole
    milliseconds (at least 1)."""
    return f"{max(1, round(duration_s * 1000 / factor))}ms"


def request(job: Job, index: int) -> JobRequest:
    """The options ``vcjob`` would be given for this job."""
    return JobRequest(
        name=job_name(index),
        tenant=job.tenant,
        queue=job.queue,
        kind=job.kind,
        job_class=job.job_class,
        image=IMAGE,
        queue_type=job.queue_type,
        # Volcano's ray plugin starts ray itself, and takes no command.
        command=None if job.kind == "ray" else list(COMMAND),
        replicas=job.replicas,
        gpus_per_pod=job.gpus_per_pod,
        cpu="1",
        memory="1Gi",
        head_cpu="1",
        head_memory="1Gi",
        spot_price=job.spot_price,
        placement=job.placement,
        checkpoint_command=list(CHECKPOINT) if job.placement in CLOUD_PLACEMENTS else None,
    )


def manifest(job: Job, index: int, factor: float) -> dict[str, Any]:
    """The Volcano Job for the trace's ``index``-th job, ``factor`` times faster."""
    out = build_job(request(job, index))
    delay = delay_text(job.duration_s, factor)
    for task in out["spec"]["tasks"]:
        meta = task["template"].setdefault("metadata", {})
        meta.setdefault("annotations", {})[DELAY_ANNOTATION] = delay
    out["spec"]["ttlSecondsAfterFinished"] = FINISHED_TTL_S
    return out
