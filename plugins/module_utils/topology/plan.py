# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a topology sync must write to make the cluster's HyperNodes equal a tree.

The plan never touches a HyperNode without ``platform.io/managed-by:
gpucloud-platform`` (for example those Volcano's discovery labels
``volcano.sh/network-topology-source``): a desired name already held by such a
HyperNode is a conflict, reported before anything is written.

Write order keeps the scheduler's view consistent while the sync runs:
creations from the lowest tier up (a parent never names a missing child for
long), then updates from the lowest tier up with those that only drop members
first (a moved node is never in two leaves at once), then deletions from the
highest tier down.

The ``hypernode`` module changes one HyperNode of a tree it does not own as a
whole: ``plan_hypernode`` says what that change does, and
``introduced_errors`` refuses only the problems the change brings in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..common.errors import FieldError, PlatformValidationError, raise_if
from ..common.names import LABEL_MANAGED_BY, MANAGED_BY
from ..common.objects import differs, strip_server_fields
from .manifests import is_managed, tree_from_manifests, tree_manifests
from .rules import tree_errors
from .tree import DISCOVERY_SOURCE_LABEL, NodeInfo, Tree, needs_node_list, node_leaves


@dataclass
class SyncPlan:
    create: list[dict[str, Any]] = field(default_factory=list)
    update: list[tuple[dict[str, Any], dict[str, Any]]] = field(
        default_factory=list
    )  # (desired, live)
    delete: list[dict[str, Any]] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # managed, no longer needed, kept (prune is off)
    conflicts: list[FieldError] = field(default_factory=list)
    moved_nodes: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.create or self.update or self.delete)

    def summary(self) -> dict[str, list[str]]:
        return {
            "created": [m["metadata"]["name"] for m in self.create],
            "updated": [d["metadata"]["name"] for d, _unused in self.update],
            "deleted": [o["metadata"]["name"] for o in self.delete],
            "unchanged": list(self.unchanged),
            "stale": list(self.stale),
        }

    def diff(self) -> dict[str, dict[str, Any]]:
        """The HyperNodes the plan changes, before and after, by name."""
        before = {d["metadata"]["name"]: strip_server_fields(live) for d, live in self.update}
        before.update({o["metadata"]["name"]: strip_server_fields(o) for o in self.delete})
        after = {m["metadata"]["name"]: m for m in self.create}
        after.update({d["metadata"]["name"]: d for d, _unused in self.update})
        return {"before": before, "after": after}


def _tier(obj: Mapping[str, Any]) -> int:
    tier = (obj.get("spec") or {}).get("tier")
    return tier if isinstance(tier, int) else 0


def _members(obj: Mapping[str, Any]) -> list[str]:
    import json

    return [json.dumps(m, sort_keys=True) for m in (obj.get("spec") or {}).get("members") or []]


def _adds_members(desired: Mapping[str, Any], live: Mapping[str, Any]) -> bool:
    return bool(set(_members(desired)) - set(_members(live)))


def unmanaged_conflict(name: str, live: Mapping[str, Any]) -> FieldError:
    """Rule never-touch-unmanaged: a HyperNode without the managed-by label is only read."""
    labels = (live.get("metadata") or {}).get("labels") or {}
    owner = (
        f"Volcano's {labels[DISCOVERY_SOURCE_LABEL]!r} discovery"
        if DISCOVERY_SOURCE_LABEL in labels
        else "someone else"
    )
    return FieldError(
        f"{name}.metadata.name",
        f"HyperNode {name!r} already exists, made by {owner} (it lacks {LABEL_MANAGED_BY}={MANAGED_BY}); "
        f"the platform never changes it: choose another name (name_template), or delete {name!r} "
        "or turn that discovery off first",
    )


def plan_sync(
    desired: Mapping[str, Mapping[str, Any]], live: Iterable[Mapping[str, Any]], prune: bool = False
) -> SyncPlan:
    """Compare desired manifests (by name) with every live HyperNode."""
    plan = SyncPlan()
    live_by_name = {o["metadata"]["name"]: dict(o) for o in live}
    for name in sorted(desired):
        want = dict(desired[name])
        have = live_by_name.get(name)
        if have is None:
            plan.create.append(want)
        elif not is_managed(have):
            plan.conflicts.append(unmanaged_conflict(name, have))
        elif differs(want, have):
            plan.update.append((want, have))
        else:
            plan.unchanged.append(name)
    for name in sorted(live_by_name):
        have = live_by_name[name]
        if name not in desired and is_managed(have):
            if prune:
                plan.delete.append(have)
            else:
                plan.stale.append(name)
    plan.create.sort(key=lambda m: (_tier(m), m["metadata"]["name"]))
    plan.update.sort(
        key=lambda p: (_tier(p[0]), _adds_members(p[0], p[1]), p[0]["metadata"]["name"])
    )
    plan.delete.sort(key=lambda o: (-_tier(o), o["metadata"]["name"]))
    plan.moved_nodes = moved_nodes(
        [o for o in live_by_name.values() if is_managed(o)], desired.values()
    )
    return plan


def plan_tree_sync(
    tree: Tree,
    nodes: Iterable[Mapping[str, object] | NodeInfo | str],
    live: Iterable[Mapping[str, Any]],
    prune: bool = False,
) -> SyncPlan:
    """The plan that makes the live HyperNodes equal ``tree``; raises
    ``PlatformValidationError`` when the tree breaks a rule or needs the name of
    an unmanaged HyperNode, so that nothing is written for a refused tree."""
    raise_if(tree_errors(tree, nodes))
    plan = plan_sync(tree_manifests(tree), live, prune=prune)
    raise_if(plan.conflicts)
    return plan


def moved_nodes(
    before: Iterable[Mapping[str, Any]], after: Iterable[Mapping[str, Any]]
) -> dict[str, dict[str, list[str]]]:
    """Nodes whose (exactMatch) leaf changes: {node: {from: [...], to: [...]}}."""
    old, _unused = tree_from_manifests(before)
    new, _unused = tree_from_manifests(after)
    was, now = node_leaves(old), node_leaves(new)
    return {
        n: {"from": was.get(n, []), "to": now.get(n, [])}
        for n in sorted(set(was) | set(now))
        if was.get(n, []) != now.get(n, [])
    }


# --- one HyperNode ------------------------------------------------------------

ACTIONS = ("created", "updated", "deleted", "none")


@dataclass
class HyperNodeChange:
    """One HyperNode made ``desired`` (None: absent) over ``live``, with the cluster's
    tree ``before`` and ``after`` the change."""

    name: str
    desired: dict[str, Any] | None
    live: dict[str, Any] | None
    before: Tree
    after: Tree

    @property
    def needs_nodes(self) -> bool:
        """The Node list is read only when a leaf, before or after, selects by pattern or label."""
        return needs_node_list(self.before) or needs_node_list(self.after)

    @property
    def action(self) -> str:
        return hypernode_action(self.desired, self.live)


def hypernode_action(desired: Mapping[str, Any] | None, live: Mapping[str, Any] | None) -> str:
    """What writing ``desired`` (None: absent) over ``live`` does: one of ``ACTIONS``."""
    if desired is None:
        return "none" if live is None else "deleted"
    if live is None:
        return "created"
    return "updated" if differs(desired, live) else "none"


def plan_hypernode(
    name: str, desired: Mapping[str, Any] | None, live_all: Iterable[Mapping[str, Any]]
) -> HyperNodeChange:
    """The change to one HyperNode and the trees before and after it; raises
    ``PlatformValidationError`` when the live HyperNode of that name is unmanaged."""
    live_all = [dict(o) for o in live_all]
    live = next((o for o in live_all if o["metadata"]["name"] == name), None)
    if live is not None and not is_managed(live):
        raise PlatformValidationError([unmanaged_conflict(name, live)])
    others = [o for o in live_all if o["metadata"]["name"] != name]
    before, _unused = tree_from_manifests(live_all)
    after, _unused = tree_from_manifests(others + ([dict(desired)] if desired else []))
    return HyperNodeChange(name, dict(desired) if desired else None, live, before, after)


def introduced_errors(
    change: HyperNodeChange, nodes: Iterable[Mapping[str, object] | NodeInfo | str] | None = None
) -> list[FieldError]:
    """Rule only-what-it-introduces: one HyperNode's change is refused for the tree
    rules it breaks that the cluster's tree did not break already; those are left
    to the ``topology`` sync, which owns the whole tree."""
    infos = None if nodes is None else list(nodes)
    already = {str(e) for e in tree_errors(change.before, infos)}
    return [e for e in tree_errors(change.after, infos) if str(e) not in already]
