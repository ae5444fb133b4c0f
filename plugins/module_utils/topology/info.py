# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``topology_info`` through the flow contract (``kube.flow``), its pure steps:
the request, the plan (the tree as ``view`` shows it) and what it says (no I/O).

The facts are the ``topology`` module's (``sync.SyncFacts``: Nodes as ``{name, labels}``
and the live HyperNodes, as data by ``sync.facts_out`` and back by ``sync.facts_in``); the
reads are ``topology/service``'s ``gather_info``. Nothing is written, so:

* ``gathered`` returns the Nodes and, with ``source: cluster``, the HyperNodes;
* ``parsed`` shows the tree of what ``gathered`` returned, from this or another cluster,
  without connecting.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .discovery import check_node_selector
from .sync import SyncFacts
from .view import TopologyView, ViewRequest, view_of, view_report, view_request


def parse_info(params: Mapping[str, Any]) -> ViewRequest:
    """The options as a request; raises ``PlatformValidationError`` before any read."""
    check_node_selector(params)
    return view_request(params)


def plan_info(request: ViewRequest, facts: SyncFacts) -> TopologyView:
    """The tree the request asks for over the facts; raises for labels or switches it
    cannot read, as the ``topology`` sync does."""
    return view_of(request, facts.nodes, facts.hypernodes)


def report_info(request: ViewRequest, view: TopologyView) -> dict[str, Any]:
    """The tree as data and renderings: the module's result."""
    return view_report(view)
