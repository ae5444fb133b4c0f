# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules a network topology tree (Volcano HyperNodes) must keep. Pure.

Each rule below is one function whose name and docstring start with ``Rule <name>:``;
``hypernode_errors`` runs those on one HyperNode, ``tree_errors`` all of them, for every
HyperNode and for the tree as a whole. The tree itself is ``topology.tree``.

Volcano 1.15.1 itself refuses only part of this at admission (the CRD allows
tier 0, and neither the CRD nor the admission policy stops a ``regexMatch`` on a
``HyperNode`` member, a switch with two parents or a cycle: the scheduler then
drops the member or refuses to build its HyperNode cache). These rules find all
of them before anything is written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from ..common.errors import FieldError
from ..common.names import is_dns_subdomain
from .tree import (
    MEMBER_HYPERNODE,
    MEMBER_NODE,
    MEMBER_TYPES,
    HyperNode,
    NodeInfo,
    node_infos,
    node_leaves,
    parents,
    tier_of,
)

# The CRD's pattern for exactMatch.name is a DNS-1123 subdomain (common/names.is_dns_subdomain).
# Python re features Go's RE2 (which Volcano compiles patterns with) refuses.
_NOT_RE2 = re.compile(r"\(\?<?[=!]|\\[1-9]")


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
            if child in tree and tier_of(tree[child]) >= tier_of(hn):
                errors.append(
                    FieldError(
                        f"{name}.spec.tier",
                        f"HyperNode {name!r} has tier {hn.tier} but its member {child!r} has tier "
                        f"{tree[child].tier}; tiers increase upward: give {name!r} a tier above {tree[child].tier}",
                    )
                )
    return errors


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
