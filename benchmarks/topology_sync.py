#!/usr/bin/env python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ratio benchmark: planning a HyperNode sync for a 1,024-node, 3-tier fabric.

Builds the Node list in memory (16 nodes per ToR, 8 ToRs per spine, one core
switch over the spines: 64 + 8 + 1 HyperNodes) and times what the
``topology`` module computes between its two list calls and its writes:
the tree from labels, every rule, the manifests and the plan. It does that
for a first sync (no HyperNodes yet) and an unchanged re-sync (the live
HyperNodes equal the tree), and prints the API requests each would make.

Times are printed as ratios to a baseline measured in the same run (a JSON
round trip of the same Node list, which any reconcile pays at least once), so
the numbers compare across machines. API-level timing against the cluster
is not part of this benchmark.

    .venv/bin/python benchmarks/topology_sync.py [--nodes 1024] [--repeat 5]
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / ".venv" / "collections"))

from ansible_collections.gpucloud.platform.plugins.module_utils.hypernode_manifest import (  # noqa: E402
    tree_manifests,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology import (  # noqa: E402
    tree_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology_discovery import (  # noqa: E402
    tree_from_node_labels,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology_plan import (  # noqa: E402
    plan_sync,
)

TIER_LABELS = ["topology.volcano.sh/tor", "topology.volcano.sh/spine", "topology.volcano.sh/core"]
LIST_CALLS = 2  # one list of Nodes, one of HyperNodes


def make_nodes(count: int, per_tor: int = 16, tors_per_spine: int = 8) -> list[dict]:
    nodes = []
    for i in range(count):
        tor = i // per_tor
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": f"gpu-{i:05d}",
                    "uid": f"uid-{i}",
                    "resourceVersion": str(1000 + i),
                    "labels": {
                        "kubernetes.io/hostname": f"gpu-{i:05d}",
                        "nvidia.com/gpu.present": "true",
                        TIER_LABELS[0]: f"tor-{tor:03d}",
                        TIER_LABELS[1]: f"spine-{tor // tors_per_spine:02d}",
                        TIER_LABELS[2]: "core-0",
                    },
                },
                "status": {"capacity": {"cpu": "128", "memory": "1Ti", "nvidia.com/gpu": "8"}},
            }
        )
    return nodes


def as_live(manifests: dict) -> list[dict]:
    out = []
    for m in manifests.values():
        live = copy.deepcopy(m)
        live["metadata"].update(
            uid="u", resourceVersion="7", managedFields=[{"manager": "gpucloud-platform"}]
        )
        live["status"] = {"nodeCount": 1}
        out.append(live)
    return out


def plan(nodes: list[dict], live: list[dict]):
    found = tree_from_node_labels(nodes, TIER_LABELS)
    errors = tree_errors(found.tree, nodes)
    assert not errors, errors[:3]
    return plan_sync(tree_manifests(found.tree), live, prune=True)


def best_of(repeat: int, fn) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    nodes = make_nodes(args.nodes)
    desired = tree_manifests(tree_from_node_labels(nodes, TIER_LABELS).tree)
    live = as_live(desired)

    first_plan = plan(nodes, [])
    resync_plan = plan(nodes, live)
    assert not resync_plan.changed, resync_plan.summary()

    baseline = best_of(args.repeat, lambda: json.loads(json.dumps(nodes)))
    first = best_of(args.repeat, lambda: plan(nodes, []))
    resync = best_of(args.repeat, lambda: plan(nodes, live))

    writes_first = len(first_plan.create) + len(first_plan.update) + len(first_plan.delete)
    writes_resync = len(resync_plan.create) + len(resync_plan.update) + len(resync_plan.delete)
    print(f"fabric: {args.nodes} nodes, {len(desired)} HyperNodes over {len(TIER_LABELS)} tiers")
    print(f"baseline (JSON round trip of the Node list): {baseline:.4f} s")
    print(f"{'case':<18}{'API requests':>14}{'plan seconds':>15}{'x baseline':>12}")
    print(
        f"{'first sync':<18}{LIST_CALLS + writes_first:>14}{first:>15.4f}{first / baseline:>12.2f}"
    )
    print(
        f"{'unchanged resync':<18}{LIST_CALLS + writes_resync:>14}{resync:>15.4f}{resync / baseline:>12.2f}"
    )
    print(f"resync / first sync: {resync / first:.2f}")


if __name__ == "__main__":
    main()
