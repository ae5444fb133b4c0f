# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The spot reclaim's pure steps on the module contract (``kube/flow``), for
``spot/service.RECLAIM_FLOW`` (``spot_reclaim``) and the reclaim every sale makes
(``spot/reclaim_io.reclaim``: ``payg_capacity``, a catalog sale).

* parse (``parse_reclaim``): the options as a ``ReclaimRun``, checked (rule
  reclaim-input) before any connection;
* the facts (``ReclaimFacts``): the pool's Nodes and unfinished Pods, and, when the
  decision needs them (``needs_candidates``), the billing Queues (``need_from: unused``:
  every managed Queue, and the PodGroups), the spot Volcano Jobs and the Running Volcano
  pods, as listed;
* plan (``plan_reclaim``): the shortfall (``shortfall_of``: rule reclaim-need, rule
  unsold-reclaim-need for a sale, or rule unused-reclaim-need for the offer of unused
  GPUs), the victims (rule spot-victim-stop) or the refusal when spot holds too little.
  The same plan is made twice by a run that deletes: once without the ``spot-reclaim``
  Lease and again under it, on what the cluster then is;
* report (``report_reclaim``): what the plan says, as a check-mode run says it, less
  what only the cluster holds (the history, the Lease's holder).

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..common.errors import PlatformValidationError
from ..common.quantity import GPU
from ..kube.flow import fact_lists
from ..kube.lease import run_holder
from ..workload.pool import (
    allocated_from_pods,
    commitments_from_queues,
    committed_total,
    pool_from_nodes,
)
from .candidates import candidates_from_pods, candidates_from_vcjobs
from .offer import OFFER_UNUSED, spot_offer
from .reclaim import (
    NEED_FROM_OFFERS,
    NEED_FROM_UNSOLD,
    NEED_FROM_UNUSED,
    PoolState,
    ReclaimError,
    ReclaimRequest,
    raised_count,
    reclaim_diff,
    reclaim_report,
    reclaims_per_queue,
    too_little_spot,
    validate_reclaim_input,
)
from .victims import (
    SpotJob,
    choose_victims,
    reclaim_need,
    unsold_reclaim_need,
    unused_reclaim_need,
)

FACT_KEYS = ("nodes", "pods", "queues", "jobs", "running_pods", "podgroups")


@dataclass(frozen=True)
class ReclaimRun:
    """``spot_reclaim``'s options: the reclaim, and the wait after it."""

    request: ReclaimRequest
    wait: bool = False
    wait_timeout: int = 300


@dataclass(frozen=True)
class ReclaimFacts:
    """What a reclaim decides on, as listed. ``queues``, ``jobs`` and ``running_pods`` are
    None when not read (a reclaim from the free GPUs that finds enough free)."""

    nodes: tuple[Mapping[str, Any], ...] = ()
    pods: tuple[Mapping[str, Any], ...] = ()
    queues: tuple[Mapping[str, Any], ...] | None = None
    jobs: tuple[Mapping[str, Any], ...] | None = None
    running_pods: tuple[Mapping[str, Any], ...] | None = None
    # need_from unused only: the PodGroups, for what paying queues wait for.
    podgroups: tuple[Mapping[str, Any], ...] | None = None


@dataclass
class ReclaimPlan:
    """The decision: ``result`` as the module reports it before deleting (demand, pool,
    allocated, free, shortfall, freed, victims; need_from, sold, spot for a sale), the
    victims in kill order, and ``refusal``: why the spot jobs cannot cover the shortfall
    (None when they can). ``warnings``: prices or times that are not what they should be.
    ``counted``: each victim queue's reclaim count before and after, from the listed
    queues."""

    result: dict[str, Any]
    victims: list[SpotJob] = field(default_factory=list)
    refusal: str | None = None
    warnings: list[str] = field(default_factory=list)
    counted: dict[str, dict[str, int]] = field(default_factory=dict)

    def refuse(self) -> None:
        """Raise the refusal, with what is known (ReclaimError, a Refused)."""
        if self.refusal is not None:
            raise ReclaimError(self.refusal, **self.result)


def parse_reclaim(params: Mapping[str, Any]) -> ReclaimRun:
    """``spot_reclaim``'s options (rule reclaim-input before any request). The Lease
    holder is ``holder_identity`` or this controller's host and process, with a fresh run
    id (``holder`` and ``run_id`` in ``params``, given by the module)."""
    validate_reclaim_input(params)
    request = ReclaimRequest(
        demand=params["need"],
        reason=params["demand_reason"],
        node_selector=params.get("node_selector") or {},
        allow_partial=params["allow_partial"],
        history_size=params["history_size"],
        holder=run_holder(params.get("holder_identity") or params["holder"], params["run_id"]),
        lease_duration=params["lease_duration"],
        need_from=params["need_from"],
    )
    return ReclaimRun(request, bool(params.get("wait")), int(params.get("wait_timeout") or 0))


def pool_of(node_selector: Mapping[str, str] | None, nodes: Any, pods: Any) -> PoolState:
    """The pool (rule pool) and what its unfinished pods hold (rule allocated)."""
    pool, members = pool_from_nodes(nodes, node_selector)
    held, leaving = allocated_from_pods(pods, members)
    return PoolState(pool, members, held, leaving)


def pool_state(request: ReclaimRequest, facts: ReclaimFacts) -> PoolState:
    return pool_of(request.node_selector, facts.nodes, facts.pods)


def needs_candidates(request: ReclaimRequest, facts: ReclaimFacts) -> bool:
    """Whether the decision needs the spot candidates besides the pool: always for a sale
    (the spot GPUs count in its shortfall), otherwise only when too few GPUs are free."""
    if request.need_from in NEED_FROM_OFFERS:
        return True
    state = pool_state(request, facts)
    return reclaim_need(state.pool_gpus, state.allocated_gpus, request.demand) > 0


def spot_candidates(queues: Any, jobs: Any, running_pods: Any) -> tuple[list[SpotJob], list[str]]:
    """The running spot jobs and pods in spot queues (rules spot-candidate and
    spot-candidate-pod), and what was wrong with their prices or times."""
    spot_queues = [
        c.spot_queue for c in commitments_from_queues(queues or ()).values() if c.spot_queue
    ]
    candidates, warnings = candidates_from_vcjobs(jobs or (), spot_queues)
    pod_candidates, pod_warnings = candidates_from_pods(running_pods or (), spot_queues)
    return candidates + pod_candidates, warnings + pod_warnings


@dataclass(frozen=True)
class Shortfall:
    """What a reclaim must free and the result's figures for it; ``unsold`` or
    ``unused``: the GPUs it was counted against, for the refusal's words."""

    gpus: int
    result: dict[str, Any]
    unsold: int | None = None
    unused: int | None = None


def unused_shortfall(
    request: ReclaimRequest, facts: ReclaimFacts, state: PoolState, spot: int
) -> Shortfall:
    """Rule unused-reclaim-need over the facts: spot above the GPUs no paying queue holds
    or waits for (rule unused-for-spot)."""
    offer = int(
        spot_offer(
            OFFER_UNUSED,
            state.pool,
            commitments_from_queues(facts.queues or ()).values(),
            facts.pods,
            facts.podgroups or (),
            facts.queues or (),
            state.members,
        )[GPU]
    )
    gpus = unused_reclaim_need(state.pool_gpus, offer, spot, state.allocated_gpus, request.demand)
    result = reclaim_report(request.demand, state, gpus)
    result.update(need_from=NEED_FROM_UNUSED, offer=offer, spot=spot)
    return Shortfall(gpus, result, unused=offer)


def unsold_shortfall(
    request: ReclaimRequest, facts: ReclaimFacts, state: PoolState, spot: int
) -> Shortfall:
    """Rule unsold-reclaim-need over the facts: a sale met from the GPUs nobody bought."""
    sold = int(committed_total(commitments_from_queues(facts.queues or ()).values())[GPU])
    gpus = unsold_reclaim_need(state.pool_gpus, sold, spot, state.allocated_gpus, request.demand)
    result = reclaim_report(request.demand, state, gpus)
    result.update(need_from=NEED_FROM_UNSOLD, sold=sold, spot=spot)
    return Shortfall(gpus, result, unsold=max(0, state.pool_gpus - sold))


def shortfall_of(
    request: ReclaimRequest, facts: ReclaimFacts, state: PoolState, candidates: list[SpotJob]
) -> Shortfall:
    """The shortfall by ``need_from``: rule reclaim-need (free), unsold-reclaim-need or
    unused-reclaim-need."""
    spot = sum(c.gpus for c in candidates)
    if request.need_from == NEED_FROM_UNUSED:
        return unused_shortfall(request, facts, state, spot)
    if request.need_from == NEED_FROM_UNSOLD:
        return unsold_shortfall(request, facts, state, spot)
    gpus = reclaim_need(state.pool_gpus, state.allocated_gpus, request.demand)
    return Shortfall(gpus, reclaim_report(request.demand, state, gpus))


def plan_reclaim(request: ReclaimRequest, facts: ReclaimFacts) -> ReclaimPlan:
    """The shortfall and the victims that cover it, cheapest first; a refusal when spot
    holds too little (``allow_partial`` takes them all instead)."""
    state = pool_state(request, facts)
    candidates: list[SpotJob] = []
    warnings: list[str] = []
    if facts.jobs is not None or request.need_from in NEED_FROM_OFFERS:
        candidates, warnings = spot_candidates(facts.queues, facts.jobs, facts.running_pods)
    short = shortfall_of(request, facts, state, candidates)
    shortfall, result = short.gpus, short.result
    planned = ReclaimPlan(result, [], None, warnings)
    if shortfall == 0:
        return planned
    try:
        victims = choose_victims(candidates, shortfall, allow_partial=request.allow_partial)
    except PlatformValidationError as exc:
        planned.refusal = too_little_spot(
            request.demand, state, shortfall, exc, short.unsold, short.unused
        )
        return planned
    planned.victims = victims
    result["victims"] = [v.as_dict() for v in victims]
    result["freed"] = sum(v.gpus for v in victims)
    planned.counted = counted_from(facts.queues or (), result["victims"])
    return planned


def counted_from(queues: Any, victims: list[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Each victim queue's reclaim count now and after the reclaim (rule
    spot-reclaim-count), from the queues as listed; a queue not listed counts nothing."""
    by_name = {q.get("metadata", {}).get("name"): q for q in queues}
    return {
        name: raised_count(by_name[name], jobs)
        for name, jobs in reclaims_per_queue(victims).items()
        if name in by_name
    }


def report_reclaim(run: ReclaimRun | None, planned: ReclaimPlan) -> dict[str, Any]:
    """What the plan says (the answer of ``parsed``): the victims a check-mode run names
    and each victim queue's count, with the diff; the refusal raised as a run raises it."""
    planned.refuse()
    result = dict(planned.result)
    result.update(
        changed=bool(planned.victims),
        counted=planned.counted,
        waited=False,
        diff=reclaim_diff(result["victims"], planned.counted),
    )
    return result


def warnings_of(planned: ReclaimPlan) -> list[str]:
    return list(planned.warnings)


def facts_out(facts: ReclaimFacts) -> dict[str, Any]:
    """The facts as ``gathered`` returns them: only the lists the run read."""
    values = (
        facts.nodes,
        facts.pods,
        facts.queues,
        facts.jobs,
        facts.running_pods,
        facts.podgroups,
    )
    return {k: list(v) for k, v in zip(FACT_KEYS, values, strict=True) if v is not None}


def facts_in(run: ReclaimRun, data: Mapping[str, Any]) -> ReclaimFacts:
    """The facts ``gathered`` returned (option ``facts`` of ``parsed``)."""
    nodes, pods, queues, jobs, running, podgroups = fact_lists(data, *FACT_KEYS)
    read = "jobs" in data or "queues" in data or "running_pods" in data
    return ReclaimFacts(
        nodes,
        pods,
        queues if read else None,
        jobs if read else None,
        running if read else None,
        podgroups if "podgroups" in data else None,
    )
