# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Metering against the cluster and Prometheus: the ``usage_report`` module (``run``).

The only file of the domain that reads anything:

* one list of Namespaces labelled ``platform.io/tenant`` (the known tenants);
* one ``GET /api/v1/rules`` for the metering rules' interval (rule metering-resolution);
* per recording rule (usage, spot jobs, subscription sizes, unclaimed GPUs), one
  ``GET /api/v1/query_range`` of ``sum_over_time(rule[step])`` per window of at most
  11,000 steps (rule period-windows), over ``ansible.module_utils.urls.open_url``.

Everything it decides is the pure core's (``period``, ``prices``, ``usage``, ``tenants``,
``ledger``). It never writes: ``changed`` is false, and check mode is the same run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import urlencode

from ansible.module_utils.common.warnings import warn
from ansible.module_utils.urls import ConnectionError as UrlConnectionError
from ansible.module_utils.urls import open_url

from ..common.errors import Refused, raise_if
from ..common.names import LABEL_TENANT, namespace_name
from ..kube.cluster import Cluster
from .answer import AnswerError, error_of, interval_of, matrix_of, read_json
from .inputs import ReportRequest, parse_report
from .ledger import build_ledger, ledger_csv, ledger_summary, unclaimed_warnings
from .period import windows
from .tenants import namespace_tenants, unknown_tenant_errors
from .usage import (
    JOB_GPUS,
    TENANT_BILLING_GPUS,
    TENANT_SUBSCRIPTION,
    UNCLAIMED_POD_GPUS,
    matrix_tenants,
    spot_job_usage,
    subscription_seconds,
    tenant_usage,
    unclaimed_usage,
)

# Only spot jobs are billed per job: the other series would be read for nothing.
SPOT_JOBS = f'{JOB_GPUS}{{billing_type="spot"}}'


class PrometheusError(Refused):
    """Prometheus could not be asked, or did not answer with data; reported with
    ``prometheus_url``."""

    def __init__(self, url: str, query: str, what: str):
        super().__init__(f"prometheus_url: {what} (query {query} at {url})", prometheus_url=url)


def _http_error(url: str, query: str, exc: HTTPError) -> PrometheusError:
    """Prometheus explains a refused query in a JSON body; say that when it did."""
    try:
        reason = error_of(read_json(exc.read() or b""))
    except OSError:
        reason = None
    return PrometheusError(
        url, query, f"Prometheus answered HTTP {exc.code}: {reason or exc.reason}"
    )


def _get(url: str, path: str, params: Mapping[str, str], query: str, timeout: int) -> bytes:
    """``GET <url><path>?<params>``: the body, or PrometheusError naming ``query``."""
    try:
        response = open_url(
            f"{url}{path}?{urlencode(params)}",
            method="GET",
            timeout=timeout,
            headers={"Accept": "application/json"},
        )
        return response.read()
    except HTTPError as exc:  # before URLError, its base class
        raise _http_error(url, query, exc) from None
    except (URLError, UrlConnectionError, OSError) as exc:
        why = getattr(exc, "reason", None) or exc
        raise PrometheusError(url, query, f"cannot reach Prometheus: {why}") from None


def query_range(
    url: str, query: str, start: datetime, end: datetime, step: int, timeout: int
) -> list[dict[str, Any]]:
    """``GET <url>/api/v1/query_range``: the series of the matrix, or PrometheusError.
    Times go as Unix seconds, so a sub-second period start is kept exactly."""
    params = {
        "query": query,
        "start": f"{start.timestamp():.3f}",
        "end": f"{end.timestamp():.3f}",
        "step": str(step),
    }
    body = _get(url, "/api/v1/query_range", params, query, timeout)
    try:
        return matrix_of(body)
    except AnswerError as exc:
        raise PrometheusError(url, query, str(exc)) from None


def rule_interval(url: str, timeout: int) -> Decimal:
    """The metering rules' evaluation interval, read from Prometheus's recording rules (rule
    metering-resolution: ``answer.interval_of``)."""
    what = f"rules recording {TENANT_BILLING_GPUS}"
    body = _get(url, "/api/v1/rules", {"type": "record"}, what, timeout)
    try:
        return interval_of(body, TENANT_BILLING_GPUS)
    except AnswerError as exc:
        raise PrometheusError(url, what, str(exc)) from None


def read_matrix(
    request: ReportRequest, rule: str, over_time: str = "sum_over_time"
) -> tuple[list[dict[str, Any]], int]:
    """Every series of ``over_time(rule[step])`` over the period, window by window, and
    the number of queries. A window asks from its start + step: that point's step is its
    first, and its range, open at its start, leaves the window's start to the window
    before (rule exact-integral)."""
    series: list[dict[str, Any]] = []
    count = 0
    step = request.period.step
    query = f"{over_time}({rule}[{step}s])"
    for window in windows(request.period):
        first = window.start.timestamp() + step
        series += query_range(
            request.prometheus_url,
            query,
            datetime.fromtimestamp(first, tz=window.start.tzinfo),
            window.end,
            step,
            request.timeout,
        )
        count += 1
    return series, count


def warn_all(warnings: Iterable[str]) -> None:
    for warning in warnings:
        warn(warning)


def run(params: Mapping[str, Any], cluster: Cluster, check_mode: bool = False) -> dict[str, Any]:
    """The ``usage_report`` module: one list, the rules' interval, the queries, the ledger."""
    request = parse_report(params)
    namespaces = cluster.list("v1", "Namespace", label_selector=LABEL_TENANT)
    resolution = rule_interval(request.prometheus_url, request.timeout)
    tenant_matrix, tenant_queries = read_matrix(request, TENANT_BILLING_GPUS)
    job_matrix, job_queries = read_matrix(request, SPOT_JOBS)
    size_matrix, size_queries = read_matrix(request, TENANT_SUBSCRIPTION, "count_over_time")
    unclaimed_matrix, unclaimed_queries = read_matrix(request, UNCLAIMED_POD_GPUS)
    period = request.period
    usage, usage_warnings = tenant_usage(tenant_matrix, period, resolution)
    jobs, job_warnings = spot_job_usage(job_matrix, period, resolution)
    sizes, size_warnings = subscription_seconds(size_matrix, period, resolution)
    unclaimed, unclaimed_bad = unclaimed_usage(unclaimed_matrix, period, resolution)
    known = (
        namespace_tenants(namespaces)
        | set(sizes)
        | matrix_tenants(tenant_matrix)
        | matrix_tenants(job_matrix)
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
    warn_all(
        [
            *usage_warnings,
            *job_warnings,
            *size_warnings,
            *unclaimed_bad,
            *unclaimed_warnings(unclaimed),
        ]
    )
    return {
        "changed": False,
        "ledger": ledger,
        "csv": ledger_csv(ledger),
        "summary": ledger_summary(ledger),
        "queries": 1 + tenant_queries + job_queries + size_queries + unclaimed_queries,
    }
