# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The event source over real HTTP: kubernetes.core's client (``Cluster.from_options``)
against a small scripted HTTP server that answers discovery, a LIST and chunked WATCH
streams the way the API server does. No cluster: the server is this test's own thread.

It proves what the fakes cannot: the query a WATCH sends, a 410 ERROR event in the stream
lists again, and a stop wakes a thread blocked reading an idle watch at once."""

from __future__ import annotations

import json
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.events import service as svc
from ansible_collections.gpucloud.platform.plugins.module_utils.events.model import KIND_NODE
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.cluster import Cluster
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.events.event_objects import (
    node,
)

DISCOVERY = {
    "/version": {"major": "1", "minor": "35", "gitVersion": "v1.35.0"},
    "/api": {"kind": "APIVersions", "versions": ["v1"]},
    "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": []},
    "/api/v1": {
        "kind": "APIResourceList",
        "groupVersion": "v1",
        "resources": [
            {
                "name": "nodes",
                "singularName": "node",
                "namespaced": False,
                "kind": "Node",
                "verbs": ["get", "list", "watch"],
            }
        ],
    },
}


def without_kind(obj: dict[str, Any]) -> dict[str, Any]:
    """A list item as the API server writes a built-in kind's: no apiVersion and kind."""
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}


class Server:
    """Answers discovery, then each LIST and WATCH of nodes from its script, in order. A
    WATCH script is a list of events; ``HOLD`` keeps the stream open and silent until the
    client goes away (or 20 s pass)."""

    HOLD = "hold"

    def __init__(self, lists: list[tuple[list[dict[str, Any]], str]], watches: list[list[Any]]):
        self.lists = list(lists)
        self.watches = list(watches)
        self.requests: list[dict[str, Any]] = []
        self.holding = threading.Event()
        self.released = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def send_json(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def do_GET(self):
                url = urlparse(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                server.requests.append({"path": url.path, **query})
                if url.path in DISCOVERY:
                    self.send_json(200, DISCOVERY[url.path])
                elif url.path == "/api/v1/nodes" and query.get("watch") in ("True", "true"):
                    self.stream(server.watches.pop(0) if server.watches else [])
                elif url.path == "/api/v1/nodes":
                    items, version = server.lists.pop(0)
                    self.send_json(
                        200,
                        {
                            "kind": "NodeList",
                            "apiVersion": "v1",
                            "metadata": {"resourceVersion": version},
                            "items": [without_kind(i) for i in items],
                        },
                    )
                else:
                    self.send_json(404, {"kind": "Status", "code": 404, "reason": "NotFound"})

            def stream(self, script: list[Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    for step in script:
                        if step == Server.HOLD:
                            server.holding.set()
                            server.released.wait(20)
                            return
                        self.chunk(json.dumps(step).encode() + b"\n")
                    self.chunk(b"")  # the server ends the watch
                except OSError:
                    pass  # the client went away

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def watch_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"] == "/api/v1/nodes" and r.get("watch")]

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.released.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def cluster_of(monkeypatch, tmp_path):
    """kubernetes.core's client of a server, its discovery cache in this test's folder."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    for name in ("KUBECONFIG", "K8S_AUTH_KUBECONFIG", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(name, raising=False)
    return lambda server: Cluster.from_options({"host": server.url, "api_key": "token"})


def versioned(obj: dict[str, Any], version: str) -> dict[str, Any]:
    obj["metadata"]["resourceVersion"] = version
    return obj


def wait_for(condition, what: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_list_watch_410_and_a_stop_that_wakes_an_idle_watch(cluster_of):
    gone = {
        "type": "ERROR",
        "object": {"kind": "Status", "apiVersion": "v1", "code": 410, "reason": "Expired"},
    }
    with Server(
        lists=[([node("n1")], "10"), ([node("n1", unschedulable=True), node("n2")], "30")],
        watches=[
            [
                {
                    "type": "BOOKMARK",
                    "object": {
                        "kind": "Node",
                        "apiVersion": "v1",
                        "metadata": {"resourceVersion": "12"},
                    },
                },
                gone,
            ],
            [{"type": "MODIFIED", "object": versioned(node("n2", ready=False), "31")}, Server.HOLD],
        ],
    ) as server:
        transport = svc.KubeTransport(cluster_of(server))
        emitted: list[dict[str, Any]] = []
        source = svc.ClusterEvents(transport, emitted.append, kinds=[KIND_NODE])
        stop = threading.Event()
        follower = threading.Thread(target=source.follow, args=(KIND_NODE, stop), daemon=True)
        follower.start()
        wait_for(server.holding.is_set, "the second watch to go idle")
        wait_for(lambda: len(emitted) == 4, "the events before the idle watch")
        stopped = time.monotonic()
        stop.set()
        transport.interrupt()
        follower.join(5)
        assert not follower.is_alive(), "the idle watch was not woken"
        assert time.monotonic() - stopped < 3
        assert not server.released.is_set()  # the server did not end it: the stop did

    assert [(e["name"], e["change"]) for e in emitted] == [
        ("n1", "added"),
        ("n1", "cordoned"),
        ("n2", "added"),
        ("n2", "not-ready"),
    ]
    watches = server.watch_requests()
    assert [w["resourceVersion"] for w in watches] == ["10", "30"]
    assert all(w["allowWatchBookmarks"] in ("True", "true") for w in watches)
    assert all(w["timeoutSeconds"] == str(svc.WATCH_TIMEOUT_SECONDS) for w in watches)
    assert source.lists[KIND_NODE] == 2
    assert source.versions[KIND_NODE] == "31"
