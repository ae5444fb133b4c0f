# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``spot_capacity`` through the flow contract (``kube.flow``), its pure steps:
the request, the facts as data and back, and what the plan says (no I/O).

The plan itself is ``capacity_plan.plan_spot_capacity``; the reads (``gather``) and the
writes (``apply``) are ``spot/service``'s. Offline, ``gathered`` returns the pool's Nodes
and the Queues as the rules read them (``common/facts``), with offer ``unused`` or
apportionment ``demand`` also the unfinished Pods and the PodGroups as listed, and ``parsed`` plans
the spot capabilities from such facts: a what-if (a node drained, a purchase made) or
another cluster's plan, reviewed with no connection. There is no ``rendered``: an empty
cluster has no pool to apportion.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..common.facts import node_fact, queue_fact
from ..kube.flow import fact_lists
from ..workload.pool import validate_node_selector
from .capacity_plan import SpotCapacityPlan, plan_spot_capacity, recompute_result
from .lending import APPORTION_DEMAND, APPORTION_SHARE
from .offer import OFFER_UNSOLD, OFFER_UNUSED


@dataclass(frozen=True)
class RecomputeRequest:
    """What a ``spot_capacity`` run asks for."""

    node_selector: Mapping[str, str]
    allow_empty_pool: bool
    report: str
    offer: str = OFFER_UNSOLD  # rule spot-offer: unsold or unused
    apportion: str = APPORTION_SHARE  # rule spot-lending: share or demand

    @property
    def reads_pods(self) -> bool:
        """Offer ``unused`` reads what the paying queues' pods hold and wait for, and
        apportionment ``demand`` what the spot queues' pods hold and wait for."""
        return self.offer == OFFER_UNUSED or self.apportion == APPORTION_DEMAND


@dataclass(frozen=True)
class RecomputeFacts:
    """The pool's Nodes and the managed Queues (the billing ones; with offer ``unused``
    the team queues too, the unfinished Pods and the PodGroups)."""

    nodes: tuple[Mapping[str, Any], ...] = ()
    queues: tuple[Mapping[str, Any], ...] = ()
    pods: tuple[Mapping[str, Any], ...] = ()
    podgroups: tuple[Mapping[str, Any], ...] = ()


def parse_recompute(params: Mapping[str, Any]) -> RecomputeRequest:
    """The options as a request; raises for a node selector rule node-selector refuses."""
    validate_node_selector(params)
    return RecomputeRequest(
        node_selector=dict(params.get("node_selector") or {}),
        allow_empty_pool=bool(params.get("allow_empty_pool")),
        report=str(params.get("report") or "changed"),
        offer=str(params.get("offer") or OFFER_UNSOLD),
        apportion=str(params.get("apportion") or APPORTION_SHARE),
    )


def plan(request: RecomputeRequest, facts: RecomputeFacts) -> SpotCapacityPlan:
    """Every tenant's spot capability over the facts (rule spot-capacity)."""
    return plan_spot_capacity(
        facts.nodes,
        facts.queues,
        request.node_selector,
        request.allow_empty_pool,
        request.offer,
        facts.pods,
        facts.podgroups,
        request.apportion,
    )


def warnings(planned: SpotCapacityPlan) -> list[str]:
    return list(planned.warnings)


def report(request: RecomputeRequest, planned: SpotCapacityPlan) -> dict[str, Any]:
    """The module's result for the plan: pool, idle, counts, rows, the queues it changes."""
    return {
        **recompute_result(planned, request.report),
        "changed": bool(planned.changes),
        "diff": {"before": planned.before, "after": planned.after},
    }


def facts_out(facts: RecomputeFacts) -> dict[str, Any]:
    """The Nodes and Queues as the rules read them; the Pods and PodGroups (offer
    ``unused``) as listed."""
    out: dict[str, Any] = {
        "nodes": [node_fact(n) for n in facts.nodes],
        "queues": [queue_fact(q) for q in facts.queues],
    }
    if facts.pods or facts.podgroups:
        out.update(pods=list(facts.pods), podgroups=list(facts.podgroups))
    return out


def facts_in(request: RecomputeRequest, data: Mapping[str, Any]) -> RecomputeFacts:
    """Facts given as ``gathered`` returned them."""
    return RecomputeFacts(*fact_lists(data, "nodes", "queues", "pods", "podgroups"))
