# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``tenant_info`` through the flow contract (``kube.flow``), its pure steps: the
request, the facts as data and back, and the plan (the tenants as ``report.summarize``
shows them; no I/O).

The reads (``gather``) are ``tenants/service``'s; nothing is written. Offline,
``gathered`` returns the tenants' Namespaces, Queues and Volcano Jobs with only the fields
the report reads, and ``parsed`` reports the tenants of such facts without connecting.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..common.facts import queue_fact
from ..kube.flow import fact_lists
from .inputs import parse_info as parse_name
from .report import summarize


@dataclass(frozen=True)
class TenantInfoRequest:
    """What a ``tenant_info`` run asks for: one tenant, or None for every tenant."""

    name: str | None


@dataclass(frozen=True)
class TenantInfoFacts:
    """The tenants' Namespaces and Queues, and the Volcano Jobs in their namespaces."""

    namespaces: tuple[Mapping[str, Any], ...] = ()
    queues: tuple[Mapping[str, Any], ...] = ()
    jobs: tuple[Mapping[str, Any], ...] = ()


def parse_info(params: Mapping[str, Any]) -> TenantInfoRequest:
    """The options as a request; raises for a ``name`` rule tenant-name refuses."""
    return TenantInfoRequest(parse_name(params))


def plan_info(request: TenantInfoRequest, facts: TenantInfoFacts) -> list[dict[str, Any]]:
    """One entry per tenant (only the one named, when facts hold more)."""
    tenants = summarize(facts.namespaces, facts.queues, facts.jobs)
    return [t for t in tenants if request.name is None or t["name"] == request.name]


def report_info(request: TenantInfoRequest, tenants: list[dict[str, Any]]) -> dict[str, Any]:
    """The module's result: the tenants."""
    return {"tenants": tenants}


def _named(obj: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    return {key: meta[key] for key in ("name", *keys) if key in meta}


def queue_info_fact(queue: Mapping[str, Any]) -> dict[str, Any]:
    """A Queue as ``common/facts`` keeps it, with its ``status.state``."""
    out = queue_fact(queue)
    out["status"]["state"] = (queue.get("status") or {}).get("state")
    return out


def job_info_fact(job: Mapping[str, Any]) -> dict[str, Any]:
    """A Volcano Job by name, namespace, queue and phase."""
    phase = ((job.get("status") or {}).get("state") or {}).get("phase")
    return {
        "metadata": _named(job, "namespace"),
        "spec": {"queue": (job.get("spec") or {}).get("queue")},
        "status": {"state": {"phase": phase}},
    }


def facts_out(facts: TenantInfoFacts) -> dict[str, Any]:
    """The facts as data, what ``gathered`` returns and ``parsed`` takes."""
    return {
        "namespaces": [{"metadata": _named(ns, "labels")} for ns in facts.namespaces],
        "queues": [queue_info_fact(q) for q in facts.queues],
        "jobs": [job_info_fact(job) for job in facts.jobs],
    }


def facts_in(request: TenantInfoRequest, data: Mapping[str, Any]) -> TenantInfoFacts:
    """Facts given as ``gathered`` returned them."""
    return TenantInfoFacts(*fact_lists(data, "namespaces", "queues", "jobs"))
