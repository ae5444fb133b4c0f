# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The spot market view (design section 13: price display and reclaim history), for
the ``spot_info`` module. Pure: ``spot.service.MARKET_FLOW`` reads, this decides.

Nothing here orders or selects jobs on its own: the reclaim order is rule
spot-victim-order (``victims.victim_order_key``) and the selection rule
spot-victim-stop (``victims.choose_victims``), exactly as ``spot_reclaim`` uses
them.

Rules held here:

* Rule spot-market-input (``market_input_errors``): ``tenant`` a tenant name (rule
  tenant-name), ``reclaim_gpus`` a whole number, 1 or more.
* Rule known-tenant (``unknown_tenant_errors``): a named tenant has a managed Queue.
* Rule spot-reclaim-rank (``reclaim_ranks``): a job's rank is the position at which
  rule spot-victim-stop takes it when every spot GPU is needed (1 = taken first).
* Rule spot-safe-bid (``safe_bid``): the lowest price a new spot job can bid to stay
  out of a reclaim of N GPUs now.
* Rule spot-price-step (``next_price_above``): the smallest price rule spot-price
  accepts that is strictly above a given price.
* Rule spot-history-of-tenant (``tenant_history``): the reclaims that took one of the
  tenant's jobs, newest first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal
from typing import Any

from ..common import quantity
from ..common.errors import FieldError, PlatformValidationError, raise_if
from ..common.names import (
    LABEL_QUEUE_TYPE,
    LABEL_TENANT,
    QUEUE_TYPE_SPOT,
    SPOT_PRICE_DECIMALS,
    SPOT_PRICE_LIMIT,
    namespace_name,
    owner_tenant,
    queue_name,
    tenant_name_errors,
)
from ..jobs.spot_price import price_text
from ..queues.model import Queue, allocated
from .reclaim import reclaimed_jobs
from .victims import SpotJob, choose_victims

# The smallest step between two prices rule spot-price accepts (6 decimal places).
PRICE_STEP = Decimal(1).scaleb(-SPOT_PRICE_DECIMALS)
# A reclaim frees at least one GPU; the smallest reclaim is what the next paying job
# of any size sets off. Larger values answer "safe from a reclaim of that many".
DEFAULT_RECLAIM_GPUS = 1

# The argument spec of ``spot_info`` (its DOCUMENTATION documents it).
MARKET_OPTIONS: dict[str, dict[str, Any]] = {
    "tenant": {"type": "str"},
    "reclaim_gpus": {"type": "int", "default": DEFAULT_RECLAIM_GPUS},
}

TIE_BREAK = (
    "at equal price rule spot-victim-order takes single-pod jobs first, then fewer GPUs, "
    "then the most recently started: a new job is the most recently started, so one at "
    "the highest price taken is taken before the running jobs of its shape at that price; "
    "only a strictly higher price is safe whatever the job's shape"
)


@dataclass(frozen=True)
class SafeBid:
    """Rule spot-safe-bid's answer for a reclaim of ``reclaim_gpus`` GPUs."""

    reclaim_gpus: int
    spot_gpus: int  # the GPUs every running spot job holds together
    possible: bool  # the spot jobs hold at least reclaim_gpus GPUs
    victims: tuple[SpotJob, ...] = ()
    highest_price: Decimal | None = None
    bid: Decimal | None = None
    reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "reclaim_gpus": self.reclaim_gpus,
            "spot_gpus": self.spot_gpus,
            "possible": self.possible,
            "victims": [f"{v.namespace}/{v.name}" for v in self.victims],
            "highest_price": None if self.highest_price is None else price_text(self.highest_price),
            "safe_bid": None if self.bid is None else price_text(self.bid),
            "reason": self.reason,
        }


def market_input_errors(tenant: object, reclaim_gpus: object) -> list[FieldError]:
    """Rule spot-market-input: ``tenant`` (when given) passes rule tenant-name;
    ``reclaim_gpus`` is a whole number, 1 or more (a reclaim of 0 GPUs takes nothing,
    so every bid would be safe from it)."""
    errors: list[FieldError] = []
    if tenant is not None:
        errors += [
            FieldError(e.field, f"{e.message} (rule tenant-name)")
            for e in tenant_name_errors(tenant, "tenant")
        ]
    if isinstance(reclaim_gpus, bool) or not isinstance(reclaim_gpus, int):
        errors.append(
            FieldError(
                "reclaim_gpus",
                f"{reclaim_gpus!r} is not a whole number; give 1 or more (rule spot-market-input)",
            )
        )
    elif reclaim_gpus < 1:
        errors.append(
            FieldError(
                "reclaim_gpus",
                f"{reclaim_gpus} is less than 1; a reclaim frees at least 1 GPU, so 1 or more "
                "is accepted (rule spot-market-input)",
            )
        )
    return errors


def parse_market(params: Mapping[str, Any]) -> tuple[str | None, int]:
    """The ``spot_info`` input: the tenant (None for every tenant) and the reclaim size."""
    tenant = params.get("tenant")
    gpus = params.get("reclaim_gpus", DEFAULT_RECLAIM_GPUS)
    errors = market_input_errors(tenant, gpus)
    if errors:
        raise PlatformValidationError(errors)
    return tenant, gpus


def queue_tenants(queues: Iterable[Mapping[str, Any]]) -> list[str]:
    """The tenants that have a (managed) Queue, by their ``platform.io/tenant`` label, sorted."""
    found = {owner_tenant((q.get("metadata") or {}).get("labels")) for q in queues}
    return sorted(t for t in found if t)


def unknown_tenant_errors(
    tenant: str | None, queues: Iterable[Mapping[str, Any]]
) -> list[FieldError]:
    """Rule known-tenant: a tenant named in ``tenant`` has at least one managed Queue
    labelled ``platform.io/tenant: <tenant>`` (every tenant the ``tenant`` module made has
    three)."""
    if tenant is None:
        return []
    known = queue_tenants(queues)
    if tenant in known:
        return []
    listed = ", ".join(known) if known else "none"
    return [
        FieldError(
            "tenant",
            f"{tenant!r} is not a tenant: no managed Queue is labelled {LABEL_TENANT}={tenant} "
            f"(known tenants: {listed}) (rule known-tenant)",
        )
    ]


def reclaim_ranks(jobs: Sequence[SpotJob]) -> dict[tuple[str, str], int]:
    """Rule spot-reclaim-rank: each job's position, from 1, in the order rule
    spot-victim-stop (``choose_victims``) takes jobs when every spot GPU is needed, that
    is rule spot-victim-order over the jobs that hold GPUs. A job holding no GPU is never
    taken and has no rank. Keyed by (namespace, name)."""
    every_gpu = sum(max(0, j.gpus) for j in jobs)
    order = choose_victims(jobs, every_gpu)
    return {(j.namespace, j.name): rank for rank, j in enumerate(order, start=1)}


def next_price_above(price: Decimal) -> Decimal:
    """Rule spot-price-step: the smallest price with at most SPOT_PRICE_DECIMALS decimal
    places (what rule spot-price accepts) that is strictly above ``price``. A running
    price with more decimal places (an annotation written by hand) is rounded down to
    the step first, so the answer is still strictly above it."""
    steps = (price / PRICE_STEP).to_integral_value(rounding=ROUND_FLOOR)
    return (steps + 1) * PRICE_STEP


def safe_bid(jobs: Sequence[SpotJob], reclaim_gpus: int) -> SafeBid:
    """Rule spot-safe-bid: simulate rule spot-victim-stop for ``reclaim_gpus`` GPUs over
    every running spot job (the platform reclaims cluster-wide, cheapest first) and give
    the smallest price strictly above the highest price it takes (rule
    spot-price-step). Strictly above, because at equal price a new job would be taken
    first (see ``TIE_BREAK``). A job bidding it sorts after every job taken, and those
    already free the GPUs, so the selection stops before it whatever its shape.

    When the spot jobs hold fewer than ``reclaim_gpus`` GPUs in all, such a reclaim
    cannot be met from spot (``spot_reclaim`` refuses it before deleting anything, unless
    a partial reclaim is allowed, which takes every job): no bid is given.

    A ``reclaim_gpus`` below 1 is refused by rule spot-market-input, as ``spot_info``
    refuses it: a reclaim of nothing takes no job, so no price would be above them."""
    raise_if(market_input_errors(None, reclaim_gpus))
    held = sum(max(0, j.gpus) for j in jobs)
    if held < reclaim_gpus:
        return SafeBid(
            reclaim_gpus,
            held,
            False,
            reason=(
                f"a reclaim of {reclaim_gpus} GPUs cannot be met from spot: the running spot "
                f"jobs hold {held} GPUs in all; spot_reclaim refuses it without deleting "
                "anything (a partial reclaim would take every spot job), so no bid is safe "
                "or unsafe by price"
            ),
        )
    victims = tuple(choose_victims(jobs, reclaim_gpus))
    highest = max(v.price for v in victims)
    bid = next_price_above(highest)
    taken = f"a reclaim of {reclaim_gpus} GPUs now takes {len(victims)} job(s), up to price {price_text(highest)}"
    if bid >= SPOT_PRICE_LIMIT:
        reason = f"{taken}; no price below the limit {SPOT_PRICE_LIMIT} is above it"
        return SafeBid(reclaim_gpus, held, True, victims, highest, None, reason)
    reason = f"{taken}; a job bidding {price_text(bid)} or more is not taken by it; {TIE_BREAK}"
    return SafeBid(reclaim_gpus, held, True, victims, highest, bid, reason)


def _victim_tenant_queue(victim: Mapping[str, Any], spot_queue: str, namespace: str) -> bool:
    queue = victim.get("queue")
    return queue == spot_queue if queue else victim.get("namespace") == namespace


def tenant_history(entries: Iterable[Any], tenant: str) -> list[dict[str, Any]]:
    """Rule spot-history-of-tenant: the entries of the reclaim history (rule
    reclaim-history, newest first, order kept) that took at least one job of the tenant
    (a victim in its spot queue; a victim recorded without a queue by its namespace),
    each with ``victims`` cut to the tenant's jobs and ``tenant_freed`` their GPUs; the
    entry's other fields (``freed`` among them) are the whole reclaim's."""
    spot_queue = queue_name(tenant, QUEUE_TYPE_SPOT)
    namespace = namespace_name(tenant)
    out: list[dict[str, Any]] = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        victims = entry.get("victims")
        if not isinstance(victims, list):
            continue
        own = [
            v
            for v in victims
            if isinstance(v, Mapping) and _victim_tenant_queue(v, spot_queue, namespace)
        ]
        if own:
            freed = sum(v.get("gpus", 0) for v in own if isinstance(v.get("gpus", 0), int))
            out.append({**entry, "victims": own, "tenant_freed": freed})
    return out


def spot_queue_view(manifest: Mapping[str, Any] | None, name: str) -> dict[str, Any]:
    """The spot queue as shown: ``spec.capability`` and ``status.allocated``, rendered as
    manifests write them (GPUs as numbers), and how many of its jobs were reclaimed
    so far (rule spot-reclaim-count); empty when the queue does not exist."""
    if manifest is None:
        return {
            "name": name,
            "exists": False,
            "capability": {},
            "allocated": {},
            "reclaimed_jobs": 0,
        }
    try:
        capability = quantity.render(Queue.from_manifest(manifest).capability)
    except PlatformValidationError:
        capability = {}
    return {
        "name": name,
        "exists": True,
        "capability": capability,
        "allocated": quantity.render(allocated(manifest)),
        "reclaimed_jobs": reclaimed_jobs(manifest),
    }


def spot_queues_by_tenant(queues: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Each tenant's spot Queue manifest (label ``platform.io/queue-type: spot``)."""
    out: dict[str, Mapping[str, Any]] = {}
    for q in queues:
        labels = (q.get("metadata") or {}).get("labels") or {}
        if labels.get(LABEL_QUEUE_TYPE) == QUEUE_TYPE_SPOT and labels.get(LABEL_TENANT):
            out[labels[LABEL_TENANT]] = q
    return out


def market_view(
    tenant: str | None,
    reclaim_gpus: int,
    queues: Sequence[Mapping[str, Any]],
    candidates: Sequence[SpotJob],
    history: Sequence[Any],
) -> dict[str, Any]:
    """What ``spot_info`` returns: per tenant (the one named, else every tenant with a
    managed Queue) its spot queue, its running spot jobs in reclaim order with price and
    rank (rule spot-reclaim-rank over every spot job of the cluster) and its reclaim
    history; and the cluster-wide safe bid (rule spot-safe-bid)."""
    ranks = reclaim_ranks(candidates)
    bid = safe_bid(candidates, reclaim_gpus)
    detail = bid.as_dict()
    at_risk = {(v.namespace, v.name) for v in bid.victims}
    spot_queues = spot_queues_by_tenant(queues)
    names = [tenant] if tenant is not None else queue_tenants(queues)
    tenants = []
    for name in names:
        queue = queue_name(name, QUEUE_TYPE_SPOT)
        jobs = []
        for job in candidates:
            if job.queue != queue:
                continue
            key = (job.namespace, job.name)
            jobs.append({**job.as_dict(), "rank": ranks.get(key), "at_risk": key in at_risk})
        jobs.sort(key=lambda j: (j["rank"] is None, j["rank"] or 0, j["namespace"], j["name"]))
        tenants.append(
            {
                "tenant": name,
                "queue": spot_queue_view(spot_queues.get(name), queue),
                "jobs": jobs,
                "history": tenant_history(history, name),
            }
        )
    return {
        "reclaim_gpus": reclaim_gpus,
        "safe_bid": detail["safe_bid"],
        "safe_bid_detail": detail,
        "spot_jobs": len(candidates),
        "tenants": tenants,
    }
