# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.topology.discovery import (
    tree_from_node_labels,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.manifests import (
    hypernode_manifest,
    tree_from_manifests,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.rules import tree_errors
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.tree import (
    HyperNode,
    Member,
    NodeInfo,
    hypernode_member,
    node_leaves,
    nodes_in_no_leaf,
    parents,
    roots,
    switch,
    walk,
)

TOR, SPINE, CORE = "topology.volcano.sh/tor", "topology.volcano.sh/spine", "example.com/core"


def default_tree():
    """The design document's 2-spine, 4-ToR, 8-node fabric."""
    return {
        "s0": switch("s0", 1, nodes=["n0", "n1"]),
        "s1": switch("s1", 1, nodes=["n2", "n3"]),
        "s2": switch("s2", 1, nodes=["n4", "n5"]),
        "s3": switch("s3", 1, nodes=["n6", "n7"]),
        "s4": switch("s4", 2, children=["s0", "s1"]),
        "s5": switch("s5", 2, children=["s2", "s3"]),
    }


def messages(tree, nodes=None):
    return [str(e) for e in tree_errors(tree, nodes)]


def test_default_tree_keeps_every_rule():
    assert messages(default_tree()) == []
    assert roots(default_tree()) == ["s4", "s5"]
    assert parents(default_tree())["s1"] == ["s4"]


def test_node_under_two_tors_names_the_node_and_both_switches():
    tree = default_tree()
    tree["s1"] = switch("s1", 1, nodes=["n1", "n2", "n3"])
    errs = messages(tree)
    assert len(errs) == 1
    assert "'n1'" in errs[0] and "'s0'" in errs[0] and "'s1'" in errs[0]
    assert "exactly one leaf" in errs[0]


def test_cycle_is_refused_naming_the_switches():
    tree = {
        "a": switch("a", 2, children=["b"]),
        "b": switch("b", 3, children=["a"]),
    }
    errs = messages(tree)
    cycle = [e for e in errs if "cycle" in e]
    assert len(cycle) == 1
    assert "a -> b -> a" in cycle[0]


def test_self_cycle():
    errs = messages({"a": switch("a", 2, children=["a"])})
    assert any("cycle a -> a" in e for e in errs)


def test_regex_match_on_a_non_leaf_is_refused_naming_the_switch():
    tree = default_tree()
    tree["s4"] = HyperNode("s4", 2, (Member("HyperNode", {"regexMatch": {"pattern": "s[01]"}}),))
    errs = messages(tree)
    hit = [e for e in errs if "regexMatch" in e]
    assert len(hit) == 1
    assert hit[0].startswith("s4.spec.members[0].selector.regexMatch:")
    assert "exactMatch" in hit[0] and "leaf" in hit[0]


def test_label_match_on_a_hypernode_member_is_refused():
    tree = {
        "s4": HyperNode(
            "s4", 2, (Member("HyperNode", {"labelMatch": {"matchLabels": {"a": "b"}}}),)
        )
    }
    assert any("labelMatch on a member of type HyperNode" in e for e in messages(tree))


def test_tier_zero_is_refused_naming_the_switch():
    tree = default_tree()
    tree["s0"] = switch("s0", 0, nodes=["n0", "n1"])
    errs = messages(tree)
    assert any(e.startswith("s0.spec.tier:") and "1 or more" in e for e in errs)


def test_tier_not_an_integer():
    errs = messages({"s0": HyperNode("s0", "one", (hypernode_member("x"),))})  # type: ignore[arg-type]
    assert any(e.startswith("s0.spec.tier:") for e in errs)


def test_tiers_must_increase_upward():
    tree = default_tree()
    tree["s4"] = switch("s4", 1, children=["s0", "s1"])
    errs = messages(tree)
    assert any(e.startswith("s4.spec.tier:") and "'s0' has tier 1" in e for e in errs)


def test_two_parents_are_refused():
    tree = default_tree()
    tree["s5"] = switch("s5", 2, children=["s1", "s2", "s3"])
    errs = messages(tree)
    assert any("'s1' is listed by 's4', 's5'" in e for e in errs)


def test_two_selectors_and_no_selector():
    hn = HyperNode(
        "s0",
        1,
        (
            Member("Node", {"exactMatch": {"name": "n0"}, "regexMatch": {"pattern": "n"}}),
            Member("Node", {}),
        ),
    )
    errs = messages({"s0": hn})
    assert any("member 0 has 2 selectors (exactMatch, regexMatch)" in e for e in errs)
    assert any("member 1 has 0 selectors (none)" in e for e in errs)


def test_mixed_members_refused():
    hn = HyperNode(
        "s4", 2, (hypernode_member("s0"), Member("Node", {"exactMatch": {"name": "n9"}}))
    )
    tree = {"s4": hn, "s0": switch("s0", 1, nodes=["n0"])}
    assert any("mixes Node and HyperNode members" in e for e in messages(tree))


def test_missing_member_and_bad_names():
    tree = {
        "s4": switch("s4", 2, children=["ghost"]),
        "Bad_Name": switch("Bad_Name", 1, nodes=["N0"]),
    }
    errs = messages(tree)
    assert any("'ghost', which is not in the tree" in e for e in errs)
    assert any(e.startswith("Bad_Name.metadata.name:") for e in errs)
    assert any("'N0' is not a valid node name" in e for e in errs)


def test_empty_members_unknown_type_bad_regex_empty_label_match():
    errs = messages(
        {
            "a": HyperNode("a", 1, ()),
            "b": HyperNode("b", 1, (Member("Rack", {"exactMatch": {"name": "n0"}}),)),
            "c": HyperNode("c", 1, (Member("Node", {"regexMatch": {"pattern": "("}}),)),
            "d": HyperNode("d", 1, (Member("Node", {"labelMatch": {}}),)),
        }
    )
    assert any(e.startswith("a.spec.members:") and "no members" in e for e in errs)
    assert any("'Rack' is not a member type" in e for e in errs)
    assert any("'(' is not a regular expression" in e for e in errs)
    assert any(e.startswith("d.spec.members[0].selector.labelMatch") for e in errs)


def test_regex_and_label_leaves_resolve_against_nodes():
    nodes = [
        NodeInfo("gpu-a-0", {"rack": "a"}),
        NodeInfo("gpu-a-1", {"rack": "a"}),
        NodeInfo("gpu-b-0", {"rack": "b"}),
    ]
    tree = {
        "ra": HyperNode("ra", 1, (Member("Node", {"regexMatch": {"pattern": "^gpu-a-"}}),)),
        "rb": HyperNode(
            "rb",
            1,
            (
                Member(
                    "Node",
                    {
                        "labelMatch": {
                            "matchExpressions": [{"key": "rack", "operator": "In", "values": ["b"]}]
                        }
                    },
                ),
            ),
        ),
    }
    assert node_leaves(tree, nodes) == {"gpu-a-0": ["ra"], "gpu-a-1": ["ra"], "gpu-b-0": ["rb"]}
    assert messages(tree, nodes) == []
    # a label leaf that also matches rack a overlaps the regex leaf
    tree["rb"] = HyperNode(
        "rb",
        1,
        (
            Member(
                "Node",
                {"labelMatch": {"matchExpressions": [{"key": "rack", "operator": "Exists"}]}},
            ),
        ),
    )
    errs = messages(tree, nodes)
    assert any("'gpu-a-0' is in leaf HyperNodes 'ra', 'rb'" in e for e in errs)


def test_nodes_in_no_leaf_are_reported():
    assert nodes_in_no_leaf(default_tree(), ["n0", "n7", "n8", {"metadata": {"name": "n9"}}]) == [
        "n8",
        "n9",
    ]


def test_manifest_round_trip_and_managed_label():
    tree = default_tree()
    manifests = [hypernode_manifest(hn) for hn in tree.values()]
    assert all(
        m["metadata"]["labels"] == {"platform.io/managed-by": "gpucloud-platform"}
        for m in manifests
    )
    assert manifests[0]["apiVersion"] == "topology.volcano.sh/v1alpha1"
    back, errs = tree_from_manifests(manifests)
    assert errs == [] and back == tree


def test_manifest_shape_errors():
    _unused, errs = tree_from_manifests(
        [{"metadata": {"name": "x"}, "spec": {"members": "n0"}}, {"metadata": {}}, "junk"]
    )
    text = [str(e) for e in errs]
    assert any(t.startswith("x.spec.tier:") for t in text)
    assert any(t.startswith("x.spec.members:") for t in text)
    assert any(t.startswith("hypernodes[1].metadata.name") for t in text)
    assert any(t.startswith("hypernodes[2]:") for t in text)


def test_walk_survives_cycles():
    tree = {"a": switch("a", 2, children=["b"]), "b": switch("b", 3, children=["a"])}
    assert sorted(n for _unused, n in walk(tree)) == ["a", "b"]


# --- invariants -----------------------------------------------------------


@st.composite
def labelled_nodes(draw):
    """Nodes labelled consistently with a random fabric of 1 to 4 tiers."""
    tiers = draw(st.integers(1, 4))
    labels = [TOR, SPINE, CORE, "example.com/tier4"][:tiers]
    fanout = [draw(st.integers(1, 3)) for _unused in range(tiers)]
    count = draw(st.integers(1, 40))
    nodes = []
    for i in range(count):
        path = [i]
        for f in fanout:
            path.append(path[-1] // (f + 1))
        node_labels = {label: f"t{t + 1}-{path[t + 1]}" for t, label in enumerate(labels)}
        if draw(st.booleans()) and i % 7 == 3:
            node_labels = {}  # an unlabelled node
        nodes.append({"metadata": {"name": f"node-{i}", "labels": node_labels}})
    return nodes, labels


@given(labelled_nodes())
def test_every_labelled_node_sits_in_exactly_one_leaf_and_tiers_increase(case):
    nodes, labels = case
    found = tree_from_node_labels(nodes, labels)
    tree = found.tree
    assert tree_errors(tree, nodes) == []
    placed = node_leaves(tree, None)
    for node in nodes:
        name = node["metadata"]["name"]
        if node["metadata"]["labels"]:
            assert len(placed[name]) == 1
            assert tree[placed[name][0]].tier == 1
        else:
            assert name in found.unplaced_nodes and name not in placed
    for hn in tree.values():
        for child in hn.child_names:
            assert tree[child].tier < hn.tier
    for child, ps in parents(tree).items():
        assert len(ps) == 1, child


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=12))
def test_random_member_graphs_report_exactly_their_cycles(edges):
    """Rule no-cycles agrees with a plain reachability check on random graphs."""
    names = [f"h{i}" for i in range(6)]
    children = {n: sorted({f"h{b}" for a, b in edges if f"h{a}" == n}) for n in names}
    tree = {
        n: switch(n, 5, children=children[n]) if children[n] else switch(n, 1, nodes=[f"x-{n}"])
        for n in names
    }

    def reaches(src, dst, seen=()):
        return any(
            c == dst or (c not in seen and reaches(c, dst, (*seen, c))) for c in children[src]
        )

    has_cycle = any(reaches(n, n) for n in names)
    assert any("cycle" in str(e) for e in tree_errors(tree)) == has_cycle


def test_regex_features_go_does_not_have_are_refused():
    tree = {
        "r": HyperNode("r", 1, (Member("Node", {"regexMatch": {"pattern": "^gpu-(?!spare)"}}),))
    }
    assert any("lookaround or backreference" in e for e in messages(tree))
    tree = {"r": HyperNode("r", 1, (Member("Node", {"regexMatch": {"pattern": r"^gpu-\d+$"}}),))}
    assert messages(tree) == []
