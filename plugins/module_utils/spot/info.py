# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``spot_info`` through the flow contract (``kube.flow``), its pure steps: the
request, the facts as data and back, and the plan (the market as ``market`` shows it;
no I/O).

The reads (``gather``) are ``spot/service``'s; nothing is written. Offline,
``gathered`` returns the billing Queues as the rules read them (``common/facts``, with
their spot reclaim count), the running spot jobs the reclaim would choose from (the
candidates, Volcano Jobs and pods of other workloads alike) and the reclaim history;
``parsed`` shows the market of such facts without connecting: a what-if (a job at
another price, a larger reclaim) or another cluster's market.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from ..common.errors import FieldError, PlatformValidationError, raise_if
from ..common.facts import queue_fact
from ..common.names import ANNOTATION_SPOT_RECLAIMED
from ..kube.flow import fact_lists
from .market import market_view, parse_market, unknown_tenant_errors
from .victims import SpotJob


@dataclass(frozen=True)
class MarketRequest:
    """What a ``spot_info`` run asks for: one tenant (None for every tenant) and the
    size of the reclaim the safe bid is safe from."""

    tenant: str | None
    reclaim_gpus: int


@dataclass(frozen=True)
class MarketFacts:
    """The billing Queues, the running spot jobs and the reclaim history's entries."""

    queues: tuple[Mapping[str, Any], ...] = ()
    candidates: tuple[SpotJob, ...] = ()
    history: tuple[Any, ...] = ()


def parse_info(params: Mapping[str, Any]) -> MarketRequest:
    """The options as a request; raises for input rule spot-market-input refuses."""
    return MarketRequest(*parse_market(params))


def plan_info(request: MarketRequest, facts: MarketFacts) -> dict[str, Any]:
    """The market; refuses a tenant without a managed Queue (rule known-tenant)."""
    raise_if(unknown_tenant_errors(request.tenant, facts.queues))
    return market_view(
        request.tenant,
        request.reclaim_gpus,
        facts.queues,
        facts.candidates,
        facts.history,
    )


def report_info(request: MarketRequest, market: dict[str, Any]) -> dict[str, Any]:
    """The market is the module's result."""
    return dict(market)


def market_queue_fact(queue: Mapping[str, Any]) -> dict[str, Any]:
    """A Queue as ``common/facts`` keeps it, with its spot reclaim count (rule
    spot-reclaim-count) when it has one."""
    out = queue_fact(queue)
    count = ((queue.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_SPOT_RECLAIMED)
    if count is not None:
        out["metadata"]["annotations"] = {ANNOTATION_SPOT_RECLAIMED: count}
    return out


def candidate_fact(job: SpotJob) -> dict[str, Any]:
    """A running spot job with every field the reclaim's order reads (the price as text,
    ``started`` in seconds since the epoch)."""
    return {
        "kind": job.kind,
        "namespace": job.namespace,
        "name": job.name,
        "queue": job.queue,
        "uid": job.uid,
        "price": str(job.price),
        "gpus": job.gpus,
        "pods": job.pods,
        "started": job.started,
    }


def candidate_of(data: Any, i: int) -> SpotJob:
    """A running spot job given as ``candidate_fact`` writes it; raises naming the entry."""
    try:
        return SpotJob(
            namespace=str(data["namespace"]),
            name=str(data["name"]),
            price=Decimal(str(data["price"])),
            gpus=int(data["gpus"]),
            pods=int(data["pods"]),
            started=float(data["started"]),
            queue=str(data.get("queue") or ""),
            uid=str(data.get("uid") or ""),
            kind=str(data.get("kind") or "Job"),
        )
    except (TypeError, KeyError, ValueError, AttributeError, InvalidOperation) as exc:
        error = FieldError(
            f"facts.candidates[{i}]", f"is not a spot job as state: gathered returns it ({exc!r})"
        )
        raise PlatformValidationError([error]) from exc


def facts_out(facts: MarketFacts) -> dict[str, Any]:
    """The facts as data, what ``gathered`` returns and ``parsed`` takes."""
    return {
        "queues": [market_queue_fact(q) for q in facts.queues],
        "candidates": [candidate_fact(j) for j in facts.candidates],
        "history": list(facts.history),
    }


def facts_in(request: MarketRequest, data: Mapping[str, Any]) -> MarketFacts:
    """Facts given as ``gathered`` returned them."""
    queues, candidates, history = fact_lists(data, "queues", "candidates", "history")
    return MarketFacts(queues, tuple(candidate_of(c, i) for i, c in enumerate(candidates)), history)
