# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""usage_report (metering.service.REPORT_FLOW) against the fake cluster and a fake Prometheus that
answers from recorded samples as Prometheus 3 does (``open_url`` replaced): the rules'
interval, then ``sum_over_time``/``count_over_time`` of each rule over one step. And the
failures a real HTTP server gives (a tiny local ``http.server`` as Prometheus)."""

from __future__ import annotations

import bisect
import functools
import io
import json
import re
import socket
import threading
from datetime import UTC, datetime
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from unittest import mock
from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.metering import (
    ledger,
    period,
    service,
)
from ansible_collections.gpucloud.platform.plugins.modules import usage_report
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster

START = "2026-01-01T00:00:00Z"
END = "2026-01-02T00:00:00Z"
T0 = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
HOUR = 3600
PRICES = {
    "subscription": {"gpu_hour": "2.00", "overage_gpu_hour": "3.00"},
    "payg": {"gpu_hour": "3.50"},
    "spot": {},
    "cloud": {"gpu_hour": "5.00"},
}
TENANT = "platform:tenant_billing_gpus:allocated"
JOBS = 'platform:job_gpus:allocated{billing_type="spot"}'
SIZES = "platform:tenant_subscription_gpus:info"
UNCLAIMED = "platform:pod_gpus:unclaimed"


def rules_body(interval=5, rule=TENANT):
    return json.dumps(
        {
            "status": "success",
            "data": {
                "groups": [
                    {"name": "platform-gpu", "interval": 60, "rules": [{"name": "other"}]},
                    {"name": "platform-metering", "interval": interval, "rules": [{"name": rule}]},
                ]
            },
        }
    )


def matrix_body(result):
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}})


class FakePrometheus:
    """Recording rules sampled every ``interval`` seconds: ``series`` maps a selector the
    service asks for to ``[(labels, [(from, to, value), ...])]``, a value held in the
    evaluations at T0 + offset + k x interval in ``(from, to]`` (seconds from T0). Answers
    ``query_range`` points as Prometheus 3 does: a range is open at its start, closed at
    its end, and a point whose range holds no sample is left out."""

    QUERY = re.compile(r"^(sum|count)_over_time\((.+)\[(\d+)s\]\)$")

    def __init__(self, series, interval=5, offset=0.0):
        self.interval, self.calls = interval, []
        self.samples = {
            selector: [(labels, self._sampled(held, offset)) for labels, held in found]
            for selector, found in series.items()
        }

    def _sampled(self, held, offset):
        last = max((to for _f, to, _v in held), default=0)
        times = [offset + k * self.interval for k in range(int(last // self.interval) + 2)]
        out = []
        for t in times:
            value = sum(v for f, to, v in held if f < t <= to)
            if any(f < t <= to for f, to, _v in held):
                out.append((T0 + t, value))
        return out

    def answer(self, path, query):
        if path == "/api/v1/rules":
            return rules_body(self.interval)
        func, selector, width = self.QUERY.match(query["query"]).groups()
        start, end, step = float(query["start"]), float(query["end"]), int(query["step"])
        assert int(width) == step  # one step's samples per point
        result = []
        for labels, samples in self.samples[selector]:
            stamps = [t for t, _v in samples]
            values, t = [], start
            while t <= end:
                inside = samples[
                    bisect.bisect_right(stamps, t - step) : bisect.bisect_right(stamps, t)
                ]
                if inside:
                    total = len(inside) if func == "count" else sum(v for _t, v in inside)
                    values.append([t, str(total)])
                t += step
            if values:
                result.append({"metric": labels, "values": values})
        return matrix_body(result)

    def open_url(self, url, **_kwargs):
        parts = urlsplit(url)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        self.calls.append((parts.path, query))
        return io.BytesIO(self.answer(parts.path, query).encode())


def namespace(tenant):
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": f"tenant-{tenant}", "labels": {"platform.io/tenant": tenant}},
    }


def cluster():
    return FakeCluster(
        [
            namespace("alpha"),
            namespace("beta"),
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}},
        ]
    )


def idc(**labels):
    return {**labels, "location": "idc"}


# A day: alpha's subscription of 16 GPUs, used fully and by one more GPU for an hour;
# 10 h of payg, 2 h of spot at 0.5, 2 h on cloud nodes (a payg and a spot job); "gone",
# deleted at 06:00, had 4 GPUs subscribed and 1 h of payg; two pods held GPUs no line
# claims.
DAY_SERIES = {
    TENANT: [
        (idc(tenant="alpha", billing_type="subscription"), [(0, 24 * HOUR, 16), (0, HOUR, 1)]),
        (idc(tenant="alpha", billing_type="payg"), [(0, 5 * HOUR, 2)]),
        (idc(tenant="alpha", billing_type="spot"), [(0, 2 * HOUR, 1)]),
        ({"tenant": "alpha", "billing_type": "payg", "location": "cloud"}, [(0, HOUR, 1)]),
        ({"tenant": "alpha", "billing_type": "spot", "location": "cloud"}, [(HOUR, 2 * HOUR, 1)]),
        (idc(tenant="gone", billing_type="payg"), [(0, HOUR, 1)]),
    ],
    JOBS: [
        (
            idc(
                tenant="alpha",
                namespace="tenant-alpha",
                billing_type="spot",
                job_name="cheap",
                spot_price="0.5",
            ),
            [(0, 2 * HOUR, 1)],
        ),
        (
            {
                "tenant": "alpha",
                "namespace": "tenant-alpha",
                "billing_type": "spot",
                "location": "cloud",
                "job_name": "far",
                "spot_price": "0.5",
            },
            [(HOUR, 2 * HOUR, 1)],
        ),
    ],
    SIZES: [
        ({"tenant": "alpha", "gpus": "16"}, [(0, 24 * HOUR, 1)]),
        ({"tenant": "gone", "gpus": "4"}, [(0, 6 * HOUR, 1)]),
    ],
    UNCLAIMED: [
        ({"namespace": "tenant-beta", "pod": "stolen-0"}, [(0, HOUR / 2, 2)]),
        ({"namespace": "tenant-alpha", "pod": "loose-0"}, [(0, HOUR, 1)]),
    ],
}


@pytest.fixture
def prometheus(monkeypatch):
    """The fake Prometheus over DAY_SERIES, as the service's ``open_url``."""
    fake = FakePrometheus(DAY_SERIES)
    monkeypatch.setattr(service, "open_url", fake.open_url)
    return fake


def report(run_module, fake=None, **args):
    base = {
        "prometheus_url": "http://prom:9090",
        "start": START,
        "end": END,
        "step": 60,
        "prices": PRICES,
    }
    return run_module(usage_report, fake or cluster(), **{**base, **args})


def warnings_of(out):
    # ansible-core 2.19 reports a warning as a summary of its event; warnings of the
    # modules run before in this process are kept with them, so look for ours
    return [w["event"]["msg"] if isinstance(w, dict) else w for w in out.get("warnings", [])]


def test_one_list_the_rules_interval_then_one_query_per_rule(run_module, prometheus):
    fake = cluster()
    out = report(run_module, fake, currency="EUR")
    assert out["changed"] is False and out["requests"] == 1 and out["queries"] == 5
    assert fake.lists == ["Namespace"] and fake.writes == []
    assert prometheus.calls[0] == ("/api/v1/rules", {"type": "record"})
    assert [(path, q["query"]) for path, q in prometheus.calls[1:]] == [
        ("/api/v1/query_range", "sum_over_time(platform:tenant_billing_gpus:allocated[60s])"),
        (
            "/api/v1/query_range",
            'sum_over_time(platform:job_gpus:allocated{billing_type="spot"}[60s])',
        ),
        ("/api/v1/query_range", "count_over_time(platform:tenant_subscription_gpus:info[60s])"),
        ("/api/v1/query_range", "sum_over_time(platform:pod_gpus:unclaimed[60s])"),
    ]
    # the first point asked is the one that ends the first step
    assert {(q["start"], q["end"], q["step"]) for _p, q in prometheus.calls[1:]} == {
        (f"{T0 + 60:.3f}", f"{T0 + 86400:.3f}", "60")
    }


def test_the_ledger_of_a_day(run_module, prometheus):
    ledger = report(run_module, currency="EUR")["ledger"]
    assert ledger["currency"] == "EUR" and ledger["period"] == {"start": START, "end": END}
    assert ledger["resolution_seconds"] == "5"
    assert [
        (r["tenant"], r["billing_type"], r["gpu_hours"], r["amount"]) for r in ledger["rows"]
    ] == [
        ("alpha", "subscription", "385.000000", "771.00"),  # 384 x 2.00 + 1 x 3.00
        ("alpha", "payg", "10.000000", "35.00"),
        ("alpha", "spot", "2.000000", "1.00"),
        ("alpha", "cloud", "2.000000", "10.00"),  # payg and spot queues alike
        ("beta", "subscription", "0.000000", "0.00"),
        ("beta", "payg", "0.000000", "0.00"),
        ("beta", "spot", "0.000000", "0.00"),
        ("beta", "cloud", "0.000000", "0.00"),
        ("gone", "subscription", "0.000000", "48.00"),  # 4 GPUs for the 6 h it existed
        ("gone", "payg", "1.000000", "3.50"),
        ("gone", "spot", "0.000000", "0.00"),
        ("gone", "cloud", "0.000000", "0.00"),
    ]
    assert ledger["rows"][0]["sizes"] == [
        {"subscription_gpus": "16", "hours": "24.000000", "included_gpu_hours": "384.000000"}
    ]
    assert ledger["rows"][8]["sizes"] == [
        {"subscription_gpus": "4", "hours": "6.000000", "included_gpu_hours": "24.000000"}
    ]
    # the cloud spot job is the cloud line's, not a spot job line
    assert [j["job"] for j in ledger["rows"][2]["jobs"]] == ["cheap"]
    assert ledger["totals"]["amount"] == "868.50"
    assert ledger["reconciliation"] == {
        "unclaimed_gpu_hours": "2.000000",
        "pods": [
            {"namespace": "tenant-alpha", "pod": "loose-0", "gpu_hours": "1.000000"},
            {"namespace": "tenant-beta", "pod": "stolen-0", "gpu_hours": "1.000000"},
        ],
    }


def test_the_csv(run_module, prometheus):
    lines = report(run_module)["csv"].splitlines()
    assert lines[0].startswith("kind,tenant,billing_type,namespace,job,gpu_hours,subscription_gpus")
    # header, 12 rows, a size line per subscription that existed, one spot job line
    assert len(lines) == 1 + 12 + 2 + 1
    assert [line.split(",")[0] for line in lines].count("subscription_size") == 2


def test_without_a_step_a_day_is_read_in_hours_and_bills_the_same(run_module, prometheus):
    """Rule period-default-step; rule exact-integral: the step never changes the bill."""
    by_minute = report(run_module)["ledger"]
    prometheus.calls.clear()
    args = {"prometheus_url": "http://prom:9090", "start": START, "end": END, "prices": PRICES}
    by_hour = run_module(usage_report, cluster(), **args)["ledger"]
    assert {q["query"].split("[")[-1] for _p, q in prometheus.calls[1:]} == {"3600s])"}
    assert by_hour == by_minute


def test_each_unclaimed_pod_is_warned_about(run_module, prometheus):
    warnings = warnings_of(report(run_module))
    unclaimed = [w for w in warnings if w.startswith("reconciliation: ")]
    assert unclaimed == [
        "reconciliation: tenant-alpha/loose-0 held 3600 GPU-seconds in the period that no "
        "billing line claims: its queue is not one of its tenant's (docs/metering.md)",
        "reconciliation: tenant-beta/stolen-0 held 3600 GPU-seconds in the period that no "
        "billing line claims: its queue is not one of its tenant's (docs/metering.md)",
    ]


def test_named_tenants_only_and_check_mode_is_the_same_run(run_module, prometheus):
    out = report(run_module, tenants=["alpha"], _ansible_check_mode=True)
    assert {r["tenant"] for r in out["ledger"]["rows"]} == {"alpha"}
    assert out["ledger"]["totals"]["amount"] == "817.00" and "currency" not in out["ledger"]
    # a report for some tenants reconciles their namespaces alone
    assert [p["pod"] for p in out["ledger"]["reconciliation"]["pods"]] == ["loose-0"]


def test_a_tenant_known_only_by_its_subscription_is_billed(run_module, prometheus):
    out = report(run_module, tenants=["gone"])
    assert out["ledger"]["totals"]["by_tenant"] == {"gone": "51.50"}


def test_a_long_period_is_read_in_windows_prometheus_accepts(run_module, prometheus):
    # 30 days of minutes: 43,200 steps, 4 windows of at most 11,000 per rule
    out = report(run_module, end="2026-01-31T00:00:00Z")
    assert out["queries"] == 1 + 4 * 4 and len(prometheus.calls) == 17
    firsts = [float(q["start"]) for _p, q in prometheus.calls[1:5]]
    assert firsts == [T0 + 60 + 60 * 11000 * k for k in range(4)]
    # the day's use, read in windows, bills the same
    assert out["ledger"]["rows"][1]["amount"] == "35.00"


def test_an_unknown_tenant_is_refused_naming_the_known_ones(run_module, prometheus):
    out = report(run_module, tenants=["alpha", "gamma"])
    assert out["failed"] is True and out["changed"] is False
    assert out["errors"] == [
        "tenants: gamma: not a tenant: no Namespace is labelled platform.io/tenant with it, "
        "and no subscription or GPU use is recorded for it in the period (known tenants: "
        "alpha, beta, gone) (rule metering-known-tenant)"
    ]


def test_bad_input_is_refused_before_any_request(run_module, prometheus):
    out = report(run_module, step=7, prices={"subscription": {}, "spot": {}})
    assert out["failed"] is True and out["requests"] == 0 and prometheus.calls == []
    assert [e.split(":")[0] for e in out["errors"]] == [
        "step",
        "prices.payg",
        "prices.cloud",
        "prices.subscription.gpu_hour",
        "prices.subscription.overage_gpu_hour",
    ]


def test_a_period_longer_than_a_year_is_refused_before_any_request(run_module, prometheus):
    out = report(run_module, end="2027-01-03T00:00:00Z")
    assert out["failed"] is True and prometheus.calls == []
    assert out["errors"][0].startswith("end: the period is 367.0 days")


def test_bad_samples_and_bids_are_warned_about(run_module, monkeypatch):
    fake = FakePrometheus({TENANT: [], JOBS: [], SIZES: [], UNCLAIMED: []})
    answers = {
        'sum_over_time(platform:job_gpus:allocated{billing_type="spot"}[60s])': [
            {
                "metric": {
                    "tenant": "alpha",
                    "billing_type": "spot",
                    "job_name": "j",
                    "spot_price": "x",
                },
                "values": [[T0 + 60, "NaN"]],
            }
        ],
        "count_over_time(platform:tenant_subscription_gpus:info[60s])": [
            {"metric": {"tenant": "alpha", "gpus": "lots"}, "values": [[T0 + 60, "12"]]}
        ],
    }

    def answer(path, query):
        if query.get("query") in answers:
            return matrix_body(answers[query["query"]])
        return FakePrometheus.answer(fake, path, query)

    monkeypatch.setattr(fake, "answer", answer)
    monkeypatch.setattr(service, "open_url", fake.open_url)
    out = report(run_module)
    assert out.get("failed") is not True
    warnings = warnings_of(out)
    assert any("spot_price 'x' is not a price; counted as 0" in w for w in warnings)
    assert any("sample 'NaN' at" in w and "counted as 0" in w for w in warnings)
    assert any('gpus="lots"' in w and "not a number of GPUs" in w for w in warnings)


# --- invariants -------------------------------------------------------------------------

TWO_HOURS = 7200
STEPS = [1, 5, 15, 60, 120, 300, 900, 3600, 7200, None]  # None: the default step

holding = st.tuples(
    st.integers(min_value=0, max_value=TWO_HOURS),
    st.integers(min_value=0, max_value=TWO_HOURS),
    st.integers(min_value=1, max_value=8),
).map(lambda h: (min(h[0], h[1]), max(h[0], h[1]), h[2]))


def two_hours(step, interval, held):
    """The module's flow over two hours of FakePrometheus samples; the ledger."""
    fake = FakePrometheus(held, interval=interval, offset=0)
    params = {
        "prometheus_url": "http://prom:9090",
        "start": START,
        "end": "2026-01-01T02:00:00Z",
        "step": step,
        "tenants": None,
        "prices": PRICES,
        "currency": "",
        "timeout": 30,
    }
    with mock.patch.object(service, "open_url", fake.open_url):
        return service.REPORT_FLOW.run(params, cluster(), False)["ledger"]


@settings(max_examples=40, deadline=None)
@given(
    steps=st.lists(st.sampled_from(STEPS), min_size=2, max_size=2, unique=True),
    interval=st.sampled_from([1, 5, 15, 30]),
    max_points=st.integers(min_value=50, max_value=2000),
    tenant=st.lists(holding, max_size=3),
    spot=st.lists(holding, max_size=2),
    size=st.lists(holding, max_size=2),
    unclaimed=st.lists(holding, max_size=2),
)
def test_the_bill_does_not_depend_on_the_step(
    steps, interval, max_points, tenant, spot, size, unclaimed
):
    """Rule exact-integral: whatever step slices the period (dividing it) and however it is
    windowed, every sample of every rule counts once: the ledgers are the same, and their
    GPU-seconds are the samples' sum times the interval."""
    held = {
        TENANT: [(idc(tenant="alpha", billing_type="payg"), tenant)],
        JOBS: [
            (
                idc(
                    tenant="alpha",
                    namespace="tenant-alpha",
                    billing_type="spot",
                    job_name="j",
                    spot_price="0.7",
                ),
                spot,
            )
        ],
        SIZES: [({"tenant": "alpha", "gpus": "8"}, [(f, t, 1) for f, t, _v in size])],
        UNCLAIMED: [({"namespace": "tenant-alpha", "pod": "p"}, unclaimed)],
    }
    windows = functools.partial(period.windows, max_points=max_points)
    with mock.patch.object(service, "windows", windows):
        first, second = (two_hours(step, interval, held) for step in steps)
    assert first == second
    samples = FakePrometheus(held, interval=interval).samples
    (payg,) = samples[TENANT]
    payg_seconds = Decimal(sum(v for _t, v in payg[1])) * interval
    assert first["rows"][1]["gpu_hours"] == ledger.hours_text(payg_seconds / HOUR)
    (sub,) = samples[SIZES]
    included = Decimal(8 * len(sub[1]) * interval) / HOUR
    assert first["rows"][0]["included_gpu_hours"] == ledger.hours_text(included)


# --- error paths against a real HTTP server -------------------------------------------


class Prometheus(BaseHTTPRequestHandler):
    """Answers a GET with the server's ``answers`` for its path, or ``default``."""

    def do_GET(self):  # http.server's name for it
        path = urlsplit(self.path).path
        self.server.paths.append(path)
        status, body = self.server.answers.get(path, self.server.default)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode() if isinstance(body, str) else body)

    def log_message(self, *args):
        pass


RULES_OK = (200, rules_body())


@pytest.fixture
def http_prometheus(monkeypatch):
    """``serve(status, body, rules=RULES_OK) -> server`` of a local server answering
    ``/api/v1/rules`` with ``rules`` and every other GET with ``status`` and ``body``."""
    for name in (
        "http_proxy",
        "HTTP_PROXY",
        "https_proxy",
        "HTTPS_PROXY",
        "all_proxy",
        "ALL_PROXY",
    ):
        monkeypatch.delenv(name, raising=False)
    servers = []

    def serve(status, body, rules=RULES_OK):
        server = ThreadingHTTPServer(("127.0.0.1", 0), Prometheus)
        server.answers, server.default, server.paths = {"/api/v1/rules": rules}, (status, body), []
        server.url = f"http://127.0.0.1:{server.server_address[1]}"
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_prometheus_names_prometheus_url(run_module, monkeypatch):
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    url = f"http://127.0.0.1:{free_port()}"
    out = report(run_module, prometheus_url=url, timeout=5)
    assert out["failed"] is True and out["changed"] is False and out["prometheus_url"] == url
    assert out["msg"].startswith("prometheus_url: cannot reach Prometheus: ")
    assert "refused" in out["msg"].lower()
    assert f"(query rules recording {TENANT} at {url})" in out["msg"]


@pytest.mark.parametrize(
    ("status", "body", "wanted"),
    [
        (500, "oops", "prometheus_url: Prometheus answered HTTP 500: Internal Server Error"),
        (
            422,
            json.dumps({"status": "error", "errorType": "execution", "error": "too many points"}),
            "prometheus_url: Prometheus answered HTTP 422: execution: too many points",
        ),
        (
            200,
            json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error"}),
            "prometheus_url: the answer's status is 'error', not 'success' (bad_data: parse error)",
        ),
        (200, "<html>", "prometheus_url: the answer is not a JSON object"),
        (
            200,
            json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}),
            "prometheus_url: the answer is a 'vector', not a matrix of series",
        ),
    ],
)
def test_a_prometheus_that_does_not_answer_with_data(
    run_module, http_prometheus, status, body, wanted
):
    server = http_prometheus(status, body)
    out = report(run_module, prometheus_url=server.url)
    assert out["failed"] is True and out["changed"] is False and out["prometheus_url"] == server.url
    assert out["msg"].startswith(wanted), out["msg"]
    assert f"(query sum_over_time({TENANT}[60s]) at {server.url})" in out["msg"]
    assert out["requests"] == 1  # the cluster was read; nothing billed
    assert server.paths == ["/api/v1/rules", "/api/v1/query_range"]


@pytest.mark.parametrize(
    ("rules", "wanted"),
    [
        (
            (200, rules_body(rule="platform:cluster_gpu_allocation:ratio")),
            f"prometheus_url: no rule group records {TENANT}: this Prometheus does not load the "
            "platform's rules",
        ),
        (
            (200, rules_body(interval=0)),
            "prometheus_url: rule group 'platform-metering' has no usable interval",
        ),
        ((503, "starting"), "prometheus_url: Prometheus answered HTTP 503: Service Unavailable"),
    ],
)
def test_a_prometheus_without_the_metering_rules_bills_nothing(
    run_module, http_prometheus, rules, wanted
):
    """Rule metering-resolution: no interval, no query."""
    server = http_prometheus(200, matrix_body([]), rules=rules)
    out = report(run_module, prometheus_url=server.url)
    assert out["failed"] is True and out["msg"].startswith(wanted), out["msg"]
    assert f"(query rules recording {TENANT} at {server.url})" in out["msg"]
    assert server.paths == ["/api/v1/rules"]


def test_a_real_answer_is_read(run_module, http_prometheus):
    series = [
        {
            "metric": idc(tenant="alpha", billing_type="payg"),
            "values": [[T0 + 60 * k, "24"] for k in range(1, 301)],  # 2 GPUs, 12 samples
        }
    ]
    server = http_prometheus(200, matrix_body(series))
    out = report(run_module, prometheus_url=server.url, tenants=["alpha"])
    # every rule gets the same answer here: payg 10 h; the payg series is no spot job, and
    # a report for alpha reconciles tenant-alpha alone
    got = out["ledger"]
    assert got["totals"]["by_billing_type"]["payg"]["amount"] == "35.00"
    assert got["resolution_seconds"] == "5" and got["reconciliation"]["pods"] == []
    assert server.paths == ["/api/v1/rules"] + ["/api/v1/query_range"] * 4
