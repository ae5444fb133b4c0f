# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""usage_report (metering.service.run) against the fake cluster: the ledger from
given matrices (``query_range`` replaced), and the failures a real HTTP server gives
(a tiny local ``http.server`` as Prometheus, for the error paths only)."""

from __future__ import annotations

import json
import socket
import threading
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.metering import service
from ansible_collections.gpucloud.platform.plugins.modules import usage_report
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster

START = "2026-01-01T00:00:00Z"
END = "2026-01-02T00:00:00Z"
T0 = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
PRICES = {
    "subscription": {"gpu_hour": "2.00", "overage_gpu_hour": "3.00"},
    "payg": {"gpu_hour": "3.50"},
    "spot": {},
}


def namespace(tenant):
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": f"tenant-{tenant}", "labels": {"platform.io/tenant": tenant}},
    }


def queue(tenant, queue_type, gpus):
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {
            "name": f"tenant-{tenant}-{queue_type}",
            "labels": {"platform.io/tenant": tenant, "platform.io/queue-type": queue_type},
        },
        "spec": {"capability": {"nvidia.com/gpu": gpus}},
    }


def cluster():
    return FakeCluster(
        [
            namespace("alpha"),
            namespace("beta"),
            queue("alpha", "subscription", 16),
            queue("alpha", "payg", 99),  # not a subscription: never its size
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}},
        ]
    )


def samples(gpus, steps):
    return [[T0 + 60 * k, str(gpus)] for k in range(1, steps + 1)]


MATRICES = {
    "platform:tenant_billing_gpus:allocated": [
        {"metric": {"tenant": "alpha", "billing_type": "payg"}, "values": samples(2, 300)},
        {"metric": {"tenant": "alpha", "billing_type": "spot"}, "values": samples(1, 120)},
        # deleted within the period: no Namespace, still billed
        {"metric": {"tenant": "gone", "billing_type": "payg"}, "values": samples(1, 60)},
    ],
    'platform:job_gpus:allocated{billing_type="spot"}': [
        {
            "metric": {
                "tenant": "alpha",
                "namespace": "tenant-alpha",
                "billing_type": "spot",
                "job_name": "cheap",
                "spot_price": "0.5",
            },
            "values": samples(1, 120),
        }
    ],
}


@pytest.fixture
def fake_prometheus(monkeypatch):
    """query_range answering MATRICES; returns the calls made."""
    calls = []

    def answer(url, query, start, end, step, timeout):
        calls.append((url, query, start, end, step, timeout))
        return MATRICES[query]

    monkeypatch.setattr(service, "query_range", answer)
    return calls


def report(run_module, fake=None, **args):
    base = {"prometheus_url": "http://prom:9090", "start": START, "end": END, "prices": PRICES}
    return run_module(usage_report, fake or cluster(), **{**base, **args})


def test_every_tenant_one_list_per_kind_one_query_per_rule(run_module, fake_prometheus):
    fake = cluster()
    out = report(run_module, fake, currency="EUR")
    assert out["changed"] is False and out["requests"] == 2 and out["queries"] == 2
    assert fake.lists == ["Namespace", "Queue"] and fake.writes == []
    # the first sample asked is the one that ends the first step
    url, _query, start, end, step, timeout = fake_prometheus[0]
    assert (url, start.timestamp(), end.timestamp(), step, timeout) == (
        "http://prom:9090",
        T0 + 60,
        T0 + 86400,
        60,
        30,
    )
    ledger = out["ledger"]
    assert ledger["currency"] == "EUR" and ledger["period"] == {
        "start": START,
        "end": END,
        "step": 60,
    }
    assert [(r["tenant"], r["billing_type"], r["amount"]) for r in ledger["rows"]] == [
        ("alpha", "subscription", "768.00"),
        ("alpha", "payg", "35.00"),
        ("alpha", "spot", "1.00"),
        ("beta", "subscription", "0.00"),
        ("beta", "payg", "0.00"),
        ("beta", "spot", "0.00"),
        ("gone", "subscription", "0.00"),
        ("gone", "payg", "3.50"),
        ("gone", "spot", "0.00"),
    ]
    assert ledger["totals"]["amount"] == "807.50"
    assert out["csv"].splitlines()[0].startswith("kind,tenant,billing_type")
    assert len(out["csv"].splitlines()) == 1 + 9 + 1  # header, rows, one spot job line


def test_named_tenants_only_and_check_mode_is_the_same_run(run_module, fake_prometheus):
    out = report(run_module, tenants=["alpha"], _ansible_check_mode=True)
    assert {r["tenant"] for r in out["ledger"]["rows"]} == {"alpha"}
    assert out["ledger"]["totals"]["amount"] == "804.00" and "currency" not in out["ledger"]


def test_a_long_period_is_read_in_windows_prometheus_accepts(run_module, fake_prometheus):
    # 30 days of minutes: 43,200 steps, 4 windows of at most 11,000 per rule
    out = report(run_module, end="2026-01-31T00:00:00Z")
    assert out["queries"] == 8 and len(fake_prometheus) == 8
    firsts = [c[2].timestamp() for c in fake_prometheus[:4]]
    assert firsts == [T0 + 60 + 60 * 11000 * k for k in range(4)]


def test_an_unknown_tenant_is_refused_naming_the_known_ones(run_module, fake_prometheus):
    out = report(run_module, tenants=["alpha", "gamma"])
    assert out["failed"] is True and out["changed"] is False
    assert out["errors"] == [
        "tenants: gamma: not a tenant: no Namespace is labelled platform.io/tenant with it, it "
        "has no subscription Queue and no GPU use is recorded for it in the period (known "
        "tenants: alpha, beta, gone) (rule metering-known-tenant)"
    ]


def test_bad_input_is_refused_before_any_request(run_module, fake_prometheus):
    out = report(run_module, step=7, prices={"subscription": {}, "spot": {}})
    assert out["failed"] is True and out["requests"] == 0 and fake_prometheus == []
    assert [e.split(":")[0] for e in out["errors"]] == [
        "step",
        "prices.payg",
        "prices.subscription.gpu_hour",
        "prices.subscription.overage_gpu_hour",
    ]


def test_bad_samples_and_bids_are_warned_about(run_module, monkeypatch):
    matrices = {
        **MATRICES,
        'platform:job_gpus:allocated{billing_type="spot"}': [
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
    }
    monkeypatch.setattr(service, "query_range", lambda url, query, *a: matrices[query])
    out = report(run_module)
    assert out.get("failed") is not True
    # ansible-core 2.19 reports a warning as a summary of its event; warnings of the
    # modules run before in this process are kept with them, so look for ours
    warnings = [w["event"]["msg"] if isinstance(w, dict) else w for w in out["warnings"]]
    assert any("spot_price 'x' is not a price; counted as 0" in w for w in warnings)
    assert any("sample 'NaN' at" in w and "counted as 0" in w for w in warnings)


# --- error paths against a real HTTP server -------------------------------------------


class Prometheus(BaseHTTPRequestHandler):
    """Answers every GET with the server's ``status`` and ``body``."""

    def do_GET(self):  # http.server's name for it
        self.send_response(self.server.status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(self.server.body)

    def log_message(self, *args):
        pass


@pytest.fixture
def http_prometheus(monkeypatch):
    """``serve(status, body) -> url`` of a local server answering that."""
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

    def serve(status, body):
        server = ThreadingHTTPServer(("127.0.0.1", 0), Prometheus)
        server.status, server.body = status, body.encode() if isinstance(body, str) else body
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

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
    assert f"(query platform:tenant_billing_gpus:allocated at {url})" in out["msg"]


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
    url = http_prometheus(status, body)
    out = report(run_module, prometheus_url=url)
    assert out["failed"] is True and out["changed"] is False and out["prometheus_url"] == url
    assert out["msg"].startswith(wanted), out["msg"]
    assert out["requests"] == 2  # the cluster was read; nothing billed


def test_a_real_answer_is_read(run_module, http_prometheus):
    body = {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": MATRICES["platform:tenant_billing_gpus:allocated"][:1],
        },
    }
    out = report(
        run_module, prometheus_url=http_prometheus(200, json.dumps(body)), tenants=["alpha"]
    )
    # both rules get the same answer here: payg 10 h, and no spot job line
    assert out["ledger"]["totals"]["by_billing_type"]["payg"]["amount"] == "35.00"
