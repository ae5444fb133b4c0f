# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which spot jobs go when a paying demand needs their GPUs.

Rules held here:

* Rule reclaim-need (``reclaim_need``): free = pool - allocated; if free >= the
  demand nothing is reclaimed, otherwise demand - free GPUs are.
* Rule unsold-reclaim-need (``unsold_reclaim_need``): a sale (a purchase or a
  PAYG growth) comes out of the GPUs nobody has bought: spot keeps at most
  what stays unsold after it, pool - sold - sale; the spot GPUs above that
  are reclaimed (never fewer than reclaim-need asks).
* Rule spot-candidate (``candidates_from_vcjobs``): a Volcano Job is a
  candidate only when it is in a spot queue AND labelled
  ``platform.io/billing-type: spot``, and it is Running.
* Rule spot-candidate-pod (``candidates_from_pods``): spot means reclaimable,
  whatever the workload. Every other Running pod Volcano schedules in a spot queue (an
  InferenceService's predictor, a Deployment's pod: Volcano gives each its own
  PodGroup) is a candidate by its queue alone, priced by its own
  ``platform.io/spot-price`` annotation; reclaiming it deletes the pod, and its
  controller makes it again, Pending in the spot queue until idle GPUs return.
* Rule spot-victim-order (``victim_order_key``): lowest ``platform.io/spot-price``
  first (a missing price counts as 0); at equal price single-pod jobs before
  multi-pod ones; then fewer GPUs first; then the most recently started first;
  then namespace/name.
* Rule spot-victim-stop (``choose_victims``): take jobs in that order and stop
  as soon as enough GPUs are freed, never more; jobs holding no GPU are never
  taken (deleting them frees nothing).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, TypeVar

from ..common.errors import FieldError, PlatformValidationError
from ..common.heap import long_lived
from ..common.names import (
    ANNOTATION_SPOT_PRICE,
    JOB_HOLDING_PHASES,
    LABEL_BILLING_TYPE,
    VOLCANO_QUEUE_ANNOTATION,
)
from ..common.quantity import GPU, remembered
from ..common.times import api_seconds, read_rfc3339
from ..jobs.demand import DEMAND_RESOURCES, job_demand, pod_demand, replicas_of

SPOT = "spot"
T = TypeVar("T")
_ZERO = Decimal(0)


@dataclass(frozen=True)
class SpotJob:
    """One running spot job as the victim rules see it."""

    namespace: str
    name: str
    price: Decimal
    gpus: int
    pods: int
    started: float  # seconds since the epoch
    queue: str = ""
    # The uid listed: the reclaim deletes exactly the job it chose (a delete
    # precondition), never one re-created under the same name since.
    uid: str = ""
    # What is deleted: a Volcano ``Job``, or a ``Pod`` of any other workload.
    kind: str = "Job"

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "queue": self.queue,
            "price": str(self.price),
            "gpus": self.gpus,
            "pods": self.pods,
            "started_at": format_time(self.started),
        }


def format_time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# Prices already read, per exact input type: a price list repeats a few values
# across thousands of jobs. Only accepted prices are kept; int and float apart
# (1 and 1.0 are equal keys but read as Decimal 1 and 1.0), float zero not at all
# (0.0 and -0.0 are equal keys but read as 0.0 and -0.0).
_PRICES: dict[type, dict[Any, Decimal]] = {str: {}, int: {}, float: {}}
# Past this many entries the memo starts over (prices nobody repeats).
MEMO_LIMIT = 4096


def known_price(value: object) -> Decimal | None:
    """The price ``parse_price`` accepted for ``value`` before (the same ``Decimal``
    ``read_price`` gave), else None."""
    memo = _PRICES.get(type(value))
    return None if memo is None else memo.get(value)


def parse_price(value: object, field: str) -> Decimal:
    """Rule spot-price: a finite decimal number, 0 or more (None means 0).

    ``read_price`` reads it; a price read before is answered from a memo."""
    price = known_price(value)
    if price is None:
        price = read_price(value, field)
        memo = _PRICES.get(type(value))
        if memo is not None and (value or not isinstance(value, float)):
            if len(memo) >= MEMO_LIMIT:
                memo.clear()
            memo[value] = price
    return price


def read_price(value: object, field: str) -> Decimal:
    """Rule spot-price, read every time (the general path of ``parse_price``)."""
    if value is None:
        return Decimal(0)
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal | str):
        raise PlatformValidationError(
            [FieldError(field, f"{value!r} is not a number (a price such as 0.3)")]
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise PlatformValidationError(
            [FieldError(field, f"{value!r} is not a finite number (a price such as 0.3)")]
        )
    try:
        price = Decimal(str(value).strip()) if not isinstance(value, Decimal) else value
    except InvalidOperation:
        raise PlatformValidationError(
            [FieldError(field, f"{value!r} is not a number (a price such as 0.3)")]
        ) from None
    if not price.is_finite():
        raise PlatformValidationError(
            [FieldError(field, f"{value!r} is not a finite number (a price such as 0.3)")]
        )
    if price < 0:
        raise PlatformValidationError(
            [FieldError(field, f"{value!r} is negative; a price is 0 or more")]
        )
    return price


def parse_time(value: object, field: str) -> float:
    """Rule timestamp: an RFC 3339 date-time with a zone (``2026-01-02T03:04:05Z``).

    A time as the API server writes it is read by ``times.api_seconds``, which
    gives what ``read_time`` would; anything else is read by ``read_time``."""
    seconds = api_seconds(value)
    return read_time(value, field) if seconds is None else seconds


def read_time(value: object, field: str) -> float:
    """Rule timestamp, read by the general path (``read_rfc3339``)."""
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str) and value.strip():
        parsed = read_rfc3339(value)
        if parsed is None:
            raise PlatformValidationError(
                [
                    FieldError(
                        field,
                        f"{value!r} is not an RFC 3339 time (for example 2026-01-02T03:04:05Z)",
                    )
                ]
            )
    else:
        raise PlatformValidationError(
            [
                FieldError(
                    field, f"{value!r} is not an RFC 3339 time (for example 2026-01-02T03:04:05Z)"
                )
            ]
        )
    if parsed.tzinfo is None:
        raise PlatformValidationError(
            [FieldError(field, f"{value!r} has no time zone; write Z or an offset such as +08:00")]
        )
    return parsed.timestamp()


def parse_count(value: object, field: str, minimum: int = 0) -> int:
    """A whole number, ``minimum`` or more."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        elif isinstance(value, float | Decimal) and value == int(value):
            value = int(value)
        else:
            raise PlatformValidationError(
                [FieldError(field, f"{value!r} is not a whole number ({minimum} or more)")]
            )
    if value < minimum:
        raise PlatformValidationError(
            [FieldError(field, f"{value} is less than {minimum}; {minimum} or more is accepted")]
        )
    return value


def victim_order_key(job: SpotJob) -> tuple[Decimal, int, int, float, str, str]:
    """Rule spot-victim-order: the sort key, smallest goes first (``victim_entry``
    without the position and the item)."""
    return victim_entry(
        job.price, job.pods, job.gpus, job.started, job.namespace, job.name, 0, job
    )[:6]


def victim_entry(
    price: Decimal, pods: int, gpus: int, started: float, namespace: str, name: str, i: int, item: T
) -> tuple[Decimal, int, int, float, str, str, int, T]:
    """``victim_order_key`` of a job with these fields, then its position ``i`` (ties
    keep the input order) and what ``take_victims`` returns for it: one flat tuple
    per job, compared field by field exactly as the key and then ``i``."""
    return (price, 0 if pods <= 1 else 1, gpus, -started, namespace, name, i, item)


def take_victims(
    entries: list[tuple[Decimal, int, int, float, str, str, int, T]],
    need: int,
    allow_partial: bool = False,
) -> list[T]:
    """Rule spot-victim-stop over ``victim_entry`` tuples of the jobs holding GPUs
    (``entries`` is consumed): their items in kill order, stopping as soon as
    ``need`` GPUs are freed. Only the jobs taken are ordered (a heap)."""
    held = sum(entry[2] for entry in entries)
    if held < need and not allow_partial:
        raise PlatformValidationError(
            [
                FieldError(
                    "need",
                    f"{need} GPUs cannot be freed: the {len(entries)} spot jobs hold {held} GPUs in all; "
                    f"ask for at most {held}, or allow a partial reclaim",
                )
            ]
        )
    heapq.heapify(entries)
    pop = heapq.heappop
    chosen: list[T] = []
    freed = 0
    while entries and freed < need:
        entry = pop(entries)
        chosen.append(entry[7])
        freed += entry[2]
    return chosen


def choose_victims(
    jobs: Iterable[SpotJob], need: int, allow_partial: bool = False
) -> list[SpotJob]:
    """Rule spot-victim-stop: the jobs to delete, in kill order, freeing at
    least ``need`` GPUs and stopping as soon as they do.

    Only the jobs actually taken are ordered (a heap, not a full sort), so
    50,000 candidates cost little more than reading them. When all jobs
    together hold fewer than ``need`` GPUs this refuses, naming the numbers,
    unless ``allow_partial`` is set; then it returns every job holding GPUs.
    """
    need = parse_count(need, "need")
    if need == 0:
        return []
    with long_lived():
        entries = [
            victim_entry(j.price, j.pods, j.gpus, j.started, j.namespace, j.name, i, j)
            for i, j in enumerate(jobs)
            if j.gpus > 0
        ]
        return take_victims(entries, need, allow_partial)


def reclaim_need(pool_gpus: int | Decimal, allocated_gpus: int | Decimal, demand: int) -> int:
    """Rule reclaim-need: free = pool - allocated (never below 0); if free >=
    ``demand`` nothing is reclaimed, otherwise ``demand - free`` GPUs are."""
    demand = parse_count(demand, "need")
    free = max(Decimal(0), Decimal(pool_gpus) - Decimal(allocated_gpus))
    short = Decimal(demand) - free
    return int(short) if short > 0 else 0


def unsold_reclaim_need(
    pool_gpus: int | Decimal,
    sold_gpus: int | Decimal,
    spot_gpus: int | Decimal,
    allocated_gpus: int | Decimal,
    demand: int,
) -> int:
    """Rule unsold-reclaim-need: a sale of ``demand`` GPUs must come out of the GPUs
    nobody has bought. What a tenant bought but does not use yet is not free: its
    owner may use it at any moment, and spot may only hold unsold GPUs (rule
    idle-for-spot). So spot keeps at most ``max(0, pool - sold - demand)`` GPUs and the
    spot GPUs above that are reclaimed. Never fewer than rule reclaim-need asks, so
    GPUs held outside the platform's queues still count as taken.

    ``demand`` 0 answers "how many spot GPUs hold sold ones now" (after the pool
    shrank, or a purchase made without a reclaim)."""
    demand = parse_count(demand, "need")
    unsold_after = max(Decimal(0), Decimal(pool_gpus) - Decimal(sold_gpus) - demand)
    above = Decimal(spot_gpus) - unsold_after
    return max(int(above) if above > 0 else 0, reclaim_need(pool_gpus, allocated_gpus, demand))


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
