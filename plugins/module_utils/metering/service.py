# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Metering against the cluster and Prometheus: the ``usage_report`` module
(``REPORT_FLOW``, through ``kube.flow``; its pure steps are ``metering/report``).

The only file of the domain that reads anything:

* one list of Namespaces labelled ``platform.io/tenant`` (the known tenants);
* one ``GET /api/v1/rules`` for the metering rules' interval (rule metering-resolution);
* per recording rule (usage, spot jobs, subscription sizes, unclaimed GPUs), one
  ``GET /api/v1/query_range`` of ``sum_over_time(rule[step])`` per window of at most
  11,000 steps (rule period-windows), over ``ansible.module_utils.urls.open_url``.

Everything it decides is the pure core's (``period``, ``prices``, ``usage``, ``tenants``,
``ledger``, planned by ``report``). It never writes: ``changed`` is false, and check mode is the same run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from decimal import Decimal
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import urlencode

from ansible.module_utils.urls import ConnectionError as UrlConnectionError
from ansible.module_utils.urls import open_url

from ..common.errors import Refused
from ..common.names import LABEL_TENANT
from ..kube.cluster import Cluster
from ..kube.flow import Flow
from .answer import AnswerError, error_of, interval_of, matrix_of, read_json
from .inputs import ReportRequest, parse_report
from .period import windows
from .report import (
    UsageFacts,
    UsagePlanned,
    facts_in,
    facts_out,
    plan_report,
    report,
    warnings_of,
)
from .usage import JOB_GPUS, TENANT_BILLING_GPUS, TENANT_SUBSCRIPTION, UNCLAIMED_POD_GPUS

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


def read_prometheus(request: ReportRequest) -> UsageFacts:
    """What ``request.prometheus_url`` recorded over the period: the rules' interval, then
    the four recording rules, window by window (no Namespaces)."""
    resolution = rule_interval(request.prometheus_url, request.timeout)
    tenant_matrix, tenant_queries = read_matrix(request, TENANT_BILLING_GPUS)
    job_matrix, job_queries = read_matrix(request, SPOT_JOBS)
    size_matrix, size_queries = read_matrix(request, TENANT_SUBSCRIPTION, "count_over_time")
    unclaimed_matrix, unclaimed_queries = read_matrix(request, UNCLAIMED_POD_GPUS)
    return UsageFacts(
        period=request.period,
        resolution=resolution,
        tenant_billing=tuple(tenant_matrix),
        spot_jobs=tuple(job_matrix),
        subscription_sizes=tuple(size_matrix),
        unclaimed=tuple(unclaimed_matrix),
        queries=1 + tenant_queries + job_queries + size_queries + unclaimed_queries,
    )


def list_tenant_namespaces(cluster: Cluster) -> list[dict[str, Any]]:
    """The known tenants' Namespaces: one list, by label ``platform.io/tenant``."""
    return cluster.list("v1", "Namespace", label_selector=LABEL_TENANT)


def gather_report(request: ReportRequest, cluster: Cluster) -> UsageFacts:
    """The ``usage_report`` module's reads: one list of Namespaces, the rules' interval,
    then the four recording rules over the period, window by window."""
    namespaces = list_tenant_namespaces(cluster)
    return replace(read_prometheus(request), namespaces=tuple(namespaces))


def apply_report(
    request: ReportRequest, planned: UsagePlanned, cluster: Cluster, check_mode: bool
) -> dict[str, Any]:
    """Nothing to write (check mode is the same run): the ledger, and the Prometheus
    requests the run made."""
    return {"changed": False, **report(request, planned), "queries": planned.queries}


# Module usage_report: the ledger of a period; it never writes.
REPORT_FLOW: Flow[ReportRequest, UsageFacts, UsagePlanned] = Flow(
    parse=parse_report,
    gather=gather_report,
    plan=plan_report,
    apply=apply_report,
    report=report,
    facts_out=facts_out,
    facts_in=facts_in,
    warnings_of=warnings_of,
)
