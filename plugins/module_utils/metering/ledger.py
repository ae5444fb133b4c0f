# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ledger: what each tenant owes for a period, per billing type (pure: no I/O).

* Rule subscription-included (``included_gpu_hours``): a subscription includes, for each
  size N it had in the period, N x the hours it existed at that size (rule
  subscription-over-time): prorated, so time before the tenant existed or after it was
  deleted costs nothing, and a resize bills each part at its own size.
* Rule subscription-overage (``overage_gpu_hours``): the hours used beyond those
  included, never negative.
* Rule subscription-amount (``subscription_row``): included x ``gpu_hour`` + overage x
  ``overage_gpu_hour``: the subscription is paid whether it is used or not.
* Rule payg-amount (``payg_row``): hours x the list price ``payg.gpu_hour``.
* Rule spot-amount (``spot_row``): per job line hours x the job's bid; the row's amount
  is the sum of its lines. The row's ``gpu_hours`` is the tenant series' (the same the
  other billing types use); the lines are the per-job series'.
* Rule cloud-amount (``cloud_row``): GPU-hours on cloud nodes, whatever the queue, x
  ``cloud.gpu_hour`` (rule ledger-line).
* Rule reconciliation (``reconciliation``): the GPU-hours held in tenant namespaces that
  no line claims, per pod; 0 on a healthy cluster (rule unclaimed-gpus).
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
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any

from .period import Period
from .prices import PriceTable
from .usage import LINE_CLOUD, LINES, SpotJobKey, hours

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
    "hours",
    "included_gpu_hours",
    "overage_gpu_hours",
    "price",
    "overage_price",
    "amount",
    "currency",
)


# Hours are GPU-seconds / 3600, which Decimal rounds to 28 digits, so an amount computed
# from them can lie a unit of its last digit off the exact one (2 GPU-minutes at 1.65 are
# 0.05499...9, not 0.055). An exact amount has far fewer digits, or does not end and is
# then far from a half-cent, so rounding to 24 digits first gives it back.
EXACT = Context(prec=24)


def cents(amount: Decimal) -> str:
    """Rule ledger-rounding: an amount as written, half-up to cents."""
    return str(EXACT.plus(amount).quantize(CENT, rounding=ROUND_HALF_UP))


def hours_text(value: Decimal) -> str:
    """Rule ledger-rounding: GPU-hours as written, half-up to 6 decimal places."""
    return str(value.quantize(HOURS_PLACES, rounding=ROUND_HALF_UP))


def included_gpu_hours(sizes: Mapping[Decimal, Decimal]) -> Decimal:
    """Rule subscription-included: sum of size x hours at that size (``sizes``: GPUs ->
    seconds)."""
    return sum((gpus * hours(seconds) for gpus, seconds in sizes.items()), ZERO)


def overage_gpu_hours(used: Decimal, included: Decimal) -> Decimal:
    """Rule subscription-overage: max(0, used - included)."""
    return max(ZERO, used - included)


def size_lines(sizes: Mapping[Decimal, Decimal]) -> list[dict[str, str]]:
    """Each size the subscription had, with the hours it had it and what they include."""
    return [
        {
            "subscription_gpus": str(gpus),
            "hours": hours_text(hours(seconds)),
            "included_gpu_hours": hours_text(gpus * hours(seconds)),
        }
        for gpus, seconds in sorted(sizes.items())
        if seconds
    ]


def subscription_row(
    tenant: str, used: Decimal, sizes: Mapping[Decimal, Decimal], prices: PriceTable
) -> dict[str, Any]:
    """Rule subscription-amount (``used`` in GPU-hours, ``sizes`` GPUs -> seconds)."""
    included = included_gpu_hours(sizes)
    overage = overage_gpu_hours(used, included)
    amount = included * prices.subscription_gpu_hour + overage * prices.overage_gpu_hour
    return {
        "tenant": tenant,
        "billing_type": "subscription",
        "gpu_hours": hours_text(used),
        "sizes": size_lines(sizes),
        "included_gpu_hours": hours_text(included),
        "overage_gpu_hours": hours_text(overage),
        "price": str(prices.subscription_gpu_hour),
        "overage_price": str(prices.overage_gpu_hour),
        "amount": cents(amount),
    }


def payg_row(tenant: str, used: Decimal, prices: PriceTable) -> dict[str, Any]:
    """Rule payg-amount: GPU-hours x the list price ``payg.gpu_hour``."""
    return {
        "tenant": tenant,
        "billing_type": "payg",
        "gpu_hours": hours_text(used),
        "price": str(prices.payg_gpu_hour),
        "amount": cents(used * prices.payg_gpu_hour),
    }


def cloud_row(tenant: str, used: Decimal, prices: PriceTable) -> dict[str, Any]:
    """Rule cloud-amount: GPU-hours on cloud nodes, whatever the queue, x ``cloud.gpu_hour``."""
    return {
        "tenant": tenant,
        "billing_type": LINE_CLOUD,
        "gpu_hours": hours_text(used),
        "price": str(prices.cloud_gpu_hour),
        "amount": cents(used * prices.cloud_gpu_hour),
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
    sizes: Mapping[Decimal, Decimal],
    prices: PriceTable,
) -> list[dict[str, Any]]:
    """A tenant's four rows (subscription, payg, spot, cloud), zero where nothing was used."""

    def used(billing_type: str) -> Decimal:
        return hours(usage.get((tenant, billing_type), ZERO))

    lines = [spot_job_line(key, jobs[key]) for key in sorted(jobs) if key.tenant == tenant]
    return [
        subscription_row(tenant, used("subscription"), sizes, prices),
        payg_row(tenant, used("payg"), prices),
        spot_row(tenant, used("spot"), lines),
        cloud_row(tenant, used(LINE_CLOUD), prices),
    ]


def _sum(rows: Iterable[Mapping[str, Any]], key: str) -> Decimal:
    return sum((Decimal(row[key]) for row in rows), ZERO)


def ledger_totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Rule ledger-rounding: the totals are sums of the written row values."""
    by_type = {line: [r for r in rows if r["billing_type"] == line] for line in LINES}
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


def reconciliation(unclaimed: Mapping[tuple[str, str], Decimal]) -> dict[str, Any]:
    """Rule reconciliation: the unclaimed GPU-hours and the pods that held them."""
    pods = [
        {"namespace": namespace, "pod": pod, "gpu_hours": hours_text(hours(seconds))}
        for (namespace, pod), seconds in sorted(unclaimed.items())
    ]
    return {"unclaimed_gpu_hours": hours_text(_sum(pods, "gpu_hours")), "pods": pods}


def build_ledger(
    period: Period,
    resolution: Decimal,
    prices: PriceTable,
    tenants: Iterable[str],
    subscriptions: Mapping[str, Mapping[Decimal, Decimal]],
    usage: Mapping[tuple[str, str], Decimal],
    jobs: Mapping[SpotJobKey, Decimal],
    unclaimed: Mapping[tuple[str, str], Decimal],
    currency: str = "",
) -> dict[str, Any]:
    """The ledger of ``tenants`` (sorted; four rows each) for ``period``: ``usage``,
    ``jobs`` and ``unclaimed`` are GPU-seconds (``usage.tenant_usage``,
    ``usage.spot_job_usage``, ``usage.unclaimed_usage``), ``subscriptions`` the seconds
    per size (``usage.subscription_seconds``), ``resolution`` the rules' interval."""
    rows = [
        row
        for tenant in sorted(set(tenants))
        for row in tenant_rows(tenant, usage, jobs, subscriptions.get(tenant, {}), prices)
    ]
    ledger: dict[str, Any] = {
        "period": period.view(),
        "resolution_seconds": str(resolution),
        "prices": prices.view(),
    }
    if currency:
        ledger["currency"] = currency
    ledger["rows"] = rows
    ledger["totals"] = ledger_totals(rows)
    ledger["reconciliation"] = reconciliation(unclaimed)
    return ledger


def ledger_summary(ledger: Mapping[str, Any]) -> list[str]:
    """What a person reads at the end of a run: the period, the total per line, each
    tenant's amount, and the reconciliation."""
    currency = f" {ledger['currency']}" if ledger.get("currency") else ""
    totals = ledger["totals"]
    period = ledger["period"]
    per_line = ", ".join(
        f"{line} {t['amount']} ({t['gpu_hours']} GPU-h)"
        for line, t in totals["by_billing_type"].items()
    )
    width = max((len(t) for t in totals["by_tenant"]), default=0)
    lines = [
        f"period {period['start']} - {period['end']}, resolution {ledger['resolution_seconds']} s, "
        f"{len(totals['by_tenant'])} tenants",
        f"total {totals['amount']}{currency}: {per_line}",
        *(f"  {t:<{width}}  {amount}{currency}" for t, amount in totals["by_tenant"].items()),
    ]
    check = ledger["reconciliation"]
    pods = ", ".join(f"{p['namespace']}/{p['pod']}" for p in check["pods"])
    lines.append(
        f"reconciliation: {check['unclaimed_gpu_hours']} GPU-h held in tenant namespaces on no "
        f"line{': ' + pods if pods else ''}"
    )
    return lines


def csv_lines(ledger: Mapping[str, Any]) -> Iterable[dict[str, Any]]:
    """One ``usage`` line per row, each spot row followed by a ``spot_job`` line per job."""
    currency = ledger.get("currency", "")
    for row in ledger["rows"]:
        flat = {k: v for k, v in row.items() if k not in ("jobs", "sizes")}
        yield {"kind": "usage", "currency": currency, **flat}
        for size in row.get("sizes", []):
            yield {
                "kind": "subscription_size",
                "tenant": row["tenant"],
                "billing_type": row["billing_type"],
                **size,
                "currency": currency,
            }
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
    bid is its ``price``. A spreadsheet sums the ``usage`` lines (the ``spot_job`` and
    ``subscription_size`` lines are already in their row's)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(csv_lines(ledger))
    return out.getvalue()


def unclaimed_warnings(unclaimed: Mapping[tuple[str, str], Decimal]) -> list[str]:
    """Rule reconciliation, said: each pod whose GPU-seconds no line claims."""
    return [
        f"reconciliation: {namespace}/{pod} held {seconds} GPU-seconds in the period that no "
        "billing line claims: its queue is not one of its tenant's (docs/metering.md)"
        for (namespace, pod), seconds in sorted(unclaimed.items())
    ]
