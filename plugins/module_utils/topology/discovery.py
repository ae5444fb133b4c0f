# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a topology tree comes from: node labels, or a description in inventory.

From labels: ``tier_labels`` lists one label per tier, lowest first (for
example ``[topology.volcano.sh/tor, topology.volcano.sh/spine]``); a node's
value of the first label names its leaf (tier 1), the next label names that
leaf's parent (tier 2), and so on, for any number of tiers. Volcano's own
``label`` discovery lists its labels the other way round (highest first, ending
with ``kubernetes.io/hostname``).

From inventory: a list of switches, each with a name, a tier and either
``nodes`` (or ``node_pattern`` / ``node_labels``) or member ``switches``.

Both raise ``PlatformValidationError`` for input they cannot read; the rules
of ``topology.rules.tree_errors`` are checked separately on the result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..common.errors import FieldError, raise_if
from ..common.names import label_key_errors, label_selector_errors
from .rules import name_errors
from .tree import (
    DEFAULT_TIER_LABELS,
    MEMBER_HYPERNODE,
    MEMBER_NODE,
    HyperNode,
    Member,
    NodeInfo,
    Tree,
    hypernode_member,
    node_infos,
    node_member,
    nodes_in_no_leaf,
)

DEFAULT_NAME_TEMPLATE = "{value}"


@dataclass
class Discovered:
    """A tree plus the nodes that carry no leaf label."""

    tree: Tree
    unplaced_nodes: list[str] = field(default_factory=list)


def tier_label_errors(tier_labels: object, name_template: object) -> list[FieldError]:
    """Rule tier-labels: one distinct, non-empty label key per tier, lowest tier first;
    the name template uses {value} and may use {tier}."""
    errors = []
    if not isinstance(tier_labels, (list, tuple)) or not tier_labels:
        errors.append(
            FieldError(
                "tier_labels",
                f"{tier_labels!r} must list at least one node label key, lowest tier first",
            )
        )
    else:
        seen: set[str] = set()
        for i, label in enumerate(tier_labels):
            if not isinstance(label, str) or not label:
                errors.append(FieldError(f"tier_labels[{i}]", f"{label!r} is not a label key"))
            elif label_key_errors(f"tier_labels[{i}]", label):
                errors += label_key_errors(f"tier_labels[{i}]", label)
            elif label in seen:
                errors.append(
                    FieldError(
                        f"tier_labels[{i}]",
                        f"{label!r} is listed twice; each tier needs its own label",
                    )
                )
            seen.add(str(label))
    if not isinstance(name_template, str) or "{value}" not in name_template:
        errors.append(
            FieldError(
                "name_template",
                f"{name_template!r} must contain '{{value}}' (and may contain '{{tier}}'), for example '{{value}}' or 't{{tier}}-{{value}}'",
            )
        )
    else:
        try:
            name_template.format(value="v", tier=1)
        except (KeyError, IndexError, ValueError) as exc:
            errors.append(
                FieldError(
                    "name_template",
                    f"{name_template!r} is not a usable template ({exc}); only {{value}} and {{tier}} are known",
                )
            )
    return errors


def check_source_options(params: Mapping[str, Any]) -> None:
    """The options of a ``labels`` source, checked before the cluster is read;
    raises ``PlatformValidationError``. The tree itself (from either source) is
    checked once the Nodes are read. The ``node_selector`` of every source is checked by
    rule label-selector (``common.names``), so a bad key is refused naming the option,
    not by the API server."""
    errors = node_selector_errors(params)
    if params["source"] == "labels":
        errors += tier_label_errors(params["tier_labels"], params["name_template"])
    raise_if(errors)


def node_selector_errors(params: Mapping[str, Any]) -> list[FieldError]:
    """Rule label-selector for the ``node_selector`` option of the topology modules."""
    return label_selector_errors("node_selector", params.get("node_selector"))


def check_node_selector(params: Mapping[str, Any]) -> None:
    """``topology_info``'s input check before connecting: its ``node_selector``."""
    raise_if(node_selector_errors(params))


def skipped_tier_errors(
    node: NodeInfo, tier_labels: Sequence[str], present: Sequence[bool], missing: int
) -> list[FieldError]:
    """Rule no-skipped-tier, for a node that lacks the label of tier ``missing + 1``: an
    error when it has the label of a tier above it."""
    label = tier_labels[missing]
    higher = [tier_labels[j] for j in range(missing + 1, len(tier_labels)) if present[j]]
    if not higher:
        return []
    return [
        FieldError(
            f"{node.name}.metadata.labels.{label}",
            f"node {node.name!r} has {higher[0]!r} but no {label!r} label; tiers cannot be "
            f"skipped: add {label!r} or remove the labels above it",
        )
    ]


@dataclass
class LabelledTree:
    """What the node labels say, node by node in name order: each HyperNode's tier, the
    label value and node that first named it, each leaf's nodes, each switch's parent (and
    the node that said so) and children, the nodes in no leaf, and every error."""

    tier_labels: Sequence[str]
    name_template: str
    tiers: dict[str, int] = field(default_factory=dict)
    # hypernode -> (tier, value, first node)
    owner: dict[str, tuple[int, str, str]] = field(default_factory=dict)
    leaf_nodes: dict[str, list[str]] = field(default_factory=dict)
    # child hypernode -> (parent, node that said so)
    parent_of: dict[str, tuple[str, str]] = field(default_factory=dict)
    children: dict[str, set[str]] = field(default_factory=dict)
    unplaced: list[str] = field(default_factory=list)
    errors: list[FieldError] = field(default_factory=list)

    def add_node(self, node: NodeInfo) -> None:
        """The node's labels, lowest tier first, up to the first that is missing or wrong."""
        tier_labels = self.tier_labels
        present = [label in node.labels for label in tier_labels]
        if not present[0]:
            self.unplaced.append(node.name)
            if any(present):
                self.errors.append(
                    FieldError(
                        f"{node.name}.metadata.labels.{tier_labels[0]}",
                        f"node {node.name!r} has {tier_labels[present.index(True)]!r} but no "
                        f"{tier_labels[0]!r} label; label it with its tier-1 switch or remove the higher-tier labels",
                    )
                )
            return
        below: str | None = None
        for i, label in enumerate(tier_labels):
            if label not in node.labels:
                self.errors += skipped_tier_errors(node, tier_labels, present, i)
                return
            name = self.add_switch(node, i, below)
            if name is None:
                return
            below = name

    def add_switch(self, node: NodeInfo, i: int, below: str | None) -> str | None:
        """The HyperNode the node's label of tier ``i + 1`` names, with the node (a leaf) or
        the switch ``below`` it as its member; None, with the error, where it cannot be."""
        label = self.tier_labels[i]
        value = node.labels[label]
        tier = i + 1
        name = self.name_template.format(value=value, tier=tier)
        where = f"{node.name}.metadata.labels.{label}"
        error = self.naming_error(node, label, value, tier, name, where)
        if error is None:
            self.tiers[name] = tier
            if below is None:
                self.leaf_nodes.setdefault(name, []).append(node.name)
            else:
                error = self.link(node, i, below, name, where)
        if error is not None:
            self.errors.append(error)
            return None
        return name

    def naming_error(
        self, node: NodeInfo, label: str, value: str, tier: int, name: str, where: str
    ) -> FieldError | None:
        """Why the label's HyperNode name cannot be: not a DNS-1123 subdomain, or the name
        of a HyperNode of another tier."""
        if name_errors(where, name, "HyperNode"):
            return FieldError(
                where,
                f"node {node.name!r}: label {label}={value!r} gives HyperNode name {name!r}, which is not a "
                "DNS-1123 subdomain (lower-case letters, digits, '-' and '.'); use such label values or a name_template that yields one",
            )
        first = self.owner.setdefault(name, (tier, value, node.name))
        if first[0] != tier:
            return FieldError(
                where,
                f"node {node.name!r}: label {label}={value!r} (tier {tier}) and the tier-{first[0]} label value "
                f"{first[1]!r} of node {first[2]!r} both give HyperNode {name!r}; use distinct values per tier "
                "or a name_template with '{tier}'",
            )
        return None

    def link(self, node: NodeInfo, i: int, below: str, name: str, where: str) -> FieldError | None:
        """Rule one-parent-by-labels: ``below`` becomes a member of ``name`` unless another
        node already put it under another switch (then the error names this node)."""
        known = self.parent_of.get(below)
        if known and known[0] != name:
            value = node.labels[self.tier_labels[i]]
            return FieldError(
                where,
                f"node {node.name!r} puts {self.tier_labels[i - 1]} {below!r} under {self.tier_labels[i]}={value!r} (HyperNode {name!r}), "
                f"but node {known[1]!r} puts it under {known[0]!r}; a switch has one parent: relabel one of these nodes",
            )
        self.parent_of.setdefault(below, (name, node.name))
        self.children.setdefault(name, set()).add(below)
        return None

    def tree(self) -> Tree:
        """The HyperNodes the labels name, by name: a leaf's nodes, then its child switches."""
        tree: Tree = {}
        for name, tier in self.tiers.items():
            members = tuple(node_member(n) for n in sorted(self.leaf_nodes.get(name, ())))
            members += tuple(hypernode_member(c) for c in sorted(self.children.get(name, ())))
            tree[name] = HyperNode(name, tier, members, self.tier_labels[tier - 1])
        return dict(sorted(tree.items()))


def tree_from_node_labels(
    nodes: Iterable[Mapping[str, object] | NodeInfo | str],
    tier_labels: Sequence[str],
    name_template: str = DEFAULT_NAME_TEMPLATE,
) -> Discovered:
    """Build the tree the node labels describe.

    Rule one-parent-by-labels: when two nodes' labels put the same switch under
    two different parents, the second node (by name) is named in the error.
    Rule no-skipped-tier: a node with a label for a higher tier must carry the
    labels of every tier below it.
    """
    raise_if(tier_label_errors(tier_labels, name_template))
    labelled = LabelledTree(tier_labels, name_template)
    for node in sorted(node_infos(nodes), key=lambda n: n.name):
        labelled.add_node(node)
    raise_if(labelled.errors)
    return Discovered(labelled.tree(), labelled.unplaced)


INVENTORY_KEYS = ("name", "tier", "tier_name", "nodes", "node_pattern", "node_labels", "switches")


def tree_from_inventory(switches: Sequence[Mapping[str, object]]) -> Tree:
    """Build the tree an inventory description gives, for example::

    - {name: spine-a, tier: 2, switches: [tor-1, tor-2]}
    - {name: tor-1, tier: 1, nodes: [gpu-0, gpu-1]}
    - {name: tor-2, tier: 1, node_pattern: "^gpu-rack2-"}
    - {name: tor-3, tier: 1, node_labels: {rack: "3"}}
    """
    errors: list[FieldError] = []
    tree: Tree = {}
    if not isinstance(switches, (list, tuple)):
        raise_if([FieldError("switches", f"{switches!r} must be a list of switches")])
    for i, sw in enumerate(switches):
        where = f"switches[{i}]"
        if not isinstance(sw, Mapping):
            errors.append(
                FieldError(where, f"{sw!r} is not a switch (a mapping with name, tier and members)")
            )
            continue
        unknown = sorted(set(sw) - set(INVENTORY_KEYS))
        if unknown:
            errors.append(
                FieldError(
                    where, f"unknown keys {unknown}; accepted keys: {', '.join(INVENTORY_KEYS)}"
                )
            )
        name = sw.get("name")
        if not isinstance(name, str) or not name:
            errors.append(FieldError(f"{where}.name", f"{name!r}: every switch needs a name"))
            continue
        if name in tree:
            errors.append(
                FieldError(
                    f"{where}.name", f"switch {name!r} is described twice; switch names are unique"
                )
            )
            continue
        tier = sw.get("tier")
        if isinstance(tier, str) and tier.strip().isdigit():
            tier = int(tier)
        members: list[Member] = []
        for key in ("nodes", "switches"):
            value = sw.get(key) or []
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                errors.append(FieldError(f"{where}.{key}", f"{value!r} must be a list of names"))
                continue
            make = node_member if key == "nodes" else hypernode_member
            members += [make(v) for v in sorted(set(value))]
        if sw.get("node_pattern") is not None:
            members.append(Member(MEMBER_NODE, {"regexMatch": {"pattern": sw["node_pattern"]}}))
        if sw.get("node_labels") is not None:
            labels = sw["node_labels"]
            members.append(
                Member(
                    MEMBER_NODE,
                    {
                        "labelMatch": {
                            "matchLabels": dict(labels) if isinstance(labels, Mapping) else labels
                        }
                    },
                )
            )
        tier_name = sw.get("tier_name")
        tree[name] = HyperNode(
            name, tier, tuple(members), tier_name if isinstance(tier_name, str) else None
        )  # type: ignore[arg-type]
    raise_if(errors)
    return tree


SOURCES = ("labels", "inventory")

# The argument spec of a module that computes the tree from a source (documented
# by the doc fragment gpucloud.platform.topology_tree).
TREE_OPTIONS: dict[str, dict[str, Any]] = {
    "tier_labels": {"type": "list", "elements": "str", "default": list(DEFAULT_TIER_LABELS)},
    "name_template": {"type": "str", "default": DEFAULT_NAME_TEMPLATE},
    "switches": {"type": "list", "elements": "dict"},
    "node_selector": {"type": "str"},
}


def tree_from_source(
    source: str,
    nodes: Iterable[Mapping[str, object] | NodeInfo | str],
    tier_labels: Sequence[str] = (),
    name_template: str = DEFAULT_NAME_TEMPLATE,
    switches: Sequence[Mapping[str, object]] | None = None,
) -> Discovered:
    """The tree a ``topology`` module run asks for, with the nodes in no leaf."""
    if source == "labels":
        return tree_from_node_labels(nodes, tier_labels, name_template)
    if source == "inventory":
        tree = tree_from_inventory(switches or [])
        return Discovered(tree, nodes_in_no_leaf(tree, nodes))
    raise_if(
        [
            FieldError(
                "source", f"{source!r} is not a topology source; use one of {', '.join(SOURCES)}"
            )
        ]
    )
    raise AssertionError("unreachable")


def member_summary(hn: HyperNode) -> dict[str, list[object]]:
    """A switch in the inventory shape (nodes / switches / patterns), for output."""
    out: dict[str, list[object]] = {"nodes": [], "switches": [], "patterns": []}
    for m in hn.members:
        if m.type == MEMBER_HYPERNODE and m.exact_name:
            out["switches"].append(m.exact_name)
        elif m.exact_name:
            out["nodes"].append(m.exact_name)
        else:
            out["patterns"].append(dict(m.selector))
    return out
