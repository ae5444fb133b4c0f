# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pay-as-you-go queue sizing.

Rules held here:

* Rule payg-in-use (``payg_in_use``): what a PAYG queue uses is the larger, per
  resource, of its ``status.allocated`` and what its unfinished Volcano Jobs
  ask for (a job the platform just grew the queue for is still Pending and
  allocates nothing yet; it must not be shrunk away).
* Rule payg-resize (``payg_target``): the new capability, never below what is
  in use; deserved always equals capability.
* Rule payg-growth (``payg_growth_gpus``): how many more GPUs a resize grants,
  which is the demand a grow puts on the pool.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from ..common.errors import FieldError, PlatformValidationError
from ..common.names import JOB_FINISHED_PHASES
from ..common.quantity import GPU, Resources, fmt, parse_resources, render
from ..jobs.demand import job_demand
from .pool import POOL_RESOURCES

# Volcano Job phases after which a job holds and asks for nothing.


def payg_in_use(
    allocated: Mapping[str, Decimal], jobs: Iterable[Mapping[str, Any]], queue: str
) -> Resources:
    """Rule payg-in-use: max(status.allocated, demand of the queue's
    unfinished jobs), per pool resource."""
    asked = {r: Decimal(0) for r in POOL_RESOURCES}
    for job in jobs:
        if (job.get("spec") or {}).get("queue") != queue:
            continue
        if ((job.get("status") or {}).get("state") or {}).get("phase") in JOB_FINISHED_PHASES:
            continue
        demand = job_demand(job).resources
        for r in POOL_RESOURCES:
            asked[r] += demand[r]
    return {r: max(Decimal(allocated.get(r, 0)), asked[r]) for r in POOL_RESOURCES}


def parse_target(value: object, field: str = "capability") -> Resources:
    """The requested PAYG capacity: a resource list of GPUs, cpu and memory."""
    parsed = parse_resources(value, field, allow_empty=False)
    unknown = [r for r in parsed if r not in POOL_RESOURCES]
    if unknown:
        raise PlatformValidationError(
            [
                FieldError(
                    f"{field}.{r}",
                    f"a pay-as-you-go queue is sized in {', '.join(POOL_RESOURCES)} only",
                )
                for r in unknown
            ]
        )
    return parsed


def payg_target(
    tenant: str,
    live: Mapping[str, Decimal],
    requested: Mapping[str, Decimal] | None,
    in_use: Mapping[str, Decimal],
    field: str = "capability",
) -> Resources:
    """Rule payg-resize: the PAYG queue's new capability (= deserved).

    With ``requested`` the named resources take the requested values and the
    others keep their live values; without it the queue shrinks to what it
    uses (never grows: min(live, in use) per resource). ``live`` holds only
    the resources the live queue limits; one it leaves unlimited stays so
    unless requested. A request below what the queue uses is refused with
    the numbers.
    """
    if requested is None:
        return {r: min(Decimal(v), Decimal(in_use.get(r, 0))) for r, v in live.items()}
    target = {r: Decimal(v) for r, v in live.items()}
    errors = []
    for r, value in requested.items():
        used = Decimal(in_use.get(r, 0))
        if value < used:
            errors.append(
                FieldError(
                    f"{field}.{r}",
                    f"{fmt(value, r)} is below what tenant {tenant!r} uses in its pay-as-you-go queue now "
                    f"({fmt(used, r)}); release first, or ask for {fmt(used, r)} or more (rule payg-resize)",
                )
            )
        target[r] = value
    if errors:
        raise PlatformValidationError(errors)
    return target


def payg_growth_gpus(live: Mapping[str, Decimal], target: Mapping[str, Decimal]) -> int:
    """Rule payg-growth: the GPUs a resize grants beyond the live grant (0 for a shrink)."""
    grow = Decimal(target.get(GPU, 0)) - Decimal(live.get(GPU, 0))
    return int(grow) if grow > 0 else 0


def payg_queue_spec(target: Mapping[str, Decimal]) -> dict[str, Any]:
    """The queue fields a resize writes: deserved always equal to capability."""
    rendered = render({r: v for r, v in target.items() if r in POOL_RESOURCES})
    return {"capability": dict(rendered), "deserved": dict(rendered)}


def plan_payg(
    commitments: Mapping[str, Any],
    jobs: Iterable[Mapping[str, Any]],
    tenant: str | None,
    requested: Mapping[str, Decimal] | None,
) -> list[dict[str, Any]]:
    """The PAYG queues a run resizes: one tenant's (to ``requested``, or shrunk
    to what it uses) or, with no tenant, every tenant's shrunk to what it uses.

    Each entry: tenant, queue, live (granted), in_use, target, growth (GPUs).
    Refuses an unknown tenant and a target below what is in use, all before
    any change. ``commitments`` is ``spot_pool.commitments_from_queues``' result.
    """
    job_list = list(jobs)
    with_payg = sorted(t for t, c in commitments.items() if c.payg_queue)
    if tenant is not None and tenant not in with_payg:
        known = ", ".join(with_payg) or "none"
        raise PlatformValidationError(
            [
                FieldError(
                    "tenant",
                    f"{tenant!r} has no pay-as-you-go queue (a managed Queue labelled platform.io/tenant={tenant} and "
                    f"platform.io/queue-type=payg); tenants with one: {known}",
                )
            ]
        )
    rows = []
    errors: list[FieldError] = []
    for name in [tenant] if tenant is not None else with_payg:
        c = commitments[name]
        in_use = payg_in_use(c.payg_allocated, job_list, c.payg_queue)
        live = {r: c.payg[r] for r in c.payg_limited}
        try:
            target = payg_target(name, live, requested, in_use)
        except PlatformValidationError as exc:
            errors.extend(exc.errors)
            continue
        rows.append(
            {
                "tenant": name,
                "queue": c.payg_queue,
                "live": live,
                "in_use": in_use,
                "target": target,
                "growth": payg_growth_gpus(live, target),
            }
        )
    if errors:
        raise PlatformValidationError(errors)
    return rows
