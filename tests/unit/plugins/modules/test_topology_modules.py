# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The topology, hypernode and topology_info modules against the fake cluster."""

from __future__ import annotations

import copy
import os
import pathlib
import stat

import yaml
from kubernetes.client.rest import ApiException

from ansible_collections.gpucloud.platform.plugins.module_utils.topology import service
from ansible_collections.gpucloud.platform.plugins.modules import hypernode as hypernode_module
from ansible_collections.gpucloud.platform.plugins.modules import topology as topology_module
from ansible_collections.gpucloud.platform.plugins.modules import topology_info as info_module
from ansible_collections.gpucloud.platform.plugins.modules import (
    topology_render as render_module,
)
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster

TOR, SPINE = "topology.volcano.sh/tor", "topology.volcano.sh/spine"
HN_API = "topology.volcano.sh/v1alpha1"
MANAGED = {"platform.io/managed-by": "gpucloud-platform"}


def node(name, labels):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def default_nodes():
    return [node(f"n{i}", {TOR: f"tor-{i // 2}", SPINE: f"spine-{i // 4}"}) for i in range(8)]


def hypernode(name, tier, members, labels=None):
    return {
        "apiVersion": HN_API,
        "kind": "HyperNode",
        "metadata": {"name": name, "labels": dict(MANAGED if labels is None else labels)},
        "spec": {"tier": tier, "members": members},
    }


def exact(kind, name):
    return {"type": kind, "selector": {"exactMatch": {"name": name}}}


def relabel(cluster, name, **labels):
    obj = copy.deepcopy(cluster.kinds("Node")[name])
    obj["metadata"]["labels"].update(labels)
    cluster.put(obj)


def hypernodes(cluster):
    return cluster.kinds("HyperNode")


class CheckModeCluster(FakeCluster):
    """The cluster as ``kube.Cluster`` drives it in check mode: an apply is a server-side
    dry run, while create, replace and delete reach the API server as they are."""

    def __init__(self, objects=()):
        super().__init__(objects, dry_run=True)

    def _for_real(self, write, *args, **kwargs):
        self.dry_run = False
        try:
            return write(*args, **kwargs)
        finally:
            self.dry_run = True

    def create(self, manifest):
        return self._for_real(super().create, manifest)

    def replace(self, manifest):
        return self._for_real(super().replace, manifest)

    def delete(self, *args, **kwargs):
        return self._for_real(super().delete, *args, **kwargs)


# -- topology ---------------------------------------------------------------------------


def test_sync_then_resync_then_move(run_module):
    cluster = FakeCluster(default_nodes())
    first = run_module(topology_module, cluster, prune=True)
    assert first["changed"] is True
    assert first["created"] == ["tor-0", "tor-1", "tor-2", "tor-3", "spine-0", "spine-1"]
    assert first["requests"] == 2 + 6
    assert "spine-0 (tier 2)\n├── tor-0 (tier 1)\n│   ├── n0\n" in first["tree"]
    # one diff per HyperNode, new ones with an empty before (rule diff-per-object)
    assert {d["after_header"] for d in first["diff"]} == set(first["created"])
    assert all(d["before"] is None for d in first["diff"])
    assert sorted(hypernodes(cluster)) == sorted(first["created"])

    second = run_module(topology_module, cluster, prune=True)
    assert second["changed"] is False and second["requests"] == 2
    assert second["unchanged"] == ["spine-0", "spine-1", "tor-0", "tor-1", "tor-2", "tor-3"]

    relabel(cluster, "n1", **{TOR: "tor-1"})  # n1 moves from tor-0 to tor-1 (same spine)
    third = run_module(topology_module, cluster, prune=True)
    assert third["updated"] == ["tor-0", "tor-1"]
    assert third["moved_nodes"] == {"n1": {"from": ["tor-0"], "to": ["tor-1"]}}
    members = [
        m["selector"]["exactMatch"]["name"] for m in hypernodes(cluster)["tor-1"]["spec"]["members"]
    ]
    assert members == ["n1", "n2", "n3"]
    assert [d["before_header"] for d in third["diff"]] == ["tor-0", "tor-1"]


def test_bad_labels_fail_before_any_write(run_module):
    nodes = default_nodes()
    nodes[3]["metadata"]["labels"][SPINE] = "spine-1"
    cluster = FakeCluster(nodes)
    out = run_module(topology_module, cluster)
    assert out["failed"] is True and out["changed"] is False
    assert "n3.metadata.labels.topology.volcano.sh/spine" in out["msg"]
    assert cluster.writes == []


def test_bad_tier_labels_fail_before_connecting(run_module):
    cluster = FakeCluster(default_nodes())
    out = run_module(topology_module, cluster, tier_labels=[TOR, TOR], name_template="x")
    assert out["failed"] is True and out["requests"] == 0
    assert any(e.startswith("tier_labels[1]:") for e in out["errors"])
    assert any(e.startswith("name_template:") for e in out["errors"])
    assert cluster.lists == []


def test_inventory_with_regex_on_non_leaf_fails_before_any_write(run_module):
    cluster = FakeCluster(default_nodes())
    switches = [
        {"name": "spine", "tier": 2, "node_pattern": "n.*", "switches": ["tor"]},
        {"name": "tor", "tier": 1, "nodes": ["n0"]},
    ]
    out = run_module(topology_module, cluster, source="inventory", switches=switches)
    assert out["failed"] is True and "spine.spec.members" in out["msg"]
    assert cluster.writes == []


def test_unmanaged_hypernodes_are_never_touched(run_module):
    discovered = hypernode(
        "hn-label-x", 1, [exact("Node", "other")], {"volcano.sh/network-topology-source": "label"}
    )
    cluster = FakeCluster([*default_nodes(), discovered])
    before = copy.deepcopy(hypernodes(cluster)["hn-label-x"])
    out = run_module(topology_module, cluster, prune=True)
    assert "hn-label-x" not in out["deleted"]
    assert hypernodes(cluster)["hn-label-x"] == before
    assert not [w for w in cluster.writes if w[2] == "hn-label-x"]

    clash = FakeCluster(
        [*default_nodes(), dict(discovered, metadata={**discovered["metadata"], "name": "tor-0"})]
    )
    out = run_module(topology_module, clash, prune=True)
    assert (
        out["failed"] is True
        and "'tor-0' already exists, made by Volcano's 'label' discovery" in out["msg"]
    )
    assert clash.writes == []


def test_check_mode_dry_runs_the_creations(run_module):
    cluster = CheckModeCluster(default_nodes())
    out = run_module(topology_module, cluster, _ansible_check_mode=True)
    assert out["changed"] is True and len(out["created"]) == 6
    assert [w[0] for w in cluster.writes] == ["dry-run"] * 6
    assert cluster.real_writes == [] and hypernodes(cluster) == {}


def stale_cluster(run_module, cluster_class=FakeCluster):
    """The default fabric synced, plus two managed HyperNodes the tree no longer needs."""
    cluster = FakeCluster(default_nodes())
    run_module(topology_module, cluster)
    cluster.put(hypernode("tor-9", 1, [exact("Node", "gone-0")]))
    cluster.put(hypernode("spine-9", 2, [exact("HyperNode", "tor-9")]))
    return cluster_class(cluster.objects("Node") + cluster.objects("HyperNode"))


def test_check_mode_with_prune_deletes_nothing_and_reports_the_deletions(run_module):
    cluster = stale_cluster(run_module, CheckModeCluster)
    plan = run_module(topology_module, cluster, prune=True, _ansible_check_mode=True)
    assert plan["changed"] is True
    assert plan["deleted"] == ["spine-9", "tor-9"]  # highest tier first, as the real run
    assert [(d["before_header"], d["after"]) for d in plan["diff"]] == [
        ("spine-9", None),
        ("tor-9", None),
    ]
    assert cluster.real_writes == [] and cluster.writes == []
    assert {"tor-9", "spine-9"} <= set(hypernodes(cluster))
    assert plan["requests"] == 2  # the two lists, no delete request

    cluster = FakeCluster(cluster.objects("Node") + cluster.objects("HyperNode"))
    real = run_module(topology_module, cluster, prune=True)
    assert real["deleted"] == plan["deleted"]
    assert [w[0] for w in cluster.real_writes] == ["delete", "delete"]


def test_prune_deletes_highest_tier_first(run_module):
    cluster = stale_cluster(run_module)
    out = run_module(topology_module, cluster, prune=True)
    assert out["deleted"] == ["spine-9", "tor-9"] and out["requests"] == 2 + 2
    assert cluster.real_writes == [
        ("delete", "HyperNode", "spine-9"),
        ("delete", "HyperNode", "tor-9"),
    ]
    assert not {"tor-9", "spine-9"} & set(hypernodes(cluster))


def test_prune_off_keeps_stale_hypernodes(run_module):
    cluster = stale_cluster(run_module)
    out = run_module(topology_module, cluster)
    assert out["changed"] is False and out["stale"] == ["spine-9", "tor-9"] and out["deleted"] == []
    assert cluster.writes == []


class RefusingCluster(FakeCluster):
    """A cluster whose API server refuses writes to one HyperNode."""

    refuse = "spine-0"

    def apply(self, manifest, field_manager="gpucloud-platform"):
        if manifest["metadata"]["name"] == self.refuse:
            self.requests += 1
            raise ApiException(status=422, reason="Unprocessable Entity")
        return super().apply(manifest, field_manager)


def test_a_write_failing_part_way_names_what_was_written(run_module):
    cluster = RefusingCluster(default_nodes())
    out = run_module(topology_module, cluster, prune=True)
    assert out["failed"] is True and out["changed"] is True
    # The writes go side by side: every one is sent, and the failure names the others.
    written = [
        "created tor-0",
        "created tor-1",
        "created tor-2",
        "created tor-3",
        "created spine-1",
    ]
    assert out["done"] == written
    assert out["msg"].startswith("writing HyperNodes failed after 5 change(s): ")
    assert out["created"] == ["tor-0", "tor-1", "tor-2", "tor-3", "spine-0", "spine-1"]
    assert out["requests"] == 2 + 6
    assert sorted(hypernodes(cluster)) == ["spine-1", "tor-0", "tor-1", "tor-2", "tor-3"]


# -- hypernode --------------------------------------------------------------------------

LEAF = dict(name="tor-0", tier=1, members=[exact("Node", "n0")])
SPINE_0 = dict(name="spine-0", tier=2, members=[exact("HyperNode", "tor-0")])


def test_hypernode_present_absent_and_validation(run_module):
    cluster = FakeCluster(default_nodes())
    out = run_module(hypernode_module, cluster, **LEAF)
    assert (
        out["action"] == "created" and hypernodes(cluster)["tor-0"]["metadata"]["labels"] == MANAGED
    )
    assert out["hypernode"]["metadata"]["name"] == "tor-0" and out["requests"] == 2
    assert out["summary"] == ["HyperNode tor-0: created (tier 1, 1 member of type Node)"]
    again = run_module(hypernode_module, cluster, **LEAF)
    assert again["changed"] is False
    assert again["summary"] == ["HyperNode tor-0: as asked already; nothing to change"]

    assert run_module(hypernode_module, cluster, **SPINE_0)["action"] == "created"

    # a second leaf holding n0 would put n0 under two ToRs
    out = run_module(hypernode_module, cluster, name="tor-1", tier=1, members=LEAF["members"])
    assert (
        out["failed"] is True and "node 'n0' is in leaf HyperNodes 'tor-0', 'tor-1'" in out["msg"]
    )
    # tier 0 and regexMatch on a HyperNode member, refused before connecting
    out = run_module(
        hypernode_module,
        cluster,
        name="x",
        tier=0,
        members=[{"type": "HyperNode", "selector": {"regexMatch": {"pattern": "tor-.*"}}}],
    )
    assert (
        out["failed"] is True
        and "x.spec.tier" in out["msg"]
        and "x.spec.members[0].selector.regexMatch" in out["msg"]
        and out["requests"] == 0
    )
    # the spine still lists tor-0, so it cannot go
    out = run_module(hypernode_module, cluster, name="tor-0", state="absent")
    assert out["failed"] is True and "'tor-0', which is not in the tree" in out["msg"]
    out = run_module(hypernode_module, cluster, name="spine-0", state="absent")
    assert out["action"] == "deleted" and out["diff"]["after"] == {}
    assert "spine-0" not in hypernodes(cluster)
    assert cluster.real_writes[-1] == ("delete", "HyperNode", "spine-0")


def test_hypernode_update_reports_before_and_after(run_module):
    cluster = FakeCluster(default_nodes())
    run_module(hypernode_module, cluster, **LEAF)
    out = run_module(
        hypernode_module, cluster, **dict(LEAF, members=[exact("Node", "n0"), exact("Node", "n1")])
    )
    assert out["action"] == "updated"
    assert len(out["diff"]["before"]["spec"]["members"]) == 1
    assert len(out["diff"]["after"]["spec"]["members"]) == 2
    assert "uid" not in out["diff"]["before"]["metadata"]


def test_hypernode_check_mode_deletes_nothing(run_module):
    cluster = CheckModeCluster([*default_nodes(), hypernode("tor-0", 1, [exact("Node", "n0")])])
    out = run_module(
        hypernode_module, cluster, name="tor-0", state="absent", _ansible_check_mode=True
    )
    assert out["changed"] is True and out["action"] == "deleted"
    assert cluster.real_writes == [] and cluster.writes == []
    assert "tor-0" in hypernodes(cluster) and out["requests"] == 1


def test_hypernode_check_mode_dry_runs_a_creation(run_module):
    cluster = CheckModeCluster(default_nodes())
    out = run_module(hypernode_module, cluster, _ansible_check_mode=True, **LEAF)
    assert out["action"] == "created" and out["hypernode"]["metadata"]["name"] == "tor-0"
    assert cluster.writes == [("dry-run", "HyperNode", "tor-0")] and hypernodes(cluster) == {}


def test_hypernode_never_changes_an_unmanaged_one(run_module):
    theirs = hypernode(
        "tor-0", 1, [exact("Node", "n0")], {"volcano.sh/network-topology-source": "label"}
    )
    cluster = FakeCluster([*default_nodes(), theirs])
    for args in (dict(name="tor-0", state="absent"), LEAF):
        out = run_module(hypernode_module, cluster, **args)
        assert out["failed"] is True and "made by Volcano's 'label' discovery" in out["msg"]
    assert cluster.writes == []


def test_hypernode_reads_nodes_only_for_pattern_leaves(run_module):
    cluster = FakeCluster(default_nodes())
    run_module(hypernode_module, cluster, **LEAF)
    assert cluster.lists == ["HyperNode"]
    out = run_module(
        hypernode_module,
        cluster,
        name="tor-1",
        tier=1,
        members=[{"type": "Node", "selector": {"regexMatch": {"pattern": "^n[01]$"}}}],
    )
    # with the Node list, the pattern resolves to n0 too, which tor-0 already holds
    assert (
        out["failed"] is True and "node 'n0' is in leaf HyperNodes 'tor-0', 'tor-1'" in out["msg"]
    )
    assert cluster.lists[-2:] == ["HyperNode", "Node"]


# -- topology_info ----------------------------------------------------------------------


def test_topology_render_writes_renderings(run_module, tmp_path):
    cluster = FakeCluster(default_nodes())
    run_module(topology_module, cluster)
    synced = list(cluster.writes)
    cluster.put(node("n8", {}))
    args = dict(dest=str(tmp_path), formats=["mermaid", "dot"])
    out = run_module(render_module, cluster, **args)
    assert out["errors"] == [] and out["unplaced_nodes"] == ["n8"]
    assert [h["name"] for h in out["hypernodes"]][:3] == ["spine-0", "tor-0", "tor-1"]
    assert (tmp_path / "topology.mmd").read_text().startswith("flowchart TD")
    assert (tmp_path / "topology.dot").read_text() == out["dot"]
    assert out["files"] == [str(tmp_path / "topology.mmd"), str(tmp_path / "topology.dot")]
    assert out["changed"] is True and out["requests"] == 2
    again = run_module(render_module, cluster, **args)
    assert again["changed"] is False
    assert cluster.writes == synced  # topology_render only reads the cluster


def test_topology_render_check_mode_writes_no_file(run_module, tmp_path):
    cluster = FakeCluster(default_nodes())
    dest = tmp_path / "out"
    out = run_module(
        render_module, cluster, dest=str(dest), formats=["mermaid"], _ansible_check_mode=True
    )
    assert out["changed"] is True and out["files"] == [str(dest / "topology.mmd")]
    assert not dest.exists()


def test_topology_info_previews_a_source_without_hypernodes(run_module):
    cluster = FakeCluster(default_nodes())
    out = run_module(info_module, cluster, source="labels")
    assert out["changed"] is False and "files" not in out
    assert [h["name"] for h in out["hypernodes"]][:2] == ["spine-0", "tor-0"]
    assert cluster.lists == ["Node"] and out["requests"] == 1


def test_topology_info_managed_only_and_shape_errors(run_module):
    theirs = hypernode(
        "hn-x", 1, [exact("Node", "n0")], {"volcano.sh/network-topology-source": "label"}
    )
    ours = hypernode("tor-0", 0, [exact("Node", "n0")])
    cluster = FakeCluster([*default_nodes(), theirs, ours])
    every = run_module(info_module, cluster)
    assert [h["name"] for h in every["hypernodes"]] == ["hn-x", "tor-0"]
    assert any("tor-0.spec.tier" in e for e in every["errors"])
    assert any("node 'n0' is in leaf HyperNodes 'hn-x', 'tor-0'" in e for e in every["errors"])
    managed = run_module(info_module, cluster, managed_only=True)
    assert [h["name"] for h in managed["hypernodes"]] == ["tor-0"]


def fake_dot(directory, script):
    """A ``dot`` program on PATH that runs ``script`` (sh)."""
    directory.mkdir()
    path = directory / "dot"
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return f"{directory}{os.pathsep}{os.environ.get('PATH', '')}"


def test_topology_render_png_from_graphviz(run_module, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", fake_dot(tmp_path / "bin", "cat >/dev/null; printf PNG\n"))
    cluster = FakeCluster(default_nodes())
    dest = tmp_path / "out"
    out = run_module(render_module, cluster, dest=str(dest))
    assert out["files"] == [str(dest / f"topology.{s}") for s in ("mmd", "dot", "png")]
    assert (dest / "topology.png").read_bytes() == b"PNG"
    assert run_module(render_module, cluster, dest=str(dest))["changed"] is False


def test_topology_render_without_graphviz_warns_and_writes_the_rest(
    run_module, tmp_path, monkeypatch
):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    # Ansible's warn() puts the warning in the module's result; in a test process that
    # also loaded Ansible's controller it goes to the display instead, so catch it here.
    warned = []
    monkeypatch.setattr(service, "warn", warned.append)
    out = run_module(render_module, FakeCluster(default_nodes()), dest=str(tmp_path))
    assert warned == [service.NO_GRAPHVIZ]
    assert "Graphviz 'dot' is not installed on this host" in service.NO_GRAPHVIZ
    assert out["files"] == [str(tmp_path / "topology.mmd"), str(tmp_path / "topology.dot")]
    assert not (tmp_path / "topology.png").exists()


def test_topology_render_graphviz_failing_names_what_was_written(run_module, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", fake_dot(tmp_path / "bin", "echo bad >&2; exit 3\n"))
    dest = tmp_path / "out"
    out = run_module(render_module, FakeCluster(default_nodes()), dest=str(dest))
    assert out["failed"] is True and out["changed"] is True
    assert "Graphviz dot failed (rc 3): b'bad\\n'" in out["msg"]
    assert out["done"] == [str(dest / "topology.mmd"), str(dest / "topology.dot")]
    assert out["files"][-1] == str(dest / "topology.png") and "text" in out


def test_topology_info_changes_nothing_and_takes_no_dest(run_module):
    """An _info module: no file options, never changed (the renderings are topology_render's)."""
    cluster = FakeCluster(default_nodes())
    out = run_module(info_module, cluster)
    assert out["changed"] is False and out["text"] and out["mermaid"].startswith("flowchart TD")
    refused = run_module(info_module, cluster, dest="/tmp/x")
    assert refused["failed"] and "dest" in refused["msg"]


# -- playbooks/hypernode_sync.yml -------------------------------------------------------


def test_hypernode_sync_plan_step_writes_nothing(run_module):
    """The playbook's plan step (check mode, the playbook's defaults) writes nothing and
    reports the deletions its guard counts."""
    root = pathlib.Path(__file__).resolve().parents[4]
    (play,) = yaml.safe_load((root / "playbooks" / "hypernode_sync.yml").read_text())
    # rule playbook-variables first (playbooks/tasks/check_variables.yml), then the tasks
    # shared with site.yml (a refusal said in the playbook's words, rule playbook-words)
    # between the run's heartbeats (rule reconcile-heartbeat), then the run's summary
    check, attempt, sync, success, said = play["tasks"]
    assert "ansible.builtin.debug" in said
    for beat in (attempt, success):
        assert beat["ansible.builtin.import_tasks"] == "tasks/heartbeat.yml"
    assert check["ansible.builtin.import_tasks"] == "tasks/check_variables.yml"
    (step,) = sync["block"]
    assert step["ansible.builtin.import_tasks"] == "tasks/hypernode_sync.yml"
    assert sync["rescue"][0]["ansible.builtin.import_tasks"] == "tasks/refusal.yml"
    tasks = yaml.safe_load((root / "playbooks" / "tasks" / "hypernode_sync.yml").read_text())
    plan_task = tasks[0]
    assert plan_task["check_mode"] is True and "gpucloud.platform.topology" in plan_task
    defaults = play["vars"]
    # the shared tasks' own defaults (site.yml has no play vars) are the playbook's
    for option, var in (("source", "hypernode_sync_source"), ("prune", "hypernode_sync_prune")):
        assert f"{var} | default(" in plan_task["gpucloud.platform.topology"][option]
    assert "default(4)" in tasks[1]["ansible.builtin.assert"]["that"][0]
    assert defaults["hypernode_sync_max_deletions"] == 4
    cluster = stale_cluster(run_module, CheckModeCluster)
    plan = run_module(
        topology_module,
        cluster,
        source=defaults["hypernode_sync_source"],
        tier_labels=defaults["hypernode_sync_tier_labels"],
        name_template=defaults["hypernode_sync_name_template"],
        prune=defaults["hypernode_sync_prune"],
        _ansible_check_mode=True,
    )
    assert plan["deleted"] == ["spine-9", "tor-9"]
    assert len(plan["deleted"]) <= defaults["hypernode_sync_max_deletions"]
    assert cluster.real_writes == []
    assert {"spine-9", "tor-9"} <= set(hypernodes(cluster))


def test_topology_info_returns_the_tree_a_person_reads(run_module):
    out = run_module(info_module, FakeCluster(default_nodes()), source="labels")
    assert out["summary"][0].startswith("topology from the labels: ")
    assert out["summary"][1].split() == ["HYPERNODE", "TIER", "PARENT", "HOLDS"]
    assert len(out["summary"]) >= 2 + len(out["hypernodes"])


# -- topology: rendered, gathered, parsed (kube.flow) --------------------------------------


def test_rendered_answers_without_connecting(run_module):
    cluster = FakeCluster(default_nodes())
    switches = [
        {"name": "spine-a", "tier": 2, "switches": ["tor-1"]},
        {"name": "tor-1", "tier": 1, "nodes": ["n0", "n1"]},
    ]
    out = run_module(
        topology_module, cluster, source="inventory", switches=switches, state="rendered"
    )
    assert out["changed"] is False and out["requests"] == 0 and cluster.lists == []
    assert out["created"] == ["tor-1", "spine-a"] and out["state"] == "rendered"
    assert any("tor-1" in line for line in out["summary"])
    assert [d["after_header"] for d in out["diff"]] == ["spine-a", "tor-1"]


def test_gathered_then_parsed_plans_another_cluster_offline(run_module):
    cluster = FakeCluster(default_nodes())
    gathered = run_module(topology_module, cluster, state="gathered")
    assert gathered["changed"] is False and gathered["requests"] == 2 and cluster.writes == []
    assert len(gathered["gathered"]["nodes"]) == 8
    assert gathered["summary"] == [
        "gathered hypernodes, nodes from the cluster; nothing was written"
    ]
    offline = FakeCluster([])
    parsed = run_module(topology_module, offline, state="parsed", facts=gathered["gathered"])
    assert parsed["requests"] == 0 and offline.lists == []
    assert parsed["created"] == ["tor-0", "tor-1", "tor-2", "tor-3", "spine-0", "spine-1"]


def test_rendered_of_a_labels_tree_is_refused_before_connecting(run_module):
    out = run_module(topology_module, FakeCluster(default_nodes()), state="rendered")
    assert out["failed"] is True and out["requests"] == 0
    assert "state: rendered plans against an empty cluster" in out["msg"]
