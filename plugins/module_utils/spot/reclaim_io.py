# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one spot reclaim every module that frees spot GPUs goes through (``reclaim``:
``spot_reclaim``, ``payg_capacity``, a catalog sale), against the cluster (I/O).

The decisions are the pure rules of ``spot/victims``, ``spot/candidates`` and
``spot/reclaim``; the reads are ``spot/read_io``. Written here, under the
``spot-reclaim`` Lease in ``platform-system`` (held while selecting and deleting, so
that two runs never both delete):

* per victim: delete the Volcano Job (or the pod), then a ``SpotReclaimed`` Event on it;
* one entry per reclaim at the head of the bounded history ConfigMap;
* per spot queue that lost jobs, its reclaim count raised (rule
  spot-reclaim-count: a merge patch against the version just read).

The Event and the history are best effort, written by ``kube/run_record`` as the
queue arbiter's are. In check mode nothing is written: the reclaim only reports its
victims (``preview``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from ansible.module_utils.common.warnings import warn

from ..common.errors import PartialWrite
from ..common.names import (
    ANNOTATION_SPOT_RECLAIMED,
    EVENT_REASON_SPOT_RECLAIMED,
    JOB_API,
    QUEUE_API,
    SPOT_RECLAIM_HISTORY,
)
from ..kube import lease_io
from ..kube.cluster import (
    ApiException,
    Cluster,
    ConflictError,
    TransportError,
)
from ..kube.lease import SPOT_RECLAIM
from ..kube.run_record import raise_stop_counts, record_event, record_history
from .read_io import list_podgroups, list_pool, list_spot, read_live_history, warn_all
from .reclaim import (
    NEED_FROM_OFFERS,
    NEED_FROM_UNUSED,
    SUMMARY_FIELDS,
    ReclaimError,
    ReclaimRequest,
    event_manifest,
    history_entry,
    lease_blocker,
    raised_count,
    reclaims_per_queue,
    victim_names,
)
from .reclaim_flow import ReclaimFacts, ReclaimPlan, needs_candidates, plan_reclaim
from .victims import SpotJob

# Attempts at raising a queue's reclaim count when a spot recompute changes the queue
# between the read and the patch.


def utc_now() -> datetime:
    return datetime.now(tz=UTC)


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


def gather(request: ReclaimRequest, cluster: Cluster) -> ReclaimFacts:
    """The reclaim's reads: one list of the pool's Nodes and one of unfinished Pods; then,
    when the decision needs them (``reclaim_flow.needs_candidates``), one of the billing
    Queues, one of the spot Volcano Jobs and one of the Running Volcano pods; with
    ``need_from: unused`` every managed Queue instead, and one list of PodGroups."""
    nodes, pods = list_pool(cluster, request.node_selector)
    facts = ReclaimFacts(tuple(nodes), tuple(pods))
    if not needs_candidates(request, facts):
        return facts
    unused = request.need_from == NEED_FROM_UNUSED
    queues, jobs, running = list_spot(cluster, team_queues=unused)
    facts = replace(facts, queues=tuple(queues), jobs=tuple(jobs), running_pods=tuple(running))
    return replace(facts, podgroups=tuple(list_podgroups(cluster))) if unused else facts


def decide(request: ReclaimRequest, cluster: Cluster) -> ReclaimPlan:
    """Read and plan (``reclaim_flow.plan_reclaim``), warning what the plan warns of."""
    planned = plan_reclaim(request, gather(request, cluster))
    warn_all(planned.warnings)
    return planned


def plan(cluster: Cluster, request: ReclaimRequest) -> tuple[dict[str, Any], list[SpotJob]]:
    """Read the cluster once and choose the victims (no writes); the refusal raised."""
    planned = decide(request, cluster)
    planned.refuse()
    return planned.result, planned.victims


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
        # The job is gone either way: a refused Event is only warned about.
        record_event(
            cluster,
            _event(victim, result, reason, now, order),
            f"{victim.namespace}/{victim.name} was deleted but its {EVENT_REASON_SPOT_RECLAIMED}",
        )
    return deleted


def _event(
    victim: SpotJob, result: Mapping[str, Any], reason: str, now: datetime, order: int
) -> dict[str, Any]:
    """The ``SpotReclaimed`` Event on a deleted victim (``reclaim.event_manifest``)."""
    basis = result.get("need_from") if result.get("need_from") in NEED_FROM_OFFERS else "free"
    return event_manifest(
        victim, victim.uid, result["demand"], result["shortfall"], reason, now, order, basis
    )


def count_reclaims(
    cluster: Cluster, deleted: Iterable[Mapping[str, Any]]
) -> dict[str, dict[str, int]]:
    """Raise each spot queue's reclaim count by the jobs deleted from it (rule
    spot-reclaim-count, written by ``kube/run_record.raise_stop_counts``); returns the
    counts written, before and after, by queue. Under the reclaim Lease no other reclaim
    counts at the same time; a spot recompute may change the queue in between, which the
    patch's resourceVersion turns into a conflict and another read."""
    return raise_stop_counts(
        cluster, ANNOTATION_SPOT_RECLAIMED, reclaims_per_queue(deleted), "reclaim", "reclaims"
    )


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


def preview(
    cluster: Cluster, request: ReclaimRequest, planned: ReclaimPlan, now: datetime
) -> dict[str, Any]:
    """The reclaim in check mode: the victims it would delete, nothing written."""
    planned.refuse()
    result = planned.result
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
    """The spot reclaim end to end (``decide`` then ``apply_reclaim``). Raises
    ReclaimError (a Refused) when the lease is held or the spot jobs hold too little."""
    return apply_reclaim(cluster, request, decide(request, cluster), check_mode, now)


def apply_reclaim(
    cluster: Cluster,
    request: ReclaimRequest,
    planned: ReclaimPlan,
    check_mode: bool,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The reclaim ``planned`` (made without the lease): in check mode its victims;
    otherwise, under the lease, read and plan again, delete, record Events and history."""
    now = now or utc_now()
    if check_mode:
        return preview(cluster, request, planned, now)
    # The first plan was made without the lease: a run with nothing to reclaim (a
    # scheduled recompute, most minutes) writes nothing at all, not even the Lease.
    # Anything else, a refusal included, is decided again under the lease, so a second
    # run meets the first one's Lease first and never deletes the same GPUs twice.
    if planned.refusal is None and not planned.victims:
        result = planned.result
        result.update(changed=False, history=read_live_history(cluster), counted={})
        return result
    lease = acquire_lease(cluster, request.holder, request.lease_duration, now)
    try:
        planned = decide(request, cluster)
        planned.refuse()
        result, victims = planned.result, planned.victims
        if not victims:
            result.update(changed=False, history=read_live_history(cluster), counted={})
            return result
        deleted = delete_victims(cluster, victims, result, request.reason, now)
        result.update(
            _deleted_so_far(result, deleted), changed=bool(deleted), history=[], counted={}
        )
        if deleted:
            # The jobs are gone either way: the history is best effort.
            result["history"] = record_history(
                cluster,
                SPOT_RECLAIM_HISTORY,
                history_entry(result, request.reason, request.holder, now),
                request.history_size,
                "the reclaim",
            )
            result["counted"] = count_reclaims(cluster, deleted)
        return result
    finally:
        release_lease(cluster, lease)
