# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The queue arbiter against the cluster: the ``queue_arbiter`` module (``run``).

Inside a fully used subscription Volcano 1.15.1 cannot make a team's room: a job whose
queue or an ancestor is at its capability stays Pending until sla admits it (jobs/sla),
and then gangreclaim cannot place it while the parent queue still counts the victims'
GPUs (docs/scheduling-policy.md). For such a job the arbiter evicts whole lower-priority
jobs (rules of ``arbiter/rules.py``; which job it acts for:
``arbiter/candidates.py``). This file is the domain's only I/O:

* reads, one list per kind, in the tenant's namespace when ``tenant`` is given: PodGroups
  first, and only when one waits and is settled (or ``job`` is given) the Volcano Jobs,
  the managed Queues, the unfinished Pods and the Nodes (Pods and Nodes cluster-wide: the
  free GPUs are the pool's). A run with nothing waiting makes its one list and nothing else;
* decides for the first candidate only (rule arbiter-plan), reporting the others as
  ``waiting``;
* in check mode reports the victims and writes nothing (not even the Lease);
* otherwise holds the ``queue-arbiter`` Lease in ``platform-system`` (``kube/lease_io``),
  reads and decides again under it, evicts every pod of each victim Job through the
  Eviction API in victim order, records an ``ArbiterEvicted`` Event on each evicted Job and
  an ``ArbiterMadeRoom`` Event on the waiting one, adds the run to the ConfigMap
  ``queue-arbiter-history`` and gives the Lease back.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ansible.module_utils.common.warnings import warn

from ..capacity.pool import allocated_from_pods, pool_from_nodes
from ..common.errors import PartialWrite, Refused
from ..common.history import push_history, read_history
from ..common.names import (
    EVENT_REASON_ARBITER_EVICTED,
    EVENT_REASON_ARBITER_MADE_ROOM,
    JOB_API,
    MANAGED_SELECTOR,
    PLATFORM_NAMESPACE,
    PODGROUP_API,
    QUEUE_API,
    QUEUE_ARBITER_HISTORY,
    namespace_name,
)
from ..common.quantity import GPU
from ..jobs.feasibility import Supply, claim_names, required_groups, usable_gpus
from ..jobs.throttle import owner_job
from ..kube.cluster import (
    ApiException,
    Cluster,
    ConflictError,
    NotFoundError,
    TransportError,
    api_error_message,
)
from ..kube.lease import QUEUE_ARBITER, lease_blocker, run_holder
from ..kube.lease_io import acquire_lease, default_holder, read_lease, release_lease, run_id
from .aftermath import (
    aftermath_dicts,
    aftermath_warning,
    restart_may_preempt,
    returns_after_eviction,
)
from .candidates import (
    admission_due,
    arbiter_candidates,
    not_a_candidate,
    podgroup_created,
    podgroup_key,
    settled_waiting,
)
from .hold import (
    gpu_capability,
    held_capability,
    hold_text,
    taken_by_queue,
    with_gpu_capability,
)
from .inputs import job_scope_refusal, queue_scope_refusal
from .model import (
    RunningJob,
    WaitingJob,
    limits_of,
    pods_of,
    queue_states,
    releasing_gpus,
    running_jobs,
    waiting_jobs,
    without_releasing,
)
from .record import (
    arbiter_diff,
    arbiter_result,
    evicted_event,
    history_entry,
    history_manifest,
    made_room_event,
    report,
    room_made_for,
    settled_result,
    victim_dict,
)
from .rules import NOTHING_EVICTED, PREEMPT, RECLAIM, REFUSE, Decision, plan_for

_UNFINISHED_PODS = "status.phase!=Succeeded,status.phase!=Failed"
WHAT = "evicting jobs for the queue arbiter"


def utc_now() -> datetime:
    return datetime.now(tz=UTC)


@dataclass
class Plan:
    """The decision for one waiting job, with what it was made from (the evictions need
    the Jobs' uids and their pods)."""

    job: WaitingJob
    decision: Decision
    vcjobs: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    states: Mapping[str, Any]

    @property
    def evicts(self) -> bool:
        return self.decision.action in (PREEMPT, RECLAIM)


def nothing_pending(tenant: str | None, settle_seconds: int) -> str:
    where = f" in namespace {namespace_name(tenant)}" if tenant else ""
    return (
        f"no job{where} has been waiting for {settle_seconds} s or more behind a queue at its "
        f"capability; {NOTHING_EVICTED}"
    )


# --- reading and deciding ----------------------------------------------------------


def decide(
    cluster: Cluster, params: Mapping[str, Any], now: datetime
) -> tuple[dict[str, Any], Plan | None]:
    """Read the cluster (one list per kind, as few kinds as the answer needs) and decide
    for the first candidate. Raises Refused for a ``job`` outside the tenant."""
    tenant, job, queue = params.get("tenant"), params.get("job"), params.get("queue")
    settle = params["settle_seconds"]
    namespace = namespace_name(tenant) if tenant else None
    stamp = now.timestamp()
    podgroups = cluster.list(PODGROUP_API, "PodGroup", namespace=namespace)
    pending = settled_waiting(podgroups, stamp, settle)
    if job:
        pending = [pg for pg in pending if owner_job(pg)[0] == job]
    if queue:
        pending = [pg for pg in pending if (pg.get("spec") or {}).get("queue") == queue]
    if not pending and not job and not queue:
        return arbiter_result(None, None, reason=nothing_pending(tenant, settle)), None
    states = queues = None
    if job or queue:
        # A scoped run names its job or queue: refused before anything else is read.
        queues = cluster.list(QUEUE_API, "Queue", label_selector=MANAGED_SELECTOR)
        states = queue_states(queues)
        refusal = queue_scope_refusal(tenant, queue, states) if queue else None
        if refusal:
            raise Refused(refusal)
    if not pending and not job:
        return arbiter_result(None, None, reason=nothing_pending(tenant, settle)), None
    vcjobs = cluster.list(JOB_API, "Job", namespace=namespace)
    if job:
        refusal = job_scope_refusal(tenant, job, vcjobs, states)
        if refusal:
            raise Refused(refusal)
    pods = cluster.list("v1", "Pod", field_selector=_UNFINISHED_PODS)
    waiting = waiting_jobs(pending, vcjobs, pods)
    if not waiting:
        return arbiter_result(None, None, reason=_no_candidate(params, podgroups, stamp)), None
    if queues is None:
        queues = cluster.list(QUEUE_API, "Queue", label_selector=MANAGED_SELECTOR)
        states = queue_states(queues)
    # Rule releasing-is-free: the room an earlier eviction is making is not asked for again.
    states = without_releasing(states, releasing_gpus(pods))
    nodes = cluster.list("v1", "Node")
    pool, members = pool_from_nodes(nodes)
    held, _leaving = allocated_from_pods(pods, members)
    pool_gpus = int(pool[GPU])
    # Pods on their way out count as free: the GPUs of an earlier eviction are not freed twice.
    free_gpus = max(0, pool_gpus - int(held[GPU]))
    created = {podgroup_key(pg): podgroup_created(pg) for pg in pending}
    candidates = arbiter_candidates(waiting, created, states, free_gpus, pool_gpus)
    if not candidates:
        return arbiter_result(None, None, reason=_no_candidate(params, podgroups, stamp)), None
    first = candidates[0]
    running = running_jobs(vcjobs, pods)
    supply = read_supply(cluster, first, states, queues, nodes)
    decision = plan_for(first, states, running, free_gpus, pool_gpus, supply=supply)
    # Rule victim-returns for the victims only, read from their Jobs.
    victim_uids = {v.uid for v in decision.victims}
    returning = {
        uid: returns_after_eviction(j)
        for j in vcjobs
        if (uid := str((j.get("metadata") or {}).get("uid"))) in victim_uids
    }
    after = restart_may_preempt(decision.victims, running, returning)
    return arbiter_result(
        first, decision, candidates[1:], after_restart=aftermath_dicts(after)
    ), Plan(first, decision, vcjobs, pods, states)


def read_supply(
    cluster: Cluster,
    job: WaitingJob,
    states: Mapping[str, Any],
    queues: Sequence[Mapping[str, Any]],
    nodes: Sequence[Mapping[str, Any]],
) -> Supply:
    """What rule job-never-runs judges the job the arbiter acts for by, as ``vcjob`` and
    the throttle read it: its queues, the nodes its queue's groups and placement allow,
    and its namespace's PVCs (one list, only when the job mounts any)."""
    by_name = {str((q.get("metadata") or {}).get("name")): q for q in queues}
    claims = (
        claim_names(cluster.list("v1", "PersistentVolumeClaim", namespace=job.namespace))
        if job.claims
        else {}
    )
    return Supply(
        chain=limits_of(states, job.queue),
        node_gpus=usable_gpus(nodes, required_groups(by_name, job.queue), job.local_only),
        claims=claims.get(job.namespace, frozenset()),
    )


def _no_candidate(
    params: Mapping[str, Any], podgroups: Sequence[Mapping[str, Any]], now: float
) -> str:
    tenant, job = params.get("tenant"), params.get("job")
    if not job:
        return nothing_pending(tenant, params["settle_seconds"])
    namespace = namespace_name(tenant)
    own = [
        pg
        for pg in podgroups
        if owner_job(pg)[0] == job and (pg.get("metadata") or {}).get("namespace") == namespace
    ]
    return not_a_candidate(
        f"{namespace}/{job}", own[0] if own else None, now, params["settle_seconds"]
    )


# --- evicting and recording --------------------------------------------------------


def _pods_to_evict(plan: Plan, victim: RunningJob) -> list[Mapping[str, Any]]:
    """The victim Job's pods (owned by its uid, or carrying its job-name label), not being
    deleted already, by name."""
    vcjob = next(
        (j for j in plan.vcjobs if (j.get("metadata") or {}).get("uid") == victim.uid), None
    )
    if vcjob is None:
        return []
    pods = [
        p
        for p in pods_of(vcjob, plan.pods)
        if not (p.get("metadata") or {}).get("deletionTimestamp")
    ]
    return sorted(pods, key=lambda p: str((p.get("metadata") or {}).get("name")))


def evict_victims(
    cluster: Cluster, plan: Plan, result: dict[str, Any], now: datetime
) -> tuple[list[RunningJob], list[str]]:
    """Evict every pod of each victim, in victim order, then record an Event on the victim.
    A pod gone or re-created since the list (NotFound, a uid Conflict) is not evicted and
    the run goes on; any other refusal stops it: PartialWrite names the pods evicted."""
    evicted_jobs: list[RunningJob] = []
    evicted_pods: list[str] = []
    for order, victim in enumerate(plan.decision.victims, start=1):
        took = False
        for pod in _pods_to_evict(plan, victim):
            meta = pod.get("metadata") or {}
            name, namespace = str(meta.get("name")), str(meta.get("namespace"))
            try:
                gone = not cluster.evict(name, namespace, meta.get("uid"))
            except (ApiException, TransportError) as exc:
                if not isinstance(exc, ConflictError | NotFoundError):
                    jobs = [*evicted_jobs, victim] if took else evicted_jobs
                    raise PartialWrite(
                        WHAT, evicted_pods, exc, **_so_far(result, jobs, evicted_pods)
                    ) from exc
                gone = True
            if gone:
                continue
            took = True
            evicted_pods.append(f"{namespace}/{name}")
        if took:
            evicted_jobs.append(victim)
            _record_event(
                cluster,
                evicted_event(victim, plan.job, plan.decision.action, order, now),
                f"{victim.namespace}/{victim.name} was evicted but its {EVENT_REASON_ARBITER_EVICTED}",
            )
    return evicted_jobs, evicted_pods


def _so_far(
    result: Mapping[str, Any], jobs: Sequence[RunningJob], pods: list[str]
) -> dict[str, Any]:
    out = report(result)
    out.update(
        victims=[victim_dict(v) for v in jobs], freed=sum(v.gpus for v in jobs), evicted=list(pods)
    )
    return out


def _record_event(cluster: Cluster, manifest: Mapping[str, Any], what: str) -> None:
    """The pods are gone either way: a refused Event is only warned about."""
    try:
        cluster.create(manifest)
    except (ApiException, TransportError) as exc:
        why = api_error_message(exc) if isinstance(exc, ApiException) else exc
        warn(f"{what} Event could not be recorded: {why}")


def append_history(cluster: Cluster, entry: Mapping[str, Any], size: int) -> list[Any]:
    live = cluster.get("v1", "ConfigMap", QUEUE_ARBITER_HISTORY, PLATFORM_NAMESPACE)
    entries = push_history(read_history(live), entry, size)
    cluster.apply(history_manifest(entries))
    return entries


def _record_history(cluster: Cluster, entry: Mapping[str, Any], size: int) -> list[Any]:
    """The pods are gone either way: a history that cannot be written is only warned about."""
    try:
        return append_history(cluster, entry, size)
    except (ApiException, TransportError) as exc:
        why = api_error_message(exc) if isinstance(exc, ApiException) else exc
        warn(
            f"the arbiter's evictions could not be added to ConfigMap "
            f"{PLATFORM_NAMESPACE}/{QUEUE_ARBITER_HISTORY}: {why}"
        )
        return []


# --- the whole run -----------------------------------------------------------------


def _warn_aftermath(result: Mapping[str, Any]) -> None:
    """Rule restart-may-preempt, said before (check mode) or after the eviction."""
    if result["may_preempt_after_restart"]:
        warn(aftermath_warning(result["may_preempt_after_restart"]))


def _without_eviction(result: dict[str, Any]) -> dict[str, Any]:
    if result["decision"] == REFUSE:
        warn(result["reason"])
    return result


def settling(
    cluster: Cluster, params: Mapping[str, Any], result: dict[str, Any], holder: str, now: datetime
) -> dict[str, Any]:
    """Rule refusal-while-settling: a refusal read while another run holds the Lease, or
    within ``lease_duration`` seconds of a run that made room for the same job, was read
    from a cluster still moving (Volcano's queue status keeps the victims' GPUs for a
    while). While the Lease is held the run fails as a run refused the Lease does; after
    a run made room, the answer is that nothing is to be done. Two GETs, only on a
    refusal."""
    if result["decision"] != REFUSE:
        return result
    blocker = lease_blocker(QUEUE_ARBITER, read_lease(cluster, QUEUE_ARBITER), holder, now)
    if blocker:
        raise Refused(blocker, **report(result))
    live = cluster.get("v1", "ConfigMap", QUEUE_ARBITER_HISTORY, PLATFORM_NAMESPACE)
    entry = room_made_for(read_history(live), result["job"], now, params["lease_duration"])
    return settled_result(result, entry) if entry is not None else result


def wait_for_admission(cluster: Cluster, params: Mapping[str, Any]) -> None:
    """Option ``wait_for_admission`` (with ``job``): while the job's PodGroup is Pending
    until sla admits it (rule arbiter-settle, ``admission_due``), re-read the tenant's
    PodGroups every second, at most until it is due."""
    if not (params.get("wait_for_admission") and params.get("job")):
        return
    namespace = namespace_name(params["tenant"])
    while True:
        podgroups = cluster.list(PODGROUP_API, "PodGroup", namespace=namespace)
        own = [pg for pg in podgroups if owner_job(pg)[0] == params["job"]]
        due = admission_due(own[0], utc_now().timestamp(), params["settle_seconds"]) if own else 0
        if due <= 0:
            return
        time.sleep(min(1.0, due))


def _set_gpu_capability(
    cluster: Cluster, name: str, gpus: int | str | None, hold_for: str | None = None
) -> tuple[bool, str | None]:
    """Set one Queue's GPU capability (and the hold annotation when ``hold_for`` names the
    waiting job), re-reading it on a conflict (Volcano writes its status); (whether the
    Queue exists, the capability it had)."""
    for _attempt in range(3):
        queue = cluster.get(QUEUE_API, "Queue", name)
        if queue is None:
            return False, None
        before = gpu_capability(queue)
        hold = hold_text(hold_for, before) if hold_for else None
        try:
            cluster.replace(with_gpu_capability(queue, gpus, hold))
            return True, before
        except ConflictError:
            continue
    raise Refused(f"Queue {name} kept changing while its GPU capability was set; try again")


def hold_victim_queues(cluster: Cluster, plan: Plan) -> list[tuple[str, str | None]]:
    """Rule reclaim-hold (``arbiter/hold``): set each victim queue's GPU capability to what
    it keeps; returns (queue, capability before) for ``release_victim_queues``."""
    held: list[tuple[str, str | None]] = []
    try:
        for name, taken in sorted(taken_by_queue(plan.decision.victims).items()):
            if name not in plan.states:
                continue
            found, before = _set_gpu_capability(
                cluster, name, held_capability(plan.states[name], taken), plan.job.ref
            )
            if found:
                held.append((name, before))
    except BaseException:
        release_victim_queues(cluster, held)
        raise
    return held


def release_victim_queues(cluster: Cluster, held: Sequence[tuple[str, str | None]]) -> None:
    """Put each held queue's GPU capability back and drop the hold annotation."""
    for name, before in held:
        _set_gpu_capability(cluster, name, before)


def wait_until_running(cluster: Cluster, job: WaitingJob, seconds: int) -> int:
    """Wait, reading the waiting Volcano Job once a second, until it runs or ``seconds``
    have passed; the seconds waited."""
    for waited in range(seconds):
        vcjob = cluster.get(JOB_API, "Job", job.name, job.namespace) or {}
        if ((vcjob.get("status") or {}).get("state") or {}).get("phase") == "Running":
            return waited
        time.sleep(1)
    return seconds


def run(params: dict[str, Any], cluster: Cluster, check_mode: bool) -> dict[str, Any]:
    """The ``queue_arbiter`` module: decide for the first waiting job; for preempt or
    reclaim, under the Lease, decide again and evict its victims (check mode: report them)."""
    wait_for_admission(cluster, params)
    now = utc_now()
    holder = run_holder(params.get("holder_identity") or default_holder(), run_id())
    result, plan = decide(cluster, params, now)
    if plan is None or not plan.evicts:
        return _without_eviction(settling(cluster, params, result, holder, now))
    if check_mode:
        blocker = lease_blocker(QUEUE_ARBITER, read_lease(cluster, QUEUE_ARBITER), holder, now)
        if blocker:
            warn(blocker)
        _warn_aftermath(result)
        result.update(changed=True, diff=arbiter_diff(result["victims"]))
        return result
    known = report(result)
    lease = acquire_lease(
        cluster,
        QUEUE_ARBITER,
        holder,
        params["lease_duration"],
        now,
        refused=lambda msg: Refused(msg, **known),
    )
    try:
        # The cluster may have moved since the first read: decide again under the Lease.
        result, plan = decide(cluster, params, now)
        if plan is None or not plan.evicts:
            return _without_eviction(settling(cluster, params, result, holder, now))
        held = hold_victim_queues(cluster, plan) if plan.decision.action == RECLAIM else []
        try:
            jobs, pods = evict_victims(cluster, plan, result, now)
            if held and jobs:
                result["held_seconds"] = wait_until_running(
                    cluster, plan.job, params["hold_seconds"]
                )
        finally:
            release_victim_queues(cluster, held)
        victims = [victim_dict(v) for v in jobs]
        result.update(
            changed=bool(pods),
            victims=victims,
            freed=sum(v.gpus for v in jobs),
            evicted=pods,
            diff=arbiter_diff(victims),
        )
        if jobs:
            _warn_aftermath(result)
            _record_event(
                cluster,
                made_room_event(plan.job, plan.decision.action, jobs, now),
                f"room was made for {plan.job.ref} but its {EVENT_REASON_ARBITER_MADE_ROOM}",
            )
            entry = history_entry(result, holder, now)
            result["history"] = _record_history(cluster, entry, params["history_size"])
        return result
    finally:
        release_lease(cluster, QUEUE_ARBITER, lease)
