# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The network topology tree (Volcano HyperNodes) and the rules it must keep.

A ``Tree`` maps HyperNode names to ``HyperNode`` values. A leaf HyperNode has
members of type ``Node``; a non-leaf has members of type ``HyperNode``, each
named by ``exactMatch``. Each rule below is one function whose name and
docstring start with ``Rule <name>:``; ``tree_errors`` runs all of them.

Volcano 1.15.1 itself refuses only part of this at admission (the CRD allows
tier 0, and neither the CRD nor the admission policy stops a ``regexMatch`` on a
``HyperNode`` member, a switch with two parents or a cycle: the scheduler then
drops the member or refuses to build its HyperNode cache). These rules find all
of them before anything is written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..common.errors import FieldError
from ..common.names import is_dns_subdomain

KIND = "HyperNode"
MEMBER_NODE = "Node"
MEMBER_HYPERNODE = "HyperNode"
MEMBER_TYPES = (MEMBER_NODE, MEMBER_HYPERNODE)
SELECTORS = ("exactMatch", "regexMatch", "labelMatch")
# Volcano's own discovery marks the HyperNodes it owns with this label.
DISCOVERY_SOURCE_LABEL = "volcano.sh/network-topology-source"
DEFAULT_TIER_LABELS = ("topology.volcano.sh/tor", "topology.volcano.sh/spine")

# The CRD's pattern for exactMatch.name is a DNS-1123 subdomain (common/names.is_dns_subdomain).
# Python re features Go's RE2 (which Volcano compiles patterns with) refuses.
_NOT_RE2 = re.compile(r"\(\?<?[=!]|\\[1-9]")


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


# --- rules on one HyperNode -------------------------------------------------


def _where(hn: HyperNode, path: str) -> str:
    return f"{hn.name}.{path}"


def name_errors(field_name: str, value: object, what: str) -> list[FieldError]:
    """Rule dns-subdomain: HyperNode and exactMatch names are DNS-1123 subdomains (CRD pattern)."""
    if not isinstance(value, str) or not value:
        return [FieldError(field_name, f"{value!r} must be a non-empty {what} name")]
    if not is_dns_subdomain(value):
        return [
            FieldError(
                field_name,
                f"{value!r} is not a valid {what} name: a DNS-1123 subdomain of at most 253 "
                "characters (lower-case letters, digits, '-' and '.', starting and ending "
                "with a letter or digit) is accepted",
            )
        ]
    return []


def rule_tier_positive(hn: HyperNode) -> list[FieldError]:
    """Rule tier-positive: spec.tier is an integer of at least 1 (tier 1 = the switches nodes hang off)."""
    if isinstance(hn.tier, bool) or not isinstance(hn.tier, int) or hn.tier < 1:
        return [
            FieldError(
                _where(hn, "spec.tier"),
                f"{hn.tier!r} is not a tier: HyperNode {hn.name!r} needs an integer tier of 1 "
                "or more (1 for a switch with nodes, higher for the switches above it)",
            )
        ]
    return []


def rule_members_present(hn: HyperNode) -> list[FieldError]:
    """Rule members-present: a HyperNode has at least one member (CRD minItems 1)."""
    if not hn.members:
        return [
            FieldError(
                _where(hn, "spec.members"),
                f"HyperNode {hn.name!r} has no members; give it at least one Node or HyperNode member",
            )
        ]
    return []


def rule_member_type(hn: HyperNode) -> list[FieldError]:
    """Rule member-type: spec.members[].type is Node or HyperNode."""
    return [
        FieldError(
            _where(hn, f"spec.members[{i}].type"),
            f"{m.type!r} is not a member type of HyperNode {hn.name!r}; use Node or HyperNode",
        )
        for i, m in enumerate(hn.members)
        if m.type not in MEMBER_TYPES
    ]


def rule_one_selector(hn: HyperNode) -> list[FieldError]:
    """Rule one-selector: each member has exactly one of exactMatch, regexMatch, labelMatch."""
    errors = []
    for i, m in enumerate(hn.members):
        kinds = m.selector_kinds
        if len(kinds) != 1:
            found = ", ".join(kinds) if kinds else "none"
            errors.append(
                FieldError(
                    _where(hn, f"spec.members[{i}].selector"),
                    f"HyperNode {hn.name!r} member {i} has {len(kinds)} selectors ({found}); "
                    "exactly one of exactMatch, regexMatch or labelMatch is accepted",
                )
            )
    return errors


def rule_leaf_or_branch(hn: HyperNode) -> list[FieldError]:
    """Rule leaf-or-branch: members are all Nodes (a leaf) or all HyperNodes (a non-leaf), never both."""
    types = {m.type for m in hn.members if m.type in MEMBER_TYPES}
    if len(types) > 1:
        return [
            FieldError(
                _where(hn, "spec.members"),
                f"HyperNode {hn.name!r} mixes Node and HyperNode members; a node sits only in a "
                "leaf HyperNode: move its nodes into a leaf of lower tier and list that leaf instead",
            )
        ]
    return []


def rule_hypernode_members_exact(hn: HyperNode) -> list[FieldError]:
    """Rule hypernode-exact-match: a member of type HyperNode is selected by exactMatch only;
    regexMatch and labelMatch belong in leaf HyperNodes (members of type Node)."""
    errors = []
    for i, m in enumerate(hn.members):
        if m.type != MEMBER_HYPERNODE:
            continue
        for kind in m.selector_kinds:
            if kind != "exactMatch":
                errors.append(
                    FieldError(
                        _where(hn, f"spec.members[{i}].selector.{kind}"),
                        f"{kind} on a member of type HyperNode in non-leaf HyperNode {hn.name!r}: "
                        "a HyperNode member is matched by exactMatch {name: <hypernode>} only; "
                        "regexMatch and labelMatch are accepted only in leaf HyperNodes (members of type Node)",
                    )
                )
    return errors


def rule_selector_values(hn: HyperNode) -> list[FieldError]:
    """Rule selector-values: exactMatch names are DNS subdomains, regexMatch patterns
    compile, labelMatch selects on at least one label."""
    errors: list[FieldError] = []
    for i, m in enumerate(hn.members):
        sel = m.selector
        path = f"spec.members[{i}].selector"
        if "exactMatch" in m.selector_kinds:
            exact = sel["exactMatch"]
            value = exact.get("name") if isinstance(exact, Mapping) else exact
            what = "node" if m.type == MEMBER_NODE else "HyperNode"
            errors += name_errors(_where(hn, path + ".exactMatch.name"), value, what)
        if "regexMatch" in m.selector_kinds:
            regex = sel["regexMatch"]
            pattern = regex.get("pattern") if isinstance(regex, Mapping) else None
            if not isinstance(pattern, str) or not pattern:
                errors.append(
                    FieldError(
                        _where(hn, path + ".regexMatch.pattern"),
                        f"{pattern!r} must be a non-empty regular expression",
                    )
                )
            else:
                try:
                    re.compile(pattern)
                except re.error as exc:
                    errors.append(
                        FieldError(
                            _where(hn, path + ".regexMatch.pattern"),
                            f"{pattern!r} is not a regular expression: {exc}",
                        )
                    )
                else:
                    if _NOT_RE2.search(pattern):
                        errors.append(
                            FieldError(
                                _where(hn, path + ".regexMatch.pattern"),
                                f"{pattern!r} uses a lookaround or backreference, which Go's regexp (used by "
                                "Volcano) does not support; use a plain RE2 pattern such as '^gpu-rack1-'",
                            )
                        )
        if "labelMatch" in m.selector_kinds:
            lm = sel["labelMatch"]
            if not isinstance(lm, Mapping) or not (
                lm.get("matchLabels") or lm.get("matchExpressions")
            ):
                errors.append(
                    FieldError(
                        _where(hn, path + ".labelMatch"),
                        f"{lm!r} selects nothing (Volcano ignores an empty labelMatch); give matchLabels or matchExpressions",
                    )
                )
    return errors


HYPERNODE_RULES = (
    rule_tier_positive,
    rule_members_present,
    rule_member_type,
    rule_one_selector,
    rule_leaf_or_branch,
    rule_hypernode_members_exact,
    rule_selector_values,
)


def hypernode_errors(hn: HyperNode) -> list[FieldError]:
    """Every rule that concerns one HyperNode alone."""
    errors = name_errors(f"{hn.name}.metadata.name", hn.name, "HyperNode")
    for rule in HYPERNODE_RULES:
        errors += rule(hn)
    return errors


# --- rules on the whole tree ------------------------------------------------


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
    return sorted((n for n in tree if n not in listed), key=lambda n: (-_tier(tree[n]), n))


def _tier(hn: HyperNode) -> int:
    return hn.tier if isinstance(hn.tier, int) and not isinstance(hn.tier, bool) else 0


def rule_members_exist(tree: Mapping[str, HyperNode]) -> list[FieldError]:
    """Rule members-exist: every HyperNode member names a HyperNode of the tree."""
    errors = []
    for name in sorted(tree):
        for i, m in enumerate(tree[name].members):
            child = m.exact_name
            if m.type == MEMBER_HYPERNODE and child and child not in tree:
                errors.append(
                    FieldError(
                        f"{name}.spec.members[{i}].selector.exactMatch.name",
                        f"HyperNode {name!r} lists HyperNode {child!r}, which is not in the tree; "
                        f"add {child!r} or remove the member",
                    )
                )
    return errors


def rule_one_parent(tree: Mapping[str, HyperNode]) -> list[FieldError]:
    """Rule one-parent: a HyperNode is a member of at most one HyperNode (the scheduler
    refuses to build its cache otherwise)."""
    return [
        FieldError(
            f"{ps[1]}.spec.members",
            f"HyperNode {child!r} is listed by {', '.join(repr(p) for p in ps)}; a switch has one "
            f"parent: keep {child!r} in one of them",
        )
        for child, ps in sorted(parents(tree).items())
        if len(ps) > 1
    ]


def rule_no_cycles(tree: Mapping[str, HyperNode]) -> list[FieldError]:
    """Rule no-cycles: following HyperNode members never leads back to where it started."""
    errors = []
    seen_cycles: set[frozenset[str]] = set()
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        path.append(name)
        for child in tree[name].child_names:
            if child not in tree:
                continue
            if state.get(child) == 1:
                cycle = [*path[path.index(child) :], child]
                key = frozenset(cycle)
                if key not in seen_cycles:
                    seen_cycles.add(key)
                    errors.append(
                        FieldError(
                            f"{name}.spec.members",
                            f"HyperNode cycle {' -> '.join(cycle)}: a HyperNode cannot contain itself; "
                            f"remove {child!r} from the members of {name!r}",
                        )
                    )
            elif child not in state:
                visit(child, path)
        path.pop()
        state[name] = 2

    for name in sorted(tree):
        if name not in state:
            visit(name, [])
    return errors


def rule_tiers_increase_upward(tree: Mapping[str, HyperNode]) -> list[FieldError]:
    """Rule tiers-increase-upward: a HyperNode's tier is higher than the tier of every member HyperNode."""
    errors = []
    for name in sorted(tree):
        hn = tree[name]
        for child in hn.child_names:
            if child in tree and _tier(tree[child]) >= _tier(hn):
                errors.append(
                    FieldError(
                        f"{name}.spec.tier",
                        f"HyperNode {name!r} has tier {hn.tier} but its member {child!r} has tier "
                        f"{tree[child].tier}; tiers increase upward: give {name!r} a tier above {tree[child].tier}",
                    )
                )
    return errors


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


def rule_node_in_one_leaf(
    tree: Mapping[str, HyperNode], nodes: Sequence[NodeInfo] | None = None
) -> list[FieldError]:
    """Rule node-in-one-leaf: no node sits in two leaf HyperNodes."""
    return [
        FieldError(
            f"{leaves[1]}.spec.members",
            f"node {node!r} is in leaf HyperNodes {', '.join(repr(x) for x in leaves)}; every node "
            f"sits in exactly one leaf HyperNode: keep {node!r} in one of them",
        )
        for node, leaves in sorted(node_leaves(tree, nodes).items())
        if len(leaves) > 1
    ]


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


TREE_RULES = (rule_members_exist, rule_one_parent, rule_no_cycles, rule_tiers_increase_upward)


def tree_errors(
    tree: Mapping[str, HyperNode],
    nodes: Iterable[NodeInfo | str | Mapping[str, object]] | None = None,
) -> list[FieldError]:
    """Every rule, for every HyperNode and for the tree as a whole."""
    errors: list[FieldError] = []
    for name in sorted(tree):
        errors += hypernode_errors(tree[name])
    for rule in TREE_RULES:
        errors += rule(tree)
    errors += rule_node_in_one_leaf(tree, None if nodes is None else node_infos(nodes))
    return errors


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
