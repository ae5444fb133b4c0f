# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import shutil
import subprocess

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.topology.render import (
    dot,
    mermaid,
    text_tree,
    tree_data,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.tree import (
    HyperNode,
    Member,
    NodeInfo,
    switch,
)

TREE = {
    "spine-0": switch("spine-0", 2, children=["tor-0", "tor-1"]),
    "tor-0": switch("tor-0", 1, nodes=["gpu-0", "gpu-1"]),
    "tor-1": switch("tor-1", 1, nodes=["gpu-2"]),
}


def test_text_tree():
    assert text_tree(TREE, unplaced=["gpu-9"]) == (
        "spine-0 (tier 2)\n"
        "├── tor-0 (tier 1)\n"
        "│   ├── gpu-0\n"
        "│   └── gpu-1\n"
        "└── tor-1 (tier 1)\n"
        "    └── gpu-2\n"
        "(in no leaf HyperNode)\n"
        "└── gpu-9\n"
    )


def test_text_tree_shows_patterns_or_resolved_nodes():
    tree = {"r": HyperNode("r", 1, (Member("Node", {"regexMatch": {"pattern": "^a"}}),))}
    assert 'regexMatch: {"pattern": "^a"}' in text_tree(tree)
    assert text_tree(tree, [NodeInfo("a1"), NodeInfo("b1")]) == "r (tier 1)\n└── a1\n"


def test_text_tree_marks_missing_members_and_cycles():
    tree = {"a": switch("a", 2, children=["b", "ghost"]), "b": switch("b", 3, children=["a"])}
    text = text_tree(tree)
    assert "ghost (missing)" in text
    assert "(already shown: cycle or second parent)" in text


def test_tree_data():
    data = tree_data(TREE)
    assert [d["name"] for d in data] == ["spine-0", "tor-0", "tor-1"]
    assert data[1] == {
        "name": "tor-0",
        "tier": 1,
        "tier_name": None,
        "depth": 1,
        "parent": "spine-0",
        "leaf": True,
        "children": [],
        "nodes": ["gpu-0", "gpu-1"],
    }


def test_mermaid():
    text = mermaid(TREE, unplaced=["gpu-9"])
    assert text.startswith("flowchart TD\n")
    assert 'h0["spine-0<br/>tier 2"]' in text
    assert "h0 --> h1" in text and "h0 --> h2" in text
    assert "h1 --> n0" in text and "h1 --> n1" in text
    assert 'subgraph unplaced["in no leaf HyperNode"]' in text and '(["gpu-9"])' in text


def test_dot():
    text = dot(TREE, unplaced=["gpu-9"])
    assert text.startswith("digraph topology {")
    assert '"hypernode/spine-0" [shape=box, style=rounded, label="spine-0\\ntier 2"];' in text
    assert '"hypernode/spine-0" -> "hypernode/tor-0";' in text
    assert '"hypernode/tor-1" -> "node/gpu-2";' in text
    assert "cluster_unplaced" in text
    assert text.rstrip().endswith("}")


@pytest.mark.skipif(not shutil.which("dot"), reason="Graphviz is not installed")
def test_dot_is_accepted_by_graphviz():
    out = subprocess.run(
        ["dot", "-Tpng"], input=dot(TREE).encode(), capture_output=True, check=True
    ).stdout
    assert out.startswith(b"\x89PNG")
