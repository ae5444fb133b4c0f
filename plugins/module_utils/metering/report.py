# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``usage_report`` through the flow contract (``kube.flow``), its pure steps: the
request (``inputs.parse_report``), the facts as data and back, the plan (the ledger and
what it warns about) and what it says (no I/O).

The reads (``gather``: the tenants' Namespaces, the rules' interval and the four
recording rules over the period) are ``metering/service``'s; nothing is written.
Offline, ``gathered`` returns those answers (the Namespaces by name and labels,
Prometheus's series as it gave them), and ``parsed`` bills such facts without
connecting: the same ledger, for the same period and step, from a saved reading.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from ..common.errors import FieldError, raise_if
from ..common.names import namespace_name
from ..kube.flow import fact_lists
from .inputs import ReportRequest
from .ledger import build_ledger, ledger_csv, ledger_summary, unclaimed_warnings
from .period import Period
from .tenants import namespace_tenants, unknown_tenant_errors
from .usage import (
    matrix_tenants,
    spot_job_usage,
    subscription_seconds,
    tenant_usage,
    unclaimed_usage,
)

# The series of each recording rule, as ``gathered`` names them.
MATRICES = ("tenant_billing", "spot_jobs", "subscription_sizes", "unclaimed")
# What a Namespace is read for: its name and its tenant label.
KEPT = ("name", "labels")


@dataclass(frozen=True)
class UsageFacts:
    """What a report is billed from: the period read, the Namespaces labelled with a
    tenant, the rules' evaluation interval, the series of each recording rule over the
    period, and how many Prometheus requests reading them took (none when given to
    ``parsed``)."""

    period: Period | None = None
    namespaces: tuple[Mapping[str, Any], ...] = ()
    resolution: Decimal = Decimal(0)
    tenant_billing: tuple[Mapping[str, Any], ...] = ()
    spot_jobs: tuple[Mapping[str, Any], ...] = ()
    subscription_sizes: tuple[Mapping[str, Any], ...] = ()
    unclaimed: tuple[Mapping[str, Any], ...] = ()
    queries: int = 0


@dataclass(frozen=True)
class UsagePlanned:
    """The ledger, what the readings warn about (bad samples and bids, unclaimed GPUs),
    and the Prometheus requests the facts took."""

    ledger: dict[str, Any]
    warnings: tuple[str, ...] = ()
    queries: int = 0


def plan_report(request: ReportRequest, facts: UsageFacts) -> UsagePlanned:
    """The ledger of the tenants asked for (every known tenant when none is); raises for a
    tenant that is not known (rule metering-known-tenant)."""
    period, resolution = request.period, facts.resolution
    usage, usage_warnings = tenant_usage(facts.tenant_billing, period, resolution)
    jobs, job_warnings = spot_job_usage(facts.spot_jobs, period, resolution)
    sizes, size_warnings = subscription_seconds(facts.subscription_sizes, period, resolution)
    unclaimed, unclaimed_bad = unclaimed_usage(facts.unclaimed, period, resolution)
    known = (
        namespace_tenants(facts.namespaces)
        | set(sizes)
        | matrix_tenants(facts.tenant_billing)
        | matrix_tenants(facts.spot_jobs)
    )
    raise_if(unknown_tenant_errors(request.tenants, known))
    if request.tenants:  # a report for some tenants reconciles their namespaces alone
        mine = {namespace_name(t) for t in request.tenants}
        unclaimed = {key: value for key, value in unclaimed.items() if key[0] in mine}
    ledger = build_ledger(
        period,
        resolution,
        request.prices,
        request.tenants or known,
        sizes,
        usage,
        jobs,
        unclaimed,
        currency=request.currency,
    )
    warnings = (
        *usage_warnings,
        *job_warnings,
        *size_warnings,
        *unclaimed_bad,
        *unclaimed_warnings(unclaimed),
    )
    return UsagePlanned(ledger, warnings, facts.queries)


def report(request: ReportRequest, planned: UsagePlanned) -> dict[str, Any]:
    """The module's result but for the Prometheus requests: the ledger and its CSV."""
    return {"ledger": planned.ledger, "csv": ledger_csv(planned.ledger)}


def warnings_of(planned: UsagePlanned) -> list[str]:
    """What the readings warn about, said with the result."""
    return list(planned.warnings)


def report_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    """What ``usage_report`` says in a few lines (rule run-summary): the ledger's, and for a
    federation the members it was read from (a member left out is not billed)."""
    members = params.get("members")
    said = ledger_summary(result["ledger"])
    return [*said, f"members: {', '.join(sorted(members))}"] if members else said


def _period_of(period: Period | None) -> dict[str, Any] | None:
    return None if period is None else {**period.view(), "step": period.step}


def facts_out(facts: UsageFacts) -> dict[str, Any]:
    """The facts as data, what ``gathered`` returns and ``parsed`` takes."""
    return {
        "period": _period_of(facts.period),
        "namespaces": [
            {"metadata": {k: v for k, v in (ns.get("metadata") or {}).items() if k in KEPT}}
            for ns in facts.namespaces
        ],
        "resolution_seconds": str(facts.resolution),
        **{key: [dict(s) for s in getattr(facts, key)] for key in MATRICES},
    }


def _resolution(value: object) -> Decimal:
    try:
        resolution = Decimal(str(value))
    except InvalidOperation:
        resolution = Decimal(0)
    if not resolution.is_finite() or resolution <= 0:
        raise_if(
            [
                FieldError(
                    "facts.resolution_seconds",
                    f"{value!r} is not the rules' interval in seconds, as state: gathered "
                    "returns it",
                )
            ]
        )
    return resolution


def facts_in(request: ReportRequest, data: Mapping[str, Any]) -> UsageFacts:
    """Facts given as ``gathered`` returned them, read for this run's period and step
    (another period's series would bill the wrong hours)."""
    wanted = _period_of(request.period)
    if data.get("period") != wanted:
        raise_if(
            [
                FieldError(
                    "facts.period",
                    f"the facts were gathered for {data.get('period')!r}, not for this run's "
                    f"period {wanted!r}; give the start, end and step they were gathered with",
                )
            ]
        )
    resolution = _resolution(data.get("resolution_seconds"))
    namespaces, *matrices = fact_lists(data, "namespaces", *MATRICES)
    return UsageFacts(request.period, namespaces, resolution, *matrices)
