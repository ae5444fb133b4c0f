# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The network topology tree (Volcano HyperNodes) as a model. Pure.

A ``Tree`` maps HyperNode names to ``HyperNode`` values. A leaf HyperNode has
members of type ``Node``; a non-leaf has members of type ``HyperNode``, each
named by ``exactMatch``. Here: the tree's parts, how it is walked and which nodes
a HyperNode holds, as Volcano's scheduler resolves them. The rules the tree must
keep are ``topology.rules``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

KIND = "HyperNode"
MEMBER_NODE = "Node"
MEMBER_HYPERNODE = "HyperNode"
MEMBER_TYPES = (MEMBER_NODE, MEMBER_HYPERNODE)
SELECTORS = ("exactMatch", "regexMatch", "labelMatch")
# Volcano's own discovery marks the HyperNodes it owns with this label.
DISCOVERY_SOURCE_LABEL = "volcano.sh/network-topology-source"
DEFAULT_TIER_LABELS = ("topology.volcano.sh/tor", "topology.volcano.sh/spine")


@dataclass(frozen=True)
class Member:
    """One entry of ``spec.members``: a type and its selector (as in the CRD)."""

    type: str
    selector: Mapping[str, object]

    @property
    def selector_kinds(self) -> tuple[str, ...]:
        return tuple(k for k in SELECTORS if self.selector.get(k) is not None)

    @property
    def exact_name(self) -> str | None:
        exact = self.selector.get("exactMatch")
        if isinstance(exact, Mapping):
            name = exact.get("name")
            return name if isinstance(name, str) else None
        return None


@dataclass(frozen=True)
class HyperNode:
    """One switch (network performance domain): its name, tier and members."""

    name: str
    tier: int
    members: tuple[Member, ...]
    tier_name: str | None = None

    @property
    def is_leaf(self) -> bool:
        """A leaf holds nodes: none of its members is of type HyperNode."""
        return all(m.type != MEMBER_HYPERNODE for m in self.members)

    @property
    def child_names(self) -> list[str]:
        return [m.exact_name for m in self.members if m.type == MEMBER_HYPERNODE and m.exact_name]


Tree = dict[str, HyperNode]


def node_member(name: str) -> Member:
    return Member(MEMBER_NODE, {"exactMatch": {"name": name}})


def hypernode_member(name: str) -> Member:
    return Member(MEMBER_HYPERNODE, {"exactMatch": {"name": name}})


def switch(
    name: str,
    tier: int,
    nodes: Iterable[str] = (),
    children: Iterable[str] = (),
    tier_name: str | None = None,
) -> HyperNode:
    """A HyperNode whose members are exact node names or exact child names (sorted)."""
    members = [node_member(n) for n in sorted(set(nodes))]
    members += [hypernode_member(c) for c in sorted(set(children))]
    return HyperNode(name, tier, tuple(members), tier_name)


@dataclass
class NodeInfo:
    """What the rules need to know of a cluster Node."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)


def node_infos(nodes: Iterable[Mapping[str, object] | str | NodeInfo]) -> list[NodeInfo]:
    """Nodes given as names, ``{name, labels}`` or Kubernetes Node objects."""
    out = []
    for node in nodes:
        if isinstance(node, NodeInfo):
            out.append(node)
        elif isinstance(node, str):
            out.append(NodeInfo(node))
        else:
            meta = node.get("metadata") if isinstance(node.get("metadata"), Mapping) else node
            if not (isinstance(meta, Mapping)):  # narrows the type; cannot happen
                raise AssertionError("isinstance(meta, Mapping)")
            out.append(NodeInfo(str(meta.get("name")), dict(meta.get("labels") or {})))
    return out


def parents(tree: Mapping[str, HyperNode]) -> dict[str, list[str]]:
    """Child HyperNode name -> the HyperNodes that list it (in name order)."""
    out: dict[str, list[str]] = {}
    for name in sorted(tree):
        for child in tree[name].child_names:
            out.setdefault(child, []).append(name)
    return out


def roots(tree: Mapping[str, HyperNode]) -> list[str]:
    """HyperNodes no other HyperNode lists, highest tier first, then by name."""
    listed = parents(tree)
    return sorted((n for n in tree if n not in listed), key=lambda n: (-tier_of(tree[n]), n))


def tier_of(hn: HyperNode) -> int:
    """The HyperNode's tier, 0 where it is not an integer."""
    return hn.tier if isinstance(hn.tier, int) and not isinstance(hn.tier, bool) else 0


def match_labels(selector: Mapping[str, object], labels: Mapping[str, str]) -> bool:
    """A Kubernetes LabelSelector (matchLabels and matchExpressions) against node labels."""
    for key, value in (selector.get("matchLabels") or {}).items():  # type: ignore[union-attr]
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:  # type: ignore[union-attr]
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return bool(selector.get("matchLabels") or selector.get("matchExpressions"))


def leaf_nodes(hn: HyperNode, nodes: Sequence[NodeInfo] | None = None) -> list[str]:
    """The nodes a leaf HyperNode holds, as Volcano's scheduler resolves them.

    exactMatch names count whether or not the node exists; regexMatch (searched,
    like Go's MatchString) and labelMatch are resolved against ``nodes``.
    """
    out: list[str] = []
    for m in hn.members:
        if m.type != MEMBER_NODE:
            continue
        if m.exact_name:
            out.append(m.exact_name)
        elif nodes is not None and isinstance(m.selector.get("regexMatch"), Mapping):
            pattern = m.selector["regexMatch"].get("pattern")  # type: ignore[union-attr]
            try:
                rx = re.compile(str(pattern))
            except re.error:
                continue
            out += [n.name for n in nodes if rx.search(n.name)]
        elif nodes is not None and isinstance(m.selector.get("labelMatch"), Mapping):
            out += [n.name for n in nodes if match_labels(m.selector["labelMatch"], n.labels)]  # type: ignore[arg-type]
    return list(dict.fromkeys(out))


def nodes_under(
    tree: Mapping[str, HyperNode], name: str, nodes: Sequence[NodeInfo] | None = None
) -> list[str]:
    """The nodes a HyperNode spans: a leaf's own, a branch's through its children (a
    child that is not in the tree spans nothing; a cycle is followed once)."""
    out: list[str] = []
    seen: set[str] = set()
    stack = [name]
    while stack:
        current = stack.pop()
        hn = tree.get(current)
        if hn is None or current in seen:
            continue
        seen.add(current)
        if hn.is_leaf:
            out += leaf_nodes(hn, nodes)
        else:
            stack += hn.child_names
    return list(dict.fromkeys(out))


def node_leaves(
    tree: Mapping[str, HyperNode], nodes: Sequence[NodeInfo] | None = None
) -> dict[str, list[str]]:
    """Node name -> the leaf HyperNodes that hold it (in name order)."""
    out: dict[str, list[str]] = {}
    for name in sorted(tree):
        hn = tree[name]
        if hn.is_leaf:
            for node in leaf_nodes(hn, nodes):
                out.setdefault(node, []).append(name)
    return out


def nodes_in_no_leaf(
    tree: Mapping[str, HyperNode], nodes: Iterable[NodeInfo | str | Mapping[str, object]]
) -> list[str]:
    """Report no-leaf: the cluster nodes that no leaf HyperNode holds (not an error:
    Volcano schedules them only for jobs without a hard topology constraint)."""
    infos = node_infos(nodes)
    placed = node_leaves(tree, infos)
    return sorted(n.name for n in infos if n.name not in placed)


def needs_node_list(tree: Mapping[str, HyperNode]) -> bool:
    """Whether the tree's leaves can be resolved only with the Node list: some
    Node member selects by ``regexMatch`` or ``labelMatch``."""
    return any(
        m.type == MEMBER_NODE and not m.exact_name for hn in tree.values() for m in hn.members
    )


def walk(tree: Mapping[str, HyperNode]) -> list[tuple[int, str]]:
    """(depth, name) for every HyperNode reachable from a root, depth first, children by name.

    Safe on trees with cycles or missing members: each HyperNode is visited once.
    """
    out: list[tuple[int, str]] = []
    seen: set[str] = set()

    def visit(name: str, depth: int) -> None:
        if name in seen or name not in tree:
            return
        seen.add(name)
        out.append((depth, name))
        for child in sorted(tree[name].child_names):
            visit(child, depth + 1)

    for root in roots(tree):
        visit(root, 0)
    for name in sorted(tree):  # whatever only a cycle reaches
        visit(name, 0)
    return out
