# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Spot reclaim against the cluster: read, select, delete, record.

The one code path every module that reclaims spot GPUs goes through
(``spot_reclaim`` and ``payg_capacity``). The decisions are the pure rules of
``spot_pool`` and ``spot_victims``; this file does the reading and writing
through ``kube.Cluster``:

* one list of Nodes (label selector = node selector), one of Pods (not
  finished), one of managed Queues, one of spot Volcano Jobs;
* the ``spot-reclaim`` Lease in ``platform-system`` held while selecting and
  deleting, so that two runs never both delete;
* per victim: delete the Volcano Job, then a ``SpotReclaimed`` Event on it;
* one entry per reclaim at the head of the bounded history ConfigMap.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..capacity.pool import (
    Resources,
    allocated_from_pods,
    commitments_from_queues,
    label_selector,
    pool_from_nodes,
)
from ..common.errors import FieldError, PlatformValidationError
from ..common.names import (
    EVENT_REASON_SPOT_RECLAIMED,
    JOB_API,
    LABEL_BILLING_TYPE,
    LABEL_MANAGED_BY,
    LEASE_API,
    MANAGED_BY,
    MANAGED_SELECTOR,
    PLATFORM_NAMESPACE,
    QUEUE_API,
    SPOT_RECLAIM_HISTORY,
    SPOT_RECLAIM_LEASE,
)
from ..common.quantity import GPU
from ..kube.cluster import ApiException, Cluster, ConflictError, api_error_message
from .victims import SpotJob, candidates_from_vcjobs, choose_victims, reclaim_need

HISTORY_KEY = "history.json"
_UNFINISHED_PODS = "status.phase!=Succeeded,status.phase!=Failed"


class ReclaimError(Exception):
    """A reclaim that could not go ahead; ``result`` holds what is known."""

    def __init__(self, message: str, result: Mapping[str, Any] | None = None):
        super().__init__(message)
        self.result = dict(result or {})


def utc_now() -> datetime:
    return datetime.now(tz=UTC)


def micro_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def seconds_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- reading -----------------------------------------------------------------


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


def read_pool(cluster: Cluster, node_selector: Mapping[str, str] | None) -> PoolState:
    """One list of Nodes and one of unfinished Pods."""
    nodes = cluster.list("v1", "Node", label_selector=label_selector(node_selector))
    pool, members = pool_from_nodes(nodes, node_selector)
    pods = cluster.list("v1", "Pod", field_selector=_UNFINISHED_PODS)
    held, leaving = allocated_from_pods(pods, members)
    return PoolState(pool, members, held, leaving)


def read_queues(cluster: Cluster) -> list[dict[str, Any]]:
    return cluster.list(QUEUE_API, "Queue", label_selector=MANAGED_SELECTOR)


def read_spot_candidates(
    cluster: Cluster, queues: list[dict[str, Any]]
) -> tuple[list[SpotJob], list[str]]:
    spot_queues = [c.spot_queue for c in commitments_from_queues(queues).values() if c.spot_queue]
    jobs = cluster.list(JOB_API, "Job", label_selector=f"{LABEL_BILLING_TYPE}=spot")
    return candidates_from_vcjobs(jobs, spot_queues)


# --- the lease -------------------------------------------------------------------


def _parse_micro(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    text = value[:-1] + "+00:00" if value.endswith("Z") else value
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def lease_blocker(lease: Mapping[str, Any] | None, holder: str, now: datetime) -> str | None:
    """Rule reclaim-lease: who blocks ``holder`` from taking the lease, or None.

    The lease is free when it does not exist, has no holder, is ``holder``'s
    own, or was last renewed more than its duration ago."""
    if not lease:
        return None
    spec = lease.get("spec") or {}
    other = spec.get("holderIdentity")
    if not other or other == holder:
        return None
    renewed = _parse_micro(spec.get("renewTime")) or _parse_micro(spec.get("acquireTime"))
    duration = spec.get("leaseDurationSeconds") or 0
    if renewed is None:
        return None
    expires = renewed.timestamp() + float(duration)
    if expires <= now.timestamp():
        return None
    return (
        f"Lease {PLATFORM_NAMESPACE}/{SPOT_RECLAIM_LEASE} is held by {other!r} until "
        f"{seconds_time(datetime.fromtimestamp(expires, tz=UTC))}; another spot reclaim is "
        "running, try again after it ends"
    )


def lease_manifest(
    holder: str, duration: int, now: datetime, transitions: int = 0
) -> dict[str, Any]:
    return {
        "apiVersion": LEASE_API,
        "kind": "Lease",
        "metadata": {
            "name": SPOT_RECLAIM_LEASE,
            "namespace": PLATFORM_NAMESPACE,
            "labels": {LABEL_MANAGED_BY: MANAGED_BY},
        },
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": int(duration),
            "acquireTime": micro_time(now),
            "renewTime": micro_time(now),
            "leaseTransitions": transitions,
        },
    }


def acquire_lease(
    cluster: Cluster, holder: str, duration: int, now: datetime | None = None
) -> dict[str, Any]:
    """Take the reclaim lease: create it; if it exists and is free (expired or
    ours), take it over with an update guarded by its resourceVersion."""
    now = now or utc_now()
    try:
        return cluster.create(lease_manifest(holder, duration, now))
    except ConflictError:
        pass
    live = cluster.get(LEASE_API, "Lease", SPOT_RECLAIM_LEASE, PLATFORM_NAMESPACE)
    if live is None:
        try:
            return cluster.create(lease_manifest(holder, duration, now))
        except ConflictError:
            raise ReclaimError(
                f"Lease {PLATFORM_NAMESPACE}/{SPOT_RECLAIM_LEASE} was taken by another spot reclaim at the same time; try again"
            ) from None
    blocker = lease_blocker(live, holder, now)
    if blocker:
        raise ReclaimError(blocker)
    spec = live.get("spec") or {}
    transitions = int(spec.get("leaseTransitions") or 0) + (
        0 if spec.get("holderIdentity") == holder else 1
    )
    manifest = lease_manifest(holder, duration, now, transitions)
    manifest["metadata"]["resourceVersion"] = (live.get("metadata") or {}).get("resourceVersion")
    try:
        return cluster.replace(manifest)
    except ConflictError:
        raise ReclaimError(
            f"Lease {PLATFORM_NAMESPACE}/{SPOT_RECLAIM_LEASE} was taken by another spot reclaim at the same time; try again"
        ) from None


def release_lease(cluster: Cluster, lease: Mapping[str, Any]) -> bool:
    """Give the lease back, only if it is still the one we hold."""
    meta = lease.get("metadata") or {}
    try:
        return cluster.delete(
            LEASE_API,
            "Lease",
            SPOT_RECLAIM_LEASE,
            PLATFORM_NAMESPACE,
            propagation="Background",
            preconditions={"resourceVersion": meta.get("resourceVersion", "")},
        )
    except ConflictError:
        return False


# --- deleting and recording ------------------------------------------------------


def event_manifest(
    job: SpotJob,
    uid: str | None,
    demand: int,
    shortfall: int,
    reason: str,
    now: datetime,
    order: int = 1,
) -> dict[str, Any]:
    """The ``SpotReclaimed`` Event recorded on a deleted spot job.

    ``order`` is the job's place in the kill order (1 first). It is recorded
    in the annotation ``platform.io/reclaim-order`` and added (in nanoseconds)
    to the run's time in the Event's name suffix, so that the Events of one
    reclaim, which share a timestamp, still sort in kill order by name."""
    stamp = int(now.timestamp() * 1_000_000_000) + order
    involved = {
        "apiVersion": JOB_API,
        "kind": "Job",
        "name": job.name,
        "namespace": job.namespace,
    }
    if uid:
        involved["uid"] = uid
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{job.name[:200]}.{stamp:x}",
            "namespace": job.namespace,
            "labels": {LABEL_MANAGED_BY: MANAGED_BY},
            "annotations": {
                "platform.io/spot-price": str(job.price),
                "platform.io/reclaimed-gpus": str(job.gpus),
                "platform.io/reclaim-demand": str(demand),
                "platform.io/reclaim-order": str(order),
            },
        },
        "involvedObject": involved,
        "reason": EVENT_REASON_SPOT_RECLAIMED,
        "type": "Warning",
        "message": (
            f"spot job {job.namespace}/{job.name} (price {job.price}, {job.gpus} GPUs, {job.pods} pods) "
            f"was deleted to free GPUs for {reason}: demand {demand} GPUs, {shortfall} short of free GPUs"
        ),
        "source": {"component": MANAGED_BY},
        "firstTimestamp": seconds_time(now),
        "lastTimestamp": seconds_time(now),
        "count": 1,
    }


def history_entry(
    result: Mapping[str, Any], reason: str, holder: str, now: datetime
) -> dict[str, Any]:
    return {
        "time": seconds_time(now),
        "reason": reason,
        "holder": holder,
        "demand": result["demand"],
        "pool": result["pool"],
        "allocated": result["allocated"],
        "free": result["free"],
        "shortfall": result["shortfall"],
        "freed": result["freed"],
        "victims": result["victims"],
    }


def push_history(entries: list[Any], entry: Mapping[str, Any], size: int) -> list[Any]:
    """Rule reclaim-history: newest first, at most ``size`` entries."""
    return ([dict(entry), *entries])[: max(size, 0)]


def read_history(configmap: Mapping[str, Any] | None) -> list[Any]:
    raw = ((configmap or {}).get("data") or {}).get(HISTORY_KEY)
    if not raw:
        return []
    try:
        loaded = json.loads(raw)
    except ValueError:
        return []
    return loaded if isinstance(loaded, list) else []


def history_manifest(entries: list[Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": SPOT_RECLAIM_HISTORY,
            "namespace": PLATFORM_NAMESPACE,
            "labels": {LABEL_MANAGED_BY: MANAGED_BY},
        },
        "data": {HISTORY_KEY: json.dumps(entries, indent=1, sort_keys=True)},
    }


def append_history(cluster: Cluster, entry: Mapping[str, Any], size: int) -> list[Any]:
    live = cluster.get("v1", "ConfigMap", SPOT_RECLAIM_HISTORY, PLATFORM_NAMESPACE)
    entries = push_history(read_history(live), entry, size)
    cluster.apply(history_manifest(entries))
    return entries


# --- the whole reclaim -----------------------------------------------------------


@dataclass
class ReclaimRequest:
    demand: int
    reason: str = "a paying demand"
    node_selector: Mapping[str, str] = field(default_factory=dict)
    allow_partial: bool = False
    history_size: int = 100
    holder: str = MANAGED_BY
    lease_duration: int = 60


def plan(
    cluster: Cluster, request: ReclaimRequest
) -> tuple[dict[str, Any], list[SpotJob], PoolState]:
    """Read the cluster once and choose the victims (no writes)."""
    state = read_pool(cluster, request.node_selector)
    shortfall = reclaim_need(state.pool_gpus, state.allocated_gpus, request.demand)
    result: dict[str, Any] = {
        "demand": request.demand,
        "pool": state.pool_gpus,
        "allocated": state.allocated_gpus,
        "free": state.free_gpus,
        "shortfall": shortfall,
        "freed": 0,
        "victims": [],
        "warnings": [],
    }
    if shortfall == 0:
        return result, [], state
    candidates, warnings = read_spot_candidates(cluster, read_queues(cluster))
    result["warnings"] = warnings
    try:
        victims = choose_victims(candidates, shortfall, allow_partial=request.allow_partial)
    except PlatformValidationError as exc:
        raise ReclaimError(
            f"demand {request.demand} GPUs: {state.free_gpus} of the pool's {state.pool_gpus} GPUs are free, "
            f"{shortfall} must be reclaimed, but {exc}",
            result,
        ) from None
    result["victims"] = [v.as_dict() for v in victims]
    result["freed"] = sum(v.gpus for v in victims)
    return result, victims, state


def delete_victims(
    cluster: Cluster, victims: list[SpotJob], result: dict[str, Any], reason: str, now: datetime
) -> list[dict[str, Any]]:
    """Delete each victim in kill order (the job listed, by uid), then record an Event on it."""
    deleted = []
    for order, victim in enumerate(victims, start=1):
        uid = victim.uid
        try:
            gone_already = not cluster.delete(
                JOB_API,
                "Job",
                victim.name,
                victim.namespace,
                preconditions={"uid": uid} if uid else None,
            )
        except ConflictError:
            gone_already = True  # deleted and re-created under its name since the list
        if gone_already:
            continue
        deleted.append(victim.as_dict())
        try:
            cluster.create(
                event_manifest(
                    victim, uid, result["demand"], result["shortfall"], reason, now, order
                )
            )
        except ApiException as exc:
            result["warnings"].append(
                f"{victim.namespace}/{victim.name} was deleted but its {EVENT_REASON_SPOT_RECLAIMED} Event "
                f"could not be recorded: {api_error_message(exc)}"
            )
    return deleted


def reclaim(
    cluster: Cluster, request: ReclaimRequest, check_mode: bool, now: datetime | None = None
) -> dict[str, Any]:
    """Rule reclaim, end to end: the plan in check mode; otherwise, under the
    lease, plan again, delete, record Events and history."""
    now = now or utc_now()
    if check_mode:
        result, _unused, _unused = plan(cluster, request)
        live = cluster.get(LEASE_API, "Lease", SPOT_RECLAIM_LEASE, PLATFORM_NAMESPACE)
        blocker = lease_blocker(live, request.holder, now)
        if blocker:
            result["warnings"].append(blocker)
        result["changed"] = bool(result["victims"])
        result["history"] = read_history(
            cluster.get("v1", "ConfigMap", SPOT_RECLAIM_HISTORY, PLATFORM_NAMESPACE)
        )
        return result
    lease = acquire_lease(cluster, request.holder, request.lease_duration, now)
    try:
        result, victims, _unused = plan(cluster, request)
        if not victims:
            result["changed"] = False
            result["history"] = read_history(
                cluster.get("v1", "ConfigMap", SPOT_RECLAIM_HISTORY, PLATFORM_NAMESPACE)
            )
            return result
        deleted = delete_victims(cluster, victims, result, request.reason, now)
        result["victims"] = deleted
        result["freed"] = sum(v["gpus"] for v in deleted)
        result["changed"] = bool(deleted)
        entry = history_entry(result, request.reason, request.holder, now)
        result["history"] = []
        if deleted:
            try:
                result["history"] = append_history(cluster, entry, request.history_size)
            except ApiException as exc:
                result["warnings"].append(
                    f"the reclaim could not be added to ConfigMap {PLATFORM_NAMESPACE}/{SPOT_RECLAIM_HISTORY}: "
                    f"{api_error_message(exc)}"
                )
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


def describe_shortfall(result: Mapping[str, Any]) -> str:
    return (
        f"demand {result['demand']} GPUs: {result['free']} of {result['pool']} free "
        f"({result['allocated']} allocated); reclaim {result['shortfall']}, freed {result['freed']}"
    )


def validate_request(params: Mapping[str, Any]) -> list[FieldError]:
    """Checks every reclaiming module makes before its first request."""
    errors: list[FieldError] = []
    for name in ("history_size", "lease_duration", "wait_timeout"):
        value = params.get(name)
        if value is not None and value < (1 if name == "lease_duration" else 0):
            errors.append(
                FieldError(
                    name,
                    f"{value} is too small; {1 if name == 'lease_duration' else 0} or more is accepted",
                )
            )
    return errors
