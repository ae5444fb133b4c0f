# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The period a usage report covers (pure: no I/O).

* Rule period-time (``time_errors``): ``start`` and ``end`` are RFC 3339 date-times; one
  without a zone is UTC, as everywhere in the collection (``common/times``).
* Rule period-order (``order_errors``): ``end`` is after ``start``.
* Rule period-step (``step_errors``): ``step`` is a whole number of seconds, 1 or more,
  no larger than the period, and the period is a whole number of steps.
* Rule period-windows (``windows``): the sub-periods a period is read in, each at most
  ``max_points`` steps long (Prometheus answers at most 11,000 points per series).

A sample of a ``query_range`` answer stands for the step that ends at it, so a period of
N steps is N samples: those at ``start + step``, ..., ``end``. A period that is not a
whole number of steps would leave its last part-step uncounted, hence rule period-step.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from ..common.errors import FieldError, raise_if
from ..common.times import as_utc, read_rfc3339, write_rfc3339

# Prometheus refuses a query_range of more points per series than this.
PROMETHEUS_MAX_POINTS = 11_000


@dataclass(frozen=True)
class Period:
    """``start`` and ``end`` (UTC) and ``step`` in seconds; ``end - start`` is a whole
    number of steps (rule period-step)."""

    start: datetime
    end: datetime
    step: int

    @property
    def seconds(self) -> int:
        return int((self.end - self.start).total_seconds())

    @property
    def hours(self) -> Decimal:
        return Decimal(self.seconds) / Decimal(3600)

    @property
    def steps(self) -> int:
        return self.seconds // self.step

    def view(self) -> dict[str, Any]:
        """The period as a ledger writes it."""
        return {
            "start": write_rfc3339(self.start),
            "end": write_rfc3339(self.end),
            "step": self.step,
        }


def read_time(field: str, value: object) -> tuple[datetime | None, list[FieldError]]:
    """Rule period-time: the UTC time ``value`` names, or the error naming ``field``."""
    moment = read_rfc3339(value)
    if moment is None:
        return None, [
            FieldError(
                field,
                f"{value!r} is not an RFC 3339 date-time, for example 2026-01-01T00:00:00Z "
                "(rule period-time)",
            )
        ]
    return as_utc(moment), []


def order_errors(start: datetime, end: datetime) -> list[FieldError]:
    """Rule period-order: a period ends after it starts."""
    if end > start:
        return []
    return [
        FieldError(
            "end",
            f"{write_rfc3339(end)} is not after start ({write_rfc3339(start)}); a period ends "
            "after it starts (rule period-order)",
        )
    ]


def step_errors(step: object, seconds: int | None) -> list[FieldError]:
    """Rule period-step: ``step`` is 1 or more whole seconds; with the period's length
    (``seconds``, None when the period is invalid) it is no larger than the period and
    divides it."""
    if isinstance(step, bool) or not isinstance(step, int) or step < 1:
        return [
            FieldError(
                "step",
                f"{step!r} is not a positive whole number of seconds; 1 or more is accepted "
                "(rule period-step)",
            )
        ]
    if seconds is None:
        return []
    if step > seconds:
        return [
            FieldError(
                "step",
                f"{step} is larger than the period ({seconds} s); a step of at most the period "
                "is accepted (rule period-step)",
            )
        ]
    if seconds % step:
        return [
            FieldError(
                "step",
                f"{step} does not divide the period ({seconds} s): its last {seconds % step} s "
                "would not be counted; a step that divides it is accepted, for example 60 for "
                "whole minutes (rule period-step)",
            )
        ]
    return []


def period_errors(start: object, end: object, step: object) -> list[FieldError]:
    """Rules period-time, period-order and period-step, every error at once."""
    first, errors = read_time("start", start)
    last, end_errors = read_time("end", end)
    errors += end_errors
    seconds = None
    if first is not None and last is not None:
        ordered = order_errors(first, last)
        errors += ordered
        if not ordered:
            seconds = int((last - first).total_seconds())
    return errors + step_errors(step, seconds)


def parse_period(start: object, end: object, step: object) -> Period:
    """The Period, or PlatformValidationError naming each broken rule."""
    raise_if(period_errors(start, end, step))
    first, last = read_time("start", start)[0], read_time("end", end)[0]
    if first is None or last is None or not isinstance(step, int):  # narrows; cannot happen
        raise AssertionError("a period that passed its rules")
    return Period(first, last, step)


def windows(period: Period, max_points: int = PROMETHEUS_MAX_POINTS) -> Iterator[Period]:
    """Rule period-windows: consecutive sub-periods of at most ``max_points`` steps that
    together are ``period``; their samples are exactly the period's (each window counts
    the samples in ``(start, end]``)."""
    span = timedelta(seconds=period.step * max(1, max_points))
    start = period.start
    while start < period.end:
        end = min(start + span, period.end)
        yield Period(start, end, period.step)
        start = end
