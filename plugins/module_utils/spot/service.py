# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Spot against the cluster: the ``spot_capacity`` and ``spot_reclaim`` modules
(``run_recompute``, ``run_reclaim``) and the one reclaim every module that frees
spot GPUs goes through (``reclaim``, also used by ``payg_capacity``).

The decisions are the pure rules of ``capacity.pool``, ``spot.capacity_plan``,
``spot.victims`` and ``spot.reclaim``; this file does the reading and writing
through ``kube.Cluster``:

* one list of Nodes (label selector = node selector), one of Pods (not
  finished), one of managed Queues, one of spot Volcano Jobs;
* the ``spot-reclaim`` Lease in ``platform-system`` held while selecting and
  deleting, so that two runs never both delete;
* per victim: delete the Volcano Job, then a ``SpotReclaimed`` Event on it;
* one entry per reclaim at the head of the bounded history ConfigMap;
* per spot queue that lost jobs, its reclaim count raised (rule
  spot-reclaim-count: a merge patch against the version just read);
* a server-side apply of just the capability and deserved of each spot queue
  whose value changes;
* for ``spot_info`` (``run_market``): the same Queue and Job lists and one get of
  the history ConfigMap, nothing written.

In check mode nothing is created, replaced or deleted: the reclaim only
reports its victims, and the applies are the cluster's server-side dry runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from ansible.module_utils.common.warnings import warn

from ..capacity.pool import (
    allocated_from_pods,
    commitments_from_queues,
    committed_total,
    label_selector,
    pool_from_nodes,
)
from ..common.errors import PartialWrite, PlatformValidationError, Refused, raise_if
from ..common.history import push_history, read_history
from ..common.names import (
    BILLING_SELECTOR,
    CAPACITY_FIELD_MANAGER,
    EVENT_REASON_SPOT_RECLAIMED,
    JOB_API,
    LABEL_BILLING_TYPE,
    PLATFORM_NAMESPACE,
    QUEUE_API,
    SPOT_RECLAIM_HISTORY,
)
from ..common.quantity import GPU
from ..kube import lease_io
from ..kube.cluster import (
    ApiException,
    Cluster,
    ConflictError,
    TransportError,
    api_error_message,
    written_or_raise,
)
from ..kube.lease import SPOT_RECLAIM
from ..kube.lease_io import default_holder, run_id
from .capacity_plan import plan_spot_capacity, recompute_result
from .market import market_view, parse_market, unknown_tenant_errors
from .reclaim import (
    NEED_FROM_UNSOLD,
    SUMMARY_FIELDS,
    PoolState,
    ReclaimError,
    ReclaimRequest,
    event_manifest,
    history_entry,
    history_manifest,
    lease_blocker,
    raised_count,
    reclaim_count_patch,
    reclaim_diff,
    reclaim_report,
    reclaim_request,
    reclaim_summary,
    reclaims_per_queue,
    too_little_spot,
    victim_names,
)
from .victims import (
    SpotJob,
    candidates_from_pods,
    candidates_from_vcjobs,
    choose_victims,
    reclaim_need,
    unsold_reclaim_need,
)

_UNFINISHED_PODS = "status.phase!=Succeeded,status.phase!=Failed"
# Attempts at raising a queue's reclaim count when a spot recompute changes the queue
# between the read and the patch.
COUNT_ATTEMPTS = 5


def utc_now() -> datetime:
    return datetime.now(tz=UTC)


def warn_all(warnings: Iterable[str]) -> None:
    """Report each warning with the module's result (as ``module.warn`` does)."""
    for warning in warnings:
        warn(warning)


# --- reading -----------------------------------------------------------------------


def read_pool(cluster: Cluster, node_selector: Mapping[str, str] | None) -> PoolState:
    """One list of Nodes and one of unfinished Pods."""
    nodes = cluster.list("v1", "Node", label_selector=label_selector(node_selector))
    pool, members = pool_from_nodes(nodes, node_selector)
    pods = cluster.list("v1", "Pod", field_selector=_UNFINISHED_PODS)
    held, leaving = allocated_from_pods(pods, members)
    return PoolState(pool, members, held, leaving)


def read_queues(cluster: Cluster) -> list[dict[str, Any]]:
    """Every tenant's billing queues (``BILLING_SELECTOR``): rule committed, the spot
    apportionment and the reclaim read nothing of the team queues."""
    return cluster.list(QUEUE_API, "Queue", label_selector=BILLING_SELECTOR)


# One LIST of the pods that can hold a spot queue's GPUs (the API server filters).
RUNNING_VOLCANO_PODS = "spec.schedulerName=volcano,status.phase=Running"


def read_spot_candidates(
    cluster: Cluster,
    queues: Iterable[Mapping[str, Any]] | None = None,
    jobs: Iterable[Mapping[str, Any]] | None = None,
) -> list[SpotJob]:
    """The running spot jobs in spot queues (``queues``: the managed Queues, and
    ``jobs``: Volcano Jobs, each listed here when the caller has not listed them); a
    price that is not a number is warned about."""
    queues = read_queues(cluster) if queues is None else queues
    spot_queues = [c.spot_queue for c in commitments_from_queues(queues).values() if c.spot_queue]
    if jobs is None:
        jobs = cluster.list(JOB_API, "Job", label_selector=f"{LABEL_BILLING_TYPE}=spot")
    candidates, warnings = candidates_from_vcjobs(jobs, spot_queues)
    # Rule spot-candidate-pod: every other workload in a spot queue, by its pods.
    pods = cluster.list("v1", "Pod", field_selector=RUNNING_VOLCANO_PODS)
    pod_candidates, pod_warnings = candidates_from_pods(pods, spot_queues)
    warn_all(warnings + pod_warnings)
    return candidates + pod_candidates


def read_live_history(cluster: Cluster) -> list[Any]:
    return read_history(cluster.get("v1", "ConfigMap", SPOT_RECLAIM_HISTORY, PLATFORM_NAMESPACE))


# --- the lease (kube/lease_io, for the spot-reclaim Lease) ------------------------


def acquire_lease(
    cluster: Cluster, holder: str, duration: int, now: datetime | None = None
) -> dict[str, Any]:
    """Take the reclaim lease (``kube/lease_io.acquire_lease``); a held Lease is a
    ReclaimError naming its holder."""
    return lease_io.acquire_lease(
        cluster, SPOT_RECLAIM, holder, duration, now or utc_now(), refused=ReclaimError
    )


def release_lease(cluster: Cluster, lease: Mapping[str, Any]) -> bool:
    """Give the reclaim lease back, only if it is still the one we hold."""
    return lease_io.release_lease(cluster, SPOT_RECLAIM, lease)


# --- deleting and recording --------------------------------------------------------


def _unsold(result: Mapping[str, Any]) -> int | None:
    """The unsold GPUs a sale's reclaim counted against (None: counted against free)."""
    if result.get("need_from") != NEED_FROM_UNSOLD:
        return None
    return max(0, int(result["pool"]) - int(result["sold"]))


def plan(cluster: Cluster, request: ReclaimRequest) -> tuple[dict[str, Any], list[SpotJob]]:
    """Read the cluster once and choose the victims (no writes)."""
    state = read_pool(cluster, request.node_selector)
    candidates: list[SpotJob] | None = None
    if request.need_from == NEED_FROM_UNSOLD:
        queues = read_queues(cluster)
        sold = int(committed_total(commitments_from_queues(queues).values())[GPU])
        candidates = read_spot_candidates(cluster, queues)
        spot = sum(c.gpus for c in candidates)
        shortfall = unsold_reclaim_need(
            state.pool_gpus, sold, spot, state.allocated_gpus, request.demand
        )
        result = reclaim_report(request.demand, state, shortfall)
        result.update(need_from=NEED_FROM_UNSOLD, sold=sold, spot=spot)
    else:
        shortfall = reclaim_need(state.pool_gpus, state.allocated_gpus, request.demand)
        result = reclaim_report(request.demand, state, shortfall)
    if shortfall == 0:
        return result, []
    if candidates is None:
        candidates = read_spot_candidates(cluster)
    try:
        victims = choose_victims(candidates, shortfall, allow_partial=request.allow_partial)
    except PlatformValidationError as exc:
        raise ReclaimError(
            too_little_spot(request.demand, state, shortfall, exc, _unsold(result)), **result
        ) from None
    result["victims"] = [v.as_dict() for v in victims]
    result["freed"] = sum(v.gpus for v in victims)
    return result, victims


def _deleted_so_far(result: Mapping[str, Any], deleted: list[dict[str, Any]]) -> dict[str, Any]:
    report = {k: result[k] for k in SUMMARY_FIELDS}
    report.update(victims=deleted, freed=sum(v["gpus"] for v in deleted))
    return report


def delete_victims(
    cluster: Cluster, victims: list[SpotJob], result: dict[str, Any], reason: str, now: datetime
) -> list[dict[str, Any]]:
    """Delete each victim in kill order (the job listed, by uid), then record an
    Event on it. A delete the API server refuses stops the run: PartialWrite
    names the jobs already deleted."""
    deleted: list[dict[str, Any]] = []
    for order, victim in enumerate(victims, start=1):
        uid = victim.uid
        try:
            gone_already = not cluster.delete(
                JOB_API if victim.kind == "Job" else "v1",
                victim.kind,
                victim.name,
                victim.namespace,
                preconditions={"uid": uid} if uid else None,
            )
        except (ApiException, TransportError) as exc:
            if not isinstance(exc, ConflictError):
                raise PartialWrite(
                    "reclaiming spot jobs",
                    victim_names(deleted),
                    exc,
                    **_deleted_so_far(result, deleted),
                ) from exc
            gone_already = True  # deleted and re-created under its name since the list
        if gone_already:
            continue
        deleted.append(victim.as_dict())
        _record_event(cluster, victim, result, reason, now, order)
    return deleted


def _record_event(
    cluster: Cluster,
    victim: SpotJob,
    result: Mapping[str, Any],
    reason: str,
    now: datetime,
    order: int,
) -> None:
    """The job is gone either way: a refused Event is only warned about."""
    basis = "unsold" if result.get("need_from") == NEED_FROM_UNSOLD else "free"
    manifest = event_manifest(
        victim, victim.uid, result["demand"], result["shortfall"], reason, now, order, basis
    )
    try:
        cluster.create(manifest)
    except ApiException as exc:
        warn(
            f"{victim.namespace}/{victim.name} was deleted but its {EVENT_REASON_SPOT_RECLAIMED} Event "
            f"could not be recorded: {api_error_message(exc)}"
        )


def append_history(cluster: Cluster, entry: Mapping[str, Any], size: int) -> list[Any]:
    entries = push_history(read_live_history(cluster), entry, size)
    cluster.apply(history_manifest(entries))
    return entries


def _record_history(cluster: Cluster, entry: Mapping[str, Any], size: int) -> list[Any]:
    """The jobs are gone either way: a history that cannot be written is only warned about."""
    try:
        return append_history(cluster, entry, size)
    except ApiException as exc:
        warn(
            f"the reclaim could not be added to ConfigMap {PLATFORM_NAMESPACE}/{SPOT_RECLAIM_HISTORY}: "
            f"{api_error_message(exc)}"
        )
        return []


def count_reclaims(
    cluster: Cluster, deleted: Iterable[Mapping[str, Any]]
) -> dict[str, dict[str, int]]:
    """Raise each spot queue's reclaim count by the jobs deleted from it (rule
    spot-reclaim-count); returns the counts written, before and after, by queue. Under
    the reclaim Lease no other reclaim counts at the same time; a spot recompute may
    change the queue in between, which the patch's resourceVersion turns into a
    conflict and another read. The jobs are gone either way: a count that cannot be
    written is only warned about (and left out of what is returned)."""
    counted: dict[str, dict[str, int]] = {}
    for name, jobs in reclaims_per_queue(deleted).items():
        for _attempt in range(COUNT_ATTEMPTS):
            try:
                queue = cluster.get(QUEUE_API, "Queue", name)
                if queue is not None:
                    cluster.merge_patch(QUEUE_API, "Queue", name, reclaim_count_patch(queue, jobs))
                    counted[name] = raised_count(queue, jobs)
                break
            except ConflictError:
                continue
            except (ApiException, TransportError) as exc:
                warn(
                    f"the reclaim count of queue {name} could not be raised by {jobs}: "
                    f"{api_error_message(exc)}"
                )
                break
        else:
            warn(f"the reclaim count of queue {name} kept changing; {jobs} reclaims not counted")
    return counted


def counts_to_raise(
    cluster: Cluster, victims: Iterable[Mapping[str, Any]]
) -> dict[str, dict[str, int]]:
    """Check mode: each victim queue's reclaim count now and after the reclaim, by
    queue (one GET per queue the victims come from; a queue gone counts nothing)."""
    counted: dict[str, dict[str, int]] = {}
    for name, jobs in reclaims_per_queue(victims).items():
        queue = cluster.get(QUEUE_API, "Queue", name)
        if queue is not None:
            counted[name] = raised_count(queue, jobs)
    return counted


# --- the whole reclaim -------------------------------------------------------------


def preview(cluster: Cluster, request: ReclaimRequest, now: datetime) -> dict[str, Any]:
    """The reclaim in check mode: the victims it would delete, nothing written."""
    result, _unused = plan(cluster, request)
    live = lease_io.read_lease(cluster, SPOT_RECLAIM)
    blocker = lease_blocker(live, request.holder, now)
    if blocker:
        warn(blocker)
    result["changed"] = bool(result["victims"])
    result["history"] = read_live_history(cluster)
    result["counted"] = counts_to_raise(cluster, result["victims"])
    return result


def reclaim(
    cluster: Cluster, request: ReclaimRequest, check_mode: bool, now: datetime | None = None
) -> dict[str, Any]:
    """Rule reclaim, end to end: the plan in check mode; otherwise, under the
    lease, plan again, delete, record Events and history. Raises ReclaimError
    (a Refused) when the lease is held or the spot jobs hold too little."""
    now = now or utc_now()
    if check_mode:
        return preview(cluster, request, now)
    # A first plan without the lease: a run with nothing to reclaim (a scheduled
    # recompute, most minutes) writes nothing at all, not even the Lease. Anything
    # else, a refusal included, is decided again under the lease, so a second run
    # meets the first one's Lease first.
    try:
        result, victims = plan(cluster, request)
    except ReclaimError:
        victims = None
    if victims == []:
        result.update(changed=False, history=read_live_history(cluster), counted={})
        return result
    lease = acquire_lease(cluster, request.holder, request.lease_duration, now)
    try:
        result, victims = plan(cluster, request)
        if not victims:
            result.update(changed=False, history=read_live_history(cluster), counted={})
            return result
        deleted = delete_victims(cluster, victims, result, request.reason, now)
        result.update(
            _deleted_so_far(result, deleted), changed=bool(deleted), history=[], counted={}
        )
        if deleted:
            entry = history_entry(result, request.reason, request.holder, now)
            result["history"] = _record_history(cluster, entry, request.history_size)
            result["counted"] = count_reclaims(cluster, deleted)
        return result
    finally:
        release_lease(cluster, lease)


def wait_until_free(
    cluster: Cluster,
    node_selector: Mapping[str, str] | None,
    demand: int,
    timeout: float,
    sleep: float = 2.0,
    clock: Callable[[], float] = time.monotonic,
    pause: Callable[[float], None] = time.sleep,
) -> tuple[bool, int]:
    """Poll until ``demand`` GPUs are free with nothing left on its way out
    (the deleted jobs' pods are gone). Returns (reached, free GPUs)."""
    deadline = clock() + timeout
    while True:
        state = read_pool(cluster, node_selector)
        free = state.free_gpus_settled
        if free >= demand:
            return True, free
        if clock() >= deadline:
            return False, free
        pause(sleep)


# --- spot_reclaim ------------------------------------------------------------------


def run_reclaim(params: dict[str, Any], cluster: Cluster, check_mode: bool) -> dict[str, Any]:
    """The ``spot_reclaim`` module: free ``need`` GPUs, then (``wait``) wait until
    they are free."""
    request = reclaim_request(
        params,
        params["need"],
        params["demand_reason"],
        default_holder(),
        allow_partial=params["allow_partial"],
        run_id=run_id(),
        need_from=params["need_from"],
    )
    now = utc_now()
    result = reclaim(cluster, request, check_mode, now)
    result["reclaim"] = reclaim_summary(result, request.reason, now)
    result["waited"] = False
    if params["wait"] and not check_mode:
        _wait_after_reclaim(cluster, request, params["wait_timeout"], result)
    result["diff"] = reclaim_diff(result["victims"], result["counted"])
    return result


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


def run_recompute(params: dict[str, Any], cluster: Cluster, check_mode: bool) -> dict[str, Any]:
    """The ``spot_capacity`` module: every spot queue's capability from the idle
    pool, applied to the queues whose value changes (a dry run in check mode)."""
    selector = params["node_selector"] or {}
    nodes = cluster.list("v1", "Node", label_selector=label_selector(selector))
    capacity = plan_spot_capacity(
        nodes, read_queues(cluster), selector, params.get("allow_empty_pool", False)
    )
    warn_all(capacity.warnings)
    result = recompute_result(capacity, params.get("report", "changed"))
    apply_capabilities(cluster, capacity.changes, "updating spot queues", **result)
    result["changed"] = bool(capacity.changes)
    result["diff"] = {"before": capacity.before, "after": capacity.after}
    return result


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


def run_market(
    params: Mapping[str, Any], cluster: Cluster, check_mode: bool = False
) -> dict[str, Any]:
    """The ``spot_info`` module: one list of managed Queues, one of spot Volcano Jobs
    (label selector ``platform.io/billing-type=spot``, every namespace: the reclaim and
    so the safe bid are cluster-wide) and one get of the reclaim history; it never
    writes. An unknown ``tenant`` is refused right after the Queue list, before the
    other reads."""
    tenant, reclaim_gpus = parse_market(params)
    queues = read_queues(cluster)
    raise_if(unknown_tenant_errors(tenant, queues))
    candidates = read_spot_candidates(cluster, queues)
    history = read_live_history(cluster)
    return {"changed": False, **market_view(tenant, reclaim_gpus, queues, candidates, history)}
