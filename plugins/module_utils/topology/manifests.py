# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""HyperNode manifests (topology.volcano.sh/v1alpha1) to and from the tree model."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from ..common.errors import FieldError, raise_if
from ..common.names import HYPERNODE_API, LABEL_MANAGED_BY, MANAGED_BY
from .rules import hypernode_errors
from .tree import KIND, HyperNode, Member, Tree


def hypernode_manifest(hn: HyperNode, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The HyperNode object the platform applies: labelled managed-by gpucloud-platform."""
    meta_labels = dict(labels or {})
    meta_labels[LABEL_MANAGED_BY] = MANAGED_BY
    spec: dict[str, Any] = {"tier": hn.tier}
    if hn.tier_name:
        spec["tierName"] = hn.tier_name
    spec["members"] = [
        {"type": m.type, "selector": copy.deepcopy(dict(m.selector))} for m in hn.members
    ]
    return {
        "apiVersion": HYPERNODE_API,
        "kind": KIND,
        "metadata": {"name": hn.name, "labels": meta_labels},
        "spec": spec,
    }


def tree_manifests(
    tree: Mapping[str, HyperNode], labels: Mapping[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    return {name: hypernode_manifest(tree[name], labels) for name in sorted(tree)}


def is_managed(obj: Mapping[str, Any]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return labels.get(LABEL_MANAGED_BY) == MANAGED_BY


def hypernode_from_manifest(
    obj: Mapping[str, Any], field: str = ""
) -> tuple[HyperNode | None, list[FieldError]]:
    """Read one HyperNode object; shape errors (not a mapping, no tier, ...) come back as FieldErrors."""
    if not isinstance(obj, Mapping):
        return None, [
            FieldError(
                field, f"{obj!r} is not a HyperNode object (a mapping with metadata and spec)"
            )
        ]
    meta = obj.get("metadata") or {}
    name = meta.get("name") if isinstance(meta, Mapping) else None
    where = str(name) if name else field
    if not isinstance(name, str) or not name:
        return None, [
            FieldError(f"{field}.metadata.name", f"{name!r}: a HyperNode needs metadata.name")
        ]
    kind = obj.get("kind", KIND)
    if kind != KIND:
        return None, [
            FieldError(
                f"{where}.kind",
                f"{kind!r} is not a HyperNode; only kind HyperNode ({HYPERNODE_API}) is accepted",
            )
        ]
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return None, [
            FieldError(f"{where}.spec", f"{spec!r}: a HyperNode needs a spec with tier and members")
        ]
    errors: list[FieldError] = []
    tier = spec.get("tier")
    if tier is None:
        errors.append(
            FieldError(
                f"{where}.spec.tier",
                f"HyperNode {name!r} has no tier; give an integer tier of 1 or more",
            )
        )
        tier = 0
    raw_members = spec.get("members") or []
    if not isinstance(raw_members, list):
        errors.append(
            FieldError(f"{where}.spec.members", f"{raw_members!r} is not a list of members")
        )
        raw_members = []
    members = []
    for i, m in enumerate(raw_members):
        if not isinstance(m, Mapping):
            errors.append(
                FieldError(
                    f"{where}.spec.members[{i}]",
                    f"{m!r} is not a member (a mapping with type and selector)",
                )
            )
            continue
        selector = m.get("selector") or {}
        if not isinstance(selector, Mapping):
            errors.append(
                FieldError(
                    f"{where}.spec.members[{i}].selector", f"{selector!r} is not a selector mapping"
                )
            )
            selector = {}
        members.append(Member(str(m.get("type")), dict(selector)))
    tier_name = spec.get("tierName")
    return HyperNode(
        name, tier, tuple(members), tier_name if isinstance(tier_name, str) else None
    ), errors


def tree_from_manifests(objects: Iterable[Mapping[str, Any]]) -> tuple[Tree, list[FieldError]]:
    """A tree from HyperNode objects; a name given twice is an error."""
    tree: Tree = {}
    errors: list[FieldError] = []
    for i, obj in enumerate(objects):
        hn, errs = hypernode_from_manifest(obj, f"hypernodes[{i}]")
        errors += errs
        if hn is None:
            continue
        if hn.name in tree:
            errors.append(
                FieldError(
                    f"hypernodes[{i}].metadata.name",
                    f"HyperNode {hn.name!r} is given twice; HyperNode names are unique",
                )
            )
            continue
        tree[hn.name] = hn
    return tree, errors


def desired_hypernode(params: Mapping[str, Any]) -> dict[str, Any] | None:
    """The manifest the ``hypernode`` module's options ask for, None for
    ``state=absent``; raises ``PlatformValidationError`` naming every rule of the
    HyperNode itself that the options break."""
    if params["state"] != "present":
        return None
    spec: dict[str, Any] = {
        "tier": params["tier"],
        "members": [{"type": m["type"], "selector": m["selector"]} for m in params["members"]],
    }
    if params.get("tier_name"):
        spec["tierName"] = params["tier_name"]
    hn, errors = hypernode_from_manifest(
        {"kind": KIND, "metadata": {"name": params["name"]}, "spec": spec}
    )
    if hn is not None:
        errors += hypernode_errors(hn)
    raise_if(errors)
    if hn is None:  # narrows the type: a shape error was raised above
        raise AssertionError("hn is not None")
    return hypernode_manifest(hn)
