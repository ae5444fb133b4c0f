# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The period a usage report covers (pure: no I/O).

* Rule period-time (``time_errors``): ``start`` and ``end`` are RFC 3339 date-times; one
  without a zone is UTC, as everywhere in the collection (``common/times``).
* Rule period-order (``order_errors``): ``end`` is after ``start``.
* Rule period-max (``length_errors``): a period is at most ``PERIOD_MAX_DAYS`` days (a
  year's bill is read in one run; a typo'd year is refused before any query).
* Rule period-step (``step_errors``): ``step`` is a whole number of seconds, 1 or more,
  no larger than the period, and the period is a whole number of steps.
* Rule period-default-step (``default_step``): without a step, the largest of an hour, a
  minute and a second that divides the period.
* Rule period-windows (``windows``): the sub-periods a period is read in, each at most
  ``max_points`` steps long (Prometheus answers at most 11,000 points per series).

The step only slices the period: each point of a ``query_range`` answer sums the rule's
samples in the step that ends at it (``sum_over_time(rule[step])``, a range that is open
at its start and closed at its end), so the slices tile the period and every sample of
the recording rule is counted exactly once, whatever the step (rule exact-integral,
``usage``). A period that is not a whole number of steps would leave its last part-step
uncounted, hence rule period-step.
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
PERIOD_MAX_DAYS = 366
DEFAULT_STEPS = (3600, 60, 1)


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
        """The period as a ledger writes it (the step only slices the reading: it is not
        part of the bill, so two steps write the same ledger)."""
        return {"start": write_rfc3339(self.start), "end": write_rfc3339(self.end)}


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


def length_errors(seconds: int) -> list[FieldError]:
    """Rule period-max: at most PERIOD_MAX_DAYS days (and at least a second)."""
    if seconds < 1:
        return [FieldError("end", "the period is shorter than a second (rule period-max)")]
    if seconds <= PERIOD_MAX_DAYS * 86400:
        return []
    return [
        FieldError(
            "end",
            f"the period is {seconds / 86400:.1f} days; at most {PERIOD_MAX_DAYS} days are billed in "
            "one report (rule period-max)",
        )
    ]


def default_step(seconds: int) -> int:
    """Rule period-default-step: the largest of DEFAULT_STEPS that divides the period."""
    return next(step for step in DEFAULT_STEPS if step <= seconds and seconds % step == 0)


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


def period_errors(start: object, end: object, step: object = None) -> list[FieldError]:
    """Rules period-time, period-order, period-max and period-step, every error at once
    (``step`` None: rule period-default-step)."""
    first, errors = read_time("start", start)
    last, end_errors = read_time("end", end)
    errors += end_errors
    seconds = None
    if first is not None and last is not None:
        ordered = order_errors(first, last)
        errors += ordered
        if not ordered:
            seconds = int((last - first).total_seconds())
            errors += length_errors(seconds)
            seconds = seconds if not errors else None
    if step is None:
        return errors
    return errors + step_errors(step, seconds)


def parse_period(start: object, end: object, step: object = None) -> Period:
    """The Period, or PlatformValidationError naming each broken rule."""
    raise_if(period_errors(start, end, step))
    first, last = read_time("start", start)[0], read_time("end", end)[0]
    if first is None or last is None:  # narrows; cannot happen
        raise AssertionError("a period that passed its rules")
    if step is None:
        step = default_step(int((last - first).total_seconds()))
    if not isinstance(step, int):  # narrows; cannot happen
        raise AssertionError("a step that passed its rules")
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
