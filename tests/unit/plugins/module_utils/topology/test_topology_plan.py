# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import copy

from ansible_collections.gpucloud.platform.plugins.module_utils.topology.manifests import (
    tree_manifests,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.plan import plan_sync
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.tree import (
    switch,
)


def tree(moved=False):
    tor0 = ["n0", "n1"] if not moved else ["n0"]
    tor1 = ["n2", "n3"] if not moved else ["n1", "n2", "n3"]
    return {
        "spine-0": switch("spine-0", 2, children=["tor-0", "tor-1"]),
        "tor-0": switch("tor-0", 1, nodes=tor0),
        "tor-1": switch("tor-1", 1, nodes=tor1),
    }


def as_live(manifests):
    """What the API server returns: the manifest plus server fields."""
    out = []
    for m in manifests.values():
        live = copy.deepcopy(m)
        live["metadata"].update(uid="u", resourceVersion="1", managedFields=[{}])
        live["status"] = {"nodeCount": 2}
        out.append(live)
    return out


def test_first_sync_creates_lowest_tier_first():
    plan = plan_sync(tree_manifests(tree()), [])
    assert plan.summary()["created"] == ["tor-0", "tor-1", "spine-0"]
    assert plan.changed


def test_unchanged_resync_writes_nothing():
    desired = tree_manifests(tree())
    plan = plan_sync(desired, as_live(desired), prune=True)
    assert not plan.changed
    assert plan.unchanged == ["spine-0", "tor-0", "tor-1"]


def test_moved_node_updates_removal_first():
    plan = plan_sync(tree_manifests(tree(moved=True)), as_live(tree_manifests(tree())))
    assert plan.summary()["updated"] == ["tor-0", "tor-1"]  # tor-0 only drops n1, so it goes first
    assert plan.moved_nodes == {"n1": {"from": ["tor-0"], "to": ["tor-1"]}}


def test_prune_deletes_only_managed_highest_tier_first():
    live = as_live(tree_manifests(tree()))
    discovered = {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {
            "name": "label-abc",
            "labels": {"volcano.sh/network-topology-source": "label"},
        },
        "spec": {
            "tier": 1,
            "members": [{"type": "Node", "selector": {"exactMatch": {"name": "n9"}}}],
        },
    }
    desired = tree_manifests({"tor-9": switch("tor-9", 1, nodes=["n0"])})
    plan = plan_sync(desired, [*live, discovered], prune=True)
    assert plan.summary()["deleted"] == ["spine-0", "tor-0", "tor-1"]
    assert "label-abc" not in plan.summary()["deleted"]
    kept = plan_sync(desired, [*live, discovered], prune=False)
    assert kept.delete == [] and kept.stale == ["spine-0", "tor-0", "tor-1"]


def test_unmanaged_name_is_a_conflict_not_a_write():
    live = [
        {
            "metadata": {
                "name": "tor-0",
                "labels": {"volcano.sh/network-topology-source": "label"},
            },
            "spec": {"tier": 1, "members": []},
        }
    ]
    plan = plan_sync(tree_manifests(tree()), live, prune=True)
    assert [str(c) for c in plan.conflicts] == [
        "tor-0.metadata.name: HyperNode 'tor-0' already exists, made by Volcano's 'label' discovery "
        "(it lacks platform.io/managed-by=gpucloud-platform); the platform never changes it: choose another "
        "name (name_template), or delete 'tor-0' or turn that discovery off first"
    ]
    assert "tor-0" not in plan.summary()["updated"] and "tor-0" not in plan.summary()["created"]
