# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""topology.service against the fake cluster, and the pure decisions it calls."""

from __future__ import annotations

import pytest
from kubernetes.client.rest import ApiException

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PartialWrite,
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology import service
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.discovery import (
    check_source_options,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.manifests import (
    desired_hypernode,
    tree_manifests,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.plan import (
    hypernode_action,
    introduced_errors,
    plan_hypernode,
    plan_tree_sync,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.tree import (
    needs_node_list,
    switch,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.view import (
    rendering_path,
    topology_view,
    view_report,
)
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster

TOR, SPINE = "topology.volcano.sh/tor", "topology.volcano.sh/spine"
MANAGED = {"platform.io/managed-by": "gpucloud-platform"}
DISCOVERED = {"volcano.sh/network-topology-source": "label"}


def node(name, **labels):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def nodes():
    return [node(f"n{i}", **{TOR: f"tor-{i // 2}", SPINE: "spine-0"}) for i in range(4)]


def hypernode(name, tier, members, labels=None):
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name, "labels": dict(MANAGED if labels is None else labels)},
        "spec": {"tier": tier, "members": members},
    }


def exact(kind, name):
    return {"type": kind, "selector": {"exactMatch": {"name": name}}}


def sync_params(**overrides):
    params = dict(
        source="labels",
        tier_labels=[TOR, SPINE],
        name_template="{value}",
        switches=None,
        node_selector=None,
        prune=True,
    )
    return {**params, **overrides}


def hypernode_params(**overrides):
    params = dict(name="tor-0", state="present", tier=1, tier_name=None, members=[])
    return {**params, **overrides}


def info_params(**overrides):
    params = dict(
        source="cluster",
        managed_only=False,
        tier_labels=[TOR, SPINE],
        name_template="{value}",
        switches=None,
        node_selector=None,
        dest=None,
        basename="topology",
        formats=["mermaid", "dot"],
    )
    return {**params, **overrides}


# -- SYNC_FLOW.run ----------------------------------------------------------------------------


def test_run_sync_writes_the_tree_lowest_tier_first():
    cluster = FakeCluster(nodes())
    result = service.SYNC_FLOW.run(sync_params(), cluster, check_mode=False)
    assert result["changed"] is True and result["created"] == ["tor-0", "tor-1", "spine-0"]
    assert cluster.real_writes == [("apply", "HyperNode", n) for n in result["created"]]
    assert cluster.lists == ["Node", "HyperNode"]
    assert set(result["diff"]["after"]) == {"tor-0", "tor-1", "spine-0"}
    assert service.SYNC_FLOW.run(sync_params(), cluster, check_mode=False)["changed"] is False


def test_run_sync_in_check_mode_deletes_nothing():
    stale = hypernode("tor-9", 1, [exact("Node", "gone")])
    cluster = FakeCluster([*nodes(), stale], dry_run=True)
    result = service.SYNC_FLOW.run(sync_params(), cluster, check_mode=True)
    assert result["deleted"] == ["tor-9"] and result["changed"] is True
    assert cluster.real_writes == []
    assert [w for w in cluster.writes if "delete" in w[0]] == []  # not even a dry run
    assert "tor-9" in cluster.kinds("HyperNode")


def test_run_sync_refuses_a_broken_tree_before_writing():
    cluster = FakeCluster([*nodes(), node("n9", **{SPINE: "spine-0"})])
    with pytest.raises(PlatformValidationError, match=r"n9\.metadata\.labels"):
        service.SYNC_FLOW.run(sync_params(), cluster, check_mode=False)
    assert cluster.writes == []


def test_run_sync_failing_part_way_raises_partial_write():
    class Refusing(FakeCluster):
        def delete(self, *args, **kwargs):
            raise ApiException(status=403, reason="Forbidden")

    cluster = Refusing([*nodes(), hypernode("tor-9", 1, [exact("Node", "gone")])])
    with pytest.raises(PartialWrite) as caught:
        service.SYNC_FLOW.run(sync_params(), cluster, check_mode=False)
    assert caught.value.done == ["created tor-0", "created tor-1", "created spine-0"]
    assert caught.value.what == "writing HyperNodes"
    assert caught.value.report["deleted"] == ["tor-9"] and "tree" in caught.value.report


# -- HYPERNODE_FLOW.run -----------------------------------------------------------------------


def test_run_hypernode_creates_updates_and_deletes():
    cluster = FakeCluster(nodes())
    leaf = hypernode_params(members=[exact("Node", "n0")])
    created = service.HYPERNODE_FLOW.run(leaf, cluster, check_mode=False)
    assert created["action"] == "created" and created["hypernode"]["metadata"]["uid"]
    same = service.HYPERNODE_FLOW.run(leaf, cluster, check_mode=False)
    assert same["action"] == "none" and same["hypernode"]["metadata"]["name"] == "tor-0"
    wider = hypernode_params(members=[exact("Node", "n0"), exact("Node", "n1")])
    assert service.HYPERNODE_FLOW.run(wider, cluster, check_mode=False)["action"] == "updated"
    gone = service.HYPERNODE_FLOW.run(hypernode_params(state="absent"), cluster, check_mode=False)
    assert gone["action"] == "deleted" and "hypernode" not in gone
    assert cluster.real_writes[-1] == ("delete", "HyperNode", "tor-0")
    assert cluster.kinds("HyperNode") == {}


def test_run_hypernode_in_check_mode_deletes_nothing():
    cluster = FakeCluster([*nodes(), hypernode("tor-0", 1, [exact("Node", "n0")])])
    result = service.HYPERNODE_FLOW.run(hypernode_params(state="absent"), cluster, check_mode=True)
    assert result == {
        "changed": True,
        "action": "deleted",
        "diff": {"before": hypernode("tor-0", 1, [exact("Node", "n0")]), "after": {}},
    }
    assert cluster.writes == [] and "tor-0" in cluster.kinds("HyperNode")


def test_run_hypernode_absent_and_missing_is_no_change():
    cluster = FakeCluster(nodes())
    result = service.HYPERNODE_FLOW.run(hypernode_params(state="absent"), cluster, check_mode=False)
    assert result["changed"] is False and result["action"] == "none" and cluster.writes == []


# -- INFO_FLOW and RENDER_FLOW ---------------------------------------------------------------


def test_run_info_changes_nothing():
    cluster = FakeCluster(nodes())
    service.SYNC_FLOW.run(sync_params(), cluster, check_mode=False)
    cluster.writes.clear()
    result = service.INFO_FLOW.run(info_params(), cluster, check_mode=False)
    assert result["changed"] is False and cluster.writes == [] and "files" not in result
    assert result["hypernodes"][0]["name"] == "spine-0"


def test_run_render_reads_and_writes_only_files(tmp_path):
    cluster = FakeCluster(nodes())
    service.SYNC_FLOW.run(sync_params(), cluster, check_mode=False)
    cluster.writes.clear()
    result = service.RENDER_FLOW.run(info_params(dest=str(tmp_path / "d")), cluster, False)
    assert result["changed"] is True and cluster.writes == []
    assert result["files"] == [
        str(tmp_path / "d" / "topology.mmd"),
        str(tmp_path / "d" / "topology.dot"),
    ]
    assert (tmp_path / "d" / "topology.dot").read_text() == result["dot"]
    again = service.RENDER_FLOW.run(info_params(dest=str(tmp_path / "d")), cluster, False)
    assert again["changed"] is False


def test_run_render_file_errors_are_partial_writes(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(PartialWrite) as caught:
        service.RENDER_FLOW.run(info_params(dest=str(blocker)), FakeCluster(nodes()), False)
    assert caught.value.done == [] and isinstance(caught.value.cause, OSError)
    assert caught.value.what == "writing the topology renderings"


def test_write_file_only_when_the_content_changes(tmp_path):
    path = str(tmp_path / "f")
    assert service.write_file(path, b"a", check_mode=True) is True
    assert not (tmp_path / "f").exists()
    assert service.write_file(path, b"a", check_mode=False) is True
    assert service.write_file(path, b"a", check_mode=False) is False
    assert (tmp_path / "f").read_bytes() == b"a"


# -- the pure decisions -------------------------------------------------------------------


def test_check_source_options_checks_only_a_labels_source():
    with pytest.raises(PlatformValidationError, match="tier_labels"):
        check_source_options(sync_params(tier_labels=[]))
    check_source_options(sync_params(source="inventory", tier_labels=[]))


def test_plan_tree_sync_refuses_an_unmanaged_name():
    tree = {"tor-0": switch("tor-0", 1, nodes=["n0"])}
    theirs = hypernode("tor-0", 1, [exact("Node", "n0")], DISCOVERED)
    with pytest.raises(PlatformValidationError, match="made by Volcano's 'label' discovery"):
        plan_tree_sync(tree, ["n0"], [theirs])
    assert plan_tree_sync(tree, ["n0"], []).summary()["created"] == ["tor-0"]


def test_sync_plan_diff_has_updates_and_deletions_before():
    live = [
        dict(m, metadata={**m["metadata"], "uid": "u"})
        for m in tree_manifests(
            {"tor-0": switch("tor-0", 1, nodes=["n0"]), "tor-9": switch("tor-9", 1, nodes=["x"])}
        ).values()
    ]
    plan = plan_tree_sync({"tor-0": switch("tor-0", 1, nodes=["n0", "n1"])}, [], live, prune=True)
    diff = plan.diff()
    assert sorted(diff["before"]) == ["tor-0", "tor-9"] and list(diff["after"]) == ["tor-0"]
    assert "uid" not in diff["before"]["tor-0"]["metadata"]


def test_hypernode_action():
    m = hypernode("a", 1, [exact("Node", "n0")])
    assert hypernode_action(None, None) == "none"
    assert hypernode_action(None, m) == "deleted"
    assert hypernode_action(m, None) == "created"
    assert hypernode_action(m, m) == "none"
    assert hypernode_action(m, hypernode("a", 2, [exact("Node", "n0")])) == "updated"


def test_introduced_errors_leave_existing_problems_alone():
    # two leaves already share n0; adding a spine over them introduces nothing new
    live = [
        hypernode("tor-0", 1, [exact("Node", "n0")]),
        hypernode("tor-1", 1, [exact("Node", "n0")]),
    ]
    spine = hypernode("spine-0", 2, [exact("HyperNode", "tor-0"), exact("HyperNode", "tor-1")])
    assert introduced_errors(plan_hypernode("spine-0", spine, live)) == []
    # a spine naming a missing HyperNode does introduce an error
    broken = hypernode("spine-0", 2, [exact("HyperNode", "tor-7")])
    assert any(
        "tor-7" in str(e) for e in introduced_errors(plan_hypernode("spine-0", broken, live))
    )


def test_plan_hypernode_refuses_an_unmanaged_one_and_knows_when_nodes_are_needed():
    theirs = hypernode("tor-0", 1, [exact("Node", "n0")], DISCOVERED)
    with pytest.raises(PlatformValidationError, match="made by Volcano's 'label' discovery"):
        plan_hypernode("tor-0", None, [theirs])
    by_label = hypernode(
        "tor-1", 1, [{"type": "Node", "selector": {"labelMatch": {"matchLabels": {"r": "1"}}}}]
    )
    assert plan_hypernode("tor-1", by_label, []).needs_nodes is True
    assert plan_hypernode("tor-1", None, [by_label]).needs_nodes is True  # the tree before
    assert plan_hypernode("tor-2", None, []).needs_nodes is False
    assert needs_node_list({"t": switch("t", 1, nodes=["n0"])}) is False


def test_desired_hypernode_from_options():
    assert desired_hypernode(hypernode_params(state="absent")) is None
    manifest = desired_hypernode(hypernode_params(tier_name="tor", members=[exact("Node", "n0")]))
    assert manifest["metadata"]["labels"] == MANAGED
    assert manifest["spec"] == {"tier": 1, "tierName": "tor", "members": [exact("Node", "n0")]}
    with pytest.raises(PlatformValidationError) as caught:
        desired_hypernode(hypernode_params(tier=0))
    assert {e.field for e in caught.value.errors} >= {"tor-0.spec.tier", "tor-0.spec.members"}


def test_topology_view_of_a_source_and_of_the_cluster():
    preview = view_report(topology_view(info_params(source="labels"), nodes()))
    assert [h["name"] for h in preview["hypernodes"]] == ["spine-0", "tor-0", "tor-1"]
    assert preview["errors"] == [] and preview["mermaid"].startswith("flowchart TD")
    live = [hypernode("tor-0", 1, [exact("Node", "n0")]), hypernode("hn-x", 1, [], DISCOVERED)]
    every = view_report(topology_view(info_params(), nodes(), live))
    assert any("hn-x" in e for e in every["errors"])
    assert every["unplaced_nodes"] == ["n1", "n2", "n3"]
    managed = view_report(topology_view(info_params(managed_only=True), nodes(), live))
    assert managed["errors"] == [] and [h["name"] for h in managed["hypernodes"]] == ["tor-0"]
    assert rendering_path("/d", "t", "mermaid") == "/d/t.mmd"
    assert rendering_path("/d", "t", "png") == "/d/t.png"
