# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpucloud.platform.topology against the local cluster's default fabric.

The local cluster has 2 spines, 4 ToRs and 8 nodes labelled
topology.volcano.sh/tor and topology.volcano.sh/spine; the expected tree is
read from those labels, so node names and label values may be anything.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

pytestmark = pytest.mark.integration

TOR, SPINE = "topology.volcano.sh/tor", "topology.volcano.sh/spine"
MANAGED = "platform.io/managed-by=gpucloud-platform"


def sync(run_module, check=False):
    """One ``topology`` run with prune, as a playbook task; it must not fail."""
    out = run_module("topology", {"prune": True}, check=check)
    assert not out.get("failed"), out.get("msg")
    return out


def labelled_nodes(api_client):
    from kubernetes import client

    nodes = client.CoreV1Api(api_client).list_node(label_selector=TOR).items
    return {n.metadata.name: dict(n.metadata.labels) for n in nodes}


def expected_tree(nodes):
    """{hypernode: (tier, sorted member names)} from node labels."""
    tors, spines = defaultdict(set), defaultdict(set)
    for name, labels in nodes.items():
        tors[labels[TOR]].add(name)
        spines[labels[SPINE]].add(labels[TOR])
    tree = {tor: (1, sorted(members)) for tor, members in tors.items()}
    tree.update({spine: (2, sorted(members)) for spine, members in spines.items()})
    return tree


def live_tree(api_client):
    from kubernetes import client

    objs = client.CustomObjectsApi(api_client).list_cluster_custom_object(
        "topology.volcano.sh", "v1alpha1", "hypernodes", label_selector=MANAGED
    )["items"]
    return {
        o["metadata"]["name"]: (
            o["spec"]["tier"],
            sorted(m["selector"]["exactMatch"]["name"] for m in o["spec"]["members"]),
        )
        for o in objs
    }


def relabel(api_client, node, labels):
    from kubernetes import client

    client.CoreV1Api(api_client).patch_node(node, {"metadata": {"labels": labels}})


def test_sync_resync_and_move(api_client, run_module):
    nodes = labelled_nodes(api_client)
    want = expected_tree(nodes)
    assert len(nodes) == 8
    assert sorted(t for t, _unused in want.values()) == [1, 1, 1, 1, 2, 2]

    first = sync(run_module)
    assert live_tree(api_client) == want
    assert first["unplaced_nodes"] == [] or all(n not in nodes for n in first["unplaced_nodes"])

    second = sync(run_module)
    assert second["changed"] is False
    assert second["created"] == second["updated"] == second["deleted"] == []
    assert second["requests"] == 2

    # move one node to a ToR under the other spine (its spine label follows)
    mover = sorted(nodes)[0]
    old_tor, old_spine = nodes[mover][TOR], nodes[mover][SPINE]
    target = next(n for n in sorted(nodes) if nodes[n][SPINE] != old_spine)
    new_tor, new_spine = nodes[target][TOR], nodes[target][SPINE]
    relabel(api_client, mover, {TOR: new_tor, SPINE: new_spine})
    try:
        preview = sync(run_module, check=True)
        assert sorted(preview["updated"]) == sorted([old_tor, new_tor])
        assert live_tree(api_client) == want  # check mode wrote nothing

        moved = sync(run_module)
        assert moved["moved_nodes"] == {mover: {"from": [old_tor], "to": [new_tor]}}
        after = live_tree(api_client)
        assert mover in after[new_tor][1] and mover not in after.get(old_tor, (0, []))[1]
        assert after == expected_tree(labelled_nodes(api_client))
    finally:
        relabel(api_client, mover, {TOR: old_tor, SPINE: old_spine})
        sync(run_module)
    assert live_tree(api_client) == want
