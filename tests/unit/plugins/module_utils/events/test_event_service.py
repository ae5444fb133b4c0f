# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The event source's loop on a scripted LIST and WATCH: 410 lists again, a connection
error waits (0.5 s doubling to 5 s) and watches again from the last resourceVersion, a
stop ends it; and ``KubeTransport``'s requests and stream reading on a fake client."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes.client.rest import ApiException
from kubernetes.dynamic.exceptions import GoneError, api_exception
from urllib3.exceptions import ProtocolError

from ansible_collections.gpucloud.platform.plugins.module_utils.events import service as svc
from ansible_collections.gpucloud.platform.plugins.module_utils.events.inputs import SourceArgs
from ansible_collections.gpucloud.platform.plugins.module_utils.events.model import (
    KIND_CONFIGMAP,
    KIND_NODE,
    KIND_PODGROUP,
    KIND_QUEUE,
    KINDS,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.events.event_objects import (
    AT,
    node,
    podgroup,
    tenant_queue,
)

CLOCK = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


class Stop(threading.Event):
    """A stop event whose waits return at once; the time each would have waited (not yet
    set) is recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        if not self.is_set():
            self.waits.append(timeout or 0.0)
        return self.is_set()


class Script:
    """LIST and WATCH answers, in order, per kind. A LIST answer is (items, version) or an
    exception; a WATCH answer a list of events, each a dict or an exception raised when
    the stream reaches it. When a kind's watches run out, ``stop`` is set."""

    def __init__(self, stop: threading.Event, lists=None, watches=None):
        self.stop = stop
        self.lists: dict[str, list[Any]] = {k: list(v) for k, v in (lists or {}).items()}
        self.watches: dict[str, list[Any]] = {k: list(v) for k, v in (watches or {}).items()}
        self.calls: list[tuple[str, ...]] = []
        self.interrupted = 0
        self.closed = 0

    def list(self, watched):
        self.calls.append(("list", watched.kind))
        answer = self.lists[watched.kind].pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def watch(self, watched, resource_version, timeout_seconds):
        self.calls.append(("watch", watched.kind, resource_version))
        assert timeout_seconds == svc.WATCH_TIMEOUT_SECONDS
        if not self.watches.get(watched.kind):
            self.stop.set()
            return
        try:
            for step in self.watches[watched.kind].pop(0):
                if isinstance(step, BaseException):
                    raise step
                yield step
        finally:
            self.closed += 1

    def interrupt(self):
        self.interrupted += 1


def events_of(kind: str, *objects: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": t, "object": o} for t, o in objects]


def versioned(obj: dict[str, Any], version: str) -> dict[str, Any]:
    obj["metadata"]["resourceVersion"] = version
    return obj


def bookmark(version: str, kind: str = "Node") -> dict[str, Any]:
    return {"type": "BOOKMARK", "object": {"kind": kind, "metadata": {"resourceVersion": version}}}


def gone_event() -> dict[str, Any]:
    return {
        "type": "ERROR",
        "object": {
            "kind": "Status",
            "code": 410,
            "reason": "Expired",
            "message": "too old resource version: 10 (20)",
        },
    }


def source(script: Script, emitted: list, **kw) -> svc.ClusterEvents:
    return svc.ClusterEvents(script, emitted.append, clock=lambda: CLOCK, **kw)


def changes(emitted):
    return [(e["platform_event"], e["name"], e.get("change")) for e in emitted]


def test_list_then_watch_from_the_lists_version_and_bookmarks_move_it():
    stop, emitted = Stop(), []
    script = Script(
        stop,
        lists={KIND_NODE: [([node("n1")], "10")]},
        watches={
            KIND_NODE: [
                [
                    *events_of(
                        KIND_NODE,
                        ("ADDED", versioned(node("n2"), "11")),
                        ("MODIFIED", versioned(node("n1", unschedulable=True), "12")),
                    ),
                    bookmark("15"),
                ],
                [bookmark("18")],
            ]
        },
    )
    svc_ = source(script, emitted, kinds=[KIND_NODE])
    svc_.follow(KIND_NODE, stop)
    assert script.calls == [
        ("list", KIND_NODE),
        ("watch", KIND_NODE, "10"),
        ("watch", KIND_NODE, "15"),
        ("watch", KIND_NODE, "18"),
    ]
    assert changes(emitted) == [
        ("pool_changed", "n1", "added"),
        ("pool_changed", "n2", "added"),
        ("pool_changed", "n1", "cordoned"),
    ]
    assert all(e["at"] == AT for e in emitted)
    assert svc_.versions[KIND_NODE] == "18"
    assert stop.waits == []  # watches that heard something are made again at once
    assert script.closed == 2


@pytest.mark.parametrize(
    "gone",
    [
        gone_event(),
        GoneError(ApiException(status=410, reason="Gone")),
        ApiException(status=410, reason="Gone"),
        api_exception(ApiException(status=410, reason="Gone")),
    ],
    ids=["error-event", "GoneError", "ApiException", "api_exception"],
)
def test_410_lists_again_and_emits_what_changed_meanwhile(gone):
    stop, emitted = Stop(), []
    script = Script(
        stop,
        lists={
            KIND_NODE: [
                ([node("n1"), node("n2")], "10"),
                # Meanwhile: n1 removed, n2 cordoned, n3 added.
                ([node("n2", unschedulable=True), node("n3")], "30"),
            ]
        },
        watches={KIND_NODE: [[bookmark("12"), gone], [bookmark("31")]]},
    )
    svc_ = source(script, emitted, kinds=[KIND_NODE])
    svc_.follow(KIND_NODE, stop)
    assert script.calls[:4] == [
        ("list", KIND_NODE),
        ("watch", KIND_NODE, "10"),
        ("list", KIND_NODE),
        ("watch", KIND_NODE, "30"),
    ]
    assert svc_.lists[KIND_NODE] == 2
    assert changes(emitted) == [
        ("pool_changed", "n1", "added"),
        ("pool_changed", "n2", "added"),
        ("pool_changed", "n1", "removed"),
        ("pool_changed", "n2", "cordoned"),
        ("pool_changed", "n3", "added"),
    ]
    assert stop.waits == []  # a 410 lists again at once


def test_a_connection_error_backs_off_and_resumes_from_the_last_version():
    stop, emitted = Stop(), []
    down = ProtocolError(
        "Connection aborted.", ConnectionResetError(104, "Connection reset by peer")
    )
    refused = ConnectionRefusedError(111, "Connection refused")
    script = Script(
        stop,
        lists={KIND_NODE: [([node("n1")], "10")]},
        watches={
            KIND_NODE: [
                [{"type": "MODIFIED", "object": versioned(node("n1", ready=False), "14")}, down],
                [refused],
                [refused],
                [refused],
                [refused],
                [refused],
                [refused],
                [{"type": "MODIFIED", "object": versioned(node("n1"), "20")}],
                [refused],
            ]
        },
    )
    svc_ = source(script, emitted, kinds=[KIND_NODE])
    svc_.follow(KIND_NODE, stop)
    assert [c for c in script.calls if c[0] == "list"] == [
        ("list", KIND_NODE)
    ]  # never listed again
    watched_from = [c[2] for c in script.calls if c[0] == "watch"]
    assert watched_from == ["10"] + ["14"] * 7 + ["20", "20"]
    # 0.5 s doubling to 5 s while it fails; after a watch that heard something, 0.5 s again.
    assert stop.waits == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0, 0.5]
    assert changes(emitted) == [
        ("pool_changed", "n1", "added"),
        ("pool_changed", "n1", "not-ready"),
        ("pool_changed", "n1", "ready"),
    ]


def test_a_connection_error_then_410_lists_again():
    stop, emitted = Stop(), []
    refused = ConnectionRefusedError(111, "Connection refused")
    script = Script(
        stop,
        lists={KIND_QUEUE: [([], "10"), ([tenant_queue("a", "payg", deserved=4)], "40")]},
        watches={
            KIND_QUEUE: [
                [refused],
                [ApiException(status=410, reason="Gone")],
                [bookmark("41", "Queue")],
            ]
        },
    )
    svc_ = source(script, emitted, kinds=[KIND_QUEUE])
    svc_.follow(KIND_QUEUE, stop)
    assert script.calls[:5] == [
        ("list", KIND_QUEUE),
        ("watch", KIND_QUEUE, "10"),
        ("watch", KIND_QUEUE, "10"),
        ("list", KIND_QUEUE),
        ("watch", KIND_QUEUE, "40"),
    ]
    assert stop.waits[0] == 0.5
    assert changes(emitted) == [("subscription_changed", "tenant-a-payg", "added")]


def test_a_failing_list_backs_off_and_lists_again():
    stop, emitted = Stop(), []
    script = Script(
        stop,
        lists={
            KIND_NODE: [
                ProtocolError("down"),
                ApiException(status=503, reason="Unavailable"),
                ([node("n1")], "7"),
            ]
        },
        watches={KIND_NODE: [[bookmark("8")]]},
    )
    svc_ = source(script, emitted, kinds=[KIND_NODE])
    svc_.follow(KIND_NODE, stop)
    assert [c[0] for c in script.calls] == ["list", "list", "list", "watch", "watch"]
    assert stop.waits == [0.5, 1.0]
    assert changes(emitted) == [("pool_changed", "n1", "added")]


def test_an_error_event_other_than_410_resumes_the_watch():
    stop, emitted = Stop(), []
    error = {
        "type": "ERROR",
        "object": {"kind": "Status", "code": 500, "reason": "InternalError", "message": "etcd"},
    }
    script = Script(
        stop,
        lists={KIND_NODE: [([], "10")]},
        watches={KIND_NODE: [[bookmark("11"), error], [bookmark("12")]]},
    )
    svc_ = source(script, emitted, kinds=[KIND_NODE])
    svc_.follow(KIND_NODE, stop)
    assert [c for c in script.calls if c[0] == "watch"][:2] == [
        ("watch", KIND_NODE, "10"),
        ("watch", KIND_NODE, "11"),
    ]
    assert svc_.lists[KIND_NODE] == 1
    assert stop.waits == [0.5]


def test_a_watch_that_hears_nothing_waits_before_the_next():
    stop, emitted = Stop(), []
    script = Script(
        stop, lists={KIND_NODE: [([], "10")]}, watches={KIND_NODE: [[], [], [bookmark("11")]]}
    )
    source(script, emitted, kinds=[KIND_NODE]).follow(KIND_NODE, stop)
    assert stop.waits == [0.5, 1.0]


def test_stop_ends_the_loop_in_the_middle_of_a_watch():
    stop, emitted = Stop(), []

    def stopping():
        yield {"type": "ADDED", "object": versioned(node("n1"), "11")}
        stop.set()
        yield {"type": "ADDED", "object": versioned(node("n2"), "12")}
        yield {"type": "ADDED", "object": versioned(node("n3"), "13")}

    script = Script(stop, lists={KIND_NODE: [([], "10")]}, watches={KIND_NODE: [stopping()]})
    svc_ = source(script, emitted, kinds=[KIND_NODE])
    svc_.follow(KIND_NODE, stop)
    assert changes(emitted) == [("pool_changed", "n1", "added"), ("pool_changed", "n2", "added")]
    assert script.calls == [("list", KIND_NODE), ("watch", KIND_NODE, "10")]
    assert script.closed == 1  # the stream was closed, not left to the collector


def test_a_deleted_object_never_seen_is_still_gone():
    stop, emitted = Stop(), []
    pg = versioned(podgroup("big", priority_class="large-job", phase="Running"), "11")
    script = Script(
        stop,
        lists={KIND_PODGROUP: [([], "10")]},
        watches={KIND_PODGROUP: [[{"type": "DELETED", "object": pg}]]},
    )
    source(script, emitted, kinds=[KIND_PODGROUP]).follow(KIND_PODGROUP, stop)
    assert [(e["platform_event"], e["phase"]) for e in emitted] == [("large_job_gone", "Running")]


def test_a_rule_that_fails_is_logged_and_the_object_still_recorded(monkeypatch, caplog):
    stop, emitted = Stop(), []

    def broken(*args, **kwargs):
        raise KeyError("boom")

    monkeypatch.setattr(svc, "observe", broken)
    script = Script(
        stop,
        lists={KIND_NODE: [([], "10")]},
        watches={
            KIND_NODE: [[{"type": "ADDED", "object": versioned(node("n1"), "11")}, bookmark("12")]]
        },
    )
    svc_ = source(script, emitted, kinds=[KIND_NODE])
    svc_.follow(KIND_NODE, stop)
    assert svc_.snapshot.get(KIND_NODE, ("", "n1")) is not None
    assert svc_.versions[KIND_NODE] == "12"
    assert "the rules failed on Node /n1" in caplog.text


class Blocking:
    """A transport whose watches block until interrupted, as a real idle watch does."""

    def __init__(self, lists):
        self.lists = lists
        self.listed: list[str] = []
        self.cut = threading.Event()
        self.interrupted = 0
        self.watching = 0
        self.lock = threading.Lock()

    def list(self, watched):
        self.listed.append(watched.kind)
        answer = self.lists[watched.kind].pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def watch(self, watched, resource_version, timeout_seconds):
        with self.lock:
            self.watching += 1
        if self.cut.wait(10):
            raise ProtocolError("Connection broken: shut down")
        yield from ()  # a generator, as the real one

    def interrupt(self):
        self.interrupted += 1
        self.cut.set()


def fleet(node_lists):
    return Blocking(
        {
            KIND_QUEUE: [
                (
                    [
                        tenant_queue("a", "subscription", deserved=8),
                        tenant_queue("b", "spot", allocated=4),
                    ],
                    "1",
                )
            ],
            KIND_NODE: node_lists,
            KIND_CONFIGMAP: [([], "3")],
            KIND_PODGROUP: [([podgroup("j", unschedulable=True)], "4")],
        }
    )


def run_until(transport, done, resync_seconds=0.05, coalesce_seconds=0.0):
    """``run`` on a thread until ``done(emitted)`` and every kind watches; then stopped."""
    emitted: list[dict[str, Any]] = []
    events = svc.ClusterEvents(
        transport,
        emitted.append,
        KINDS,
        resync_seconds=resync_seconds,
        clock=lambda: CLOCK,
        coalesce_seconds=coalesce_seconds,
    )
    stop = threading.Event()
    runner = threading.Thread(target=events.run, args=(stop,))
    runner.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not (done(emitted) and transport.watching == len(KINDS)):
        time.sleep(0.01)
    stopped = time.monotonic()
    stop.set()
    runner.join(10)
    assert not runner.is_alive()
    assert time.monotonic() - stopped < 5  # the idle watches were cut, not waited out
    assert transport.interrupted == 1
    assert not [t for t in threading.enumerate() if t.name.startswith("cluster-events-")]
    return emitted


def still_blocked(emitted):
    return sum(e["reason"].startswith("PodGroup tenant-a/j still") for e in emitted)


def test_run_lists_in_order_resyncs_the_standing_conditions_and_stops_cleanly():
    transport = fleet([([node("n1")], "2")])
    emitted = run_until(transport, lambda got: still_blocked(got) >= 2)
    # Queues first, so the PodGroup listed last is judged with them.
    assert transport.listed == list(KINDS)
    assert [(e["platform_event"], e["name"]) for e in emitted[:3]] == [
        ("subscription_changed", "tenant-a-subscription"),
        ("pool_changed", "n1"),
        ("paying_job_blocked", "j"),
    ]
    assert "still" not in emitted[2]["reason"]
    # Then only the resyncs: the paying job still blocked.
    assert {e["reason"] for e in emitted[3:]} == {
        "PodGroup tenant-a/j still waits unschedulable (Pending) in subscription queue "
        "tenant-a-subscription while spot queues hold 4 GPUs"
    }


def test_run_coalesces_a_burst_and_emits_its_newest_when_the_window_closes():
    """Resyncs every 0.02 s re-emit the blocked job 50 times a second; coalesced by a
    0.3 s window, the run passes the first at once, then one trailing edge per window
    (rule event-coalesce), each saying how many it stands for."""
    transport = fleet([([node("n1")], "2")])
    started = time.monotonic()
    emitted = run_until(
        transport,
        lambda got: sum(e.get("coalesced", 0) > 0 for e in got) >= 3,
        resync_seconds=0.02,
        coalesce_seconds=0.3,
    )
    took = time.monotonic() - started
    blocked = [e for e in emitted if e["platform_event"] == "paying_job_blocked"]
    assert "coalesced" not in blocked[0] and all(e["coalesced"] > 1 for e in blocked[1:])
    assert len(blocked) <= 2 + took / 0.3


def test_a_window_a_watch_thread_opens_while_the_loop_waits_is_not_left_to_the_resync():
    """The main loop may be waiting for a resync 30 s away when a watch thread opens a
    window: it never waits longer than COALESCE_TICK, so the trailing edge is on time."""
    now = [100.0]
    emitted: list[dict[str, Any]] = []
    events = svc.ClusterEvents(
        fleet([([node("n1")], "2")]),
        emitted.append,
        KINDS,
        resync_seconds=30,
        clock=lambda: CLOCK,
        coalesce_seconds=5,
        monotonic=lambda: now[0],
    )
    assert events._next_wake(130.0) == svc.COALESCE_TICK  # no window open yet
    burst = [{"platform_event": "pool_changed", "name": f"n{i}"} for i in range(3)]
    events._send(burst)
    assert [e["name"] for e in emitted] == ["n0"]
    now[0] = 105.0
    events.flush()
    assert emitted[-1] == {"platform_event": "pool_changed", "name": "n2", "coalesced": 2}
    off = svc.ClusterEvents(fleet([]), emitted.append, KINDS, monotonic=lambda: 100.0)
    assert off._next_wake(130.0) == 30.0  # coalescing off: only the resync wakes it


def test_once_a_first_list_fails_the_threads_list_the_rest():
    transport = fleet([ProtocolError("down"), ([node("n1")], "2")])
    emitted = run_until(
        transport, lambda got: {e["name"] for e in got} >= {"n1", "j", "tenant-a-subscription"}
    )
    assert transport.listed[:2] == [KIND_QUEUE, KIND_NODE]
    assert sorted(transport.listed[2:]) == sorted([KIND_NODE, KIND_CONFIGMAP, KIND_PODGROUP])
    assert ("pool_changed", "n1") in [(e["platform_event"], e["name"]) for e in emitted]


# KubeTransport: the requests it makes and how it reads the answers.


class Response:
    def __init__(self, chunks=(), data=None):
        self.chunks = list(chunks)
        self.data = data
        self.closed = False
        self.released = False
        self.connection = type("Conn", (), {"sock": Sock()})()

    def stream(self, amt=None, decode_content=False):
        assert amt is None and decode_content is False
        yield from self.chunks

    def close(self):
        self.closed = True

    def release_conn(self):
        self.released = True


class Sock:
    def __init__(self):
        self.shut: list[int] = []

    def shutdown(self, how):
        self.shut.append(how)


class Resource:
    def __init__(self, answers):
        self.answers = list(answers)
        self.calls: list[dict[str, Any]] = []

    def get(self, **params):
        self.calls.append(params)
        return self.answers.pop(0)


class FakeCluster:
    def __init__(self, resource):
        self.resource_ = resource
        self.asked: list[tuple[str, str]] = []

    def resource(self, api_version, kind):
        self.asked.append((api_version, kind))
        return self.resource_


def page(items, version, token=None):
    meta = {"resourceVersion": version}
    if token:
        meta["continue"] = token
    return Response(
        data=json.dumps({"kind": "ConfigMapList", "metadata": meta, "items": items}).encode()
    )


def test_kube_transport_lists_page_by_page_with_the_selector():
    resource = Resource(
        [
            page([{"metadata": {"name": "a"}}], "100", "t1"),
            page([{"metadata": {"name": "b"}}], "100"),
        ]
    )
    cluster = FakeCluster(resource)
    items, version = svc.KubeTransport(cluster).list(svc.WATCHED[KIND_CONFIGMAP])
    assert version == "100"
    assert [i["metadata"]["name"] for i in items] == ["a", "b"]
    assert all(i["apiVersion"] == "v1" and i["kind"] == "ConfigMap" for i in items)
    assert cluster.asked == [("v1", "ConfigMap")]
    assert [c.get("_continue") for c in resource.calls] == [None, "t1"]
    assert all(
        c["label_selector"] == "platform.io/managed-by=gpucloud-platform" for c in resource.calls
    )
    assert all(c["serialize"] is False and c["limit"] == svc.LIST_PAGE for c in resource.calls)


def test_kube_transport_watches_from_a_version_with_bookmarks_and_reads_lines_across_chunks():
    lines = [
        json.dumps(
            {"type": "ADDED", "object": {"metadata": {"name": "q1", "resourceVersion": "5"}}}
        ),
        json.dumps({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "6"}}}),
    ]
    body = ("\n".join(lines) + "\n").encode()
    response = Response(chunks=[body[:7], body[7:50], body[50:]])
    resource = Resource([response])
    events = list(svc.KubeTransport(FakeCluster(resource)).watch(svc.WATCHED[KIND_QUEUE], "4", 60))
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    (params,) = resource.calls
    assert params["watch"] is True
    assert params["resource_version"] == "4"
    assert params["allow_watch_bookmarks"] is True
    assert params["timeout_seconds"] == 60
    assert params["_request_timeout"] == (svc.CONNECT_TIMEOUT, 60 + svc.READ_MARGIN)
    assert "label_selector" not in params
    assert response.closed and response.released


def test_kube_transport_interrupt_shuts_the_open_watches_socket_down():
    response = Response(
        chunks=[b'{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "2"}}}\n'] * 2
    )
    transport = svc.KubeTransport(FakeCluster(Resource([response])))
    stream = transport.watch(svc.WATCHED[KIND_NODE], "1", 60)
    next(stream)
    transport.interrupt()
    assert response.connection.sock.shut == [svc.socket.SHUT_RDWR]
    stream.close()
    assert response.closed
    transport.interrupt()  # no watch open: nothing more is shut
    assert response.connection.sock.shut == [svc.socket.SHUT_RDWR]


def test_run_source_connects_with_the_connection_options(monkeypatch):
    made = []

    class Made:
        def resource(self, *args):
            raise AssertionError("no request after stop")

    def from_options(options, dry_run=False):
        made.append(dict(options))
        return Made()

    monkeypatch.setattr(svc.Cluster, "from_options", staticmethod(from_options))
    stop = threading.Event()
    stop.set()
    svc.run_source(
        SourceArgs({"kubeconfig": "/k", "context": "c"}, 5.0, (KIND_NODE,)), lambda e: None, stop
    )
    assert made == [{"kubeconfig": "/k", "context": "c"}]


def test_the_sources_gpu_fault_types_judge_the_nodes_it_watches():
    stop, emitted = Stop(), []
    degraded = {"GpuDegraded": "True"}
    script = Script(
        stop,
        lists={KIND_NODE: [([node("n1"), node("n2", gpu_conditions=degraded)], "10")]},
        watches={
            KIND_NODE: [
                events_of(
                    KIND_NODE,
                    ("MODIFIED", versioned(node("n1", gpu_conditions=degraded), "11")),
                    (
                        "MODIFIED",
                        versioned(node("n2", gpu_conditions={"GpuUnhealthy": "True"}), "12"),
                    ),
                )
            ]
        },
    )
    svc_ = source(script, emitted, kinds=[KIND_NODE], gpu_unhealthy_conditions=("GpuDegraded",))
    assert svc_.snapshot.gpu_unhealthy_conditions == ("GpuDegraded",)
    svc_.follow(KIND_NODE, stop)
    health = [c for c in changes(emitted) if c[0] == "gpu_health_changed"]
    assert health == [
        ("gpu_health_changed", "n2", "unhealthy"),  # listed failed
        ("gpu_health_changed", "n1", "unhealthy"),  # the watch saw it fail
        ("gpu_health_changed", "n2", "healthy"),  # GpuUnhealthy is not this source's type
    ]
    emitted.clear()
    svc_.resync()  # rule event-standing: n1 failed and is not tainted yet
    assert changes(emitted) == [("gpu_health_changed", "n1", "unhealthy")]
