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
from typing import Any

from ..common.errors import FieldError, PlatformValidationError
from ..common.names import ANNOTATION_SPOT_PRICE, JOB_HOLDING_PHASES, LABEL_BILLING_TYPE
from ..common.times import read_rfc3339
from ..jobs.demand import job_demand

SPOT = "spot"


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

    def as_dict(self) -> dict[str, Any]:
        return {
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


def parse_price(value: object, field: str) -> Decimal:
    """Rule spot-price: a finite decimal number, 0 or more (None means 0)."""
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
    """Rule timestamp: an RFC 3339 date-time with a zone (``2026-01-02T03:04:05Z``)."""
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
    """Rule spot-victim-order: the sort key, smallest goes first."""
    return (job.price, 0 if job.pods <= 1 else 1, job.gpus, -job.started, job.namespace, job.name)


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
    heap: list[tuple[tuple[Decimal, int, int, float, str, str], int, SpotJob]] = []
    held = 0
    for i, job in enumerate(jobs):
        if job.gpus <= 0:
            continue
        held += job.gpus
        heap.append((victim_order_key(job), i, job))
    if held < need and not allow_partial:
        raise PlatformValidationError(
            [
                FieldError(
                    "need",
                    f"{need} GPUs cannot be freed: the {len(heap)} spot jobs hold {held} GPUs in all; "
                    f"ask for at most {held}, or allow a partial reclaim",
                )
            ]
        )
    heapq.heapify(heap)
    chosen: list[SpotJob] = []
    freed = 0
    while heap and freed < need:
        _unused, _unused, job = heapq.heappop(heap)
        chosen.append(job)
        freed += job.gpus
    return chosen


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
    for job in vcjobs:
        meta = job.get("metadata") or {}
        if (meta.get("labels") or {}).get(LABEL_BILLING_TYPE) != SPOT:
            continue
        queue = (job.get("spec") or {}).get("queue") or ""
        if queue not in queues or meta.get("deletionTimestamp"):
            continue
        state = (job.get("status") or {}).get("state") or {}
        # Pending and Inqueue jobs hold no GPUs yet, finished ones none any more.
        if state.get("phase") not in JOB_HOLDING_PHASES:
            continue
        namespace = meta.get("namespace", "")
        name = meta.get("name", "")
        where = f"{namespace}/{name}"
        raw_price = (meta.get("annotations") or {}).get(ANNOTATION_SPOT_PRICE)
        try:
            price = parse_price(raw_price, f"{where}.metadata.annotations.{ANNOTATION_SPOT_PRICE}")
        except PlatformValidationError as exc:
            warnings.append(f"{exc}; it counts as price 0")
            price = Decimal(0)
        demand = job_demand(job)
        gpus, pods = demand.gpus, demand.pods
        started_raw = state.get("lastTransitionTime") or meta.get("creationTimestamp")
        started = (
            parse_time(started_raw, f"{where}.status.state.lastTransitionTime")
            if started_raw
            else 0.0
        )
        out.append(
            SpotJob(namespace, name, price, gpus, pods, started, queue, meta.get("uid") or "")
        )
    return out, warnings
