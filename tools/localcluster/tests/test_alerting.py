"""The local Alertmanager's routes and its webhook receiver (no cluster needed): each
routed tenant gets a receiver of its own, and the receiver keeps what it is posted by
path."""

from __future__ import annotations

import json
import sys
import threading
import urllib.request
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

import alert_sink  # noqa: E402
import alerting_files  # noqa: E402
from settings import ALERT_SINK  # noqa: E402


def test_each_routed_tenant_has_its_own_receiver_and_the_rest_go_to_the_platform(tmp_path: Path):
    assert alerting_files.write_alertmanager_files(tmp_path, ["beta", "alpha"])
    config = yaml.safe_load((tmp_path / "alertmanager.yml").read_text())
    urls = {
        receiver["name"]: receiver["webhook_configs"][0]["url"]
        for receiver in config["receivers"]
        if "webhook_configs" in receiver  # not the null receiver of the Watchdog
    }
    assert urls == {
        "platform": f"{ALERT_SINK}/platform",
        "tenant-alpha": f"{ALERT_SINK}/tenant/alpha",
        "tenant-beta": f"{ALERT_SINK}/tenant/beta",
    }
    assert config["route"]["receiver"] == "platform"
    # a tenant's alert goes to its receiver and on to the platform's
    assert config["route"]["routes"][-1] == {"receiver": "platform"}
    # Kept across runs: a second cluster.py alert-routes adds, and rewrites nothing else.
    assert alerting_files.routed_tenants(tmp_path) == ["alpha", "beta"]
    assert not alerting_files.write_alertmanager_files(tmp_path, ["alpha"])
    assert alerting_files.write_alertmanager_files(tmp_path, ["gamma"])
    assert alerting_files.routed_tenants(tmp_path) == ["alpha", "beta", "gamma"]


@pytest.fixture
def sink(tmp_path: Path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), alert_sink.make_handler(tmp_path))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def _post(url: str, body: bytes) -> int:
    request = urllib.request.Request(url, data=body, method="POST")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_the_receiver_keeps_each_post_by_path_and_answers_a_get_with_them(sink: str):
    assert _post(f"{sink}/tenant/alpha", b'{"receiver": "tenant-alpha", "n": 1}') == 200
    assert _post(f"{sink}/tenant/alpha", b'{"receiver": "tenant-alpha", "n": 2}') == 200
    assert _post(f"{sink}/platform", b'{"receiver": "platform"}') == 200
    with urllib.request.urlopen(f"{sink}/tenant/alpha", timeout=5) as answer:
        kept = [json.loads(line) for line in answer.read().decode().splitlines()]
    assert [post["n"] for post in kept] == [1, 2]
    with urllib.request.urlopen(f"{sink}/tenant/beta", timeout=5) as answer:
        assert answer.read() == b""


def test_the_receiver_refuses_what_is_not_json_or_a_path_outside_it(sink: str):
    assert _post(f"{sink}/platform", b"not json") == 400
    assert _post(f"{sink}/../etc", b"{}") == 404
