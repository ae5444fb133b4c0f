# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster event source's only I/O: it lists and watches the cluster and hands each
event the rules (``events/rules.py``) return to a callback.

For each watched kind (Volcano's Queue and PodGroup, Node, and the ConfigMaps labelled
``platform.io/managed-by``), on a thread of its own (``ClusterEvents.follow``):

1. LIST it, keeping the list's ``resourceVersion``; the changes from what the snapshot
   held go through the rules, then the standing conditions (rule event-relist);
2. WATCH from that ``resourceVersion`` with bookmarks and a server timeout; each event
   updates the snapshot and emits what the rules return, each event and bookmark moves
   the kind's ``resourceVersion`` on; a watch the server ends is made again from there;
3. ``410 Gone`` (an ApiException of status 410, or an ERROR event of code 410): LIST
   again (step 1), so what changed while the watch was behind is emitted as changes;
4. any other failure (the API server stopped, a connection cut, a 5xx): wait 0.5 s,
   doubling up to 5 s while it fails, and WATCH again from the last ``resourceVersion``
   (a 410 then is step 3).

At start the kinds are listed one after the other, queues first, so the first PodGroups
are judged with their queues known; once a LIST fails, the kinds not listed yet are
listed by their own threads, with the backoff. Every ``resync_seconds`` the standing conditions of the whole snapshot are
emitted again (rule event-standing). Every event passes through rule event-coalesce
(``events/coalesce.py``) on its way out: a burst of one event is its first and its
newest; the trailing edges are emitted by the main loop as their windows close. ``run`` returns once its ``stop`` event is set:
the open watches are cut (their sockets shut down, which wakes a blocked read) and the
threads joined.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from ..common.names import GPU_UNHEALTHY_CONDITIONS, MANAGED_SELECTOR, PODGROUP_API, QUEUE_API
from ..common.times import write_rfc3339
from ..kube.cluster import Cluster, decode
from .coalesce import Coalescer
from .event import Event
from .inputs import SourceArgs
from .model import (
    KIND_CONFIGMAP,
    KIND_NODE,
    KIND_PODGROUP,
    KIND_QUEUE,
    KINDS,
    Snapshot,
    key_of,
    mapping,
    metadata,
)
from .rules import observe, relist, standing

LOG = logging.getLogger(__name__)

GONE = 410
BACKOFF_FIRST = 0.5
BACKOFF_MAX = 5.0
# The server ends every watch after this many seconds; it is made again from the last
# resourceVersion, so a watch lost without a word is noticed within a minute or two.
WATCH_TIMEOUT_SECONDS = 60
CONNECT_TIMEOUT = 10
# The client gives up on a watch silent for the server's timeout and this much more.
READ_MARGIN = 30
LIST_PAGE = 500
JOIN_SECONDS = 5.0
WATCH_EVENTS = ("ADDED", "MODIFIED", "DELETED")


@dataclass(frozen=True)
class Watched:
    """A watched kind: its API version and the label selector of its LIST and WATCH."""

    kind: str
    api_version: str
    label_selector: str | None = None


WATCHED = {
    KIND_QUEUE: Watched(KIND_QUEUE, QUEUE_API),
    KIND_PODGROUP: Watched(KIND_PODGROUP, PODGROUP_API),
    KIND_NODE: Watched(KIND_NODE, "v1"),
    KIND_CONFIGMAP: Watched(KIND_CONFIGMAP, "v1", MANAGED_SELECTOR),
}


class Gone(Exception):
    """The API server no longer has the resourceVersion a watch asked for (410)."""


class WatchError(Exception):
    """An ERROR event of a watch other than 410."""


def _code(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        return int(value) if isinstance(value, int | str) else None
    except ValueError:
        return None


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of an API error (kubernetes' ApiException and the dynamic client's
    errors carry ``status``); None for a failure without an answer."""
    return _code(getattr(exc, "status", None))


def is_gone(exc: BaseException) -> bool:
    return isinstance(exc, Gone) or status_of(exc) == GONE


class Transport(Protocol):
    """LIST and WATCH of one kind (``KubeTransport``; the unit tests' fake)."""

    def list(self, watched: Watched) -> tuple[list[dict[str, Any]], str]:
        """Every object of the kind and the list's resourceVersion."""

    def watch(
        self, watched: Watched, resource_version: str, timeout_seconds: int
    ) -> Iterable[Mapping[str, Any]]:
        """The watch events (``type``, ``object``) from ``resource_version`` until the
        server ends the watch."""

    def interrupt(self) -> None:
        """End every open watch now (from another thread)."""


def response_lines(response: Any) -> Iterator[str]:
    """The lines of a streamed response, as each arrives."""
    buffer = bytearray()
    for chunk in response.stream(amt=None, decode_content=False):
        buffer.extend(chunk if isinstance(chunk, bytes | bytearray) else str(chunk).encode("utf-8"))
        end = buffer.find(b"\n")
        while end != -1:
            yield buffer[:end].decode("utf-8", errors="replace")
            del buffer[: end + 1]
            end = buffer.find(b"\n")
    if buffer.strip():
        yield buffer.decode("utf-8", errors="replace")


def _shut(response: Any) -> None:
    """Wake a thread blocked reading ``response``: shutting the socket down ends the read
    (closing it from another thread does not)."""
    connection = getattr(response, "connection", None) or getattr(response, "_connection", None)
    sock = getattr(connection, "sock", None)
    if sock is None:
        return
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _close(response: Any) -> None:
    for name in ("close", "release_conn"):
        # A connection already broken; the pool makes a new one.
        with contextlib.suppress(Exception):
            getattr(response, name, lambda: None)()


class KubeTransport:
    """LIST and WATCH through kubernetes.core's client (``kube.cluster.Cluster``): the
    answers are read as JSON, never as the dynamic client's ``ResourceInstance``."""

    def __init__(self, cluster: Cluster):
        self._cluster = cluster
        self._open: set[Any] = set()
        self._lock = threading.Lock()

    def _params(self, watched: Watched, read_seconds: float, **params: Any) -> dict[str, Any]:
        if watched.label_selector:
            params["label_selector"] = watched.label_selector
        params["_request_timeout"] = (CONNECT_TIMEOUT, read_seconds)
        return params

    def list(self, watched: Watched) -> tuple[list[dict[str, Any]], str]:
        """Every object, page by page; the version is the first page's (every page of one
        LIST is read at that version)."""
        resource = self._cluster.resource(watched.api_version, watched.kind)
        items: list[dict[str, Any]] = []
        version, token = "", None
        while True:
            params = self._params(watched, CONNECT_TIMEOUT + READ_MARGIN, limit=LIST_PAGE)
            if token:
                params["_continue"] = token
            body = mapping(decode(resource.get(serialize=False, **params)))
            items += [i for i in body.get("items") or [] if isinstance(i, dict)]
            meta = mapping(body.get("metadata"))
            version = version or str(meta.get("resourceVersion") or "")
            token = meta.get("continue")
            if not token:
                break
        for item in items:  # a built-in kind's list items have no apiVersion and kind
            item.setdefault("apiVersion", watched.api_version)
            item.setdefault("kind", watched.kind)
        return items, version

    def watch(
        self, watched: Watched, resource_version: str, timeout_seconds: int
    ) -> Iterator[dict[str, Any]]:
        resource = self._cluster.resource(watched.api_version, watched.kind)
        params = self._params(
            watched,
            timeout_seconds + READ_MARGIN,
            watch=True,
            resource_version=resource_version or None,
            allow_watch_bookmarks=True,
            timeout_seconds=timeout_seconds,
        )
        response = resource.get(serialize=False, **params)
        with self._lock:
            self._open.add(response)
        try:
            for line in response_lines(response):
                if line.strip():
                    yield json.loads(line)
        finally:
            with self._lock:
                self._open.discard(response)
            _close(response)

    def interrupt(self) -> None:
        with self._lock:
            responses = list(self._open)
        for response in responses:
            _shut(response)


# With coalescing on, the main loop looks at the windows at least this often (seconds).
COALESCE_TICK = 0.25


class ClusterEvents:
    """The source: a snapshot of what it has seen, fed by one thread per kind, its events
    handed to ``emit`` (called under the snapshot's lock, in the order they happened)."""

    def __init__(
        self,
        transport: Transport,
        emit: Callable[[Event], Any],
        kinds: Sequence[str] = KINDS,
        resync_seconds: float = 30.0,
        watch_timeout: int = WATCH_TIMEOUT_SECONDS,
        clock: Callable[[], datetime] | None = None,
        coalesce_seconds: float = 0.0,
        monotonic: Callable[[], float] = time.monotonic,
        gpu_unhealthy_conditions: Sequence[str] = GPU_UNHEALTHY_CONDITIONS,
    ):
        self.transport = transport
        self.emit = emit
        self.kinds = tuple(kinds)
        self.resync_seconds = resync_seconds
        self.watch_timeout = watch_timeout
        self.snapshot = Snapshot(gpu_unhealthy_conditions)
        # kind -> the resourceVersion to watch from; None: LIST first
        self.versions: dict[str, str | None] = dict.fromkeys(self.kinds)
        self.lists: dict[str, int] = dict.fromkeys(self.kinds, 0)  # LISTs made, per kind
        self._clock = clock or (lambda: datetime.now(UTC))
        self._lock = threading.Lock()
        self._last_failure: dict[str, str] = {}
        # Rule event-coalesce: a burst of one event passes as its first and its newest.
        self.coalescer = Coalescer(coalesce_seconds)
        self._monotonic = monotonic

    def _at(self) -> str:
        return write_rfc3339(self._clock())

    def _send(self, events: Iterable[Event]) -> None:
        for event in events:
            for passed in self.coalescer.offer(event, self._monotonic()):
                self.emit(passed)

    def flush(self) -> None:
        """Emit the trailing edges of the coalescing windows that have closed."""
        with self._lock:
            for passed in self.coalescer.due(self._monotonic()):
                self.emit(passed)

    def _next_wake(self, resync_at: float) -> float:
        """Seconds until the next resync or the next coalescing window closes. A watch
        thread may open a window while the main loop waits, so with coalescing on the wait
        is at most ``COALESCE_TICK``: a trailing edge is never late by more than that."""
        with self._lock:  # the watch threads change the windows under it
            due = self.coalescer.next_due()
        wake = resync_at if due is None else min(resync_at, due)
        wait = max(0.0, wake - self._monotonic())
        return min(wait, COALESCE_TICK) if self.coalescer.window > 0 else wait

    def list_kind(self, kind: str) -> None:
        """LIST a kind, emit what changed from the snapshot and the standing conditions,
        and watch from the list's resourceVersion next."""
        items, version = self.transport.list(WATCHED[kind])
        with self._lock:
            self.lists[kind] += 1
            self._send(relist(self.snapshot, kind, items, self._at()))
        self.versions[kind] = version

    def observed(self, kind: str, event_type: str, obj: Mapping[str, Any]) -> None:
        """One watch event: update the snapshot, emit what the rules return. A rule that
        fails on an odd object is logged and the object still recorded, so one object
        cannot stop the source."""
        with self._lock:
            held = self.snapshot.get(kind, key_of(obj))
            old, new = (
                (held if held is not None else obj, None)
                if event_type == "DELETED"
                else (held, obj)
            )
            try:
                events = observe(self.snapshot, kind, old, new, self._at())
            except Exception:  # pylint: disable=broad-exception-caught
                LOG.exception("cluster_events: the rules failed on %s %s/%s", kind, *key_of(obj))
                self.snapshot.apply(kind, old, new)
                events = []
            self._send(events)

    def resync(self) -> None:
        """Emit what still holds in the whole snapshot: rule event-standing (``rules.standing``)."""
        with self._lock:
            self._send(standing(self.snapshot, self._at()))

    def watch_kind(self, kind: str, stop: threading.Event) -> bool:
        """One WATCH from the kind's resourceVersion until the server ends it or ``stop``
        is set; True when it heard anything (an event or a bookmark). Gone on a 410."""
        heard = False
        events = self.transport.watch(WATCHED[kind], self.versions[kind] or "", self.watch_timeout)
        try:
            for event in events:
                event_type, obj = event.get("type"), mapping(event.get("object"))
                if event_type == "ERROR":
                    if _code(obj.get("code")) == GONE:
                        raise Gone(str(obj.get("message") or "resourceVersion too old"))
                    raise WatchError(f"{obj.get('code')} {obj.get('reason')}: {obj.get('message')}")
                heard = True
                if event_type in WATCH_EVENTS:
                    self.observed(kind, str(event_type), obj)
                version = metadata(obj).get("resourceVersion")
                if version:
                    self.versions[kind] = str(version)
                if stop.is_set():
                    break
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()  # a generator's own finally: the response closed now, not when collected
        return heard

    def _failed(self, kind: str, exc: BaseException) -> None:
        what = f"{type(exc).__name__}: {exc}"
        level = logging.DEBUG if self._last_failure.get(kind) == what else logging.WARNING
        self._last_failure[kind] = what
        LOG.log(level, "cluster_events: %s: %s; trying again", kind, what)

    def follow(self, kind: str, stop: threading.Event) -> None:
        """The kind's loop until ``stop``: LIST when there is no resourceVersion, WATCH from
        it; 410 lists again at once; any other failure, or a watch that heard nothing,
        waits 0.5 s doubling to 5 s and watches again from the last resourceVersion."""
        delay = BACKOFF_FIRST
        while not stop.is_set():
            try:
                if self.versions[kind] is None:
                    self.list_kind(kind)
                    delay = BACKOFF_FIRST
                if self.watch_kind(kind, stop):
                    delay = BACKOFF_FIRST
                    continue
            except Exception as exc:  # pylint: disable=broad-exception-caught
                if stop.is_set():
                    break
                if is_gone(exc) and self.versions[kind] is not None:
                    self.versions[kind] = None
                    continue
                self._failed(kind, exc)
            if stop.wait(delay):
                break
            delay = min(delay * 2, BACKOFF_MAX)

    def run(self, stop: threading.Event) -> None:
        """List every kind in order, follow each on its thread and emit the standing
        conditions every ``resync_seconds``, until ``stop`` is set."""
        for kind in self.kinds:
            if stop.is_set():
                return
            try:
                self.list_kind(kind)
            except Exception as exc:  # pylint: disable=broad-exception-caught
                self._failed(kind, exc)
                break  # the API server is likely away: each thread lists its kind itself
        threads = [
            threading.Thread(
                target=self.follow, args=(kind, stop), name=f"cluster-events-{kind}", daemon=True
            )
            for kind in self.kinds
        ]
        for thread in threads:
            thread.start()
        try:
            resync_at = self._monotonic() + self.resync_seconds
            while not stop.wait(self._next_wake(resync_at)):
                self.flush()
                if self._monotonic() >= resync_at:
                    self.resync()
                    resync_at = self._monotonic() + self.resync_seconds
        finally:
            stop.set()
            self.transport.interrupt()
            deadline = time.monotonic() + JOIN_SECONDS
            for thread in threads:
                thread.join(max(0.0, deadline - time.monotonic()))


def run_source(args: SourceArgs, emit: Callable[[Event], Any], stop: threading.Event) -> None:
    """The event source: kubernetes.core's client of the args' connection options, the
    kinds watched, until ``stop`` is set. CoreException when no client can be made."""
    cluster = Cluster.from_options(args.connection)
    ClusterEvents(
        KubeTransport(cluster),
        emit,
        args.kinds,
        args.resync_seconds,
        coalesce_seconds=args.coalesce_seconds,
        gpu_unhealthy_conditions=args.gpu_unhealthy_conditions,
    ).run(stop)
