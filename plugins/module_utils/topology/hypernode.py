# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``hypernode`` through the flow contract (``kube.flow``), its pure steps: the
request, the facts as data and back, the plan and what it says (no I/O).

The reads (``gather``) and the write (``apply``) are ``topology/service``'s. Offline:

* ``rendered``: the HyperNode the options describe, planned against an empty cluster:
  its manifest (in ``hypernode``), with no kubeconfig, for a GitOps repository;
* ``gathered``: the live HyperNodes, and the Nodes when a leaf selects them by pattern or
  label (rule only-what-it-introduces needs them then);
* ``parsed``: the change planned from what ``gathered`` returned.

``rendered`` and ``parsed`` plan the HyperNode present, as ``state: present`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..common.errors import raise_if
from ..common.objects import strip_server_fields
from ..kube.flow import fact_lists
from .manifests import desired_hypernode
from .plan import HyperNodeChange, introduced_errors, plan_hypernode


@dataclass(frozen=True)
class HyperNodeRequest:
    """One HyperNode present (``desired``) or absent (None)."""

    name: str
    desired: Mapping[str, Any] | None


@dataclass(frozen=True)
class HyperNodeFacts:
    """The live HyperNodes, and the Nodes as ``{name, labels}`` (None: not read)."""

    hypernodes: tuple[Mapping[str, Any], ...] = ()
    nodes: tuple[Mapping[str, Any], ...] | None = None


def parse_hypernode(params: Mapping[str, Any]) -> HyperNodeRequest:
    """The options as a request; raises for a HyperNode that breaks its own rules."""
    absent = params["state"] == "absent"
    desired = desired_hypernode({**params, "state": "absent" if absent else "present"})
    return HyperNodeRequest(params["name"], desired)


def empty_facts(request: HyperNodeRequest) -> HyperNodeFacts:
    """An empty cluster: no HyperNode; the Nodes unknown (none are judged)."""
    return HyperNodeFacts()


def plan(request: HyperNodeRequest, facts: HyperNodeFacts) -> HyperNodeChange:
    """The change; raises for an unmanaged HyperNode of that name, or for a tree rule the
    change would break that the cluster's tree did not break already."""
    change = plan_hypernode(request.name, request.desired, facts.hypernodes)
    raise_if(introduced_errors(change, facts.nodes))
    return change


def report(request: HyperNodeRequest, change: HyperNodeChange) -> dict[str, Any]:
    """What the change does: its action, the HyperNode after it, the diff."""
    result: dict[str, Any] = {"changed": change.action != "none", "action": change.action}
    if change.desired is not None:
        result["hypernode"] = change.live if change.action == "none" else change.desired
    result["diff"] = {
        "before": strip_server_fields(change.live) or {},
        "after": change.desired or {},
    }
    return result


def facts_out(facts: HyperNodeFacts) -> dict[str, Any]:
    return {
        "hypernodes": [strip_server_fields(h) for h in facts.hypernodes],
        "nodes": None if facts.nodes is None else [dict(n) for n in facts.nodes],
    }


def facts_in(request: HyperNodeRequest, data: Mapping[str, Any]) -> HyperNodeFacts:
    """Facts given as ``gathered`` returned them (``nodes`` null: not read)."""
    (hypernodes,) = fact_lists(data, "hypernodes")
    nodes = data.get("nodes")
    (node_list,) = fact_lists(data, "nodes") if nodes is not None else (None,)
    return HyperNodeFacts(hypernodes, node_list)
