# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ledger: what each tenant owes for a period, per billing type (pure: no I/O).

* Rule subscription-included (``included_gpu_hours``): a subscription of N GPUs
  includes N x the period's hours.
* Rule subscription-overage (``overage_gpu_hours``): the hours used beyond those
  included, never negative.
* Rule subscription-amount (``subscription_row``): included x ``gpu_hour`` + overage x
  ``overage_gpu_hour``: the subscription is paid whether it is used or not.
* Rule payg-amount (``payg_row``): hours x the list price ``payg.gpu_hour``.
* Rule spot-amount (``spot_row``): per job line hours x the job's bid; the row's amount
  is the sum of its lines. The row's ``gpu_hours`` is the tenant series' (the same the
  other billing types use); the lines are the per-job series'.
* Rule ledger-rounding (``cents``, ``hours_text``): amounts are computed unrounded and
  written rounded half-up to cents, hours to 6 decimal places; every sum in the ledger
  (a spot row, the totals) is the sum of the written values it adds, so the ledger adds
  up on paper.

Every number is written as a string (JSON numbers would be floats).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from ..common.names import BILLING_TYPES
from .period import Period
from .prices import PriceTable
from .usage import SpotJobKey, hours

CENT = Decimal("0.01")
HOURS_PLACES = Decimal("0.000001")
ZERO = Decimal(0)

CSV_COLUMNS = (
    "kind",
    "tenant",
    "billing_type",
    "namespace",
    "job",
    "gpu_hours",
    "subscription_gpus",
    "included_gpu_hours",
    "overage_gpu_hours",
    "price",
    "overage_price",
    "amount",
    "currency",
)


def cents(amount: Decimal) -> str:
    """Rule ledger-rounding: an amount as written, half-up to cents."""
    return str(amount.quantize(CENT, rounding=ROUND_HALF_UP))


def hours_text(value: Decimal) -> str:
    """Rule ledger-rounding: GPU-hours as written, half-up to 6 decimal places."""
    return str(value.quantize(HOURS_PLACES, rounding=ROUND_HALF_UP))


def included_gpu_hours(subscription_gpus: Decimal, period: Period) -> Decimal:
    """Rule subscription-included."""
    return subscription_gpus * period.hours


def overage_gpu_hours(used: Decimal, included: Decimal) -> Decimal:
    """Rule subscription-overage: max(0, used - included)."""
    return max(ZERO, used - included)


def subscription_row(
    tenant: str, used: Decimal, size: Decimal, prices: PriceTable, period: Period
) -> dict[str, Any]:
    """Rule subscription-amount (``used`` in GPU-hours, ``size`` in GPUs)."""
    included = included_gpu_hours(size, period)
    overage = overage_gpu_hours(used, included)
    amount = included * prices.subscription_gpu_hour + overage * prices.overage_gpu_hour
    return {
        "tenant": tenant,
        "billing_type": "subscription",
        "gpu_hours": hours_text(used),
        "subscription_gpus": str(size),
        "included_gpu_hours": hours_text(included),
        "overage_gpu_hours": hours_text(overage),
        "price": str(prices.subscription_gpu_hour),
        "overage_price": str(prices.overage_gpu_hour),
        "amount": cents(amount),
    }


def payg_row(tenant: str, used: Decimal, prices: PriceTable) -> dict[str, Any]:
    """Rule payg-amount."""
    return {
        "tenant": tenant,
        "billing_type": "payg",
        "gpu_hours": hours_text(used),
        "price": str(prices.payg_gpu_hour),
        "amount": cents(used * prices.payg_gpu_hour),
    }


def spot_job_line(key: SpotJobKey, gpu_seconds: Decimal) -> dict[str, Any]:
    """One spot job at one bid: its hours x its bid."""
    used = hours(gpu_seconds)
    return {
        "job": key.job,
        "namespace": key.namespace,
        "gpu_hours": hours_text(used),
        "bid": str(key.bid),
        "amount": cents(used * key.bid),
    }


def spot_row(tenant: str, used: Decimal, lines: list[dict[str, Any]]) -> dict[str, Any]:
    """Rule spot-amount: the sum of the written job line amounts."""
    return {
        "tenant": tenant,
        "billing_type": "spot",
        "gpu_hours": hours_text(used),
        "jobs": lines,
        "amount": cents(sum((Decimal(line["amount"]) for line in lines), ZERO)),
    }


def tenant_rows(
    tenant: str,
    usage: Mapping[tuple[str, str], Decimal],
    jobs: Mapping[SpotJobKey, Decimal],
    subscription_gpus: Decimal,
    prices: PriceTable,
    period: Period,
) -> list[dict[str, Any]]:
    """A tenant's three rows (subscription, payg, spot), zero where nothing was used."""

    def used(billing_type: str) -> Decimal:
        return hours(usage.get((tenant, billing_type), ZERO))

    lines = [spot_job_line(key, jobs[key]) for key in sorted(jobs) if key.tenant == tenant]
    return [
        subscription_row(tenant, used("subscription"), subscription_gpus, prices, period),
        payg_row(tenant, used("payg"), prices),
        spot_row(tenant, used("spot"), lines),
    ]


def _sum(rows: Iterable[Mapping[str, Any]], key: str) -> Decimal:
    return sum((Decimal(row[key]) for row in rows), ZERO)


def ledger_totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Rule ledger-rounding: the totals are sums of the written row values."""
    by_type = {
        billing_type: [r for r in rows if r["billing_type"] == billing_type]
        for billing_type in BILLING_TYPES
    }
    tenants = sorted({r["tenant"] for r in rows})
    return {
        "gpu_hours": hours_text(_sum(rows, "gpu_hours")),
        "amount": cents(_sum(rows, "amount")),
        "by_billing_type": {
            billing_type: {
                "gpu_hours": hours_text(_sum(typed, "gpu_hours")),
                "amount": cents(_sum(typed, "amount")),
            }
            for billing_type, typed in by_type.items()
        },
        "by_tenant": {
            t: cents(_sum((r for r in rows if r["tenant"] == t), "amount")) for t in tenants
        },
    }


def build_ledger(
    period: Period,
    prices: PriceTable,
    tenants: Iterable[str],
    subscriptions: Mapping[str, Decimal],
    usage: Mapping[tuple[str, str], Decimal],
    jobs: Mapping[SpotJobKey, Decimal],
    currency: str = "",
) -> dict[str, Any]:
    """The ledger of ``tenants`` (sorted; three rows each) for ``period``: ``usage`` and
    ``jobs`` are GPU-seconds (``usage.tenant_usage``, ``usage.spot_job_usage``),
    ``subscriptions`` GPUs per tenant."""
    rows = [
        row
        for tenant in sorted(set(tenants))
        for row in tenant_rows(tenant, usage, jobs, subscriptions.get(tenant, ZERO), prices, period)
    ]
    ledger: dict[str, Any] = {"period": period.view(), "prices": prices.view()}
    if currency:
        ledger["currency"] = currency
    ledger["rows"] = rows
    ledger["totals"] = ledger_totals(rows)
    return ledger


def csv_lines(ledger: Mapping[str, Any]) -> Iterable[dict[str, Any]]:
    """One ``usage`` line per row, each spot row followed by a ``spot_job`` line per job."""
    currency = ledger.get("currency", "")
    for row in ledger["rows"]:
        flat = {k: v for k, v in row.items() if k != "jobs"}
        yield {"kind": "usage", "currency": currency, **flat}
        for job in row.get("jobs", []):
            yield {
                "kind": "spot_job",
                "tenant": row["tenant"],
                "billing_type": row["billing_type"],
                "namespace": job["namespace"],
                "job": job["job"],
                "gpu_hours": job["gpu_hours"],
                "price": job["bid"],
                "amount": job["amount"],
                "currency": currency,
            }


def ledger_csv(ledger: Mapping[str, Any]) -> str:
    """The ledger as CSV: a header of ``CSV_COLUMNS``, then ``csv_lines``; a spot job's
    bid is its ``price``. A spreadsheet sums the ``usage`` lines (the ``spot_job`` lines
    are already in their spot row's amount)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(csv_lines(ledger))
    return out.getvalue()
