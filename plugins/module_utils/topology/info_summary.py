# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule run-summary for ``topology_info``: the HyperNode tree as a small table a person
reads (each HyperNode indented under its parent, its tier and what it holds), with the
nodes no leaf holds and the topology rules the tree breaks. Pure: the module's result in,
lines out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..common.table import aligned, shortened

HEADING = ("HYPERNODE", "TIER", "PARENT", "HOLDS")


def holds(hypernode: Mapping[str, Any]) -> str:
    """``2 HyperNode(s) (tor-0, tor-1)`` or ``8 node(s) (gpu-0, ... and 4 more)``. No
    ``: `` and no leading space in a row: Ansible's YAML output would quote it, out of
    line with the others."""
    if hypernode.get("leaf"):
        nodes = list(hypernode.get("nodes") or [])
        return f"{len(nodes)} node(s) ({shortened(nodes)})" if nodes else "no node"
    children = list(hypernode.get("children") or [])
    return f"{len(children)} HyperNode(s) ({shortened(children)})" if children else "nothing"


def tree_summary(
    hypernodes: Sequence[Mapping[str, Any]],
    unplaced: Sequence[str] = (),
    errors: Sequence[str] = (),
    source: str = "cluster",
) -> list[str]:
    """A headline (HyperNodes, tiers, nodes placed), the tree in depth-first order (each
    HyperNode after its parent), then the nodes left out and each rule the tree breaks."""
    tiers = sorted({h.get("tier") for h in hypernodes if h.get("tier") is not None})
    placed = sum(len(h.get("nodes") or []) for h in hypernodes if h.get("leaf"))
    where = "in the cluster" if source == "cluster" else f"from the {source}"
    lines = [
        f"topology {where}: {len(hypernodes)} HyperNode(s) in {len(tiers)} tier(s), "
        f"{placed} node(s) placed, {len(unplaced)} in no leaf, "
        + (f"{len(errors)} rule(s) broken" if errors else "no rule broken")
    ]
    if hypernodes:
        rows = [
            [
                str(h.get("name")),
                str(h.get("tier", "-")),
                str(h.get("parent") or "-"),
                holds(h),
            ]
            for h in hypernodes
        ]
        lines += aligned([list(HEADING), *rows])
    if unplaced:
        lines.append(f"nodes in no leaf HyperNode: {shortened(list(unplaced), most=10)}")
    lines += [f"broken: {e}" for e in errors]
    return lines


def info_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    """``topology_info``'s ``summary`` (``kube.runner.run_module(summary=...)``)."""
    del check_mode  # a read: the same words in check mode
    return tree_summary(
        result.get("hypernodes") or [],
        result.get("unplaced_nodes") or [],
        result.get("errors") or [],
        params.get("source") or "cluster",
    )
