# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Metering against the cluster and Prometheus: the ``usage_report`` module (``run``).

The only file of the domain that reads anything:

* one list of Namespaces labelled ``platform.io/tenant`` (the known tenants) and one of
  Queues labelled ``platform.io/queue-type=subscription`` (the subscription sizes);
* per recording rule, one ``GET /api/v1/query_range`` per window of at most 11,000
  steps (rule period-windows), over ``ansible.module_utils.urls.open_url``.

Everything it decides is the pure core's (``period``, ``prices``, ``usage``, ``tenants``,
``ledger``). It never writes: ``changed`` is false, and check mode is the same run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import urlencode

from ansible.module_utils.common.warnings import warn
from ansible.module_utils.urls import ConnectionError as UrlConnectionError
from ansible.module_utils.urls import open_url

from ..common.errors import Refused, raise_if
from ..common.names import LABEL_QUEUE_TYPE, LABEL_TENANT, QUEUE_API, QUEUE_TYPE_SUBSCRIPTION
from ..kube.cluster import Cluster
from .answer import AnswerError, error_of, matrix_of, read_json
from .inputs import ReportRequest, parse_report
from .ledger import build_ledger, ledger_csv
from .period import windows
from .tenants import namespace_tenants, subscription_sizes, unknown_tenant_errors
from .usage import JOB_GPUS, TENANT_BILLING_GPUS, matrix_tenants, spot_job_usage, tenant_usage

# Only spot jobs are billed per job: the other series would be read for nothing.
SPOT_JOBS_QUERY = f'{JOB_GPUS}{{billing_type="spot"}}'


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


def query_range(
    url: str, query: str, start: datetime, end: datetime, step: int, timeout: int
) -> list[dict[str, Any]]:
    """``GET <url>/api/v1/query_range``: the series of the matrix, or PrometheusError.
    Times go as Unix seconds, so a sub-second period start is kept exactly."""
    params = urlencode(
        {
            "query": query,
            "start": f"{start.timestamp():.3f}",
            "end": f"{end.timestamp():.3f}",
            "step": str(step),
        }
    )
    try:
        response = open_url(
            f"{url}/api/v1/query_range?{params}",
            method="GET",
            timeout=timeout,
            headers={"Accept": "application/json"},
        )
        body = response.read()
    except HTTPError as exc:  # before URLError, its base class
        raise _http_error(url, query, exc) from None
    except (URLError, UrlConnectionError, OSError) as exc:
        why = getattr(exc, "reason", None) or exc
        raise PrometheusError(url, query, f"cannot reach Prometheus: {why}") from None
    try:
        return matrix_of(body)
    except AnswerError as exc:
        raise PrometheusError(url, query, str(exc)) from None


def read_matrix(request: ReportRequest, query: str) -> tuple[list[dict[str, Any]], int]:
    """Every series of ``query`` over the period, window by window, and the number of
    queries. A window asks from its start + step: that sample's step is its first."""
    series: list[dict[str, Any]] = []
    count = 0
    step = request.period.step
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
    """The ``usage_report`` module: two lists, the queries, the ledger."""
    request = parse_report(params)
    namespaces = cluster.list("v1", "Namespace", label_selector=LABEL_TENANT)
    queues = cluster.list(
        QUEUE_API, "Queue", label_selector=f"{LABEL_QUEUE_TYPE}={QUEUE_TYPE_SUBSCRIPTION}"
    )
    sizes, warnings = subscription_sizes(queues)
    tenant_matrix, tenant_queries = read_matrix(request, TENANT_BILLING_GPUS)
    job_matrix, job_queries = read_matrix(request, SPOT_JOBS_QUERY)
    usage, usage_warnings = tenant_usage(tenant_matrix, request.period)
    jobs, job_warnings = spot_job_usage(job_matrix, request.period)
    known = (
        namespace_tenants(namespaces)
        | set(sizes)
        | matrix_tenants(tenant_matrix)
        | matrix_tenants(job_matrix)
    )
    raise_if(unknown_tenant_errors(request.tenants, known))
    ledger = build_ledger(
        request.period,
        request.prices,
        request.tenants or known,
        sizes,
        usage,
        jobs,
        currency=request.currency,
    )
    warn_all([*warnings, *usage_warnings, *job_warnings])
    return {
        "changed": False,
        "ledger": ledger,
        "csv": ledger_csv(ledger),
        "queries": tenant_queries + job_queries,
    }
