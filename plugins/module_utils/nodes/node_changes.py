# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the gpu_node role writes on a Node, decided from the Node it read (pure).

The role reads every Node once (a k8s lookup) and writes only what differs: an
unchanged Node costs no module run.

Rules held here:

* Rule node-labels-apply (``labels_apply``): the role's labels go on by a server-side
  apply under ``manager``, which also removes a label that manager applied before and
  no longer asks for. So the apply runs when a wanted label is missing or has another
  value, or when the label keys the manager owns now (read from ``managedFields``,
  operation Apply) are not the wanted keys. With nothing wanted and nothing owned it
  never runs.
* Rule node-taints-patch (``taints_patch``): the taints the Node should carry are its
  live taints without the keys the role manages (``taints`` and ``absent``), then the
  role's ``taints`` (an empty ``value`` or ``effect`` is left out of the taint). The
  patch runs when that list differs from the live one (compared by key), and only when
  the role manages some taint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def owned_label_keys(node: Mapping[str, Any], manager: str) -> list[str]:
    """The label keys ``manager``'s server-side apply owns on ``node``, sorted."""
    keys: set[str] = set()
    for entry in (node.get("metadata") or {}).get("managedFields") or []:
        if entry.get("manager") != manager or entry.get("operation") != "Apply":
            continue
        labels = ((entry.get("fieldsV1") or {}).get("f:metadata") or {}).get("f:labels") or {}
        keys |= {k[2:] if k.startswith("f:") else k for k in labels}
    return sorted(keys)


def labels_apply(node: Mapping[str, Any], wanted: Mapping[str, str], manager: str) -> bool:
    """Rule node-labels-apply: whether the role's label apply must run on ``node``."""
    owned = owned_label_keys(node, manager)
    if not wanted and not owned:
        return False
    live = (node.get("metadata") or {}).get("labels") or {}
    differs = any(live.get(k) != v for k, v in wanted.items())
    return differs or owned != sorted(wanted)


def wanted_taints(
    node: Mapping[str, Any], taints: Sequence[Mapping[str, Any]], absent: Sequence[str]
) -> list[dict[str, Any]]:
    """Rule node-taints-patch: the Node's taints after the role's change."""
    managed = {t.get("key") for t in taints} | set(absent)
    kept = [
        dict(t) for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") not in managed
    ]
    return kept + [{k: v for k, v in t.items() if v != ""} for t in taints]


def taints_patch(
    node: Mapping[str, Any], taints: Sequence[Mapping[str, Any]], absent: Sequence[str]
) -> bool:
    """Rule node-taints-patch: whether the role's taint patch must run on ``node``."""
    if not taints and not absent:
        return False
    live = (node.get("spec") or {}).get("taints") or []

    def by_key(items: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        return sorted(items, key=lambda t: str(t.get("key")))

    return by_key(wanted_taints(node, taints, absent)) != by_key(live)


def node_changes(
    node: Mapping[str, Any] | None,
    labels: Mapping[str, str],
    taints: Sequence[Mapping[str, Any]],
    absent: Sequence[str],
    manager: str,
) -> dict[str, Any]:
    """Both rules for one Node (None: not in the cluster, nothing to write)."""
    if node is None:
        return {"found": False, "apply_labels": False, "patch_taints": False, "taints": []}
    return {
        "found": True,
        "apply_labels": labels_apply(node, labels, manager),
        "patch_taints": taints_patch(node, taints, absent),
        "taints": wanted_taints(node, taints, absent),
    }
