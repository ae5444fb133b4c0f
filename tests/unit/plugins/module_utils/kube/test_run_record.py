# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kube/run_record, the one writer of a run's Events and history, against the fake
cluster: the queue arbiter and the spot reclaim both write through it, their Events have
one shape (``common/run_event``), and on both paths an Event or a history the cluster
refuses (ApiException) or does not answer (TransportError) is only warned about."""

from __future__ import annotations

import json

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.arbiter import service as arbiter
from ansible_collections.gpucloud.platform.plugins.module_utils.common.run_event import run_event
from ansible_collections.gpucloud.platform.plugins.module_utils.kube import run_record
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.cluster import TransportError
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.reclaim import ReclaimRequest
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.reclaim_io import reclaim
from ansible_collections.gpucloud.platform.plugins.modules import queue_arbiter
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster
from ansible_collections.gpucloud.platform.tests.unit.plugins.arbiter_fixtures import (
    NOW,
    scenario_one,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import (
    SpotCluster,
    api_error,
    spot_objects,
)

# The run's time in nanoseconds: each Event's name ends in it plus its place in the run.
STAMP = int(NOW.timestamp() * 1_000_000_000)
# What the fake API server adds to what a run creates.
SERVER_OWNED = ("uid", "resourceVersion", "creationTimestamp")


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch):
    monkeypatch.setattr(arbiter, "utc_now", lambda: NOW)


@pytest.fixture
def warnings(monkeypatch):
    """The warnings kube/run_record gives (and only those)."""
    seen: list[str] = []
    monkeypatch.setattr(run_record, "warn", seen.append)
    return seen


def run_arbiter(cluster) -> dict:
    """The queue arbiter's run, with the module's defaults."""
    params = {name: spec.get("default") for name, spec in queue_arbiter.OPTIONS.items()}
    return arbiter.run(params, cluster, check_mode=False)


def run_spot_reclaim(cluster) -> dict:
    """The spot reclaim of the design's example: spot-a, then spot-b."""
    request = ReclaimRequest(demand=16, reason="order 7", holder="me")
    return reclaim(cluster, request, check_mode=False, now=NOW)


def refusing(base: type, error: Exception) -> type:
    """``base`` whose API server answers every Event create and every ConfigMap apply
    with ``error`` (a refused request still counts)."""

    class Refusing(base):
        def create(self, manifest):
            if manifest["kind"] == "Event":
                self.requests += 1
                raise error
            return super().create(manifest)

        def apply(self, manifest, field_manager="gpucloud-platform"):
            if manifest["kind"] == "ConfigMap":
                self.requests += 1
                raise error
            return super().apply(manifest, field_manager=field_manager)

    return Refusing


def as_written(event: dict) -> dict:
    """The Event as the run wrote it: without what the API server added."""
    out = json.loads(json.dumps(event))
    for key in SERVER_OWNED:
        out["metadata"].pop(key, None)
    return out


def order_of(event: dict) -> int:
    return int(event["metadata"]["name"].rsplit(".", 1)[1], 16) - STAMP


def shape(event: dict) -> dict:
    """What every run's Event shares: its fields, nested, and the parts that are the same
    whatever the run (what differs per run, such as the reason, the message and the
    annotations' names, left out)."""
    meta, involved = event["metadata"], event["involvedObject"]
    return {
        "fields": sorted(event),
        "metadata": sorted(meta),
        "involvedObject": sorted(involved),
        "apiVersion": event["apiVersion"],
        "kind": event["kind"],
        "labels": meta["labels"],
        "source": event["source"],
        "count": event["count"],
        "times": [event["firstTimestamp"], event["lastTimestamp"]],
        "annotations are text": all(isinstance(v, str) for v in meta["annotations"].values()),
        "named after the object": meta["name"].rsplit(".", 1)[0] == involved["name"],
        "in the object's namespace": meta["namespace"] == involved["namespace"],
        "type": event["type"] in ("Normal", "Warning"),
    }


def test_the_arbiter_and_the_spot_reclaim_write_events_of_one_shape():
    arbiter_cluster = FakeCluster(scenario_one())
    made_room = run_arbiter(arbiter_cluster)
    spot_cluster = SpotCluster(spot_objects())
    reclaimed = run_spot_reclaim(spot_cluster)
    assert made_room["changed"] is True and reclaimed["changed"] is True

    from_arbiter = arbiter_cluster.objects("Event")
    from_spot = spot_cluster.objects("Event")
    assert sorted(e["reason"] for e in from_arbiter) == ["ArbiterEvicted"] * 4 + ["ArbiterMadeRoom"]
    assert [e["reason"] for e in from_spot] == ["SpotReclaimed"] * 2
    # One shape on both paths ...
    shapes = {json.dumps(shape(e), sort_keys=True) for e in from_arbiter + from_spot}
    assert len(shapes) == 1, shapes
    assert json.loads(shapes.pop())["times"] == ["2026-01-01T12:00:00Z"] * 2
    # ... because both are common/run_event's body, with the run's order in the name.
    for event in from_arbiter + from_spot:
        assert as_written(event) == run_event(
            event["involvedObject"],
            event["reason"],
            event["type"],
            event["message"],
            event["metadata"]["annotations"],
            NOW,
            order_of(event),
        )
    arbiter_orders = {
        e["involvedObject"]["name"]: (
            order_of(e),
            e["metadata"]["annotations"].get("platform.io/arbiter-order"),
        )
        for e in from_arbiter
    }
    assert arbiter_orders["task-d"] == (1, "1") and arbiter_orders["big"] == (5, None)
    assert [
        (order_of(e), e["metadata"]["annotations"]["platform.io/reclaim-order"]) for e in from_spot
    ] == [(1, "1"), (2, "2")]
    # Both histories are written by the same writer, newest first.
    for cluster, name, result in (
        (arbiter_cluster, "queue-arbiter-history", made_room),
        (spot_cluster, "spot-reclaim-history", reclaimed),
    ):
        stored = cluster.store[("ConfigMap", "platform-system", name)]
        assert stored["metadata"]["labels"] == {"platform.io/managed-by": "gpucloud-platform"}
        assert json.loads(stored["data"]["history.json"]) == result["history"]
        assert len(result["history"]) == 1


REFUSALS = [
    pytest.param(api_error(403, "events is forbidden"), "events is forbidden", id="refused"),
    pytest.param(
        TransportError("connection reset by peer"), "connection reset by peer", id="no-answer"
    ),
]


@pytest.mark.parametrize(("error", "why"), REFUSALS)
def test_the_arbiter_only_warns_when_its_event_or_history_cannot_be_written(error, why, warnings):
    cluster = refusing(FakeCluster, error)(scenario_one())
    out = run_arbiter(cluster)
    assert out["changed"] is True and len(out["evicted"]) == 4  # the evictions stand
    assert out["history"] == []
    assert cluster.objects("Event") == [] and cluster.objects("Lease") == []
    assert warnings == [
        *(
            f"tenant-a/{name} was evicted but its ArbiterEvicted Event could not be recorded: {why}"
            for name in ("task-d", "task-e", "task-c", "task-b")
        ),
        f"room was made for tenant-a/big but its ArbiterMadeRoom Event could not be recorded: "
        f"{why}",
        "the arbiter's evictions could not be added to ConfigMap "
        f"platform-system/queue-arbiter-history: {why}",
    ]


@pytest.mark.parametrize(("error", "why"), REFUSALS)
def test_the_spot_reclaim_only_warns_when_its_event_or_history_cannot_be_written(
    error, why, warnings
):
    """Before the writer was shared the spot reclaim let a TransportError through: the run
    failed as changed: false with its jobs already deleted. Now it warns, as the arbiter
    did, and goes on to count the reclaims."""
    cluster = refusing(SpotCluster, error)(spot_objects())
    out = run_spot_reclaim(cluster)
    assert out["changed"] is True
    assert [v["name"] for v in out["victims"]] == ["spot-a", "spot-b"]  # the deletes stand
    assert out["history"] == []
    assert out["counted"] == {"tenant-alpha-spot": {"before": 0, "after": 2}}
    assert cluster.objects("Event") == [] and cluster.objects("Lease") == []
    assert warnings == [
        *(
            f"tenant-alpha/{name} was deleted but its SpotReclaimed Event could not be "
            f"recorded: {why}"
            for name in ("spot-a", "spot-b")
        ),
        f"the reclaim could not be added to ConfigMap platform-system/spot-reclaim-history: {why}",
    ]
