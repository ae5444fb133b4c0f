# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU use from Prometheus ``query_range`` matrices (pure: no I/O).

A matrix is what ``/api/v1/query_range`` answers in ``data.result``: a list of series
``{"metric": {label: value}, "values": [[unix time, "value"], ...]}``. The service asks
for ``sum_over_time(rule[step])`` (``count_over_time`` for the subscription sizes), so
each point is the sum of the recording rule's samples in the step that ends at it.

* Rule exact-integral (``series_gpu_seconds``): the recording rules are evaluated every
  ``resolution`` seconds (their group's interval, read from Prometheus), and a sample
  stands for the interval it was evaluated in, so a series holds ``sum of samples x
  resolution`` GPU-seconds. The steps tile the period (each point's range is open at its
  start, closed at its end), so every sample counts once and the step never changes the
  bill. A pod counts from the first evaluation that sees it Running to the last: the
  error is at most one scrape plus one evaluation interval per start and per stop.
* Rule ledger-line (``line_of``): a GPU-second on a cloud node is the tenant's ``cloud``
  line, whatever queue it ran in; every other is its queue's billing type (rule
  billing-follows-queue, in the recording rules).
* Rule tenant-usage (``tenant_usage``): GPU-seconds per (tenant, line) from
  ``platform:tenant_billing_gpus:allocated``.
* Rule spot-job-usage (``spot_job_usage``): GPU-seconds per spot job and bid, on IDC
  nodes, from ``platform:job_gpus:allocated``.
* Rule spot-bid (``read_bid``): the label ``spot_price`` is the job's bid per GPU-hour;
  a missing bid counts as 0, and so does one that is not a number or is negative (warned
  about), as in a reclaim (docs/spot.md).
* Rule subscription-over-time (``subscription_seconds``): the seconds each tenant's
  subscription existed at each size (``gpus``), from
  ``platform:tenant_subscription_gpus:info``.
* Rule unclaimed-gpus (``unclaimed_usage``): GPU-seconds per pod held in a tenant
  namespace that no billing line claims, from ``platform:pod_gpus:unclaimed``.

GPU-seconds are exact decimals; hours are taken once per total, so splitting a period
never changes the sum.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..common.names import BILLING_TYPES

# The recording rules the reports read are the observability domain's (one name each).
from ..observability.metering_rules import (
    CLOUD_LOCATION,
    JOB_GPUS,
    TENANT_BILLING_GPUS,
    TENANT_SUBSCRIPTION,
    UNCLAIMED_POD_GPUS,
)
from .period import Period
from .prices import read_decimal

SECONDS_PER_HOUR = Decimal(3600)
LINE_CLOUD = "cloud"
LINES = (*BILLING_TYPES, LINE_CLOUD)


@dataclass(frozen=True, order=True)
class SpotJobKey:
    """One spot job at one bid (a bid changed mid-period makes a second line)."""

    tenant: str
    namespace: str
    job: str
    bid: Decimal


def series_sum(values: Iterable[Any], period: Period, where: str) -> tuple[Decimal, list[str]]:
    """The sum of one series' points in ``(start, end]``, and a warning per point that is
    not a finite number (it counts as 0)."""
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
        total += number
    return total, warnings


def series_gpu_seconds(
    values: Iterable[Any], period: Period, resolution: Decimal, where: str
) -> tuple[Decimal, list[str]]:
    """Rule exact-integral: the GPU-seconds of one series (its points are sums of samples,
    each standing for ``resolution`` seconds)."""
    total, warnings = series_sum(values, period, where)
    return total * resolution, warnings


def _labels(series: Mapping[str, Any]) -> Mapping[str, str]:
    return series.get("metric") or {}


def _described(labels: Mapping[str, str], rule: str) -> str:
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k != "__name__")
    return f"{rule}{{{inner}}}"


def line_of(billing_type: str, location: str) -> str:
    """Rule ledger-line: cloud GPU-seconds are the cloud line, others their billing type's."""
    return LINE_CLOUD if location == CLOUD_LOCATION else billing_type


def tenant_usage(
    matrix: Iterable[Mapping[str, Any]], period: Period, resolution: Decimal
) -> tuple[dict[tuple[str, str], Decimal], list[str]]:
    """Rule tenant-usage: (tenant, line) -> GPU-seconds; a series without a tenant or with
    an unknown billing type is left out and warned about."""
    usage: dict[tuple[str, str], Decimal] = {}
    warnings: list[str] = []
    for series in matrix:
        labels = _labels(series)
        where = _described(labels, TENANT_BILLING_GPUS)
        tenant, billing_type = labels.get("tenant", ""), labels.get("billing_type", "")
        if not tenant or billing_type not in BILLING_TYPES:
            warnings.append(f"{where}: no tenant or no known billing_type; left out")
            continue
        seconds, bad = series_gpu_seconds(series.get("values") or [], period, resolution, where)
        warnings += bad
        key = (tenant, line_of(billing_type, labels.get("location", "")))
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
    matrix: Iterable[Mapping[str, Any]], period: Period, resolution: Decimal
) -> tuple[dict[SpotJobKey, Decimal], list[str]]:
    """Rule spot-job-usage: GPU-seconds per spot job and bid on IDC nodes (other billing
    types, and the cloud line, are not billed per job)."""
    usage: dict[SpotJobKey, Decimal] = {}
    warnings: list[str] = []
    for series in matrix:
        labels = _labels(series)
        if labels.get("billing_type") != "spot" or labels.get("location") == CLOUD_LOCATION:
            continue
        where = _described(labels, JOB_GPUS)
        bid, bad_bid = read_bid(labels.get("spot_price"))
        if bad_bid:
            warnings.append(f"{where}: {bad_bid}")
        key = SpotJobKey(
            labels.get("tenant", ""), labels.get("namespace", ""), labels.get("job_name", ""), bid
        )
        seconds, bad = series_gpu_seconds(series.get("values") or [], period, resolution, where)
        warnings += bad
        usage[key] = usage.get(key, Decimal(0)) + seconds
    return usage, warnings


def subscription_seconds(
    matrix: Iterable[Mapping[str, Any]], period: Period, resolution: Decimal
) -> tuple[dict[str, dict[Decimal, Decimal]], list[str]]:
    """Rule subscription-over-time: tenant -> {size in GPUs: seconds at that size}. The
    points count samples, each standing for ``resolution`` seconds; a size that is not a
    quantity counts as 0 GPUs and is warned about."""
    out: dict[str, dict[Decimal, Decimal]] = {}
    warnings: list[str] = []
    for series in matrix:
        labels = _labels(series)
        where = _described(labels, TENANT_SUBSCRIPTION)
        tenant = labels.get("tenant", "")
        if not tenant:
            continue
        gpus = read_decimal(labels.get("gpus") or "0")
        if gpus is None or gpus < 0:
            warnings.append(f"{where}: gpus is not a number of GPUs; counted as 0")
            gpus = Decimal(0)
        seconds, bad = series_gpu_seconds(series.get("values") or [], period, resolution, where)
        warnings += bad
        sizes = out.setdefault(tenant, {})
        sizes[gpus] = sizes.get(gpus, Decimal(0)) + seconds
    return out, warnings


def unclaimed_usage(
    matrix: Iterable[Mapping[str, Any]], period: Period, resolution: Decimal
) -> tuple[dict[tuple[str, str], Decimal], list[str]]:
    """Rule unclaimed-gpus: (namespace, pod) -> GPU-seconds no billing line claims."""
    out: dict[tuple[str, str], Decimal] = {}
    warnings: list[str] = []
    for series in matrix:
        labels = _labels(series)
        where = _described(labels, UNCLAIMED_POD_GPUS)
        seconds, bad = series_gpu_seconds(series.get("values") or [], period, resolution, where)
        warnings += bad
        if seconds:
            key = (labels.get("namespace", ""), labels.get("pod", ""))
            out[key] = out.get(key, Decimal(0)) + seconds
    return out, warnings


def matrix_tenants(matrix: Iterable[Mapping[str, Any]]) -> set[str]:
    """The tenants a matrix has series of (a tenant deleted within the period is one)."""
    return {t for t in (_labels(s).get("tenant") for s in matrix) if t}


def hours(gpu_seconds: Decimal) -> Decimal:
    return gpu_seconds / SECONDS_PER_HOUR
