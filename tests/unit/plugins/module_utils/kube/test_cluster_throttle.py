# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``Cluster``'s answer to API priority and fairness (429 with Retry-After), its raw
JSON decoding and its bounded concurrency; error paths, with a stand-in client."""

from __future__ import annotations

import json
import threading
from types import SimpleNamespace

import pytest
from kubernetes.client.rest import ApiException as RestApiException
from kubernetes.dynamic.exceptions import TooManyRequestsError

from ansible_collections.gpucloud.platform.plugins.module_utils.kube import cluster as kube


def too_many(retry_after: str | None) -> TooManyRequestsError:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    raw = RestApiException(status=429, reason="Too Many Requests")
    raw.headers = headers
    raw.body = json.dumps({"message": "too many requests, please try again later"})
    return TooManyRequestsError(raw)


class Answers:
    """A K8SClient stand-in: ``get`` gives the next answer (raising an exception one)."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.calls = 0

    def resource(self, kind, api_version):
        return SimpleNamespace(kind=kind, api_version=api_version)

    def get(self, resource, **params):
        self.calls += 1
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return SimpleNamespace(data=json.dumps(answer).encode())


def test_a_429_is_waited_out_for_its_retry_after_and_sent_again():
    waits = []
    client = Answers([too_many("3"), too_many(None), {"items": [{"metadata": {"name": "a"}}]}])
    cluster = kube.Cluster(client, sleep=waits.append)
    # Each item comes back as a GET would return it, apiVersion and kind filled in.
    assert cluster.list("v1", "ConfigMap") == [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
    ]
    assert waits == [3.0, kube.THROTTLE_DEFAULT_WAIT]
    assert (cluster.requests, cluster.throttled) == (3, 2)


def test_throttling_that_never_ends_raises_the_429_after_the_last_attempt():
    waits = []
    client = Answers([too_many("1")] * kube.THROTTLE_ATTEMPTS)
    cluster = kube.Cluster(client, sleep=waits.append)
    with pytest.raises(TooManyRequestsError):
        cluster.list("v1", "ConfigMap")
    assert len(waits) == kube.THROTTLE_ATTEMPTS - 1
    assert cluster.requests == kube.THROTTLE_ATTEMPTS


@pytest.mark.parametrize(
    ("header", "wait"),
    [("2", 2.0), ("0.5", 0.5), ("-4", 0.0), ("soon", kube.THROTTLE_DEFAULT_WAIT), ("9999", 30.0)],
)
def test_retry_after_is_read_and_bounded(header, wait):
    assert kube.retry_after(too_many(header)) == wait


def test_decode_reads_bytes_and_text_as_plain_json():
    assert kube.decode(SimpleNamespace(data=b'{"a": [1]}')) == {"a": [1]}
    assert kube.decode('{"b": {}}') == {"b": {}}


def test_concurrently_keeps_order_bounds_the_threads_and_returns_failures():
    cluster = kube.Cluster(Answers([]))
    running, peak, lock = [0], [0], threading.Lock()
    gate = threading.Barrier(3, timeout=5)

    def call(i):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        if i < 3:
            gate.wait()  # the first three run at the same time, so three threads exist
        with lock:
            running[0] -= 1
        if i == 4:
            raise ValueError("four")
        return i

    results = cluster.concurrently([lambda i=i: call(i) for i in range(8)], workers=3)
    assert results[:4] == [0, 1, 2, 3] and results[5:] == [5, 6, 7]
    assert isinstance(results[4], ValueError)
    assert peak[0] == 3
