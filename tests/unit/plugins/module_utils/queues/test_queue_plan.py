# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

from decimal import Decimal

from hypothesis import assume, given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.queues.model import (
    Queue,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.queues.plan import (
    CAPACITY,
    CREATE,
    DELETE,
    UPDATE,
    lower_bound,
    queue_steps,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.queues.rules import tree_errors

GPU, CPU = "nvidia.com/gpu", "cpu"
D = Decimal


def sub(gpu, cpu):
    r = {GPU: D(gpu), CPU: D(cpu)}
    return Queue(
        name="tenant-a-subscription",
        queue_type="subscription",
        tenant="a",
        deserved=dict(r),
        capability=dict(r),
    )


def team(name, d_gpu, d_cpu, cap_gpu):
    """A team queue; ``cap_gpu`` None leaves its capability unset (bounded by the parent)."""
    return Queue(
        name=f"tenant-a-{name}",
        parent="tenant-a-subscription",
        queue_type="team",
        tenant="a",
        team=name,
        deserved={GPU: D(d_gpu), CPU: D(d_cpu)},
        capability={} if cap_gpu is None else {GPU: D(cap_gpu)},
    )


def test_new_tree_is_created_parents_first():
    steps = queue_steps([team("x", 1, 1, 2), sub(4, 4)], {})
    assert [(s.action, s.name) for s in steps] == [
        (CREATE, "tenant-a-subscription"),
        (CREATE, "tenant-a-x"),
    ]


def test_capacity_is_written_before_a_new_queue():
    spot = Queue(
        name="tenant-a-spot",
        queue_type="spot",
        tenant="a",
        capability={GPU: D(0)},
        capacity_fields=("capability",),
        write_capacity=True,
    )
    steps = queue_steps([spot], {})
    assert [s.action for s in steps] == [CAPACITY, CREATE]
    # Rule queue-created-whole: the first write carries the labels, the parent and the
    # limit, so no fault between the two writes leaves a queue no run recognises.
    first = steps[0].manifest()
    assert first["metadata"]["labels"]["platform.io/tenant"] == "a"
    assert first["metadata"]["labels"]["platform.io/queue-type"] == "spot"
    assert first["spec"]["parent"] == "root" and first["spec"]["capability"] == {GPU: 0}
    # A later capacity-only write carries only the capacity fields.
    live = {spot.name: first}
    spot.capability = {GPU: D(3)}
    later = queue_steps([spot], live)
    assert [(s.action, s.whole) for s in later] == [(CAPACITY, False)]
    assert set(later[0].manifest()["spec"]) == {"capability"}


def owned_by(manifest, *managers):
    out = dict(manifest)
    out["metadata"] = dict(manifest["metadata"])
    out["metadata"]["managedFields"] = [
        {"manager": m, "operation": "Apply", "fieldsV1": {}} for m in managers
    ]
    return out


def test_a_queue_written_part_way_is_adopted_by_the_platforms_apply():
    """Rule queue-adopted: a queue only the capacity manager wrote (a fault stopped the run
    before the platform's own apply) is applied again, though its fields already match."""
    queue = sub(4, 4)
    part_way = owned_by(queue.to_manifest(), "gpucloud-platform-capacity")
    assert [(s.action, s.name) for s in queue_steps([queue], {queue.name: part_way})] == [
        (UPDATE, queue.name)
    ]
    whole = owned_by(queue.to_manifest(), "gpucloud-platform-capacity", "gpucloud-platform")
    assert queue_steps([queue], {queue.name: whole}) == []
    # Without managedFields (a reader that strips them) nothing is adopted.
    assert queue_steps([queue], {queue.name: queue.to_manifest()}) == []


def test_unchanged_tree_has_no_steps():
    qs = [sub(4, 4), team("x", 1, 1, 2)]
    assert queue_steps(qs, {q.name: q.to_manifest() for q in qs}) == []


def test_deletes_come_first():
    qs = [sub(4, 4)]
    live = {q.name: q.to_manifest() for q in [*qs, team("x", 1, 1, 2)]}
    steps = queue_steps(qs, live, ["tenant-a-x", "tenant-a-gone"])
    assert [(s.action, s.name) for s in steps] == [(DELETE, "tenant-a-x")]


def test_shrinking_parent_waits_for_children():
    old = [sub(40, 100), team("x", 30, 50, 40)]
    new = [sub(20, 100), team("x", 10, 50, 20)]
    steps = queue_steps(new, {q.name: q.to_manifest() for q in old})
    assert [s.name for s in steps] == ["tenant-a-x", "tenant-a-subscription"]


def test_lower_bound_keeps_unlimited_capability_and_drops_one_sided_deserved():
    old = Queue(name="q", deserved={GPU: D(4)}, capability={})
    new = Queue(name="q", deserved={CPU: D(4)}, capability={GPU: D(8)})
    low = lower_bound(old, new)
    assert low.deserved == {}
    assert low.capability == {GPU: D(8)}


team_values = st.tuples(
    st.integers(0, 20), st.integers(0, 50), st.one_of(st.none(), st.integers(0, 40))
)


def valid_tree(sub_gpu, sub_cpu, teams):
    queues = [sub(sub_gpu, sub_cpu)] + [
        team(f"t{i}", d, c, None if cap is None else max(d, cap))
        for i, (d, c, cap) in enumerate(teams)
    ]
    return queues if not tree_errors(queues) else None


@given(
    st.integers(0, 60),
    st.integers(0, 150),
    st.lists(team_values, min_size=1, max_size=4),
    st.integers(0, 60),
    st.integers(0, 150),
    st.lists(team_values, min_size=1, max_size=4),
)
def test_every_intermediate_tree_is_valid(og, oc, old_teams, ng, nc, new_teams):
    """Rule queue-write-order: Volcano accepts each write when old and new trees are valid."""
    old = valid_tree(og, oc, old_teams)
    new = valid_tree(ng, nc, new_teams)
    assume(old is not None and new is not None)
    live = {q.name: q for q in old}
    wanted = {q.name for q in new}
    deletes = [n for n in live if n not in wanted]
    steps = queue_steps(new, {n: q.to_manifest() for n, q in live.items()}, deletes)
    state = dict(live)
    for step in steps:
        if step.action == DELETE:
            state.pop(step.name)
        else:
            state[step.name] = step.queue
        errors = tree_errors(list(state.values()))
        assert errors == [], (step, errors)
        assert not volcano_refuses(state), (step, state)
    assert {n: q.to_manifest() for n, q in state.items()} == {q.name: q.to_manifest() for q in new}
    assert all(s.action in (CREATE, UPDATE, DELETE) for s in steps)


def volcano_refuses(state):
    """Volcano's queue webhook: a parent's capability is at least every child's, and an
    unset child capability is the parent's (not unlimited)."""
    by_name = dict(state)
    for q in state.values():
        parent = by_name.get(q.parent)
        if parent is None:
            continue
        for key, limit in parent.capability.items():
            if q.capability.get(key, limit) > limit:
                return True
    return False


def test_a_capability_that_becomes_unset_under_a_shrinking_parent_is_lowered_first():
    """The subscription shrinks 40 -> 30 while team c goes and team a's capability of 40
    becomes unset: team a is written at 30 before the subscription shrinks."""
    old = [sub(40, 100), team("a", 10, 10, 40), team("b", 10, 10, 20), team("c", 10, 10, 20)]
    new = [sub(30, 100), team("a", 10, 10, None), team("b", 10, 10, 20)]
    live = {q.name: q.to_manifest() for q in old}
    steps = queue_steps(new, live, ["tenant-a-c"])
    assert [(s.action, s.name) for s in steps] == [
        (DELETE, "tenant-a-c"),
        (UPDATE, "tenant-a-a"),
        (UPDATE, "tenant-a-subscription"),
        (UPDATE, "tenant-a-a"),
    ]
    assert steps[1].queue.capability == {GPU: D(30)} and steps[1].final is False
    assert steps[3].queue.capability == {}
