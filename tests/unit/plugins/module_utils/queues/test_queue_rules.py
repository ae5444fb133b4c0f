# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.queues.model import (
    Queue,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.queues.rules import (
    MAX_DEPTH,
    queue_tree_errors,
    rule_capability_above_allocated,
    rule_child_capability_within_parent,
    rule_children_deserved_within_parent,
    rule_children_guarantee_within_parent,
    rule_explicit_parent,
    rule_guarantee_deserved_capability,
    rule_jobs_only_in_leaves,
    rule_payg_deserved_equals_capability,
    rule_platform_parent,
    rule_queue_depth,
    rule_spot_deserves_nothing,
    rule_subscription_deserved_equals_capability,
    tree_errors,
)

GPU = "nvidia.com/gpu"
D = Decimal


def sub(gpus=40, **kw):
    return Queue(
        name="tenant-a-subscription",
        queue_type="subscription",
        tenant="a",
        deserved={GPU: D(gpus)},
        capability={GPU: D(gpus)},
        **kw,
    )


def team(name, deserved=None, capability=None, guarantee=None, source=None):
    return Queue(
        name=f"tenant-a-{name}",
        parent="tenant-a-subscription",
        queue_type="team",
        tenant="a",
        team=name,
        deserved={GPU: D(deserved)} if deserved is not None else {},
        capability={GPU: D(capability)} if capability is not None else {},
        guarantee={GPU: D(guarantee)} if guarantee is not None else {},
        source=source,
    )


def test_guarantee_above_deserved():
    q = team("x", deserved=4, guarantee=5)
    [e] = rule_guarantee_deserved_capability(q)
    assert e.field == f"tenant-a-x.guarantee.{GPU}"
    assert "5 exceeds deserved (4)" in e.message


def test_guarantee_without_deserved_entry():
    q = team("x", guarantee=1)
    [e] = rule_guarantee_deserved_capability(q)
    assert "no deserved" in e.message


def test_deserved_above_capability():
    [e] = rule_guarantee_deserved_capability(team("x", deserved=9, capability=8))
    assert e.field.endswith(f"deserved.{GPU}")
    assert "9 exceeds capability (8)" in e.message


def test_missing_capability_is_unlimited():
    assert rule_guarantee_deserved_capability(team("x", deserved=1000)) == []


def test_explicit_parent():
    assert rule_explicit_parent(Queue(name="q", parent="")) != []
    assert rule_explicit_parent(Queue(name="q", parent="q")) != []
    assert rule_explicit_parent(Queue(name="root", parent="")) == []
    assert rule_explicit_parent(Queue(name="q")) == []


def test_child_capability_within_parent():
    [e] = rule_child_capability_within_parent(team("x", capability=50), sub(40))
    assert "exceeds the capability of parent queue tenant-a-subscription (40)" in e.message
    assert rule_child_capability_within_parent(team("x", capability=40), sub(40)) == []


def test_children_deserved_message_shows_the_arithmetic():
    children = [
        team("a1", deserved=20, source="teams[0]"),
        team("b1", deserved=10, source="teams[1]"),
        team("c1", deserved=30, source="teams[2]"),
    ]
    [e] = rule_children_deserved_within_parent(sub(40), children)
    assert e.field == f"teams[2].deserved.{GPU}"
    assert "(40 - 20 - 10 = 10)" in e.message
    assert "add up to 60" in e.message


def test_children_name_resource_parent_lacks():
    child = Queue(name="c", parent="tenant-a-subscription", deserved={"cpu": D(1)})
    [e] = rule_children_deserved_within_parent(sub(40), [child])
    assert e.field == "c.deserved.cpu"
    assert "has no deserved cpu" in e.message


def test_children_guarantee():
    parent = sub(40, guarantee={GPU: D(5)})
    children = [team("a1", deserved=10, guarantee=4), team("b1", deserved=10, guarantee=2)]
    [e] = rule_children_guarantee_within_parent(parent, children)
    assert e.field.endswith(f"guarantee.{GPU}")


def test_jobs_only_in_leaves():
    [e] = rule_jobs_only_in_leaves(sub(), [team("x")], {"tenant-a-subscription": 2})
    assert "2 running job(s)" in e.message
    assert rule_jobs_only_in_leaves(sub(), [], {"tenant-a-subscription": 2}) == []
    assert rule_jobs_only_in_leaves(sub(), [team("x")], {}) == []


def chain(n):
    queues = [Queue(name="q1")]
    for i in range(2, n + 1):
        queues.append(Queue(name=f"q{i}", parent=f"q{i - 1}"))
    return queues


def test_depth_limit():
    ok = chain(MAX_DEPTH)
    by_name = {q.name: q for q in ok}
    assert all(rule_queue_depth(q, by_name) == [] for q in ok)
    deep = chain(MAX_DEPTH + 1)
    by_name = {q.name: q for q in deep}
    [e] = rule_queue_depth(deep[-1], by_name)
    assert "6 levels below root" in e.message


def test_depth_detects_loops_and_unknown_parents():
    a, b = Queue(name="a", parent="b"), Queue(name="b", parent="a")
    assert "loops" in rule_queue_depth(a, {"a": a, "b": b})[0].message
    c = Queue(name="c", parent="nowhere")
    assert "neither 'root'" in rule_queue_depth(c, {"c": c})[0].message


def test_subscription_deserved_equals_capability():
    q = sub()
    q.capability = {GPU: D(160)}
    [e] = rule_subscription_deserved_equals_capability(q)
    assert "differs from capability (160)" in e.message


def test_payg_deserved_equals_capability():
    q = Queue(
        name="tenant-a-payg",
        queue_type="payg",
        tenant="a",
        deserved={GPU: D(1)},
        capability={GPU: D(2)},
    )
    assert rule_payg_deserved_equals_capability(q) != []


def test_spot_deserves_nothing():
    q = Queue(name="tenant-a-spot", queue_type="spot", tenant="a", deserved={GPU: D(1)})
    [e] = rule_spot_deserves_nothing(q)
    assert e.field == f"tenant-a-spot.deserved.{GPU}"
    ok = Queue(
        name="tenant-a-spot",
        queue_type="spot",
        tenant="a",
        deserved={GPU: D(0)},
        capability={GPU: D(9)},
    )
    assert rule_spot_deserves_nothing(ok) == []


def test_platform_parent():
    assert rule_platform_parent(team("x")) == []
    wrong = team("x")
    wrong.parent = "root"
    assert "its parent is 'tenant-a-subscription'" in rule_platform_parent(wrong)[0].message
    payg = Queue(
        name="tenant-a-payg", parent="tenant-a-subscription", queue_type="payg", tenant="a"
    )
    assert rule_platform_parent(payg) != []


def test_capability_above_allocated_gives_numbers():
    q = team("x", capability=4, source="teams[0]")
    [e] = rule_capability_above_allocated(q, {GPU: D(6)})
    assert e.field == f"teams[0].capability.{GPU}"
    assert "4 is below the 6" in e.message
    assert "force" in e.message
    assert rule_capability_above_allocated(q, {GPU: D(4)}) == []


def test_queue_tree_errors_valid_tree_is_empty():
    manifests = [sub().to_manifest(), team("x", 20, 40).to_manifest(), team("y", 20).to_manifest()]
    assert queue_tree_errors(manifests) == []


def test_queue_tree_errors_reports_parse_and_tree_errors():
    bad = team("x", 50).to_manifest()
    broken = {"kind": "Queue", "metadata": {"name": "z"}, "spec": {"deserved": {"cpu": "lots"}}}
    errors = queue_tree_errors([sub().to_manifest(), bad, broken, "nope"])
    assert any(e.startswith("z.spec.deserved.cpu") for e in errors)
    assert any("tenant-a-x.deserved" in e for e in errors)
    assert any(e.startswith("[3]") for e in errors)


def test_queue_tree_errors_reads_busy_parent_from_status():
    live_sub = sub().to_manifest()
    live_sub["status"] = {"allocated": {"pods": "3"}, "running": 1}
    errors = queue_tree_errors([live_sub, team("x", 10).to_manifest()])
    assert any("running job(s)" in e for e in errors)


@given(
    st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=6), st.integers(0, 200)
)
def test_sum_rule_iff_total_exceeds(deserved, parent):
    children = [team(f"t{i}", deserved=d) for i, d in enumerate(deserved)]
    errors = rule_children_deserved_within_parent(sub(parent), children)
    assert bool(errors) == (sum(deserved) > parent)


@given(
    st.integers(0, 100),
    st.integers(0, 100),
    st.integers(0, 100),
)
def test_three_level_rule_iff_order_broken(g, d, c):
    q = team("x", deserved=d, capability=c, guarantee=g)
    assert bool(rule_guarantee_deserved_capability(q)) == (not (g <= d <= c))


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 40)), min_size=0, max_size=5))
def test_tree_errors_empty_exactly_when_every_rule_holds(teams):
    children = [team(f"t{i}", deserved=d, capability=max(d, c)) for i, (d, c) in enumerate(teams)]
    errors = tree_errors([sub(40), *children])
    expected = sum(d for d, _unused in teams) > 40 or any(max(d, c) > 40 for d, c in teams)
    assert bool(errors) == expected
