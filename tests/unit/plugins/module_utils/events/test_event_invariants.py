# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What holds for any sequence of object versions: a re-list of what the snapshot holds
emits only the standing conditions, a LIST diffed against itself is empty, the snapshot's
queue facts are ``facts_from_manifests`` of its queues, and no rule fails on an odd object."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.events.event import (
    EVENT_KEYS,
    PLATFORM_EVENTS,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.events.model import (
    KIND_CONFIGMAP,
    KIND_NODE,
    KIND_PODGROUP,
    KIND_QUEUE,
    KINDS,
    Snapshot,
    key_of,
    slim,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.events.rules import (
    STANDING_KINDS,
    observe,
    relist,
    relist_pairs,
    standing,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.queues.kinds import (
    facts_from_manifests,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.events.event_objects import (
    AT,
    configmap,
    node,
    podgroup,
    queue,
)

QUEUE_NAMES = ["tenant-a-subscription", "tenant-a-payg", "tenant-a-algo", "tenant-b-spot", "lab"]
gpus = st.one_of(
    st.none(), st.integers(0, 16), st.sampled_from(["8", "0", "junk", "2k", "9e999999"])
)
# What each of them is in whole GPUs (an unreadable quantity: none).
WHOLE_GPUS = {
    None: 0,
    "8": 8,
    "0": 0,
    "junk": 0,
    "2k": 2000,
    "9e999999": 10**9,
    **{i: i for i in range(17)},
}
uids = st.sampled_from(["u1", "u2"])

queues = st.builds(
    queue,
    name=st.sampled_from(QUEUE_NAMES),
    queue_type=st.sampled_from([None, "subscription", "team", "payg", "spot", "burst"]),
    tenant=st.sampled_from([None, "a", "b"]),
    managed=st.booleans(),
    allocated=gpus,
    deserved=gpus,
    capability=gpus,
    parent=st.sampled_from([None, "root", "tenant-a-subscription", "lab"]),
    uid=uids,
)
podgroups = st.builds(
    podgroup,
    name=st.sampled_from(["j1", "j2", "j3"]),
    namespace=st.sampled_from(["tenant-a", "tenant-b", "research"]),
    queue_name=st.sampled_from([*QUEUE_NAMES, "default"]),
    phase=st.sampled_from([None, "Pending", "Inqueue", "Running", "Completed", "Unknown"]),
    unschedulable=st.booleans(),
    priority_class=st.sampled_from(["large-job", "normal-job", "spot-job"]),
    labels=st.sampled_from([None, {"platform.io/queue-type": "subscription"}]),
    uid=uids,
)
nodes = st.builds(
    node,
    name=st.sampled_from(["n1", "n2"]),
    gpus=gpus,
    ready=st.sampled_from([None, True, False]),
    unschedulable=st.booleans(),
    uid=uids,
    gpu_conditions=st.sampled_from(
        [None, {"GpuUnhealthy": "True"}, {"GpuUnhealthy": "False"}, {"GpuDegraded": "True"}]
    ),
    taints=st.sampled_from([(), ("platform.io/gpu-unhealthy",), ("dedicated",)]),
    message=st.sampled_from(["nvidia-smi failed", "XID 79"]),
)
configmaps = st.builds(
    configmap,
    name=st.sampled_from(["platform-queues", "platform-throttle"]),
    namespace=st.sampled_from(["tenant-a", "tenant-b", "platform-system"]),
    data=st.sampled_from([None, {}, {"tenant-a-payg": "payg"}]),
    managed=st.booleans(),
    uid=uids,
)
OBJECTS = {
    KIND_QUEUE: queues,
    KIND_PODGROUP: podgroups,
    KIND_NODE: nodes,
    KIND_CONFIGMAP: configmaps,
}
# A step: a new version of an object (or its deletion, None with the key it had).
steps = st.lists(
    st.one_of(
        *[st.tuples(st.just(kind), objects, st.booleans()) for kind, objects in OBJECTS.items()]
    ),
    max_size=30,
)


def play(snapshot: Snapshot, history) -> list[dict[str, Any]]:
    """Each step through ``observe`` as a watch delivers it."""
    out = []
    for kind, obj, delete in history:
        old = snapshot.get(kind, key_of(obj))
        if delete:
            if old is not None:
                out += observe(snapshot, kind, old, None, AT)
        else:
            out += observe(snapshot, kind, old, obj, AT)
    return out


@settings(max_examples=150, deadline=None)
@given(steps)
def test_relisting_what_the_snapshot_holds_emits_only_the_standing_conditions(history):
    snapshot = Snapshot()
    play(snapshot, history)
    final = {kind: [dict(o) for o in snapshot.all(kind)] for kind in KINDS}
    for kind in KINDS:
        assert relist_pairs(snapshot, kind, final[kind]) == []
        expected = standing(snapshot, AT) if kind in STANDING_KINDS else []
        assert relist(snapshot, kind, final[kind], AT) == expected


@settings(max_examples=150, deadline=None)
@given(steps, steps)
def test_a_relist_brings_a_second_snapshot_to_the_first(history, other):
    """A source whose watch was down (it holds what ``other`` left) is, after re-listing every
    kind, where one that saw ``history`` is: the same objects, the same queue facts, the
    same standing events, whatever was added, changed or deleted meanwhile."""
    seen_all, missed = Snapshot(), Snapshot()
    play(seen_all, history)
    play(missed, other)
    for kind in KINDS:
        events = relist(missed, kind, seen_all.all(kind), AT)
        assert json.loads(json.dumps(events)) == events
        assert missed.all(kind) == seen_all.all(kind)
    assert missed.facts == seen_all.facts
    assert missed.spot_gpus == seen_all.spot_gpus
    assert standing(missed, AT) == standing(seen_all, AT)


@settings(max_examples=150, deadline=None)
@given(steps)
def test_the_snapshot_keeps_the_facts_and_spot_gpus_of_its_queues(history):
    snapshot = Snapshot()
    play(snapshot, history)
    held = snapshot.all(KIND_QUEUE)
    assert snapshot.facts == facts_from_manifests(held)
    spot = 0
    for q in held:
        facts = facts_from_manifests([q])[q["metadata"]["name"]]
        if facts.managed and facts.queue_type == "spot":
            spot += WHOLE_GPUS[q["status"]["allocated"].get("nvidia.com/gpu")]
    assert snapshot.spot_gpus == spot


@settings(max_examples=150, deadline=None)
@given(steps)
def test_every_event_has_the_common_keys_and_an_unchanged_object_emits_nothing(history):
    snapshot = Snapshot()
    for event in play(snapshot, history):
        assert event["platform_event"] in PLATFORM_EVENTS
        assert all(isinstance(event[k], str) for k in EVENT_KEYS)
        assert event["at"] == AT
        assert json.loads(json.dumps(event)) == event
    for kind in KINDS:
        for obj in snapshot.all(kind):
            assert observe(snapshot, kind, obj, obj, AT) == []


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(KINDS), st.one_of(queues, podgroups, nodes, configmaps))
def test_slim_is_idempotent_and_the_rules_read_it_as_the_whole_object(kind, obj):
    once = slim(kind, obj)
    assert slim(kind, once) == once
    whole, thin = Snapshot(), Snapshot()
    assert observe(whole, kind, None, obj, AT) == observe(thin, kind, None, once, AT)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
odd_objects = st.fixed_dictionaries(
    {},
    optional={
        "metadata": st.one_of(
            json_values, st.fixed_dictionaries({"name": json_values, "labels": json_values})
        ),
        "spec": json_values,
        "status": json_values,
        "data": json_values,
    },
)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(KINDS), odd_objects, odd_objects)
def test_no_rule_fails_on_an_odd_object(kind, old, new):
    snapshot = Snapshot()
    observe(snapshot, kind, None, old, AT)
    observe(snapshot, kind, snapshot.get(kind, key_of(old)), new, AT)
    standing(snapshot, AT)
