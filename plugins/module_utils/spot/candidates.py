# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which running spot jobs and pods a reclaim may take at all, as ``SpotJob`` records
(pure: no I/O). Which of them go, and how many, is ``spot/victims``.

Rules held here:

* Rule spot-candidate (``candidates_from_vcjobs``): a Volcano Job is a
  candidate only when it is in a spot queue AND labelled
  ``platform.io/billing-type: spot``, and it is Running.
* Rule spot-candidate-pod (``candidates_from_pods``): spot means reclaimable,
  whatever the workload. Every other Running pod Volcano schedules in a spot queue (an
  InferenceService's predictor, a Deployment's pod: Volcano gives each its own
  PodGroup) is a candidate by its queue alone, priced by its own
  ``platform.io/spot-price`` annotation; reclaiming it deletes the pod, and its
  controller makes it again, Pending in the spot queue until idle GPUs return.

The GPUs and pods of a listed Volcano Job are rule job-demand's (``jobs/demand``), counted
the quick way for the shape a LIST returns (``held_gpus_and_pods``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from ..common.errors import PlatformValidationError
from ..common.heap import long_lived
from ..common.names import (
    ANNOTATION_SPOT_PRICE,
    JOB_HOLDING_PHASES,
    LABEL_BILLING_TYPE,
    VOLCANO_QUEUE_ANNOTATION,
)
from ..common.quantity import GPU, remembered
from ..common.times import api_seconds
from ..jobs.demand import DEMAND_RESOURCES, job_demand, pod_demand, replicas_of
from .victims import SpotJob, known_price, parse_price, parse_time

SPOT = "spot"
_ZERO = Decimal(0)


def held_gpus_and_pods(job: Mapping[str, Any]) -> tuple[int, int]:
    """Rule job-demand's GPUs and pods of a Volcano Job: ``job_demand(job).gpus`` and
    ``.pods``, always.

    A LIST returns nearly every job in one shape: plain dicts, tasks without init
    containers, quantities read before. For that shape the GPUs are summed here in
    the same ``Decimal`` steps as ``job_demand`` (the containers of a task, times
    its replicas) and the CPU and memory sums, which the victims do not use, are
    skipped; each of their quantities must still be one ``parse`` accepted before
    (``quantity.remembered``: an ordinary number, which no sum can make invalid),
    so a job ``job_demand`` would refuse is never counted here. Any other job is
    counted by ``job_demand`` itself."""
    counted = _common_shape_demand(job.get("spec") or {})
    if counted is None:
        demand = job_demand(job)
        return demand.gpus, demand.pods
    return counted


# The replicas field is an int32; larger counts are left to job_demand.
_MAX_REPLICAS = 2**31 - 1
_DEMAND = frozenset(DEMAND_RESOURCES)


def _common_shape_demand(spec: object) -> tuple[int, int] | None:
    """``held_gpus_and_pods`` for a job of the common shape (its ``spec``, or {}),
    None for any other."""
    tasks = (spec.get("tasks") or []) if isinstance(spec, dict) else None
    if not isinstance(tasks, list):
        return None
    total = _ZERO
    pods = 0
    for task in tasks:
        if not isinstance(task, dict):
            return None
        template = task.get("template") or {}
        pod = (template.get("spec") or {}) if isinstance(template, dict) else None
        if not isinstance(pod, dict) or pod.get("initContainers"):
            return None
        containers = pod.get("containers") or []
        if not isinstance(containers, list):
            return None
        one = _ZERO
        for container in containers:
            gpu = _container_gpus(container)
            if gpu is None:
                return None
            one += gpu
        replicas = task.get("replicas", 0)
        if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
            replicas = replicas_of(task)
        if replicas > _MAX_REPLICAS:
            return None
        pods += replicas
        total += one * replicas
    return int(total), pods


def _container_gpus(container: object) -> Decimal | None:
    """A container's GPUs as ``container_demand`` reads them (0 when it names
    none), when it is a plain dict whose demand quantities are all remembered."""
    resources = (container.get("resources") or {}) if isinstance(container, dict) else None
    if not isinstance(resources, dict):
        return None
    requests = resources.get("requests") or {}
    limits = resources.get("limits") or {}
    if not isinstance(requests, dict) or not isinstance(limits, dict):
        return None
    if requests and limits:
        # Both given: each resource from the requests, else from the limits.
        named: Iterable[tuple[str, Any]] = (
            (name, requests[name] if name in requests else limits.get(name))
            for name in DEMAND_RESOURCES
        )
    else:
        named = (requests or limits).items()
    gpu = _ZERO
    for name, raw in named:
        if raw is None or name not in _DEMAND:
            continue
        value = remembered(raw)
        if value is None:
            return None
        if name == GPU:
            gpu = value
    return gpu


def candidates_from_vcjobs(
    vcjobs: Iterable[Mapping[str, Any]], spot_queues: Iterable[str]
) -> tuple[list[SpotJob], list[str]]:
    """Rule spot-candidate: the running Volcano Jobs that are in a spot queue
    and labelled ``platform.io/billing-type: spot`` (both must hold), as
    ``SpotJob`` records. Jobs already being deleted are left out.

    A job whose price annotation is not a number counts at price 0 (like a
    missing one) and is reported in the returned warnings.
    """
    queues = set(spot_queues)
    out: list[SpotJob] = []
    warnings: list[str] = []
    with long_lived():
        for job in vcjobs:
            meta = job.get("metadata") or {}
            if (meta.get("labels") or {}).get(LABEL_BILLING_TYPE) != SPOT:
                continue
            spec = job.get("spec") or {}
            queue = spec.get("queue") or ""
            if queue not in queues or meta.get("deletionTimestamp"):
                continue
            state = (job.get("status") or {}).get("state") or {}
            # Pending and Inqueue jobs hold no GPUs yet, finished ones none any more.
            if state.get("phase") not in JOB_HOLDING_PHASES:
                continue
            namespace = meta.get("namespace", "")
            name = meta.get("name", "")
            # The field paths are written only for a value that is not read at once.
            raw_price = (meta.get("annotations") or {}).get(ANNOTATION_SPOT_PRICE)
            price = known_price(raw_price)
            if price is None:
                where = f"{namespace}/{name}.metadata.annotations.{ANNOTATION_SPOT_PRICE}"
                try:
                    price = parse_price(raw_price, where)
                except PlatformValidationError as exc:
                    warnings.append(f"{exc}; it counts as price 0")
                    price = Decimal(0)
            gpus, pods = held_gpus_and_pods(job)
            started_raw = state.get("lastTransitionTime") or meta.get("creationTimestamp")
            started = api_seconds(started_raw) if started_raw else 0.0
            if started is None:
                where = f"{namespace}/{name}.status.state.lastTransitionTime"
                started = parse_time(started_raw, where)
            out.append(
                SpotJob(namespace, name, price, gpus, pods, started, queue, meta.get("uid") or "")
            )
    return out, warnings


def _spot_price(meta: Mapping[str, Any], where: str, warnings: list[str]) -> Decimal:
    """The ``platform.io/spot-price`` annotation; one that is not a number counts as 0,
    like a missing one, and is warned about."""
    raw = (meta.get("annotations") or {}).get(ANNOTATION_SPOT_PRICE)
    price = known_price(raw)
    if price is not None:
        return price
    try:
        return parse_price(raw, f"{where}.metadata.annotations.{ANNOTATION_SPOT_PRICE}")
    except PlatformValidationError as exc:
        warnings.append(f"{exc}; it counts as price 0")
        return _ZERO


def _owned_by_volcano_job(meta: Mapping[str, Any]) -> bool:
    return any(
        ref.get("kind") == "Job" and str(ref.get("apiVersion", "")).startswith("batch.volcano.sh/")
        for ref in meta.get("ownerReferences") or []
    )


def pod_gpus(pod: Mapping[str, Any], where: str) -> int:
    """The GPUs a pod holds (rule job-demand for one pod: ``pod_demand``)."""
    return int(pod_demand(pod.get("spec") or {}, f"{where}.spec")[GPU])


def candidates_from_pods(
    pods: Iterable[Mapping[str, Any]], spot_queues: Iterable[str]
) -> tuple[list[SpotJob], list[str]]:
    """Rule spot-candidate-pod: the Running pods in a spot queue (Volcano's queue
    annotation, which admission holds to the tenant's own queues) that no Volcano Job
    owns (a Job is a candidate as a whole, ``candidates_from_vcjobs``) and that hold a
    GPU, as ``SpotJob`` records of kind ``Pod``."""
    queues = set(spot_queues)
    out: list[SpotJob] = []
    warnings: list[str] = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        queue = (meta.get("annotations") or {}).get(VOLCANO_QUEUE_ANNOTATION) or ""
        if queue not in queues or meta.get("deletionTimestamp") or _owned_by_volcano_job(meta):
            continue
        if (pod.get("status") or {}).get("phase") != "Running":
            continue
        namespace, name = meta.get("namespace", ""), meta.get("name", "")
        where = f"{namespace}/{name}"
        gpus = pod_gpus(pod, where)
        if gpus <= 0:
            continue
        started_raw = (pod.get("status") or {}).get("startTime") or meta.get("creationTimestamp")
        started = api_seconds(started_raw) if started_raw else 0.0
        if started is None:
            started = parse_time(started_raw, f"{where}.status.startTime")
        price = _spot_price(meta, where, warnings)
        out.append(
            SpotJob(namespace, name, price, gpus, 1, started, queue, meta.get("uid") or "", "Pod")
        )
    return out, warnings
