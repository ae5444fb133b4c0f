# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``payg_capacity``'s pure steps on the module contract (``kube/flow``), for
``capacity/service.PAYG_FLOW``.

* parse (``parse_payg``): the options as a ``PaygRequest`` (rule payg-input first);
* the facts (``PaygFacts``): the billing Queues and the Volcano Jobs, the time they were
  read (``read_at``: rule payg-grace counts from it); when a queue grows, the pool's Nodes
  and unfinished Pods and the Running Volcano pods (``grows``); when the IDC cannot give
  one tenant's growth in full, the burst Queues (``needs_burst``);
* plan (``plan_payg_run``): the resize (rules payg-resize, payg-grace, payg-grant-stamped),
  the split between the IDC and the cloud (rule payg-idc-first), the oversell guard (rule
  payg-oversell) and the sale (``capacity/sale.plan_sale``: the shortfall and the refusal
  without ``reclaim``); every refusal raised here;
* report (``report_payg``): what the plan says, with the reclaim a check-mode run names
  planned from the same facts (``spot/reclaim_flow``).

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..common.errors import FieldError, PlatformValidationError, Refused
from ..common.quantity import Resources
from ..kube.flow import fact_lists
from ..spot.reclaim import NEED_FROM_UNSOLD, ReclaimRequest, reclaim_request
from ..spot.reclaim_flow import (
    ReclaimFacts,
    plan_reclaim,
    pool_of,
    report_reclaim,
    spot_candidates,
)
from ..workload.pool import TenantCommitment, commitments_from_queues
from .grace import grants_by_queue, hold_recent_grants, stamp_growth
from .payg import (
    PaygResize,
    cloud_split,
    growth_reason,
    parse_target,
    payg_oversell_errors,
    plan_payg,
    resize_table,
    validate_payg_input,
)
from .sale import SalePlan, plan_sale, sale_book

FACT_KEYS = ("queues", "jobs", "nodes", "pods", "running_pods", "burst")


@dataclass(frozen=True)
class PaygRequest:
    """One tenant's queue to ``requested`` (None: shrunk to what it uses), or every
    tenant's (``tenant`` None, ``fit_to_use``); ``options``: the reclaim's options."""

    tenant: str | None
    requested: Resources | None
    grace: int
    reclaim: bool
    demand_reason: str | None
    wait: bool
    wait_timeout: int
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def node_selector(self) -> Mapping[str, str]:
        return self.options.get("node_selector") or {}


@dataclass(frozen=True)
class PaygFacts:
    """What a resize decides on, as listed; None: not read (nothing grows, or the IDC
    gives the growth in full)."""

    read_at: float
    queues: tuple[Mapping[str, Any], ...] = ()
    jobs: tuple[Mapping[str, Any], ...] = ()
    nodes: tuple[Mapping[str, Any], ...] | None = None
    pods: tuple[Mapping[str, Any], ...] | None = None
    running_pods: tuple[Mapping[str, Any], ...] | None = None
    burst: tuple[Mapping[str, Any], ...] | None = None


@dataclass
class PaygPlan:
    """The resize and, when a queue grows out of the IDC, its sale (None otherwise);
    ``reason``: what the sale's reclaim is for."""

    resize: PaygResize
    sale: SalePlan | None = None
    reason: str = ""
    warnings: list[str] = field(default_factory=list)
    facts: PaygFacts | None = None


RECLAIM_KEYS = ("node_selector", "history_size", "lease_duration", "holder_identity")


def parse_payg(params: Mapping[str, Any]) -> PaygRequest:
    """``payg_capacity``'s options (rule payg-input before any request)."""
    validate_payg_input(params)
    requested = None if params["capability"] is None else parse_target(params["capability"])
    return PaygRequest(
        tenant=params["tenant"],
        requested=requested,
        grace=int(params["grace_minutes"]) * 60,
        reclaim=bool(params["reclaim"]),
        demand_reason=params.get("demand_reason"),
        wait=bool(params.get("wait")),
        wait_timeout=int(params.get("wait_timeout") or 0),
        options={k: params.get(k) for k in RECLAIM_KEYS},
    )


def resize_of(
    request: PaygRequest, facts: PaygFacts
) -> tuple[PaygResize, dict[str, TenantCommitment]]:
    """The queues' new grants (rules payg-resize, payg-grace as of ``read_at``, and
    payg-grant-stamped) and the commitments they were planned from."""
    commitments = commitments_from_queues(facts.queues)
    rows = plan_payg(commitments, facts.jobs, request.tenant, request.requested)
    if request.requested is None:
        rows = hold_recent_grants(rows, grants_by_queue(facts.queues), facts.read_at, request.grace)
    resize = resize_table(rows, facts.queues)
    stamp_growth(resize, facts.read_at, request.grace)
    return resize, commitments


def grows(request: PaygRequest, facts: PaygFacts) -> bool:
    """Whether a queue grows, so the pool and the spot pods are read."""
    return bool(resize_of(request, facts)[0].growing)


def _book(request: PaygRequest, facts: PaygFacts, commitments: Mapping[str, TenantCommitment]):
    state = pool_of(request.node_selector, facts.nodes or (), facts.pods or ())
    candidates, warnings = spot_candidates(facts.queues, facts.jobs, facts.running_pods)
    book = sale_book(state.pool_gpus, state.allocated_gpus, commitments.values(), candidates)
    return state, book, warnings


def needs_burst(request: PaygRequest, facts: PaygFacts) -> bool:
    """Whether one tenant's growth is more than the IDC gives (rule payg-idc-first), so
    the burst Queues are read."""
    resize, commitments = resize_of(request, facts)
    if request.tenant is None or not resize.growing:
        return False
    _state, book, _warnings = _book(request, facts, commitments)
    return resize.growth > book.available(request.reclaim)


def _refuse_if(errors: list[FieldError], resize: PaygResize) -> None:
    """Valid input the pool cannot take: the errors and the table, nothing written."""
    if errors:
        err = PlatformValidationError(errors)
        raise Refused(str(err), errors=err.messages, queues=resize.table)


def plan_payg_run(request: PaygRequest, facts: PaygFacts) -> PaygPlan:
    """The resize, its split and its sale; raises the refusals (the oversell guard, the
    cloud's headroom, a shortfall without ``reclaim``) with the table."""
    resize, commitments = resize_of(request, facts)
    planned = PaygPlan(resize, facts=facts)
    growing = resize.growing
    if not growing:
        return planned
    state, book, planned.warnings = _book(request, facts, commitments)
    if request.tenant is not None and resize.growth > book.available(request.reclaim):
        queue, from_idc, from_cloud, errors = cloud_split(
            resize,
            request.tenant,
            list(facts.queues),
            list(facts.burst or ()),
            list(facts.jobs),
            commitments,
            book.available(request.reclaim),
            request.reclaim,
        )
        _refuse_if(errors, resize)
        resize.split(queue, from_idc, from_cloud)
    _refuse_if(payg_oversell_errors(resize.growing, state.pool, commitments), resize)
    growth = resize.idc_growth
    if resize.growth and not growth:
        return planned  # all of it from the cloud: no IDC GPU to free
    sale = plan_sale(book, growth, request.reclaim)
    if not sale.shortfall:
        return planned
    _refuse_if([sale.refusal] if sale.refusal else [], resize)
    planned.sale = sale
    planned.reason = growth_reason(
        {"tenant": request.tenant, "demand_reason": request.demand_reason}, growing, growth
    )
    return planned


def sale_reclaim(
    request: PaygRequest, planned: PaygPlan, holder: str, run_id: str = ""
) -> ReclaimRequest | None:
    """The sale's reclaim (``need_from: unsold``), None when it has none."""
    if planned.sale is None:
        return None
    return reclaim_request(
        request.options,
        planned.sale.growth,
        planned.reason,
        holder,
        run_id=run_id,
        need_from=NEED_FROM_UNSOLD,
    )


def report_payg(request: PaygRequest, planned: PaygPlan) -> dict[str, Any]:
    """What the plan says (the answer of ``parsed``); the reclaim as a check-mode run
    names it, from the same facts (without the history, which only the cluster holds)."""
    resize = planned.resize
    reclaimed = None
    reclaim = sale_reclaim(request, planned, "parsed")
    if reclaim is not None and planned.facts is not None:
        facts = planned.facts
        reclaim_facts = ReclaimFacts(
            facts.nodes or (), facts.pods or (), facts.queues, facts.jobs, facts.running_pods
        )
        try:
            reclaimed = report_reclaim(None, plan_reclaim(reclaim, reclaim_facts))
        except Refused as exc:
            raise Refused(str(exc), queues=resize.table, reclaim=dict(exc.extra)) from None
        for key in ("waited", "diff"):
            reclaimed.pop(key)
    return payg_result(resize, reclaimed)


def payg_result(resize: PaygResize, reclaimed: dict[str, Any] | None) -> dict[str, Any]:
    """The module's result: the resize and the sale's reclaim, as a run and ``parsed``
    both say them."""
    return {
        "changed": bool(resize.changes) or bool(reclaimed and reclaimed.get("changed")),
        "queues": resize.table,
        "updated": resize.updated,
        "reclaim": reclaimed,
        "diff": {"before": resize.before, "after": resize.after},
    }


def warnings_of(planned: PaygPlan) -> list[str]:
    return list(planned.warnings)


def facts_out(facts: PaygFacts) -> dict[str, Any]:
    """The facts as ``gathered`` returns them: ``read_at`` and only the lists read."""
    values = (facts.queues, facts.jobs, facts.nodes, facts.pods, facts.running_pods, facts.burst)
    lists = {k: list(v) for k, v in zip(FACT_KEYS, values, strict=True) if v is not None}
    return {"read_at": facts.read_at, **lists}


def facts_in(request: PaygRequest, data: Mapping[str, Any]) -> PaygFacts:
    """The facts ``gathered`` returned (option ``facts`` of ``parsed``)."""
    read_at = data.get("read_at")
    if isinstance(read_at, bool) or not isinstance(read_at, int | float):
        raise PlatformValidationError(
            [
                FieldError(
                    "facts.read_at", "must be a number of seconds, as state: gathered returns it"
                )
            ]
        )
    lists = dict(zip(FACT_KEYS, fact_lists(data, *FACT_KEYS), strict=True))
    optional = {k: (lists[k] if k in data else None) for k in FACT_KEYS[2:]}
    return PaygFacts(float(read_at), lists["queues"], lists["jobs"], **optional)
