# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the ``usage_report`` module accepts (pure: no I/O).

* Rule usage-report-input (``report_input_errors``): every check before the first
  request: ``prometheus_url`` an http(s) URL, or else ``members`` (a federation: member
  name -> that member's Prometheus, each an http(s) URL; not both), the period (rules period-time,
  period-order, period-max, period-step), the price table (rules price-table, price), each of
  ``tenants`` a tenant name (rule tenant-name), ``timeout`` 1 or more. Each error names
  its field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..common.errors import FieldError, raise_if
from ..common.names import tenant_name_errors
from .period import Period, parse_period, period_errors
from .prices import PriceTable, parse_prices, price_table_errors


@dataclass(frozen=True)
class ReportRequest:
    prometheus_url: str
    period: Period
    prices: PriceTable
    tenants: tuple[str, ...] | None  # None: every tenant
    currency: str
    timeout: int
    # A federation's members, by name, each with its Prometheus; () for one cluster.
    members: tuple[tuple[str, str], ...] = ()


def url_errors(url: object, field: str = "prometheus_url") -> list[FieldError]:
    """A Prometheus is an http or https URL with a host (its API is below it)."""
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        return [
            FieldError(
                field,
                f"{url!r} is not an http(s) URL; for example http://prometheus:9090 "
                "(rule usage-report-input)",
            )
        ]
    return []


def prometheus_errors(params: Mapping[str, Any]) -> list[FieldError]:
    """One Prometheus (``prometheus_url``) or one per member (``members``), never both:
    with members, each is asked for its own member's usage, and a URL beside them would
    be asked for nothing."""
    url, members = params.get("prometheus_url"), params.get("members")
    if members is None and url is None:
        return [
            FieldError(
                "prometheus_url",
                "is required: the Prometheus to bill from, or members, each member's "
                "Prometheus, for a federation (rule usage-report-input)",
            )
        ]
    if members is None:
        return url_errors(url)
    if url is not None:
        return [
            FieldError(
                "members",
                "is given with prometheus_url: a federation's ledger asks each member's "
                "Prometheus, named in members; give one of the two (rule usage-report-input)",
            )
        ]
    if not isinstance(members, Mapping) or not members:
        return [
            FieldError(
                "members",
                f"{members!r}: give each member's name and its Prometheus URL, for example "
                "{idc-1: http://prometheus.idc-1:9090} (rule usage-report-input)",
            )
        ]
    return [e for name, u in members.items() for e in url_errors(u, f"members.{name}")]


def report_input_errors(params: Mapping[str, Any]) -> list[FieldError]:
    """Rule usage-report-input (see the module docstring)."""
    errors = prometheus_errors(params)
    errors += period_errors(params.get("start"), params.get("end"), params.get("step"))
    errors += price_table_errors(params.get("prices"))
    for index, tenant in enumerate(params.get("tenants") or []):
        errors += tenant_name_errors(tenant, f"tenants[{index}]")
    timeout = params.get("timeout", 30)
    if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 1:
        errors.append(
            FieldError("timeout", f"{timeout!r} is too small; 1 or more seconds is accepted")
        )
    return errors


def parse_report(params: Mapping[str, Any]) -> ReportRequest:
    """The ReportRequest, or PlatformValidationError naming every broken rule."""
    raise_if(report_input_errors(params))
    tenants = params.get("tenants")
    members = params.get("members") or {}
    return ReportRequest(
        prometheus_url=str(params.get("prometheus_url") or "").rstrip("/"),
        period=parse_period(params["start"], params["end"], params.get("step")),
        prices=parse_prices(params["prices"]),
        tenants=tuple(tenants) if tenants else None,
        currency=str(params.get("currency") or ""),
        timeout=int(params.get("timeout", 30)),
        members=tuple(sorted((str(n), str(u).rstrip("/")) for n, u in members.items())),
    )
