# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a spot reclaim asks for, checks, records and reports (pure: no I/O).

The victims themselves are chosen by ``victims``; ``reclaim_io`` reads and
writes (the Events and the history through ``kube/run_record``). Rules held here:

* Rule reclaim-lease (``lease_blocker``): who holds the ``spot-reclaim`` Lease
  so that this run must not delete (the rule is ``kube/lease.lease_blocker``, shared
  with the queue arbiter; rule reclaim-lease-holder is ``kube/lease.run_holder``).
* Rule reclaim-history (``push_history``, ``common/history``): newest first, bounded.
* Rule spot-reclaim-count (``reclaimed_jobs``; the count itself is rule stop-count): each spot
  Queue counts the jobs reclaimed from it, ever, in an annotation that
  kube-state-metrics exports, so Prometheus counts reclaims per hour.
* Rule reclaim-input (``reclaim_option_errors``, ``reclaim_input_errors``):
  the checks a reclaiming module makes before its first request.

The Lease and the history are shared with the queue arbiter (``kube/lease``,
``kube/lease_io``, ``common/history``: ``push_history`` and ``read_history`` are imported
from there).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..common import history as _history
from ..common import stop_counts
from ..common.errors import FieldError, Refused, raise_if
from ..common.names import (
    ANNOTATION_SPOT_RECLAIMED,
    EVENT_REASON_SPOT_RECLAIMED,
    JOB_API,
    MANAGED_BY,
    SPOT_RECLAIM_HISTORY,
)
from ..common.quantity import GPU, Resources
from ..common.run_event import involved_object, run_event
from ..kube import lease as _lease
from ..kube.lease import SPOT_RECLAIM, run_holder, seconds_time
from ..workload.pool import POOL_OPTIONS, selector_errors
from .victims import SpotJob

# What the reclaim summary (``reclaim`` in the result) repeats of the run.
SUMMARY_FIELDS = ("demand", "pool", "allocated", "free", "shortfall", "freed", "victims")


class ReclaimError(Refused):
    """A reclaim the cluster's state forbids (the lease is held, the spot jobs
    hold too few GPUs); ``result`` holds what is known, reported with it."""

    @property
    def result(self) -> dict[str, Any]:
        return dict(self.extra)


# --- the pool as a reclaim sees it ---------------------------------------------------


@dataclass
class PoolState:
    pool: Resources
    members: list[str]
    held: Resources
    leaving: Resources

    @property
    def pool_gpus(self) -> int:
        return int(self.pool[GPU])

    @property
    def allocated_gpus(self) -> int:
        return int(self.held[GPU])

    @property
    def free_gpus(self) -> int:
        """Free now, counting GPUs of pods on their way out as free."""
        return max(0, self.pool_gpus - self.allocated_gpus)

    @property
    def free_gpus_settled(self) -> int:
        """Free with the pods on their way out still counted as holding."""
        return max(0, self.pool_gpus - self.allocated_gpus - int(self.leaving[GPU]))


# --- the request ---------------------------------------------------------------------

# The argument spec every module that reclaims shares (documented by the doc
# fragments gpucloud.platform.pool and gpucloud.platform.reclaim).
RECLAIM_OPTIONS: dict[str, dict[str, Any]] = {
    **POOL_OPTIONS,
    "history_size": {"type": "int", "default": 100},
    "lease_duration": {"type": "int", "default": 60},
    "holder_identity": {"type": "str"},
    "wait": {"type": "bool", "default": False},
    "wait_timeout": {"type": "int", "default": 300},
}


NEED_FROM_FREE = "free"
NEED_FROM_UNSOLD = "unsold"
NEED_FROM_UNUSED = "unused"
# The need_from values that count what spot holds (and so read the spot candidates).
NEED_FROM_OFFERS = (NEED_FROM_UNSOLD, NEED_FROM_UNUSED)


@dataclass
class ReclaimRequest:
    demand: int
    reason: str = "a paying demand"
    node_selector: Mapping[str, str] = field(default_factory=dict)
    allow_partial: bool = False
    history_size: int = 100
    holder: str = MANAGED_BY
    lease_duration: int = 60
    # "free": the demand is met from the GPUs free now (rule reclaim-need);
    # "unsold": the demand is a sale, met from GPUs nobody has bought (rule
    # unsold-reclaim-need); "unused": spot keeps only what no paying queue holds or
    # waits for (rule unused-reclaim-need, offer unused of spot/offer).
    need_from: str = NEED_FROM_FREE


def reclaim_request(
    params: Mapping[str, Any],
    demand: int,
    reason: str,
    holder: str,
    allow_partial: bool = False,
    run_id: str = "",
    need_from: str = NEED_FROM_FREE,
) -> ReclaimRequest:
    """The reclaim a module's options ask for (``node_selector``,
    ``history_size``, ``lease_duration``; ``holder`` when no
    ``holder_identity`` is given), held as ``run_holder``."""
    return ReclaimRequest(
        demand=demand,
        reason=reason,
        node_selector=params.get("node_selector") or {},
        allow_partial=allow_partial,
        history_size=params["history_size"],
        holder=run_holder(params.get("holder_identity") or holder, run_id),
        lease_duration=params["lease_duration"],
        need_from=need_from,
    )


def reclaim_option_errors(params: Mapping[str, Any]) -> list[FieldError]:
    """Rule reclaim-input, the options every reclaiming module shares."""
    errors: list[FieldError] = []
    for name in ("history_size", "lease_duration", "wait_timeout"):
        value = params.get(name)
        least = 1 if name == "lease_duration" else 0
        if value is not None and value < least:
            errors.append(FieldError(name, f"{value} is too small; {least} or more is accepted"))
    return errors


def reclaim_input_errors(params: Mapping[str, Any]) -> list[FieldError]:
    """Rule reclaim-input for ``spot_reclaim``: every check before the first request."""
    errors = []
    if params["need"] < 0:
        errors.append(
            FieldError("need", f"{params['need']} is negative; a demand is 0 or more GPUs")
        )
    errors.extend(selector_errors(params["node_selector"]))
    errors.extend(reclaim_option_errors(params))
    if not (params["demand_reason"] or "").strip():
        errors.append(
            FieldError("demand_reason", "must say what the GPUs are for (a non-empty string)")
        )
    return errors


def validate_reclaim_input(params: Mapping[str, Any]) -> None:
    """``reclaim_input_errors``, raising PlatformValidationError."""
    raise_if(reclaim_input_errors(params))


# --- the lease (kube/lease, for the spot-reclaim Lease) ------------------------------


def lease_blocker(lease: Mapping[str, Any] | None, holder: str, now: datetime) -> str | None:
    """Rule reclaim-lease (``kube/lease.lease_blocker``) for the ``spot-reclaim`` Lease."""
    return _lease.lease_blocker(SPOT_RECLAIM, lease, holder, now)


LEASE_RACE = _lease.lease_race(SPOT_RECLAIM)


def lease_manifest(
    holder: str, duration: int, now: datetime, transitions: int = 0
) -> dict[str, Any]:
    """The ``spot-reclaim`` Lease (``kube/lease.lease_manifest``)."""
    return _lease.lease_manifest(SPOT_RECLAIM, holder, duration, now, transitions)


def lease_takeover(
    live: Mapping[str, Any], holder: str, duration: int, now: datetime
) -> dict[str, Any]:
    """The takeover of the ``spot-reclaim`` Lease (``kube/lease.lease_takeover``)."""
    return _lease.lease_takeover(SPOT_RECLAIM, live, holder, duration, now)


# --- what a reclaim records ----------------------------------------------------------


def event_manifest(
    job: SpotJob,
    uid: str | None,
    demand: int,
    shortfall: int,
    reason: str,
    now: datetime,
    order: int = 1,
    basis: str = "free",
) -> dict[str, Any]:
    """The ``SpotReclaimed`` Event recorded on a deleted spot job (the shape of
    ``common/run_event``).

    ``basis`` says what the shortfall was counted against, in the platform's words:
    ``free`` (not allocated: a reclaim for demand), ``unsold`` (not sold: a sale's
    reclaim, rule unsold-reclaim-need) or ``unused`` (neither held nor awaited by a
    paying queue: rule unused-reclaim-need).

    ``order`` is the job's place in the kill order (1 first). It is recorded
    in the annotation ``platform.io/reclaim-order`` and added (in nanoseconds)
    to the run's time in the Event's name suffix, so that the Events of one
    reclaim, which share a timestamp, still sort in kill order by name."""
    kind = "job" if job.kind == "Job" else "pod"
    return run_event(
        involved_object(
            JOB_API if job.kind == "Job" else "v1", job.kind, job.name, job.namespace, uid
        ),
        EVENT_REASON_SPOT_RECLAIMED,
        "Warning",
        f"spot {kind} {job.namespace}/{job.name} (price {job.price}, {job.gpus} GPUs, "
        f"{job.pods} pods) was deleted to free GPUs for {reason}: demand {demand} GPUs, "
        f"{shortfall} short of {basis} GPUs",
        {
            "platform.io/spot-price": str(job.price),
            "platform.io/reclaimed-gpus": str(job.gpus),
            "platform.io/reclaim-demand": str(demand),
            "platform.io/reclaim-order": str(order),
        },
        now,
        order,
    )


def history_entry(
    result: Mapping[str, Any], reason: str, holder: str, now: datetime
) -> dict[str, Any]:
    return {
        "time": seconds_time(now),
        "reason": reason,
        "holder": holder,
        **{k: result[k] for k in SUMMARY_FIELDS},
    }


def reclaimed_jobs(queue: Mapping[str, Any]) -> int:
    """Rule spot-reclaim-count: the jobs reclaimed from this spot Queue so far, its
    ``platform.io/spot-reclaimed-jobs`` annotation (rule stop-count)."""
    return stop_counts.stopped_jobs(queue, ANNOTATION_SPOT_RECLAIMED)


def reclaims_per_queue(victims: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Rule spot-reclaim-count: how many of the victims each spot Queue loses, by name."""
    return stop_counts.per_queue(v.get("queue") for v in victims)


def raised_count(queue: Mapping[str, Any], jobs: int) -> dict[str, int]:
    """Rule spot-reclaim-count: the Queue's count before and after ``jobs`` more reclaims."""
    return stop_counts.raised_count(queue, ANNOTATION_SPOT_RECLAIMED, jobs)


def history_manifest(entries: list[Any]) -> dict[str, Any]:
    """The ``spot-reclaim-history`` ConfigMap (``common/history.history_manifest``)."""
    return _history.history_manifest(SPOT_RECLAIM_HISTORY, entries)


# --- what a reclaim reports ----------------------------------------------------------


def reclaim_report(demand: int, state: PoolState, shortfall: int) -> dict[str, Any]:
    """The reclaim's result before any victim is chosen."""
    return {
        "demand": demand,
        "pool": state.pool_gpus,
        "allocated": state.allocated_gpus,
        "free": state.free_gpus,
        "shortfall": shortfall,
        "freed": 0,
        "victims": [],
    }


def too_little_spot(
    demand: int,
    state: PoolState,
    shortfall: int,
    why: object,
    unsold: int | None = None,
    unused: int | None = None,
) -> str:
    """Why a reclaim cannot cover its shortfall; ``unsold`` given: the shortfall was counted
    against the unsold GPUs (a sale), ``unused``: against the GPUs no paying queue holds
    or waits for, and the words say so."""
    if unsold is not None:
        have = f"{unsold} of the pool's {state.pool_gpus} GPUs are unsold"
    elif unused is not None:
        have = (
            f"{unused} of the pool's {state.pool_gpus} GPUs are neither held nor awaited "
            "by a paying queue"
        )
    else:
        have = f"{state.free_gpus} of the pool's {state.pool_gpus} GPUs are free"
    return f"demand {demand} GPUs: {have}, {shortfall} must be reclaimed, but {why}"


def victim_names(victims: list[Mapping[str, Any]]) -> list[str]:
    return [f"{v['namespace']}/{v['name']}" for v in victims]


def reclaim_summary(result: Mapping[str, Any], reason: str, now: datetime) -> dict[str, Any]:
    """The run's summary for ``set_stats`` (``reclaim`` in spot_reclaim's result)."""
    return {"time": seconds_time(now), "reason": reason, **{k: result[k] for k in SUMMARY_FIELDS}}


def reclaim_diff(
    victims: list[Mapping[str, Any]], counted: Mapping[str, Mapping[str, int]]
) -> dict[str, Any]:
    """The victims before (running) and after (deleted), and each spot Queue's reclaim
    count (``counted``: before and after, by queue) under the key
    ``<queue> platform.io/spot-reclaimed-jobs``."""
    names = victim_names(victims)
    before: dict[str, str] = {name: "running" for name in names}
    after: dict[str, str] = {name: "deleted" for name in names}
    for queue, count in sorted(counted.items()):
        key = f"{queue} {ANNOTATION_SPOT_RECLAIMED}"
        before[key], after[key] = str(count["before"]), str(count["after"])
    return {"before": before, "after": after}
