# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule event-gpu-health-changed, and its part of rule event-standing: a GPU node's GPUs
fail or recover, and a failed node not quarantined yet is emitted again."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    GPU_UNHEALTHY_CONDITIONS,
    TAINT_GPU_UNHEALTHY,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.events.event import EVENT_KEYS
from ansible_collections.gpucloud.platform.plugins.module_utils.events.model import (
    KIND_NODE,
    KIND_PODGROUP,
    KIND_QUEUE,
    Snapshot,
    slim,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.events.rules import (
    observe,
    relist,
    standing,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.gpu_health.signals import (
    DEFAULT_UNHEALTHY_CONDITIONS,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.events.event_objects import (
    AT,
    node,
    podgroup,
    queue,
    tenant_queue,
)

FAILED = {"GpuUnhealthy": "True"}
PASSED = {"GpuUnhealthy": "False"}


def health(events):
    """The gpu_health_changed events as (name, change, conditions)."""
    return [
        (e["name"], e["change"], e["conditions"])
        for e in events
        if e["platform_event"] == "gpu_health_changed"
    ]


def change(old, new, snapshot=None):
    snapshot = snapshot if snapshot is not None else Snapshot()
    if old is not None:
        observe(snapshot, KIND_NODE, None, old, AT)
    return health(observe(snapshot, KIND_NODE, old, new, AT))


def test_the_default_condition_types_are_gpu_healths():
    assert GPU_UNHEALTHY_CONDITIONS == DEFAULT_UNHEALTHY_CONDITIONS == ("GpuUnhealthy",)
    assert Snapshot().gpu_unhealthy_conditions == GPU_UNHEALTHY_CONDITIONS


@pytest.mark.parametrize(
    "old, new, expected",
    [
        # Added with its GPUs failed (the first LIST too), or healthy.
        (None, node("n1", gpu_conditions=FAILED), [("n1", "unhealthy", ["GpuUnhealthy"])]),
        (None, node("n1", gpu_conditions=PASSED), []),
        (None, node("n1"), []),
        # The condition turns True, then stops being True, or is removed.
        (node("n1", gpu_conditions=PASSED), node("n1", gpu_conditions=FAILED),
         [("n1", "unhealthy", ["GpuUnhealthy"])]),
        (node("n1"), node("n1", gpu_conditions=FAILED), [("n1", "unhealthy", ["GpuUnhealthy"])]),
        (node("n1", gpu_conditions=FAILED), node("n1", gpu_conditions=PASSED),
         [("n1", "healthy", [])]),
        (node("n1", gpu_conditions=FAILED), node("n1"), [("n1", "healthy", [])]),
        (node("n1", gpu_conditions=FAILED), node("n1", gpu_conditions={"GpuUnhealthy": "Unknown"}),
         [("n1", "healthy", [])]),
        # A removed node: nothing to quarantine.
        (node("n1", gpu_conditions=FAILED), None, []),
        # True -> True with its message, heartbeat, version, cordon or taint changed.
        (node("n1", gpu_conditions=FAILED),
         node("n1", gpu_conditions=FAILED, message="XID 79", version="2",
              heartbeat="2026-01-01T12:00:40Z"), []),
        (node("n1", gpu_conditions=FAILED),
         node("n1", gpu_conditions=FAILED, unschedulable=True, taints=(TAINT_GPU_UNHEALTHY,)),
         []),
        # Another condition type, not a GPU fault's: ignored.
        (node("n1"), node("n1", gpu_conditions={"GpuDegraded": "True"}), []),
        (node("n1"), node("n1", gpu_conditions={"DiskPressure": "True"}), []),
        (node("n1"), node("n1", ready=False), []),
        # A node that has no GPUs, before or after.
        (None, node("cpu-1", gpus=None, gpu_conditions=FAILED), []),
        (node("cpu-1", gpus="0"), node("cpu-1", gpus="0", gpu_conditions=FAILED), []),
        # The device plugin took its GPUs away as they failed: still a GPU node.
        (node("n1", gpus=8), node("n1", gpus=0, gpu_conditions=FAILED),
         [("n1", "unhealthy", ["GpuUnhealthy"])]),
    ],
)  # fmt: skip
def test_a_gpu_health_change(old, new, expected):
    assert change(old, new) == expected


def test_the_event_says_the_node_its_failing_types_and_gpus():
    snapshot = Snapshot(("GpuUnhealthy", "GpuDegraded"))
    both = node("n1", gpu_conditions={"GpuUnhealthy": "True", "GpuDegraded": "True"})
    (event,) = [e for e in observe(snapshot, KIND_NODE, None, both, AT) if "conditions" in e]
    assert list(event)[: len(EVENT_KEYS)] == list(EVENT_KEYS)
    assert json.loads(json.dumps(event)) == event
    assert event == {
        "platform_event": "gpu_health_changed",
        "kind": "Node",
        "name": "n1",
        "namespace": "",
        "tenant": "",
        "reason": "the GPUs of GPU node n1 have failed (GpuDegraded, GpuUnhealthy)",
        "at": AT,
        "change": "unhealthy",
        "conditions": ["GpuDegraded", "GpuUnhealthy"],
        "gpus": 8,
    }
    (healthy,) = health(observe(snapshot, KIND_NODE, both, node("n1"), AT))
    assert healthy == ("n1", "healthy", [])


def test_the_source_names_the_condition_types():
    site = Snapshot(("GpuDegraded",))
    assert change(node("n1"), node("n1", gpu_conditions={"GpuDegraded": "True"}), site) == [
        ("n1", "unhealthy", ["GpuDegraded"])
    ]
    # GpuUnhealthy is not one of this site's types: slimmed away, no change at all.
    assert change(node("n2"), node("n2", gpu_conditions=FAILED), Snapshot(("GpuDegraded",))) == []


def test_one_type_failing_beside_another_is_no_new_change():
    snapshot = Snapshot(("GpuUnhealthy", "GpuDegraded"))
    one = node("n1", gpu_conditions={"GpuUnhealthy": "True", "GpuDegraded": "False"})
    both = node("n1", gpu_conditions={"GpuUnhealthy": "True", "GpuDegraded": "True"})
    other = node("n1", gpu_conditions={"GpuUnhealthy": "False", "GpuDegraded": "True"})
    assert change(one, both, snapshot) == []
    assert health(observe(snapshot, KIND_NODE, both, other, AT)) == []
    assert health(observe(snapshot, KIND_NODE, other, node("n1"), AT)) == [("n1", "healthy", [])]


def test_slim_keeps_the_fault_conditions_and_the_quarantine_taint_only():
    whole = node(
        "n1",
        gpu_conditions={"GpuUnhealthy": "True", "GpuDegraded": "True"},
        taints=("dedicated", TAINT_GPU_UNHEALTHY),
    )
    kept = slim(KIND_NODE, whole)
    assert kept["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "GpuUnhealthy", "status": "True"},
    ]
    assert kept["spec"] == {"unschedulable": False, "taints": [{"key": TAINT_GPU_UNHEALTHY}]}
    assert slim(KIND_NODE, node("n1", taints=("dedicated",)))["spec"]["taints"] == []
    site = slim(KIND_NODE, whole, ("GpuDegraded",))
    assert [c["type"] for c in site["status"]["conditions"]] == ["Ready", "GpuDegraded"]


# Rule event-standing: a failed GPU node not quarantined yet is emitted again.


def nodes_seen(*nodes) -> Snapshot:
    snapshot = Snapshot()
    for one in nodes:
        observe(snapshot, KIND_NODE, None, one, AT)
    return snapshot


def test_a_failed_node_not_yet_tainted_stands_until_quarantined():
    failed = node("n1", gpu_conditions=FAILED)
    snapshot = nodes_seen(
        failed,
        node("n2", gpu_conditions=FAILED, unschedulable=True, taints=(TAINT_GPU_UNHEALTHY,)),
        node("n3"),
        node("n4", gpu_conditions=PASSED),
        node("cpu-1", gpus=None, gpu_conditions=FAILED),
        node("n5", gpu_conditions=FAILED, taints=("dedicated",)),
    )
    events = standing(snapshot, AT)
    assert health(events) == [
        ("n1", "unhealthy", ["GpuUnhealthy"]),
        ("n5", "unhealthy", ["GpuUnhealthy"]),
    ]
    assert events[0]["reason"] == (
        "the GPUs of GPU node n1 are still failed (GpuUnhealthy), and it is not quarantined yet"
    )
    # The quarantine taints it: nothing stands any more, and the taint emits no event.
    quarantined = node(
        "n1", gpu_conditions=FAILED, unschedulable=True, taints=(TAINT_GPU_UNHEALTHY,)
    )
    assert health(observe(snapshot, KIND_NODE, failed, quarantined, AT)) == []
    assert [e["name"] for e in standing(snapshot, AT)] == ["n5"]


def test_the_standing_nodes_come_after_the_jobs():
    snapshot = Snapshot()
    for q in (
        tenant_queue("a", "subscription", deserved=16),
        tenant_queue("b", "spot", allocated=4),
    ):
        observe(snapshot, KIND_QUEUE, None, q, AT)
    observe(snapshot, KIND_PODGROUP, None, podgroup("j", unschedulable=True), AT)
    observe(snapshot, KIND_NODE, None, node("n1", gpu_conditions=FAILED), AT)
    assert [e["platform_event"] for e in standing(snapshot, AT)] == [
        "paying_job_blocked",
        "gpu_health_changed",
    ]


def test_a_relist_of_the_nodes_acts_on_a_failure_the_watch_missed():
    snapshot = nodes_seen(node("n1"), node("n2"))
    events = relist(snapshot, KIND_NODE, [node("n1", gpu_conditions=FAILED), node("n2")], AT)
    assert health(events) == [("n1", "unhealthy", ["GpuUnhealthy"])]  # once, not twice
    assert events[0]["reason"] == "the GPUs of GPU node n1 have failed (GpuUnhealthy)"
    # Listed again unchanged: it still stands, as the paying jobs do.
    again = relist(snapshot, KIND_NODE, [node("n1", gpu_conditions=FAILED), node("n2")], AT)
    assert health(again) == [("n1", "unhealthy", ["GpuUnhealthy"])]
    assert relist(snapshot, KIND_QUEUE, [queue("lab", managed=False)], AT) == again


versions = st.lists(
    st.builds(
        node,
        name=st.just("n1"),
        gpus=st.sampled_from([8, "4"]),
        gpu_conditions=st.sampled_from([None, FAILED, PASSED, {"GpuDegraded": "True"}]),
        taints=st.sampled_from([(), (TAINT_GPU_UNHEALTHY,)]),
        message=st.sampled_from(["a", "b"]),
        ready=st.booleans(),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(versions)
def test_the_changes_alternate_and_the_last_says_the_node_as_it_is(history):
    """Over any versions of one GPU node, unhealthy and healthy alternate, the first is
    unhealthy, and the last one says whether its GPUs have failed (none: they never did)."""
    snapshot, old, seen = Snapshot(), None, []
    for new in history:
        seen += [one[1] for one in health(observe(snapshot, KIND_NODE, old, new, AT))]
        old = new
    assert all(a != b for a, b in itertools.pairwise(seen))
    assert not seen or seen[0] == "unhealthy"
    failed = any(
        c["type"] == "GpuUnhealthy" and c["status"] == "True"
        for c in history[-1]["status"]["conditions"]
    )
    assert (bool(seen) and seen[-1] == "unhealthy") == failed
