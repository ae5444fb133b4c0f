# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Renderings of a topology tree people can read: indented text, Mermaid, Graphviz DOT.

All three show the same thing: every HyperNode with its tier, its member
HyperNodes below it, the nodes of each leaf, and the nodes in no leaf.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .tree import MEMBER_NODE, HyperNode, NodeInfo, leaf_nodes, parents, roots, walk


def _label(hn: HyperNode) -> str:
    return f"{hn.name} (tier {hn.tier})"


def _leaf_entries(hn: HyperNode, nodes: Sequence[NodeInfo] | None) -> list[str]:
    """Node names a leaf holds, plus a line per pattern when nodes are not known."""
    entries = leaf_nodes(hn, nodes)
    if nodes is None:
        for m in hn.members:
            if m.type == MEMBER_NODE and not m.exact_name:
                entries += [
                    f"{kind}: {json.dumps(m.selector[kind], sort_keys=True)}"
                    for kind in m.selector_kinds
                ]
    return sorted(entries)


def text_tree(
    tree: Mapping[str, HyperNode],
    nodes: Sequence[NodeInfo] | None = None,
    unplaced: Iterable[str] = (),
) -> str:
    """An indented tree, roots first (highest tier), children and nodes by name::

    spine-a (tier 2)
    ├── tor-1 (tier 1)
    │   ├── gpu-0
    │   └── gpu-1
    └── tor-2 (tier 1)
        └── gpu-2
    """
    lines: list[str] = []
    seen: set[str] = set()

    def children_of(hn: HyperNode) -> list[tuple[str, HyperNode | None]]:
        if hn.is_leaf:
            return [(n, None) for n in _leaf_entries(hn, nodes)]
        return [(c, tree.get(c)) for c in sorted(hn.child_names)]

    def visit(hn: HyperNode, prefix: str, last: bool, top: bool) -> None:
        seen.add(hn.name)
        if top:
            lines.append(_label(hn))
            inner = ""
        else:
            lines.append(prefix + ("└── " if last else "├── ") + _label(hn))
            inner = prefix + ("    " if last else "│   ")
        kids = children_of(hn)
        for i, (name, child) in enumerate(kids):
            is_last = i == len(kids) - 1
            if child is None:
                missing = "" if hn.is_leaf else " (missing)"
                lines.append(inner + ("└── " if is_last else "├── ") + name + missing)
            elif child.name in seen:
                lines.append(
                    inner
                    + ("└── " if is_last else "├── ")
                    + child.name
                    + " (already shown: cycle or second parent)"
                )
            else:
                visit(child, inner, is_last, False)

    for root in roots(tree):
        visit(tree[root], "", True, True)
    for _unused, name in walk(tree):
        if name not in seen:
            visit(tree[name], "", True, True)
    rest = sorted(unplaced)
    if rest:
        lines.append("(in no leaf HyperNode)")
        lines += [("└── " if i == len(rest) - 1 else "├── ") + n for i, n in enumerate(rest)]
    return "\n".join(lines) + ("\n" if lines else "")


def tree_data(
    tree: Mapping[str, HyperNode], nodes: Sequence[NodeInfo] | None = None
) -> list[dict[str, Any]]:
    """The tree as plain data: one entry per HyperNode in depth-first order."""
    up = parents(tree)
    out = []
    for depth, name in walk(tree):
        hn = tree[name]
        out.append(
            {
                "name": name,
                "tier": hn.tier,
                "tier_name": hn.tier_name,
                "depth": depth,
                "parent": (up.get(name) or [None])[0],
                "leaf": hn.is_leaf,
                "children": sorted(hn.child_names),
                "nodes": leaf_nodes(hn, nodes) if hn.is_leaf else [],
            }
        )
    return out


def _ids(
    tree: Mapping[str, HyperNode], node_names: Iterable[str]
) -> tuple[dict[str, str], dict[str, str]]:
    hn_ids = {name: f"h{i}" for i, name in enumerate(sorted(tree))}
    node_ids = {name: f"n{i}" for i, name in enumerate(sorted(set(node_names)))}
    return hn_ids, node_ids


def _edges(
    tree: Mapping[str, HyperNode], nodes: Sequence[NodeInfo] | None
) -> tuple[list[tuple[str, str]], list[tuple[str, str]], set[str]]:
    hn_edges, node_edges, node_names = [], [], set()
    for name in sorted(tree):
        hn = tree[name]
        if hn.is_leaf:
            for n in leaf_nodes(hn, nodes):
                node_edges.append((name, n))
                node_names.add(n)
        else:
            hn_edges += [(name, c) for c in sorted(hn.child_names) if c in tree]
    return hn_edges, node_edges, node_names


def mermaid(
    tree: Mapping[str, HyperNode],
    nodes: Sequence[NodeInfo] | None = None,
    unplaced: Iterable[str] = (),
) -> str:
    """A Mermaid flowchart, top (highest tier) down."""

    def esc(text: str) -> str:
        return text.replace('"', "#quot;")

    hn_edges, node_edges, node_names = _edges(tree, nodes)
    rest = sorted(set(unplaced) - node_names)
    hn_ids, node_ids = _ids(tree, node_names | set(rest))
    lines = ["flowchart TD"]
    for name in sorted(tree):
        lines.append(f'    {hn_ids[name]}["{esc(tree[name].name)}<br/>tier {tree[name].tier}"]')
    for n in sorted(node_names):
        lines.append(f'    {node_ids[n]}(["{esc(n)}"])')
    for parent, child in hn_edges:
        lines.append(f"    {hn_ids[parent]} --> {hn_ids[child]}")
    for leaf, n in node_edges:
        lines.append(f"    {hn_ids[leaf]} --> {node_ids[n]}")
    if rest:
        lines.append('    subgraph unplaced["in no leaf HyperNode"]')
        lines += [f'        {node_ids[n]}(["{esc(n)}"])' for n in rest]
        lines.append("    end")
    return "\n".join(lines) + "\n"


def dot(
    tree: Mapping[str, HyperNode],
    nodes: Sequence[NodeInfo] | None = None,
    unplaced: Iterable[str] = (),
) -> str:
    """A Graphviz digraph, top (highest tier) down; HyperNodes are boxes, nodes ellipses."""

    def q(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

    hn_edges, node_edges, node_names = _edges(tree, nodes)
    rest = sorted(set(unplaced) - node_names)
    lines = ["digraph topology {", "    rankdir=TB;", '    node [fontname="Helvetica"];']
    for name in sorted(tree):
        hn = tree[name]
        label = q(name)[:-1] + "\\ntier " + str(hn.tier) + '"'
        lines.append(f"    {q('hypernode/' + name)} [shape=box, style=rounded, label={label}];")
    for n in sorted(node_names):
        lines.append(f"    {q('node/' + n)} [shape=ellipse, label={q(n)}];")
    for parent, child in hn_edges:
        lines.append(f"    {q('hypernode/' + parent)} -> {q('hypernode/' + child)};")
    for leaf, n in node_edges:
        lines.append(f"    {q('hypernode/' + leaf)} -> {q('node/' + n)};")
    if rest:
        lines.append('    subgraph cluster_unplaced { label="in no leaf HyperNode"; style=dashed;')
        lines += [
            f"        {q('node/' + n)} [shape=ellipse, style=dashed, label={q(n)}];" for n in rest
        ]
        lines.append("    }")
    lines.append("}")
    return "\n".join(lines) + "\n"
