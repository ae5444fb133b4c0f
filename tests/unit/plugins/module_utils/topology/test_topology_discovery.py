# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.discovery import (
    member_summary,
    tree_from_inventory,
    tree_from_node_labels,
    tree_from_source,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.rules import tree_errors
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.tree import (
    node_leaves,
    switch,
)

TOR, SPINE = "topology.volcano.sh/tor", "topology.volcano.sh/spine"
LABELS = [TOR, SPINE]


def node(name, **labels):
    return {
        "metadata": {
            "name": name,
            "labels": {k.replace("__", "/").replace("_", "."): v for k, v in labels.items()},
        }
    }


def default_nodes():
    return [
        node(
            f"n{i}",
            **{
                "topology.volcano.sh__tor": f"tor-{i // 2}",
                "topology.volcano.sh__spine": f"spine-{i // 4}",
            },
        )
        for i in range(8)
    ]


def test_default_fabric_from_labels():
    found = tree_from_node_labels(default_nodes(), LABELS)
    assert found.unplaced_nodes == []
    assert found.tree == {
        "spine-0": switch("spine-0", 2, children=["tor-0", "tor-1"], tier_name=SPINE),
        "spine-1": switch("spine-1", 2, children=["tor-2", "tor-3"], tier_name=SPINE),
        "tor-0": switch("tor-0", 1, nodes=["n0", "n1"], tier_name=TOR),
        "tor-1": switch("tor-1", 1, nodes=["n2", "n3"], tier_name=TOR),
        "tor-2": switch("tor-2", 1, nodes=["n4", "n5"], tier_name=TOR),
        "tor-3": switch("tor-3", 1, nodes=["n6", "n7"], tier_name=TOR),
    }


def test_node_labels_as_plain_mappings_and_unlabelled_nodes():
    nodes = [{"name": "a", "labels": {TOR: "t"}}, {"name": "b", "labels": {}}]
    found = tree_from_node_labels(nodes, LABELS)
    assert found.unplaced_nodes == ["b"]
    assert list(found.tree) == ["t"]
    assert found.tree["t"].tier == 1


def test_three_tiers_and_a_name_template():
    nodes = [node(f"n{i}", a=f"{i // 2}", b=f"{i // 4}", c="0") for i in range(8)]
    found = tree_from_node_labels(nodes, ["a", "b", "c"], name_template="t{tier}-{value}")
    tiers = {n: hn.tier for n, hn in found.tree.items()}
    assert tiers == {"t1-0": 1, "t1-1": 1, "t1-2": 1, "t1-3": 1, "t2-0": 2, "t2-1": 2, "t3-0": 3}
    assert found.tree["t3-0"].child_names == ["t2-0", "t2-1"]
    assert tree_errors(found.tree) == []


def test_node_whose_labels_put_its_tor_under_two_spines_is_named():
    nodes = default_nodes()
    nodes[3]["metadata"]["labels"][SPINE] = (
        "spine-1"  # n3 says tor-1 is under spine-1; n2 said spine-0
    )
    with pytest.raises(PlatformValidationError) as exc:
        tree_from_node_labels(nodes, LABELS)
    (msg,) = exc.value.messages
    assert msg.startswith("n3.metadata.labels.topology.volcano.sh/spine:")
    assert "'tor-1'" in msg and "'spine-0'" in msg and "'n2'" in msg


def test_skipped_tier_is_refused_naming_the_node():
    nodes = [
        node("n0", **{"topology.volcano.sh__spine": "s"}),
        node("n1", **{"topology.volcano.sh__tor": "t"}),
    ]
    with pytest.raises(PlatformValidationError) as exc:
        tree_from_node_labels(nodes, LABELS)
    assert "node 'n0' has 'topology.volcano.sh/spine' but no 'topology.volcano.sh/tor'" in str(
        exc.value
    )


def test_same_value_on_two_tiers_and_invalid_values():
    with pytest.raises(PlatformValidationError) as exc:
        tree_from_node_labels([node("n0", a="x", b="x")], ["a", "b"])
    assert "use distinct values per tier" in str(exc.value)
    with pytest.raises(PlatformValidationError) as exc:
        tree_from_node_labels([node("n0", a="Rack_01")], ["a"])
    assert "node 'n0': label a='Rack_01'" in str(exc.value)


def test_bad_tier_labels_and_template():
    with pytest.raises(PlatformValidationError) as exc:
        tree_from_node_labels([], [TOR, TOR], name_template="{name}")
    text = str(exc.value)
    assert "tier_labels[1]: 'topology.volcano.sh/tor' is listed twice" in text
    assert "name_template" in text
    with pytest.raises(PlatformValidationError):
        tree_from_node_labels([], [])


def test_inventory_description():
    tree = tree_from_inventory(
        [
            {"name": "core", "tier": 3, "switches": ["spine-a"]},
            {"name": "spine-a", "tier": "2", "switches": ["tor-1", "tor-2"]},
            {"name": "tor-1", "tier": 1, "nodes": ["gpu-1", "gpu-0"]},
            {"name": "tor-2", "tier": 1, "node_pattern": "^gpu-rack2-", "tier_name": "tor"},
        ]
    )
    assert tree_errors(tree) == []
    assert member_summary(tree["tor-1"]) == {
        "nodes": ["gpu-0", "gpu-1"],
        "switches": [],
        "patterns": [],
    }
    assert tree["spine-a"].tier == 2
    assert tree["tor-2"].members[0].selector == {"regexMatch": {"pattern": "^gpu-rack2-"}}


def test_inventory_node_under_two_tors_names_it():
    tree = tree_from_inventory(
        [
            {"name": "tor-1", "tier": 1, "nodes": ["gpu-0", "gpu-1"]},
            {"name": "tor-2", "tier": 1, "nodes": ["gpu-1"]},
        ]
    )
    errs = [str(e) for e in tree_errors(tree)]
    assert errs == [
        "tor-2.spec.members: node 'gpu-1' is in leaf HyperNodes 'tor-1', 'tor-2'; every node sits in exactly one leaf HyperNode: keep 'gpu-1' in one of them"
    ]


def test_inventory_shape_errors():
    with pytest.raises(PlatformValidationError) as exc:
        tree_from_inventory(
            [
                {"name": "a", "tier": 1, "nodes": "gpu-0", "color": "red"},
                {"tier": 1},
                {"name": "a", "tier": 1},
                "x",
            ]
        )
    text = exc.value.messages
    assert any(t.startswith("switches[0]: unknown keys ['color']") for t in text)
    assert any(t.startswith("switches[0].nodes:") for t in text)
    assert any(t.startswith("switches[1].name:") for t in text)
    assert any("described twice" in t for t in text)
    assert any(t.startswith("switches[3]:") for t in text)


def test_inventory_pattern_on_a_non_leaf_and_tier_zero():
    tree = tree_from_inventory(
        [
            {"name": "spine", "tier": 2, "switches": ["tor"], "node_pattern": "gpu-.*"},
            {"name": "tor", "tier": 0, "nodes": ["gpu-0"]},
        ]
    )
    errs = [str(e) for e in tree_errors(tree)]
    assert any(e.startswith("spine.spec.members:") and "mixes" in e for e in errs)
    assert any(e.startswith("tor.spec.tier:") for e in errs)


def test_tree_from_source():
    found = tree_from_source(
        "inventory", ["gpu-0", "gpu-9"], switches=[{"name": "t", "tier": 1, "nodes": ["gpu-0"]}]
    )
    assert found.unplaced_nodes == ["gpu-9"]
    assert node_leaves(found.tree) == {"gpu-0": ["t"]}
    with pytest.raises(PlatformValidationError):
        tree_from_source("roce", [])
