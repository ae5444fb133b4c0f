# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``topology_info`` through the flow contract: its plan as a table of cases over
facts (no cluster, no fake), and ``parsed`` of ``gathered`` against the normal run on the
fake cluster."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology import info
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.service import INFO_FLOW
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.sync import SyncFacts
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


def params(**over):
    """``topology``'s options (``prune`` is not read) with the view's."""
    return sync_params(**{"source": "cluster", "managed_only": False, **over})


THREE = (node("n0", "tor-0", "s"), node("n1", "tor-0", "s"), node("n2", "tor-1", "s"))
SWITCHES = [{"name": "tor-9", "tier": 1, "nodes": ["n0", "n1"]}]

# (case, options, facts, HyperNodes shown, nodes in no leaf, rules broken)
CASES = [
    ("no HyperNode in the cluster", {}, SyncFacts(THREE, ()), [], ["n0", "n1", "n2"], 0),
    (
        "the cluster's leaves",
        {},
        SyncFacts(THREE, (leaf("tor-0", ["n0", "n1"]), leaf("tor-1", ["n2"]))),
        ["tor-0", "tor-1"],
        [],
        0,
    ),
    (
        "managed only leaves out a HyperNode the platform does not manage",
        {"managed_only": True},
        SyncFacts(THREE, (leaf("tor-0", ["n0", "n1"]), leaf("tor-1", ["n2"], labels={}))),
        ["tor-0"],
        ["n2"],
        0,
    ),
    (
        "a node in two leaves breaks a rule",
        {},
        SyncFacts(THREE, (leaf("tor-0", ["n0", "n1"]), leaf("tor-1", ["n1", "n2"]))),
        ["tor-0", "tor-1"],
        [],
        1,
    ),
    (
        "labels: the tree the sync would make, the live HyperNodes not read",
        {"source": "labels"},
        SyncFacts(THREE, (leaf("tor-7", ["n0"]),)),
        ["s", "tor-0", "tor-1"],
        [],
        0,
    ),
    (
        "inventory: the switches given",
        {"source": "inventory", "switches": SWITCHES},
        SyncFacts(THREE, ()),
        ["tor-9"],
        ["n2"],
        0,
    ),
]


@pytest.mark.parametrize(
    "options,facts,shown,unplaced,broken",
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_the_view_over_facts(options, facts, shown, unplaced, broken):
    request = info.parse_info(params(**options))
    said = info.report_info(request, info.plan_info(request, facts))
    assert [h["name"] for h in said["hypernodes"]] == shown
    assert said["unplaced_nodes"] == unplaced and len(said["errors"]) == broken


def test_a_bad_node_selector_is_refused_before_any_read():
    with pytest.raises(PlatformValidationError, match="node_selector"):
        info.parse_info(params(node_selector="a in (b"))


@settings(max_examples=60, deadline=None)
@given(
    nodes=NODES,
    live=LIVE,
    unmanaged=st.sets(st.sampled_from(["tor-0", "tor-1", "tor-7"])),
    source=st.sampled_from(["cluster", "labels"]),
    managed_only=st.booleans(),
)
def test_parsed_of_gathered_is_the_normal_run(nodes, live, unmanaged, source, managed_only):
    for hypernode in live:  # some HyperNodes the platform does not manage
        if hypernode["metadata"]["name"] in unmanaged:
            hypernode["metadata"]["labels"] = {}
    options = {"source": source, "managed_only": managed_only}
    cluster = FakeCluster(cluster_objects(nodes, live))
    gathered = INFO_FLOW.run(params(state="gathered", **options), cluster, False)["gathered"]
    assert_parsed_is_the_run(
        INFO_FLOW,
        lambda: INFO_FLOW.run(params(**options), FakeCluster(cluster_objects(nodes, live)), False),
        params(state="parsed", facts=gathered, **options),
    )


def test_gathered_reads_hypernodes_only_for_the_cluster_tree():
    objects = cluster_objects(THREE, [leaf("tor-0", ["n0"])])
    for source, hypernodes in (("cluster", ["tor-0"]), ("labels", [])):
        cluster = FakeCluster(objects)
        gathered = INFO_FLOW.run(params(state="gathered", source=source), cluster, False)
        assert [h["metadata"]["name"] for h in gathered["gathered"]["hypernodes"]] == hypernodes
        assert cluster.requests == (2 if source == "cluster" else 1)
