# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``topology_render`` through the flow contract: its plan (the tree and the files)
as a table of cases over facts (no cluster, no fake, no file), and the offline answers
against a check-mode run on the fake cluster: ``parsed`` of ``gathered`` is the check-mode
run, ``rendered`` a check-mode run on an empty cluster; neither writes a file."""

from __future__ import annotations

import os
import stat

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology import renderings
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.service import (
    RENDER_FLOW,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.sync import SyncFacts
from ansible_collections.gpucloud.platform.plugins.modules import topology_render
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster
from ansible_collections.gpucloud.platform.tests.unit.flow_checks import assert_parsed_is_the_run
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.topology.test_sync_flow import (
    LIVE,
    NODES,
    cluster_objects,
    leaf,
    node,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.topology.test_sync_flow import (
    params as sync_params,
)

# Check mode compares the files with what is there: a directory that does not exist
# holds none, and nothing is created in it.
DEST = "/nonexistent/gpucloud-topology-render"


def params(**over):
    """``topology``'s options (``prune`` is not read) with the view's and the files'."""
    view = {"source": "cluster", "managed_only": False, "dest": DEST, "basename": "topology"}
    return sync_params(**{**view, "formats": ["mermaid", "dot"], **over})


THREE = (node("n0", "tor-0", "s"), node("n1", "tor-0", "s"), node("n2", "tor-1", "s"))
SWITCHES = [{"name": "tor-9", "tier": 1, "nodes": ["n0", "n1"]}]
LEAVES = (leaf("tor-0", ["n0", "n1"]), leaf("tor-1", ["n2"]))

# (case, options, facts, HyperNodes shown, files as (format, file name))
CASES = [
    (
        "the cluster's leaves, as the default formats",
        {"formats": ["mermaid", "dot", "png"]},
        SyncFacts(THREE, LEAVES),
        ["tor-0", "tor-1"],
        [("mermaid", "topology.mmd"), ("dot", "topology.dot"), ("png", "topology.png")],
    ),
    (
        "a Mermaid file only, under another name",
        {"formats": ["mermaid"], "basename": "fabric"},
        SyncFacts(THREE, LEAVES),
        ["tor-0", "tor-1"],
        [("mermaid", "fabric.mmd")],
    ),
    (
        "the PNG only: drawn from the DOT",
        {"formats": ["png"]},
        SyncFacts(THREE, ()),
        [],
        [("png", "topology.png")],
    ),
    (
        "labels: the tree the sync would make",
        {"source": "labels"},
        SyncFacts(THREE, (leaf("tor-7", ["n0"]),)),
        ["s", "tor-0", "tor-1"],
        [("mermaid", "topology.mmd"), ("dot", "topology.dot")],
    ),
    (
        "inventory without a cluster",
        {"source": "inventory", "switches": SWITCHES},
        SyncFacts(),
        ["tor-9"],
        [("mermaid", "topology.mmd"), ("dot", "topology.dot")],
    ),
]


@pytest.mark.parametrize(
    "options,facts,shown,files", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_plan_over_facts(options, facts, shown, files):
    request = renderings.parse_render(params(**options))
    planned = renderings.plan_render(request, facts)
    said = renderings.report_render(request, planned)
    assert [h["name"] for h in said["hypernodes"]] == shown
    assert [(f.fmt, os.path.basename(f.path)) for f in planned.files] == files
    assert said["files"] == [os.path.join(DEST, name) for _fmt, name in files]
    # each file holds its rendering; the PNG is drawn from the DOT
    assert all(f.text == said["dot" if f.fmt == "png" else f.fmt] for f in planned.files)


@pytest.mark.parametrize("source", ["cluster", "labels"])
def test_rendered_is_refused_for_a_tree_of_the_cluster(source):
    with pytest.raises(PlatformValidationError, match="use source: inventory"):
        renderings.parse_render(params(source=source, state="rendered"))


def test_a_bad_node_selector_is_refused_before_any_read():
    with pytest.raises(PlatformValidationError, match="node_selector"):
        renderings.parse_render(params(node_selector="a in (b"))


def check_mode_run(options, objects):
    """The check-mode run, without ``changed`` (every file would be written: none exists)."""
    run = RENDER_FLOW.run(params(**options), FakeCluster(objects), True)
    assert run.pop("changed") is bool(run["files"])
    return run


@settings(max_examples=60, deadline=None)
@given(
    nodes=NODES,
    live=LIVE,
    source=st.sampled_from(["cluster", "labels"]),
    managed_only=st.booleans(),
    formats=st.sampled_from([["mermaid", "dot"], ["dot"], []]),
)
def test_parsed_of_gathered_is_the_check_mode_run(nodes, live, source, managed_only, formats):
    options = {"source": source, "managed_only": managed_only, "formats": formats}
    cluster = FakeCluster(cluster_objects(nodes, live))
    gathered = RENDER_FLOW.run(params(state="gathered", **options), cluster, False)
    assert set(gathered) == {"changed", "gathered"} and gathered["changed"] is False
    assert_parsed_is_the_run(
        RENDER_FLOW,
        lambda: {**check_mode_run(options, cluster_objects(nodes, live)), "changed": False},
        params(state="parsed", facts=gathered["gathered"], **options),
    )
    assert not os.path.exists(DEST)


def test_rendered_is_a_check_mode_run_on_an_empty_cluster_without_one():
    options = {"source": "inventory", "switches": SWITCHES}
    rendered = RENDER_FLOW.offline(params(state="rendered", **options))
    assert rendered is not None and rendered.pop("state") == "rendered"
    assert rendered.pop("changed") is False
    assert rendered == check_mode_run(options, [])
    assert RENDER_FLOW.offline(params(**options)) is None  # present connects


def test_parsed_names_the_png_a_run_draws_with_graphviz(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    dot = bin_dir / "dot"
    dot.write_text("#!/bin/sh\ncat >/dev/null; printf PNG\n")
    dot.chmod(dot.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    options = {"formats": ["mermaid", "dot", "png"]}
    objects = cluster_objects(THREE, LEAVES)
    gathered = RENDER_FLOW.run(params(state="gathered", **options), FakeCluster(objects), False)
    assert_parsed_is_the_run(
        RENDER_FLOW,
        lambda: {**check_mode_run(options, objects), "changed": False},
        params(state="parsed", facts=gathered["gathered"], **options),
    )


def test_the_module_writes_no_file_offline_or_gathering(run_module, tmp_path):
    cluster = FakeCluster(cluster_objects(THREE, LEAVES))
    dest = tmp_path / "out"
    args = {"dest": str(dest), "formats": ["mermaid", "dot"]}
    gathered = run_module(topology_render, cluster, state="gathered", **args)
    assert gathered["changed"] is False and gathered["requests"] == 2 and "files" not in gathered
    parsed = run_module(
        topology_render, cluster, state="parsed", facts=gathered["gathered"], **args
    )
    assert parsed["requests"] == 0 and parsed["state"] == "parsed"
    assert [h["name"] for h in parsed["hypernodes"]] == ["tor-0", "tor-1"]
    assert parsed["files"] == [str(dest / "topology.mmd"), str(dest / "topology.dot")]
    rendered = run_module(
        topology_render, cluster, state="rendered", source="inventory", switches=SWITCHES, **args
    )
    assert rendered["requests"] == 0 and [h["name"] for h in rendered["hypernodes"]] == ["tor-9"]
    refused = run_module(topology_render, cluster, state="rendered", **args)
    assert refused["failed"] and refused["requests"] == 0 and "source: inventory" in refused["msg"]
    assert not dest.exists()
    ran = run_module(topology_render, cluster, **args)
    assert ran["changed"] is True and ran["files"] == parsed["files"]
    assert (dest / "topology.dot").read_text() == parsed["dot"]
