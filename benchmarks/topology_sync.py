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
the numbers compare across machines.

With ``--cluster`` it measures the same fabric through the API instead: the
``topology`` module (``source: inventory``, one switch entry per ToR, spine
and core, the ToRs listing their node names; the nodes need not exist) for a
first sync and an unchanged re-sync, against a ``kubernetes.core.k8s`` loop
(one task per HyperNode, lowest tier first) and a single
``kubernetes.core.k8s`` task listing every HyperNode, each also run twice.
The HyperNodes are deleted between the baseline and the module and at the
end; API requests are counted in every module process (see _api_counter.py).

    .venv/bin/python benchmarks/topology_sync.py [--nodes 1024] [--repeat 5]
    .venv/bin/python benchmarks/topology_sync.py --cluster [--nodes 1024]
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ansible_collections.gpucloud.platform.plugins.module_utils.topology.discovery import (
    tree_from_inventory,
    tree_from_node_labels,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.manifests import (
    tree_manifests,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.plan import (
    plan_tree_sync,
)

from _api_counter import (
    PlaybookRunner,
    add_common_arguments,
    api_client,
    default_kubeconfig,
    k8s_loop_playbook,
    print_table,
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
    """What ``topology``'s service computes between its list calls and its writes."""
    found = tree_from_node_labels(nodes, TIER_LABELS)
    return plan_tree_sync(found.tree, nodes, live, prune=True)


def best_of(repeat: int, fn) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def inventory_switches(nodes: list[dict]) -> list[dict]:
    """The fabric of ``make_nodes`` as the module's ``switches`` option."""
    switches: dict[str, dict] = {}
    for node in nodes:
        labels = node["metadata"]["labels"]
        below = None
        for tier, label in enumerate(TIER_LABELS, start=1):
            name = labels[label]
            sw = switches.setdefault(name, {"name": name, "tier": tier})
            if below is None:
                sw.setdefault("nodes", []).append(node["metadata"]["name"])
            elif below not in sw.setdefault("switches", []):
                sw["switches"].append(below)
            below = name
    return sorted(switches.values(), key=lambda sw: (sw["tier"], sw["name"]))


CLUSTER_PLAYBOOK = """\
- name: gpucloud.platform.topology
  hosts: localhost
  gather_facts: false
  tasks:
    - name: HyperNodes from the inventory description
      gpucloud.platform.topology:
        source: inventory
        switches: "{{ switches }}"
"""


def delete_hypernodes(kubeconfig: str, names: list[str]) -> int:
    from kubernetes import client

    custom = client.CustomObjectsApi(api_client(kubeconfig))
    group, version = "topology.volcano.sh", "v1alpha1"
    live = {
        h["metadata"]["name"]
        for h in custom.list_cluster_custom_object(group, version, "hypernodes")["items"]
    }
    gone = [n for n in names if n in live]
    for name in gone:
        custom.delete_cluster_custom_object(group, version, "hypernodes", name)
    return len(gone)


def cluster_main(args: argparse.Namespace) -> None:
    kubeconfig = args.kubeconfig or default_kubeconfig()
    nodes = make_nodes(args.nodes)
    switches = inventory_switches(nodes)
    desired = tree_manifests(tree_from_inventory(switches))
    ordered = sorted(desired.values(), key=lambda m: (m["spec"]["tier"], m["metadata"]["name"]))
    names = [m["metadata"]["name"] for m in ordered]
    if delete_hypernodes(kubeconfig, names):
        print("removed HyperNodes left over from an earlier run")
    items = [{"label": m["metadata"]["name"], "objects": [m]} for m in ordered]
    rows = []
    with PlaybookRunner(kubeconfig, keep=args.keep_workdir) as runner:
        try:
            loop = runner.write("k8s.yml", k8s_loop_playbook())
            loop_vars = runner.write_vars("k8s-loop.json", {"items": items})
            one = runner.write_vars(
                "k8s-one.json", {"items": [{"label": "all HyperNodes", "objects": ordered}]}
            )
            rows.append(runner.run("k8s loop, first sync", loop, loop_vars))
            rows.append(runner.run("k8s loop, unchanged", loop, loop_vars))
            delete_hypernodes(kubeconfig, names)
            rows.append(runner.run("k8s one task (list), first", loop, one))
            rows.append(runner.run("k8s one task (list), unchanged", loop, one))
            delete_hypernodes(kubeconfig, names)
            module = runner.write("topology.yml", CLUSTER_PLAYBOOK)
            module_vars = runner.write_vars("topology.json", {"switches": switches})
            rows.append(runner.run("topology module, first sync", module, module_vars))
            rows.append(runner.run("topology module, unchanged", module, module_vars))
        finally:
            delete_hypernodes(kubeconfig, names)
    print(
        f"fabric: {args.nodes} nodes (from the inventory description), "
        f"{len(desired)} HyperNodes over {len(TIER_LABELS)} tiers"
    )
    print_table("", rows, rows[0], len(desired), "HyperNode")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--cluster", action="store_true", help="sync through the API of a running cluster"
    )
    add_common_arguments(parser)
    args = parser.parse_args()
    if args.cluster:
        cluster_main(args)
        return

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
