# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``topology_render`` through the flow contract (``kube.flow``), its pure steps:
the request, the plan (the tree as ``topology_info`` shows it, and the files it is
written to) and what it says (no I/O).

The facts are ``topology_info``'s (``sync.SyncFacts``, read by ``topology/service``'s
``gather_info``; as data by ``sync.facts_out`` and back by ``sync.facts_in``); the files
are written by ``topology/service``'s ``apply_render``, each only when its content
changes, the PNG drawn by Graphviz's ``dot`` there. Offline, nothing is written:

* ``rendered`` shows an inventory tree without a cluster (no Node, no HyperNode): the
  tree ``switches`` describe and the files a run would write. A ``labels`` tree comes
  from the Nodes' labels and a ``cluster`` tree is the cluster's HyperNodes, so they are
  refused there (gather, then ``parsed``);
* ``gathered`` returns the Nodes and, with ``source: cluster``, the HyperNodes;
* ``parsed`` shows the tree of what ``gathered`` returned, and the files a run would
  write.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..common.errors import FieldError, raise_if
from ..kube.flow import RENDERED
from .info import parse_info, plan_info, report_info
from .sync import SyncFacts
from .view import RENDERING_FORMATS, TEXT_RENDERINGS, ViewRequest, rendering_path


@dataclass(frozen=True)
class RenderRequest:
    """What a ``topology_render`` run asks for: the tree (as ``topology_info`` does) and
    where its renderings go."""

    view: ViewRequest
    dest: str
    basename: str
    formats: tuple[str, ...]


@dataclass(frozen=True)
class Rendering:
    """One file of the renderings: its format, its path and its text; the PNG's text is
    the DOT that Graphviz draws it from when it is written."""

    fmt: str
    path: str
    text: str


@dataclass(frozen=True)
class RenderPlanned:
    """The tree as data and renderings (``view.view_report``), and the files to write, in
    the order they are written: the text renderings, then the PNG."""

    report: Mapping[str, Any]
    files: tuple[Rendering, ...]


def parse_render(params: Mapping[str, Any]) -> RenderRequest:
    """The options as a request; raises ``PlatformValidationError`` before any read."""
    view = parse_info(params)
    if params.get("state") == RENDERED and view.source != "inventory":
        raise_if(
            [
                FieldError(
                    "state",
                    "rendered draws without a cluster, which has no node labels and no "
                    f"HyperNodes to show for source: {view.source}; use source: inventory, or "
                    "state: gathered and then state: parsed with its facts",
                )
            ]
        )
    return RenderRequest(
        view=view,
        dest=str(params["dest"]),
        basename=str(params.get("basename") or "topology"),
        formats=tuple(params.get("formats") or RENDERING_FORMATS),
    )


def empty_facts(request: RenderRequest) -> SyncFacts:
    """No cluster: no Node, no HyperNode."""
    return SyncFacts()


def plan_render(request: RenderRequest, facts: SyncFacts) -> RenderPlanned:
    """The tree the request asks for over the facts, and each file ``formats`` asks for;
    raises for labels or switches it cannot read, as ``topology_info`` does."""
    report = report_info(request.view, plan_info(request.view, facts))
    files = [
        Rendering(fmt, rendering_path(request.dest, request.basename, fmt), report[fmt])
        for fmt in TEXT_RENDERINGS
        if fmt in request.formats
    ]
    if "png" in request.formats:
        png = rendering_path(request.dest, request.basename, "png")
        files.append(Rendering("png", png, report["dot"]))
    return RenderPlanned(report, tuple(files))


def report_render(request: RenderRequest, planned: RenderPlanned) -> dict[str, Any]:
    """What the plan says: the tree as data and renderings, and the files of the
    renderings (the PNG among them when asked for: whether Graphviz can draw it is known
    only on the host, when the files are written)."""
    return {**planned.report, "files": [f.path for f in planned.files]}
