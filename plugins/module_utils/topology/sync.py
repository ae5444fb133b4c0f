# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``topology`` through the flow contract (``kube.flow``), its pure steps:
the request, the facts as data and back, the plan and what it says (no I/O).

The reads (``gather``) and the writes (``apply``) are ``topology/service``'s. Offline:

* ``rendered`` plans an inventory tree against an empty cluster: the HyperNodes it
  makes, without a kubeconfig. A ``labels`` tree comes from the Nodes' labels, so it is
  refused there (gather the Nodes, then plan them with ``parsed``);
* ``gathered`` returns the Nodes (name and labels) and the HyperNodes (without the
  fields the server owns);
* ``parsed`` plans from what ``gathered`` returned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..common.errors import FieldError, raise_if
from ..common.objects import strip_server_fields
from ..kube.flow import RENDERED, fact_lists
from .discovery import Discovered, check_source_options, tree_from_source
from .plan import SyncPlan, plan_tree_sync
from .render import text_tree


@dataclass(frozen=True)
class SyncRequest:
    """What a ``topology`` run asks for."""

    source: str
    prune: bool
    tier_labels: tuple[str, ...]
    name_template: str
    switches: tuple[Mapping[str, Any], ...]
    node_selector: str | None


@dataclass(frozen=True)
class SyncFacts:
    """What a ``topology`` run reads: Nodes as ``{name, labels}`` and the live HyperNodes."""

    nodes: tuple[Mapping[str, Any], ...] = ()
    hypernodes: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class SyncPlanned:
    """The tree the request describes over the facts, and the writes that make it."""

    found: Discovered
    plan: SyncPlan


def parse_sync(params: Mapping[str, Any]) -> SyncRequest:
    """The options as a request; raises ``PlatformValidationError`` before any read."""
    check_source_options(params)
    if params.get("state") == RENDERED and params["source"] == "labels":
        raise_if(
            [
                FieldError(
                    "state",
                    "rendered plans against an empty cluster, which has no node labels; use "
                    "source: inventory, or state: gathered and then state: parsed with its facts",
                )
            ]
        )
    return SyncRequest(
        source=params["source"],
        prune=bool(params.get("prune")),
        tier_labels=tuple(params.get("tier_labels") or ()),
        name_template=params["name_template"],
        switches=tuple(params.get("switches") or ()),
        node_selector=params.get("node_selector"),
    )


def empty_facts(request: SyncRequest) -> SyncFacts:
    """An empty cluster: no Node, no HyperNode."""
    return SyncFacts()


def node_fact(node: Mapping[str, Any]) -> dict[str, Any]:
    """A Node as the plan reads it: its name and labels."""
    meta = node.get("metadata") or {}
    return {"name": str(meta.get("name") or ""), "labels": dict(meta.get("labels") or {})}


def facts_out(facts: SyncFacts) -> dict[str, Any]:
    """The facts as data, what ``gathered`` returns and ``parsed`` takes."""
    return {
        "nodes": [dict(n) for n in facts.nodes],
        "hypernodes": [strip_server_fields(h) for h in facts.hypernodes],
    }


def facts_in(request: object, data: Mapping[str, Any]) -> SyncFacts:
    """Facts given as ``gathered`` returned them (the request is not read: ``topology_info``
    takes the same facts)."""
    return SyncFacts(*fact_lists(data, "nodes", "hypernodes"))


def plan_run(request: SyncRequest, facts: SyncFacts) -> SyncPlanned:
    """The tree and the writes; raises for a tree that breaks a rule (nothing written)."""
    switches: Sequence[Mapping[str, Any]] = list(request.switches)
    found = tree_from_source(
        request.source, facts.nodes, list(request.tier_labels), request.name_template, switches
    )
    plan = plan_tree_sync(found.tree, facts.nodes, facts.hypernodes, prune=request.prune)
    return SyncPlanned(found, plan)


def report(request: SyncRequest, planned: SyncPlanned) -> dict[str, Any]:
    """What the plan says: the module's result but for the writes' answers."""
    found, plan = planned.found, planned.plan
    return {
        "changed": plan.changed,
        "unplaced_nodes": found.unplaced_nodes,
        "moved_nodes": plan.moved_nodes,
        "tree": text_tree(found.tree, unplaced=found.unplaced_nodes),
        **plan.summary(),
        "diff": plan.diff(),
    }
