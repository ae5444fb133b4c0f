# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

from ansible_collections.gpucloud.platform.plugins.filter.hypernode_tree_errors import (
    FilterModule,
    hypernode_tree_errors,
)


def hn(name, tier, *members):
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": tier, "members": list(members)},
    }


def node(name):
    return {"type": "Node", "selector": {"exactMatch": {"name": name}}}


def child(name):
    return {"type": "HyperNode", "selector": {"exactMatch": {"name": name}}}


def test_sound_tree_has_no_errors():
    assert hypernode_tree_errors([hn("s4", 2, child("s0")), hn("s0", 1, node("n0"))]) == []


def test_errors_name_the_switch():
    errs = hypernode_tree_errors(
        [
            hn("s4", 2, {"type": "HyperNode", "selector": {"regexMatch": {"pattern": "s.*"}}}),
            hn("s0", 0, node("n0")),
            hn("s1", 1, node("n0")),
        ]
    )
    assert any(e.startswith("s4.spec.members[0].selector.regexMatch:") for e in errs)
    assert any(e.startswith("s0.spec.tier:") for e in errs)
    assert any("node 'n0' is in leaf HyperNodes 's0', 's1'" in e for e in errs)


def test_nodes_resolve_label_leaves():
    manifests = [
        hn("a", 1, {"type": "Node", "selector": {"labelMatch": {"matchLabels": {"rack": "1"}}}}),
        hn("b", 1, node("n0")),
    ]
    assert hypernode_tree_errors(manifests) == []
    errs = hypernode_tree_errors(manifests, [{"metadata": {"name": "n0", "labels": {"rack": "1"}}}])
    assert errs and "'n0' is in leaf HyperNodes 'a', 'b'" in errs[0]


def test_not_a_list_and_registration():
    assert hypernode_tree_errors("x") == ["hypernodes: 'x' must be a list of HyperNode manifests"]
    assert FilterModule().filters()["hypernode_tree_errors"] is hypernode_tree_errors
