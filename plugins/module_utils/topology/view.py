# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What ``topology_info`` shows: a tree, its nodes, the rules it breaks, its renderings.

The tree is either the cluster's HyperNodes as they are, or the tree the
``topology`` sync would make from node labels or an inventory description.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .discovery import DEFAULT_NAME_TEMPLATE, tree_from_source
from .manifests import is_managed, tree_from_manifests
from .render import dot, mermaid, text_tree, tree_data
from .rules import tree_errors
from .tree import NodeInfo, Tree, node_infos, nodes_in_no_leaf

VIEW_SOURCES = ("cluster", "labels", "inventory")
# The text renderings and the suffix of the file each is written to.
TEXT_RENDERINGS = {"mermaid": "mmd", "dot": "dot"}
RENDERING_FORMATS = ("mermaid", "dot", "png")


@dataclass
class TopologyView:
    tree: Tree
    nodes: list[NodeInfo]
    unplaced: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # the rules the tree breaks


def view_of_cluster(
    live: Iterable[Mapping[str, Any]],
    nodes: Iterable[Mapping[str, object] | NodeInfo | str],
    managed_only: bool = False,
) -> TopologyView:
    """The live HyperNodes (only the managed ones with ``managed_only``) as a tree."""
    objects = [o for o in live if is_managed(o)] if managed_only else list(live)
    tree, shape_errors = tree_from_manifests(objects)
    infos = node_infos(nodes)
    errors = [str(e) for e in shape_errors + tree_errors(tree, infos)]
    return TopologyView(tree, infos, nodes_in_no_leaf(tree, infos), errors)


def view_of_source(
    source: str,
    nodes: Iterable[Mapping[str, object] | NodeInfo | str],
    tier_labels: Sequence[str] = (),
    name_template: str = DEFAULT_NAME_TEMPLATE,
    switches: Sequence[Mapping[str, object]] | None = None,
) -> TopologyView:
    """The tree the ``topology`` sync would make; raises ``PlatformValidationError``
    for labels or switches it cannot read, as the sync does."""
    infos = node_infos(nodes)
    found = tree_from_source(source, infos, tier_labels, name_template, switches)
    errors = [str(e) for e in tree_errors(found.tree, infos)]
    return TopologyView(found.tree, infos, found.unplaced_nodes, errors)


@dataclass(frozen=True)
class ViewRequest:
    """The tree ``topology_info`` (and ``topology_render``) shows: the cluster's own, or the
    one the ``topology`` sync would make from ``source``."""

    source: str
    managed_only: bool
    tier_labels: tuple[str, ...]
    name_template: str
    switches: tuple[Mapping[str, Any], ...]
    node_selector: str | None


def view_request(params: Mapping[str, Any]) -> ViewRequest:
    """The options of the view as a request."""
    return ViewRequest(
        source=params["source"],
        managed_only=bool(params.get("managed_only")),
        tier_labels=tuple(params.get("tier_labels") or ()),
        name_template=params.get("name_template", DEFAULT_NAME_TEMPLATE),
        switches=tuple(params.get("switches") or ()),
        node_selector=params.get("node_selector"),
    )


def view_of(
    request: ViewRequest,
    nodes: Iterable[Mapping[str, object] | NodeInfo | str],
    live: Iterable[Mapping[str, Any]] = (),
) -> TopologyView:
    """The view the request asks for."""
    if request.source == "cluster":
        return view_of_cluster(live, nodes, request.managed_only)
    return view_of_source(
        request.source,
        nodes,
        list(request.tier_labels),
        request.name_template,
        list(request.switches),
    )


def topology_view(
    params: Mapping[str, Any],
    nodes: Iterable[Mapping[str, object] | NodeInfo | str],
    live: Iterable[Mapping[str, Any]] = (),
) -> TopologyView:
    """The view ``topology_info``'s options ask for."""
    return view_of(view_request(params), nodes, live)


def view_report(view: TopologyView) -> dict[str, Any]:
    """The tree as data, as indented text and as every text rendering."""
    return {
        "hypernodes": tree_data(view.tree, view.nodes),
        "text": text_tree(view.tree, view.nodes, view.unplaced),
        "errors": list(view.errors),
        "unplaced_nodes": list(view.unplaced),
        "mermaid": mermaid(view.tree, view.nodes, view.unplaced),
        "dot": dot(view.tree, view.nodes, view.unplaced),
    }


def rendering_path(dest: str, basename: str, fmt: str) -> str:
    """Where one rendering is written: ``<dest>/<basename>.<suffix>``."""
    return os.path.join(dest, f"{basename}.{TEXT_RENDERINGS.get(fmt, fmt)}")
