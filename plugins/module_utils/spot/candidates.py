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

The GPUs and pods of a listed Volcano Job are rule job-demand's (``workload/demand.gpus_and_pods``).
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
from ..common.quantity import GPU
from ..common.times import api_seconds
from ..workload.demand import gpus_and_pods, pod_demand
from .victims import SpotJob, known_price, parse_price, parse_time

SPOT = "spot"
_ZERO = Decimal(0)


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
            gpus, pods = gpus_and_pods(job)
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
