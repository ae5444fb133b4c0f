# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The topology, hypernode and topology_info modules against an in-memory cluster."""

from __future__ import annotations

import copy
import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpucloud.platform.plugins.module_utils.kube import cluster as kube
from ansible_collections.gpucloud.platform.plugins.modules import hypernode as hypernode_module
from ansible_collections.gpucloud.platform.plugins.modules import topology as topology_module
from ansible_collections.gpucloud.platform.plugins.modules import topology_info as info_module

TOR, SPINE = "topology.volcano.sh/tor", "topology.volcano.sh/spine"


class FakeCluster:
    def __init__(self, nodes, hypernodes=()):
        self.nodes = nodes
        self.hypernodes = {h["metadata"]["name"]: copy.deepcopy(h) for h in hypernodes}
        self.requests = 0
        self.writes = []

    def list(self, api_version, kind, namespace=None, label_selector=None, field_selector=None):
        self.requests += 1
        if kind == "Node":
            return copy.deepcopy(self.nodes)
        return [copy.deepcopy(h) for h in self.hypernodes.values()]

    def apply(self, manifest, field_manager=None):
        self.requests += 1
        self.writes.append(("apply", manifest["metadata"]["name"]))
        obj = copy.deepcopy(manifest)
        obj["metadata"]["resourceVersion"] = "1"
        self.hypernodes[manifest["metadata"]["name"]] = obj
        return copy.deepcopy(obj)

    def delete(self, api_version, kind, name, namespace=None, **kwargs):
        self.requests += 1
        self.writes.append(("delete", name))
        return self.hypernodes.pop(name, None) is not None


def default_nodes():
    return [
        {"metadata": {"name": f"n{i}", "labels": {TOR: f"tor-{i // 2}", SPINE: f"spine-{i // 4}"}}}
        for i in range(8)
    ]


def run(module, cluster, monkeypatch, capsys, **args):
    monkeypatch.setattr(kube.Cluster, "from_module", classmethod(lambda cls, m: cluster))
    for mod in (topology_module, hypernode_module, info_module):
        monkeypatch.setattr(mod.Cluster, "from_module", classmethod(lambda cls, m: cluster))
    args.setdefault("_ansible_diff", True)
    cluster.requests = 0
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    return json.loads(capsys.readouterr().out)


def test_sync_then_resync_then_move(monkeypatch, capsys):
    cluster = FakeCluster(default_nodes())
    first = run(topology_module, cluster, monkeypatch, capsys, prune=True)
    assert first["changed"] is True
    assert first["created"] == ["tor-0", "tor-1", "tor-2", "tor-3", "spine-0", "spine-1"]
    assert first["requests"] == 2 + 6
    assert "spine-0 (tier 2)\n├── tor-0 (tier 1)\n│   ├── n0\n" in first["tree"]
    assert set(first["diff"]["after"]) == set(first["created"])

    second = run(topology_module, cluster, monkeypatch, capsys, prune=True)
    assert second["changed"] is False and second["requests"] == 2
    assert second["unchanged"] == ["spine-0", "spine-1", "tor-0", "tor-1", "tor-2", "tor-3"]

    cluster.nodes[1]["metadata"]["labels"][TOR] = (
        "tor-1"  # n1 moves from tor-0 to tor-1 (same spine)
    )
    third = run(topology_module, cluster, monkeypatch, capsys, prune=True)
    assert third["updated"] == ["tor-0", "tor-1"]
    assert third["moved_nodes"] == {"n1": {"from": ["tor-0"], "to": ["tor-1"]}}
    members = [
        m["selector"]["exactMatch"]["name"] for m in cluster.hypernodes["tor-1"]["spec"]["members"]
    ]
    assert members == ["n1", "n2", "n3"]


def test_bad_labels_fail_before_any_write(monkeypatch, capsys):
    nodes = default_nodes()
    nodes[3]["metadata"]["labels"][SPINE] = "spine-1"
    cluster = FakeCluster(nodes)
    out = run(topology_module, cluster, monkeypatch, capsys)
    assert out["failed"] is True
    assert "n3.metadata.labels.topology.volcano.sh/spine" in out["msg"]
    assert cluster.writes == []


def test_inventory_with_regex_on_non_leaf_fails_before_any_write(monkeypatch, capsys):
    cluster = FakeCluster(default_nodes())
    switches = [
        {"name": "spine", "tier": 2, "node_pattern": "n.*", "switches": ["tor"]},
        {"name": "tor", "tier": 1, "nodes": ["n0"]},
    ]
    out = run(topology_module, cluster, monkeypatch, capsys, source="inventory", switches=switches)
    assert out["failed"] is True and "spine.spec.members" in out["msg"]
    assert cluster.writes == []


def test_unmanaged_hypernodes_are_never_touched(monkeypatch, capsys):
    discovered = {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {
            "name": "hn-label-x",
            "labels": {"volcano.sh/network-topology-source": "label"},
        },
        "spec": {
            "tier": 1,
            "members": [{"type": "Node", "selector": {"exactMatch": {"name": "other"}}}],
        },
    }
    cluster = FakeCluster(default_nodes(), [discovered])
    out = run(topology_module, cluster, monkeypatch, capsys, prune=True)
    assert "hn-label-x" not in out["deleted"]
    assert cluster.hypernodes["hn-label-x"] == discovered
    clash = FakeCluster(
        default_nodes(), [dict(discovered, metadata={**discovered["metadata"], "name": "tor-0"})]
    )
    out = run(topology_module, clash, monkeypatch, capsys, prune=True)
    assert (
        out["failed"] is True
        and "'tor-0' already exists, made by Volcano's 'label' discovery" in out["msg"]
    )
    assert clash.writes == []


def test_check_mode_reports_without_a_fake_write(monkeypatch, capsys):
    cluster = FakeCluster(default_nodes())
    out = run(topology_module, cluster, monkeypatch, capsys, _ansible_check_mode=True)
    # the real client turns these writes into server-side dry runs
    assert out["changed"] is True and len(out["created"]) == 6


def test_hypernode_present_absent_and_validation(monkeypatch, capsys):
    cluster = FakeCluster(default_nodes())
    leaf = dict(
        name="tor-0", tier=1, members=[{"type": "Node", "selector": {"exactMatch": {"name": "n0"}}}]
    )
    out = run(hypernode_module, cluster, monkeypatch, capsys, **leaf)
    assert out["action"] == "created" and cluster.hypernodes["tor-0"]["metadata"]["labels"] == {
        "platform.io/managed-by": "gpucloud-platform"
    }
    assert run(hypernode_module, cluster, monkeypatch, capsys, **leaf)["changed"] is False

    spine = dict(
        name="spine-0",
        tier=2,
        members=[{"type": "HyperNode", "selector": {"exactMatch": {"name": "tor-0"}}}],
    )
    assert run(hypernode_module, cluster, monkeypatch, capsys, **spine)["action"] == "created"

    # a second leaf holding n0 would put n0 under two ToRs
    out = run(
        hypernode_module,
        cluster,
        monkeypatch,
        capsys,
        name="tor-1",
        tier=1,
        members=leaf["members"],
    )
    assert (
        out["failed"] is True and "node 'n0' is in leaf HyperNodes 'tor-0', 'tor-1'" in out["msg"]
    )
    # tier 0 and regexMatch on a HyperNode member
    out = run(
        hypernode_module,
        cluster,
        monkeypatch,
        capsys,
        name="x",
        tier=0,
        members=[{"type": "HyperNode", "selector": {"regexMatch": {"pattern": "tor-.*"}}}],
    )
    assert (
        out["failed"] is True
        and "x.spec.tier" in out["msg"]
        and "x.spec.members[0].selector.regexMatch" in out["msg"]
    )
    # the spine still lists tor-0, so it cannot go
    out = run(hypernode_module, cluster, monkeypatch, capsys, name="tor-0", state="absent")
    assert out["failed"] is True and "'tor-0', which is not in the tree" in out["msg"]
    assert (
        run(hypernode_module, cluster, monkeypatch, capsys, name="spine-0", state="absent")[
            "action"
        ]
        == "deleted"
    )
    assert "spine-0" not in cluster.hypernodes


def test_topology_info_writes_renderings(monkeypatch, capsys, tmp_path):
    cluster = FakeCluster(default_nodes())
    run(topology_module, cluster, monkeypatch, capsys)
    cluster.nodes.append({"metadata": {"name": "n8", "labels": {}}})
    out = run(
        info_module, cluster, monkeypatch, capsys, dest=str(tmp_path), formats=["mermaid", "dot"]
    )
    assert out["errors"] == [] and out["unplaced_nodes"] == ["n8"]
    assert [h["name"] for h in out["hypernodes"]][:3] == ["spine-0", "tor-0", "tor-1"]
    assert (tmp_path / "topology.mmd").read_text().startswith("flowchart TD")
    assert (tmp_path / "topology.dot").read_text() == out["dot"]
    assert out["changed"] is True
    again = run(
        info_module, cluster, monkeypatch, capsys, dest=str(tmp_path), formats=["mermaid", "dot"]
    )
    assert again["changed"] is False
