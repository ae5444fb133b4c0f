# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU use from Prometheus ``query_range`` matrices (pure: no I/O).

A matrix is what ``/api/v1/query_range`` answers in ``data.result``: a list of series
``{"metric": {label: value}, "values": [[unix time, "value"], ...]}``.

* Rule sample-step (``series_gpu_seconds``): a sample stands for the step that ends at
  it, so it adds ``value x step`` GPU-seconds, and a period counts the samples in
  ``(start, end]``. The recording rules are sampled by Prometheus's query evaluation:
  every step, the series' latest value at that instant (within the lookback of 5
  minutes), so a job's GPUs count from the first evaluation that sees them.
* Rule tenant-usage (``tenant_usage``): GPU-seconds per (tenant, billing type) from
  ``platform:tenant_billing_gpus:allocated``.
* Rule spot-job-usage (``spot_job_usage``): GPU-seconds per spot job and bid from
  ``platform:job_gpus:allocated``.
* Rule spot-bid (``read_bid``): the label ``spot_price`` is the job's bid per GPU-hour;
  a missing bid counts as 0, and so does one that is not a number or is negative (warned
  about), as in a reclaim (docs/spot.md).

GPU-seconds are exact decimals (a sample's value times a whole step); hours are taken
once per total, so splitting a period never changes the sum.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..common.names import BILLING_TYPES

# The recording rules the reports read are the observability domain's (one name each).
from ..observability.rules import JOB_GPUS, TENANT_BILLING_GPUS
from .period import Period
from .prices import read_decimal

SECONDS_PER_HOUR = Decimal(3600)


@dataclass(frozen=True, order=True)
class SpotJobKey:
    """One spot job at one bid (a bid changed mid-period makes a second line)."""

    tenant: str
    namespace: str
    job: str
    bid: Decimal


def series_gpu_seconds(
    values: Iterable[Any], period: Period, where: str
) -> tuple[Decimal, list[str]]:
    """Rule sample-step: the GPU-seconds of one series' samples in ``(start, end]``, and a
    warning per sample that is not a finite number (it counts as 0)."""
    first, last = period.start.timestamp(), period.end.timestamp()
    total, warnings = Decimal(0), []
    for sample in values:
        stamp, value = float(sample[0]), sample[1]
        if not first < stamp <= last:
            continue  # its step lies (partly) outside the period
        number = read_decimal(value)
        if number is None:
            warnings.append(f"{where}: sample {value!r} at {stamp} is not a number; counted as 0")
            continue
        total += number * period.step
    return total, warnings


def _labels(series: Mapping[str, Any]) -> Mapping[str, str]:
    return series.get("metric") or {}


def _described(labels: Mapping[str, str], rule: str) -> str:
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k != "__name__")
    return f"{rule}{{{inner}}}"


def tenant_usage(
    matrix: Iterable[Mapping[str, Any]], period: Period
) -> tuple[dict[tuple[str, str], Decimal], list[str]]:
    """Rule tenant-usage: (tenant, billing type) -> GPU-seconds; a series without a
    tenant or with an unknown billing type is left out and warned about."""
    usage: dict[tuple[str, str], Decimal] = {}
    warnings: list[str] = []
    for series in matrix:
        labels = _labels(series)
        where = _described(labels, TENANT_BILLING_GPUS)
        tenant, billing_type = labels.get("tenant", ""), labels.get("billing_type", "")
        if not tenant or billing_type not in BILLING_TYPES:
            warnings.append(f"{where}: no tenant or no known billing_type; left out")
            continue
        seconds, bad = series_gpu_seconds(series.get("values") or [], period, where)
        warnings += bad
        key = (tenant, billing_type)
        usage[key] = usage.get(key, Decimal(0)) + seconds
    return usage, warnings


def read_bid(text: object) -> tuple[Decimal, str | None]:
    """Rule spot-bid: the bid, and a warning when one was given but is not usable."""
    if text is None or text == "":
        return Decimal(0), None
    number = read_decimal(text)
    if number is None or number < 0:
        return Decimal(0), f"spot_price {text!r} is not a price; counted as 0"
    return number, None


def spot_job_usage(
    matrix: Iterable[Mapping[str, Any]], period: Period
) -> tuple[dict[SpotJobKey, Decimal], list[str]]:
    """Rule spot-job-usage: GPU-seconds per spot job and bid (series of other billing
    types are not billed per job and are skipped)."""
    usage: dict[SpotJobKey, Decimal] = {}
    warnings: list[str] = []
    for series in matrix:
        labels = _labels(series)
        if labels.get("billing_type") != "spot":
            continue
        where = _described(labels, JOB_GPUS)
        bid, bad_bid = read_bid(labels.get("spot_price"))
        if bad_bid:
            warnings.append(f"{where}: {bad_bid}")
        key = SpotJobKey(
            labels.get("tenant", ""), labels.get("namespace", ""), labels.get("job_name", ""), bid
        )
        seconds, bad = series_gpu_seconds(series.get("values") or [], period, where)
        warnings += bad
        usage[key] = usage.get(key, Decimal(0)) + seconds
    return usage, warnings


def matrix_tenants(matrix: Iterable[Mapping[str, Any]]) -> set[str]:
    """The tenants a matrix has series of (a tenant deleted within the period is one)."""
    return {t for t in (_labels(s).get("tenant") for s in matrix) if t}


def hours(gpu_seconds: Decimal) -> Decimal:
    return gpu_seconds / SECONDS_PER_HOUR
