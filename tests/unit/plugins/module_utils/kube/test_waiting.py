# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubernetes.core's Waiter polling through ``Cluster``: one counted request a poll, the
Waiter's schedule and its retry of a dropped connection; with a stand-in K8SClient."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from kubernetes.client.rest import ApiException as RestApiException
from kubernetes.dynamic.exceptions import ForbiddenError, NotFoundError
from urllib3.exceptions import ProtocolError

from ansible_collections.gpucloud.platform.plugins.module_utils.kube import cluster as kube
from ansible_collections.gpucloud.platform.plugins.module_utils.kube import waiting
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.kube.test_cluster_throttle import (
    Answers,
    too_many,
)
from ansible_collections.kubernetes.core.plugins.module_utils.k8s import waiter as k8s_waiter
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException


class Asked(Answers):
    """``Answers`` that also keeps the parameters of every ``get``."""

    def __init__(self, answers):
        super().__init__(answers)
        self.params = []

    def get(self, resource, **params):
        self.params.append(params)
        return super().get(resource, **params)


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    """The Waiter's clock: sleeping moves it on."""
    now = {"t": 0.0}
    fake = SimpleNamespace(
        monotonic=lambda: now["t"], sleep=lambda s: now.__setitem__("t", now["t"] + s)
    )
    monkeypatch.setattr(k8s_waiter, "time", fake)
    return now


def gone():
    return NotFoundError(RestApiException(status=404, reason="NotFound"))


def job(phase):
    return {"kind": "Job", "metadata": {"name": "eval"}, "status": {"phase": phase}}


def running(obj):
    return ((obj or {}).get("status") or {}).get("phase") == "Running"


def test_a_named_wait_is_one_counted_get_a_poll(clock):
    client = Asked([gone(), job("Pending"), job("Running")])
    cluster = kube.Cluster(client)
    done, obj, elapsed = waiting.wait_for(
        cluster, "batch.volcano.sh/v1alpha1", "Job", running, 10, 2, name="eval", namespace="ns"
    )
    assert (done, obj, elapsed) == (True, job("Running"), 4)
    assert cluster.requests == client.calls == 3 and clock["t"] == 4
    assert client.params[0] == {"name": "eval", "namespace": "ns", "serialize": False}


def test_a_wait_that_times_out_returns_the_last_answer(clock):
    client = Asked([job("Pending")] * 4)
    cluster = kube.Cluster(client)
    done, obj, _elapsed = waiting.wait_for(cluster, "v1", "Job", running, 5, 2, name="eval")
    # polls at 0, 2, 4 and 6 s: the first look after the timeout is the last
    assert (done, obj) == (False, job("Pending")) and cluster.requests == 4


def test_an_absent_object_is_an_empty_answer():
    cluster = kube.Cluster(Asked([gone()]))
    assert waiting.wait_for(cluster, "v1", "Job", running, 0, 2, name="eval") == (False, {}, 0)


def test_a_429_during_a_poll_is_the_clusters_to_wait_out(clock):
    waits = []
    cluster = kube.Cluster(Asked([too_many("3"), job("Running")]), sleep=waits.append)
    done, _answer, elapsed = waiting.wait_for(cluster, "v1", "Job", running, 10, 2, name="eval")
    assert done and elapsed == 0 and waits == [3.0]
    assert (cluster.requests, cluster.throttled) == (2, 1)


def test_a_list_wait_answers_a_kind_list_to_the_libraries_predicates():
    client = Asked([{"items": [{"metadata": {"name": "tenant-a"}}]}, {"items": []}])
    cluster = kube.Cluster(client)
    done, answer, _elapsed = waiting.wait_for(
        cluster,
        "v1",
        "Namespace",
        waiting.resource_absent,
        10,
        2,
        label_selectors=["platform.io/tenant=a"],
    )
    assert done and answer == {"apiVersion": "v1", "kind": "NamespaceList", "items": []}
    assert client.params[0] == {"label_selector": "platform.io/tenant=a", "serialize": False}
    assert cluster.requests == 2


def test_a_dropped_connection_is_retried_by_the_waiter(clock):
    cluster = kube.Cluster(Asked([ProtocolError("Connection aborted."), job("Running")]))
    done, _answer, elapsed = waiting.wait_for(cluster, "v1", "Job", running, 10, 2, name="eval")
    assert done and elapsed == 2 and cluster.requests == 2


def test_a_connection_dropped_on_the_last_poll_is_raised_as_the_transports_error():
    """Not the Waiter's CoreException: the runner reports a TransportError as an
    unreachable API server."""
    cluster = kube.Cluster(Asked([job("Pending"), ProtocolError("Connection aborted.")]))
    with pytest.raises(kube.TransportError) as info:
        waiting.wait_for(cluster, "v1", "Job", running, 1, 2, name="eval")
    assert not isinstance(info.value, CoreException)


def test_other_api_errors_go_through_at_once():
    denied = RestApiException(status=403, reason="Forbidden")
    denied.body = json.dumps({"message": "jobs is forbidden"})
    cluster = kube.Cluster(Asked([ForbiddenError(denied)]))
    with pytest.raises(kube.ApiException):
        waiting.wait_for(cluster, "v1", "Job", running, 10, 2, name="eval")
    assert cluster.requests == 1
