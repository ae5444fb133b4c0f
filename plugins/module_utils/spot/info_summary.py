# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule run-summary for ``spot_info``: the spot market in a few lines a person reads -
the safe bid, each tenant's spot queue, its running spot jobs by reclaim rank and its last
reclaim - quantities in people's units (rule quantity-for-people). Pure: the module's
result in, lines out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..common.quantity import CPU, GPU, MEMORY, for_people
from ..common.table import aligned

QUEUE_HEADING = ("TENANT", "SPOT QUEUE", "GPUS", "CORES", "MEMORY", "JOBS", "RECLAIMED")
JOB_HEADING = ("RANK", "JOB", "PRICE", "GPUS", "PODS", "AT RISK")


def used_of(queue: Mapping[str, Any], resource: str) -> str:
    """``allocated/capability`` of one resource (capability not set: ``-``)."""
    allocated = for_people((queue.get("allocated") or {}).get(resource, 0), resource)
    capability = queue.get("capability") or {}
    limit = for_people(capability[resource], resource) if resource in capability else "-"
    return f"{allocated}/{limit}"


def bid_line(result: Mapping[str, Any]) -> str:
    """The headline: the running spot jobs and the safe bid for ``reclaim_gpus``."""
    detail = result.get("safe_bid_detail") or {}
    size = result.get("reclaim_gpus", detail.get("reclaim_gpus"))
    head = (
        f"spot market: {result.get('spot_jobs', 0)} running spot job(s) hold "
        f"{detail.get('spot_gpus', 0)} GPUs"
    )
    if result.get("safe_bid") is None:
        return f"{head}; a reclaim of {size} GPU(s) cannot be met from spot, so no bid is safe or unsafe by price"
    victims = len(detail.get("victims") or [])
    return (
        f"{head}; safe bid against a reclaim of {size} GPU(s): {result['safe_bid']} per GPU-hour "
        f"(it would take {victims} job(s), up to price {detail.get('highest_price')})"
    )


def queue_row(tenant: Mapping[str, Any]) -> list[str]:
    queue = tenant.get("queue") or {}
    if not queue.get("exists"):
        return [
            tenant["tenant"],
            "(no spot queue)",
            "",
            "",
            "",
            str(len(tenant.get("jobs") or [])),
            "",
        ]
    return [
        tenant["tenant"],
        str(queue.get("name")),
        used_of(queue, GPU),
        used_of(queue, CPU),
        used_of(queue, MEMORY),
        str(len(tenant.get("jobs") or [])),
        str(queue.get("reclaimed_jobs", 0)),
    ]


def job_row(job: Mapping[str, Any]) -> list[str]:
    return [
        "-" if job.get("rank") is None else str(job["rank"]),
        f"{job.get('namespace')}/{job.get('name')}",
        str(job.get("price")),
        for_people(job.get("gpus", 0), GPU),
        str(job.get("pods", 0)),
        "yes" if job.get("at_risk") else "no",
    ]


def last_reclaim(tenant: Mapping[str, Any]) -> str | None:
    """``<tenant>: <n> reclaim(s) took its jobs, the last at <time> (<reason>)``."""
    history = tenant.get("history") or []
    if not history:
        return None
    last = history[0]  # newest first
    took = len(last.get("victims") or [])
    return (
        f"{tenant['tenant']}: {len(history)} reclaim(s) took its spot jobs; the last, at "
        f"{last.get('time')}, took {took} of its job(s) for {last.get('reason') or 'no reason given'}"
    )


def market_summary(result: Mapping[str, Any]) -> list[str]:
    """The headline with the safe bid; the spot queues (GPUS, CORES, MEMORY as
    allocated/capability); the running spot jobs, first reclaimed first; the last
    reclaim per tenant."""
    tenants: Sequence[Mapping[str, Any]] = result.get("tenants") or []
    lines = [bid_line(result)]
    if not tenants:
        return [*lines, "no tenant has a spot queue"]
    lines.append("spot queues (GPUS, CORES, MEMORY as allocated/capability):")
    lines += aligned([list(QUEUE_HEADING), *(queue_row(t) for t in tenants)], right={5, 6})
    jobs = sorted(
        (j for t in tenants for j in t.get("jobs") or []),
        key=lambda j: (j.get("rank") is None, j.get("rank") or 0),
    )
    if jobs:
        lines.append("running spot jobs, first reclaimed first:")
        # RANK left-aligned: a row beginning with spaces would be quoted in Ansible's output
        lines += aligned([list(JOB_HEADING), *(job_row(j) for j in jobs)], right={3, 4})
    lines += [line for t in tenants if (line := last_reclaim(t))]
    return lines


def info_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    """``spot_info``'s ``summary`` (``kube.runner.run_module(summary=...)``)."""
    del params, check_mode  # a read: the same words in check mode
    return market_summary(result)
