# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which spot jobs go when a paying demand needs their GPUs (pure: no I/O).

Which running jobs and pods are candidates at all (rules spot-candidate and
spot-candidate-pod) is ``spot/candidates``; the ``SpotJob`` record, the values it is
read from (rules spot-price and timestamp) and the choice among the candidates are here.

Rules held here:

* Rule reclaim-need (``reclaim_need``): free = pool - allocated; if free >= the
  demand nothing is reclaimed, otherwise demand - free GPUs are.
* Rule unsold-reclaim-need (``unsold_reclaim_need``): a sale (a purchase or a
  PAYG growth) comes out of the GPUs nobody has bought: spot keeps at most
  what stays unsold after it, pool - sold - sale; the spot GPUs above that
  are reclaimed (never fewer than reclaim-need asks).
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
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, TypeVar

from ..common.errors import FieldError, PlatformValidationError
from ..common.heap import long_lived
from ..common.times import api_seconds, read_rfc3339

T = TypeVar("T")


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


def unused_reclaim_need(
    pool_gpus: int | Decimal,
    offer_gpus: int | Decimal,
    spot_gpus: int | Decimal,
    allocated_gpus: int | Decimal,
    demand: int,
) -> int:
    """Rule unused-reclaim-need: with offer ``unused`` (``spot/offer``) spot may hold the
    GPUs no paying queue holds or waits for (``offer_gpus``, rule unused-for-spot), so it
    keeps at most ``max(0, offer - demand)`` and the spot GPUs above that are reclaimed:
    ``demand`` 0 answers "how many spot GPUs do paying pods wait for now". Never fewer
    than rule reclaim-need asks, so GPUs held outside the platform's queues still count
    as taken."""
    demand = parse_count(demand, "need")
    allowed = max(Decimal(0), Decimal(offer_gpus) - demand)
    above = Decimal(spot_gpus) - allowed
    return max(int(above) if above > 0 else 0, reclaim_need(pool_gpus, allocated_gpus, demand))
