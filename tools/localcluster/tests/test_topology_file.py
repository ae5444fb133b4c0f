"""The topology file parser of the local cluster: shipped files and bad input."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

import topology  # noqa: E402


def test_shipped_topologies_parse():
    default = topology.load(HERE / "topologies" / "default.yaml")
    large = topology.load(HERE / "topologies" / "large.yaml")
    assert len(default) == 8 and sum(n.gpus for n in default) == 64
    assert len(large) == 128 and sum(n.gpus for n in large) == 1024
    assert {n.spine for n in large} == {f"spine-{i}" for i in range(4)}
    labels = default[0].manifest()["metadata"]["labels"]
    assert labels[topology.LABEL_TOR] == "tor-0" and labels[topology.LABEL_SPINE] == "spine-0"


def test_the_trace_day_keeps_the_default_nodes_in_their_places():
    """Going back to default.yaml after a replay removes only the added nodes."""
    default = {
        n.name: (n.tor, n.spine) for n in topology.load(HERE / "topologies" / "default.yaml")
    }
    day = {n.name: (n.tor, n.spine) for n in topology.load(HERE / "topologies" / "trace-day.yaml")}
    assert (
        len(day) == 16
        and sum(n.gpus for n in topology.load(HERE / "topologies" / "trace-day.yaml")) == 128
    )
    assert {name: day[name] for name in default} == default


def _spines(*tors):
    return {"spines": [{"name": "s0", "tors": [{"name": t, "nodes": nodes} for t, nodes in tors]}]}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            _spines(("t0", ["a", "a"])),
            "spines[0].tors[0].nodes[1]: node 'a' is already under ToR 't0'",
        ),
        (
            _spines(("t0", ["a"]), ("t1", ["a"])),
            "spines[0].tors[1].nodes[0]: node 'a' is already under ToR 't0'",
        ),
        (
            _spines(("t0", [{"name": "a", "gpus": -1}])),
            "spines[0].tors[0].nodes[0].gpus: -1 must be a whole number",
        ),
        (
            _spines(("t0", [{"name": "a", "gpu": 8}])),
            "spines[0].tors[0].nodes[0]: unknown keys ['gpu']",
        ),
        (
            {
                "spines": [
                    {"name": "s0", "tors": [{"name": "t0", "nodes": ["a"]}]},
                    {"name": "s1", "tors": [{"name": "t0", "nodes": ["b"]}]},
                ]
            },
            "spines[1].tors[0]: ToR 't0' is already under spine 's0'",
        ),
        ({"spines": []}, "needs a non-empty 'spines' list"),
        (
            _spines(("t0", [{"name": "a", "memory": "lots"}])),
            "spines[0].tors[0].nodes[0].memory: 'lots' is not",
        ),
    ],
)
def test_bad_topology_names_the_entry(data, message):
    with pytest.raises(topology.TopologyError) as err:
        topology.parse(data, "topology")
    assert message in str(err.value)


def test_unreadable_file_is_reported(tmp_path):
    with pytest.raises(topology.TopologyError, match="cannot read"):
        topology.load(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("spines: [\n")
    with pytest.raises(topology.TopologyError, match="not valid YAML"):
        topology.load(bad)


def test_cloud_nodes_are_shaped_as_virtual_kubelet_registers_them():
    nodes = topology.load(HERE / "topologies" / "hybrid.yaml")
    cloud = [n for n in nodes if not n.tor]
    assert len(nodes) == 10 and len(cloud) == 2 and sum(n.gpus for n in cloud) == 16
    manifest = cloud[0].manifest()
    labels = manifest["metadata"]["labels"]
    assert labels["type"] == "virtual-kubelet" and labels["kubernetes.io/role"] == "agent"
    assert labels[topology.REGION_LABEL] == "cn-hangzhou"
    assert topology.LABEL_TOR not in labels and topology.LABEL_SPINE not in labels
    assert manifest["spec"]["taints"] == [
        {"key": "virtual-kubelet.io/provider", "value": "aliyun", "effect": "NoSchedule"}
    ]
    assert manifest["metadata"]["annotations"][topology.LATENCY_ANNOTATION] == "35"
    assert manifest["status"]["capacity"]["nvidia.com/gpu"] == "8"


def test_a_cloud_entry_with_an_unknown_key_is_refused_by_its_place():
    data = {**_spines(("t0", ["a"])), "cloud": [{"provider": "p", "region": "r", "zone": 1}]}
    with pytest.raises(topology.TopologyError, match=r"cloud\[0\]"):
        topology.parse(data)
