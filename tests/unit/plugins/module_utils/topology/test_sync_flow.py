# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``topology`` through the flow contract: its plan as a table of cases over
facts (no cluster, no fake), and the offline answers against a run on the fake cluster:
``parsed`` of ``gathered`` is the check-mode run, ``rendered`` is a run on an empty cluster."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology import sync
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.service import SYNC_FLOW
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster

TOR, SPINE = "topology.volcano.sh/tor", "topology.volcano.sh/spine"
MANAGED = {"platform.io/managed-by": "gpucloud-platform"}


def params(**over):
    out = {
        "source": "labels",
        "prune": False,
        "state": "present",
        "facts": None,
        "tier_labels": [TOR, SPINE],
        "name_template": "{value}",
        "switches": None,
        "node_selector": None,
    }
    out.update(over)
    return out


def node(name, tor, spine):
    return {"name": name, "labels": {TOR: tor, SPINE: spine}}


def leaf(name, members, tier=1, labels=None):
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name, "labels": dict(MANAGED if labels is None else labels)},
        "spec": {
            "tier": tier,
            "members": [{"type": "Node", "selector": {"exactMatch": {"name": m}}} for m in members],
        },
    }


FOUR = (node("n0", "tor-0", "s"), node("n1", "tor-0", "s"), node("n2", "tor-1", "s"))

# (case, options, facts, created, updated, deleted, stale)
CASES = [
    ("empty cluster", {}, sync.SyncFacts(FOUR, ()), ["tor-0", "tor-1", "s"], [], [], []),
    (
        "a node moved",
        {},
        sync.SyncFacts(FOUR, (leaf("tor-0", ["n0"]), leaf("tor-1", ["n1", "n2"]))),
        ["s"],
        ["tor-1", "tor-0"],  # the leaf that loses a node first, then the one that gains it
        [],
        [],
    ),
    (
        "a leaf no longer needed, kept",
        {},
        sync.SyncFacts(FOUR, (leaf("tor-9", ["n9"]),)),
        ["tor-0", "tor-1", "s"],
        [],
        [],
        ["tor-9"],
    ),
    (
        "a leaf no longer needed, pruned",
        {"prune": True},
        sync.SyncFacts(FOUR, (leaf("tor-9", ["n9"]),)),
        ["tor-0", "tor-1", "s"],
        [],
        ["tor-9"],
        [],
    ),
    (
        "a HyperNode the platform does not manage is never pruned",
        {"prune": True},
        sync.SyncFacts(FOUR, (leaf("tor-9", ["n9"], labels={}),)),
        ["tor-0", "tor-1", "s"],
        [],
        [],
        [],
    ),
]


@pytest.mark.parametrize(
    "options,facts,created,updated,deleted,stale",
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_the_plan_over_facts(options, facts, created, updated, deleted, stale):
    request = sync.parse_sync(params(**options))
    said = sync.report(request, sync.plan_run(request, facts))
    assert (said["created"], said["updated"], said["deleted"], said["stale"]) == (
        created,
        updated,
        deleted,
        stale,
    )


def test_a_tree_that_needs_an_unmanaged_name_is_refused_in_the_plan():
    facts = sync.SyncFacts(FOUR, (leaf("tor-0", ["n0"], labels={}),))
    request = sync.parse_sync(params())
    with pytest.raises(PlatformValidationError, match="tor-0"):
        sync.plan_run(request, facts)


def test_rendered_is_refused_for_a_labels_tree_naming_the_way_that_works():
    with pytest.raises(PlatformValidationError, match="state: gathered and then state: parsed"):
        sync.parse_sync(params(state="rendered"))


def test_parsed_needs_facts_that_are_lists():
    request = sync.parse_sync(params(state="parsed"))
    with pytest.raises(PlatformValidationError, match=r"facts\.nodes: must be a list"):
        sync.facts_in(request, {"nodes": "n0"})


def cluster_objects(nodes, live):
    return [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": n["name"], "labels": n["labels"]}}
        for n in nodes
    ] + [copy.deepcopy(h) for h in live]


NODES = st.lists(
    st.builds(
        node,
        st.sampled_from([f"n{i}" for i in range(6)]),
        st.sampled_from(["tor-0", "tor-1", "tor-2"]),
        st.just("s"),
    ),
    min_size=1,
    max_size=6,
    unique_by=lambda n: n["name"],
)
LIVE = st.lists(
    st.builds(
        leaf,
        st.sampled_from(["tor-0", "tor-1", "tor-7"]),
        st.lists(st.sampled_from(["n0", "n1", "n5"]), unique=True),
    ),
    max_size=3,
    unique_by=lambda h: h["metadata"]["name"],
)


@settings(max_examples=60, deadline=None)
@given(nodes=NODES, live=LIVE, prune=st.booleans())
def test_parsed_of_gathered_is_the_check_mode_run(nodes, live, prune):
    cluster = FakeCluster(cluster_objects(nodes, live))
    gathered = SYNC_FLOW.run(params(state="gathered"), cluster, check_mode=False)["gathered"]
    try:
        check = SYNC_FLOW.run(params(prune=prune), FakeCluster(cluster_objects(nodes, live)), True)
    except PlatformValidationError as exc:
        with pytest.raises(PlatformValidationError) as again:
            SYNC_FLOW.offline(params(state="parsed", facts=gathered, prune=prune))
        assert str(again.value) == str(exc)
        return
    parsed = SYNC_FLOW.offline(params(state="parsed", facts=gathered, prune=prune))
    assert parsed is not None and parsed.pop("state") == "parsed" and parsed.pop("changed") is False
    check.pop("changed")
    assert parsed == check


def test_rendered_is_a_run_on_an_empty_cluster_without_one():
    switches = [
        {"name": "spine-a", "tier": 2, "switches": ["tor-1"]},
        {"name": "tor-1", "tier": 1, "nodes": ["gpu-0", "gpu-1"]},
    ]
    rendered = SYNC_FLOW.offline(params(source="inventory", switches=switches, state="rendered"))
    empty = FakeCluster([])
    run = SYNC_FLOW.run(params(source="inventory", switches=switches), empty, check_mode=True)
    assert rendered is not None and rendered["created"] == ["tor-1", "spine-a"] == run["created"]
    assert rendered["changed"] is False and run["changed"] is True
    assert rendered["diff"] == run["diff"] and rendered["tree"] == run["tree"]
    assert SYNC_FLOW.offline(params()) is None  # present connects
