# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Spot against the cluster: the ``spot_reclaim``, ``spot_capacity`` and ``spot_info``
modules (``RECLAIM_FLOW``, ``RECOMPUTE_FLOW``, ``MARKET_FLOW``).

The decisions are the pure rules of ``workload.pool``, ``spot.capacity_plan``,
``spot.market`` and, for the reclaim, ``spot.victims``, ``spot.candidates`` and
``spot.reclaim``; the reads are ``spot/read_io``, the one reclaim (also used by
``payg_capacity`` and a catalog sale) ``spot/reclaim_io``. This file runs the modules:

* ``spot_reclaim`` (``RECLAIM_FLOW``, through ``kube.flow``; its pure steps are
  ``spot/reclaim_flow``): the reclaim's reads without the Lease, the plan, then
  ``reclaim_io.apply_reclaim`` (under the Lease it reads and plans again, deletes, counts
  and records), then (``wait``) the poll until the GPUs are free;
* ``spot_capacity`` (``RECOMPUTE_FLOW``, through ``kube.flow``; its pure steps are
  ``spot/recompute``): one list of Nodes and one of billing Queues (offer ``unused``: of
  every managed Queue, one of unfinished Pods and one of PodGroups), then a server-side
  apply of just the capability and deserved of each spot queue whose value changes;
* ``spot_info`` (``MARKET_FLOW``, through ``kube.flow``; its pure steps are
  ``spot/info``): the Queue, spot Job and Running pod lists and one get of the history
  ConfigMap, nothing written.

In check mode nothing is created, replaced or deleted: the reclaim only
reports its victims, and the applies are the cluster's server-side dry runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.errors import PartialWrite, Refused, raise_if
from ..common.names import CAPACITY_FIELD_MANAGER
from ..kube.cluster import ApiException, Cluster, TransportError, written_or_raise
from ..kube.flow import Flow
from ..kube.lease_io import default_holder, run_id
from ..workload.pool import label_selector
from . import reclaim_io
from .capacity_plan import SpotCapacityPlan
from .info import MarketFacts, MarketRequest
from .info import facts_in as market_facts_in
from .info import facts_out as market_facts_out
from .info import parse_info as parse_market_request
from .info import plan_info as plan_market
from .info import report_info as report_market
from .market import unknown_tenant_errors
from .read_io import (
    list_podgroups,
    list_unfinished_pods,
    read_live_history,
    read_managed_queues,
    read_queues,
    read_spot_candidates,
    wait_until_free,
)
from .reclaim import ReclaimRequest, reclaim_diff, reclaim_summary, victim_names
from .reclaim_flow import (
    ReclaimFacts,
    ReclaimPlan,
    ReclaimRun,
    parse_reclaim,
    plan_reclaim,
    report_reclaim,
)
from .reclaim_flow import facts_in as reclaim_facts_in
from .reclaim_flow import facts_out as reclaim_facts_out
from .reclaim_flow import warnings_of as reclaim_warnings
from .reclaim_io import utc_now
from .recompute import (
    RecomputeFacts,
    RecomputeRequest,
    facts_in,
    facts_out,
    parse_recompute,
    plan,
    report,
    warnings,
)

# --- spot_reclaim ------------------------------------------------------------------


def parse_run(params: Mapping[str, Any]) -> ReclaimRun:
    """``spot_reclaim``'s options (``reclaim_flow.parse_reclaim``), held as this
    controller's host and process with a fresh run id unless ``holder_identity`` says."""
    return parse_reclaim({**params, "holder": default_holder(), "run_id": run_id()})


def gather_reclaim(run: ReclaimRun, cluster: Cluster) -> ReclaimFacts:
    """The reclaim's reads without the Lease (``reclaim_io.gather``)."""
    return reclaim_io.gather(run.request, cluster)


def plan_run(run: ReclaimRun, facts: ReclaimFacts) -> ReclaimPlan:
    return plan_reclaim(run.request, facts)


def apply_reclaim(
    run: ReclaimRun, planned: ReclaimPlan, cluster: Cluster, check_mode: bool
) -> dict[str, Any]:
    """The reclaim (``reclaim_io.apply_reclaim``: under the Lease it reads and plans again
    on what the cluster then is), then (``wait``) the poll until the GPUs are free."""
    request, now = run.request, utc_now()
    result = reclaim_io.apply_reclaim(cluster, request, planned, check_mode, now)
    result["reclaim"] = reclaim_summary(result, request.reason, now)
    result["waited"] = False
    if run.wait and not check_mode:
        _wait_after_reclaim(cluster, request, run.wait_timeout, result)
    result["diff"] = reclaim_diff(result["victims"], result["counted"])
    return result


def report_run(run: ReclaimRun, planned: ReclaimPlan) -> dict[str, Any]:
    """What the plan says, with the run's summary for ``set_stats`` as of now."""
    result = report_reclaim(run, planned)
    result["reclaim"] = reclaim_summary(result, run.request.reason, utc_now())
    return result


# Module spot_reclaim: free GPUs by deleting spot jobs, cheapest first.
RECLAIM_FLOW: Flow[ReclaimRun, ReclaimFacts, ReclaimPlan] = Flow(
    parse=parse_run,
    gather=gather_reclaim,
    plan=plan_run,
    apply=apply_reclaim,
    report=report_run,
    facts_out=reclaim_facts_out,
    facts_in=reclaim_facts_in,
    warnings_of=reclaim_warnings,
)


def run_reclaim(params: dict[str, Any], cluster: Cluster, check_mode: bool) -> dict[str, Any]:
    """The ``spot_reclaim`` module's run (``RECLAIM_FLOW``), for the callers that hold its
    options (a catalog sale)."""
    return RECLAIM_FLOW.run(params, cluster, check_mode)


def _wait_after_reclaim(
    cluster: Cluster, request: ReclaimRequest, timeout: int, result: dict[str, Any]
) -> None:
    """``wait``: the deleted jobs' pods gone and ``need`` GPUs free, within ``timeout`` s."""
    try:
        reached, free_after = wait_until_free(
            cluster, request.node_selector, request.demand, timeout
        )
    except (ApiException, TransportError) as exc:
        report = {k: v for k, v in result.items() if k != "changed"}
        raise PartialWrite(
            "waiting for free GPUs", victim_names(result["victims"]), exc, **report
        ) from exc
    result["waited"] = True
    result["free_after"] = free_after
    if not reached:
        # The deletes are done: the failure reports them, ``changed`` included.
        raise Refused(
            f"{request.demand} GPUs were not free within {timeout} s after deleting "
            f"{len(result['victims'])} spot job(s): {free_after} free",
            **result,
        )


# --- spot_capacity -----------------------------------------------------------------


def gather_recompute(request: RecomputeRequest, cluster: Cluster) -> RecomputeFacts:
    """One list of the pool's Nodes and one of the billing Queues; with offer ``unused``
    or apportionment ``demand`` one of every managed Queue (the team queues too), one of the unfinished Pods and one
    of the PodGroups."""
    nodes = cluster.list("v1", "Node", label_selector=label_selector(request.node_selector))
    if not request.reads_pods:
        return RecomputeFacts(tuple(nodes), tuple(read_queues(cluster)))
    return RecomputeFacts(
        tuple(nodes),
        tuple(read_managed_queues(cluster)),
        tuple(list_unfinished_pods(cluster)),
        tuple(list_podgroups(cluster)),
    )


def apply_recompute(
    request: RecomputeRequest, planned: SpotCapacityPlan, cluster: Cluster, check_mode: bool
) -> dict[str, Any]:
    """The changed spot queues' capability and deserved (a dry run in check mode)."""
    result = report(request, planned)
    said = {k: v for k, v in result.items() if k not in ("changed", "diff")}
    apply_capabilities(cluster, planned.changes, "updating spot queues", **said)
    return result


# Module spot_capacity: every spot queue's capability from the idle pool.
RECOMPUTE_FLOW: Flow[RecomputeRequest, RecomputeFacts, SpotCapacityPlan] = Flow(
    parse=parse_recompute,
    gather=gather_recompute,
    plan=plan,
    apply=apply_recompute,
    report=report,
    facts_out=facts_out,
    facts_in=facts_in,
    warnings_of=warnings,
)


def apply_capabilities(
    cluster: Cluster, manifests: list[dict[str, Any]], what: str, **report: Any
) -> list[str]:
    """Apply each queue's capability and deserved under the capacity field manager
    (it owns only these fields, so the queue's other fields stay as they are), several
    queues at a time: no queue's write depends on another's."""
    results = cluster.apply_all(manifests, field_manager=CAPACITY_FIELD_MANAGER)
    names = [m["metadata"]["name"] for m in manifests]
    if "updated" in report:
        # A failure reports what was written, not what was planned (both named).
        written = [
            n for n, r in zip(names, results, strict=True) if not isinstance(r, BaseException)
        ]
        report = {**report, "updated": written, "planned": names}
    return written_or_raise(names, results, what, **report)


# --- spot_info ---------------------------------------------------------------------


def gather_market(request: MarketRequest, cluster: Cluster) -> MarketFacts:
    """One list of managed Queues, one of spot Volcano Jobs (label selector
    ``platform.io/billing-type=spot``, every namespace: the reclaim and so the safe bid
    are cluster-wide), one of the Running pods Volcano schedules, and one get of the
    reclaim history. An unknown ``tenant`` is refused right after the Queue list, before
    the other reads (the plan refuses it too, for ``parsed``)."""
    queues = read_queues(cluster)
    raise_if(unknown_tenant_errors(request.tenant, queues))
    candidates = read_spot_candidates(cluster, queues)
    return MarketFacts(tuple(queues), tuple(candidates), tuple(read_live_history(cluster)))


def apply_market(
    request: MarketRequest, market: dict[str, Any], cluster: Cluster, check_mode: bool
) -> dict[str, Any]:
    """Nothing to write: the market."""
    return {"changed": False, **report_market(request, market)}


# Module spot_info: the spot market; it never writes.
MARKET_FLOW: Flow[MarketRequest, MarketFacts, dict[str, Any]] = Flow(
    parse=parse_market_request,
    gather=gather_market,
    plan=plan_market,
    apply=apply_market,
    report=report_market,
    facts_out=market_facts_out,
    facts_in=market_facts_in,
)
