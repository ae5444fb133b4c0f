# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``queue_arbiter`` through the flow contract (``kube.flow``), its pure steps:
the request, the facts, the plan (every decision and every refusal) and what the plan
says (no I/O).

The facts are what the run reads, one list per kind, and a kind is read only when the
decision needs it (``next_read``): the PodGroups first; only when one waits and is
settled (or ``job`` or ``queue`` is given) the Volcano Jobs, the managed Queues (first,
for a scoped run: its scope is refused before anything else is read), the unfinished
Pods and the Nodes; the PVCs of the job decided for when it mounts any; and, only for a
refusal, the Lease and then, unless another run holds it, the arbiter's history (rule
refusal-while-settling). ``arbiter/service.gather`` reads what ``next_read`` names until
it names nothing; ``plan_arbiter`` decides from the same facts with the same walk, so a
kind not read is one the decision does not look at.

Offline, ``gathered`` returns the facts as read (each object whole, the run's time and
Lease holder with them) and ``parsed`` decides from such facts: the decision of another
cluster, or of a what-if, reviewed with no connection. There is no ``rendered``: an
empty cluster has no job waiting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from datetime import datetime
from typing import Any

from ..common.errors import FieldError, PlatformValidationError, Refused
from ..common.names import namespace_name
from ..common.quantity import GPU
from ..jobs.feasibility import Supply, claim_names, required_groups, usable_gpus
from ..jobs.large_job import owner_job
from ..kube.flow import fact_lists
from ..kube.lease import QUEUE_ARBITER, lease_blocker
from ..workload.pool import allocated_from_pods, pool_from_nodes
from .aftermath import aftermath_dicts, restart_may_preempt, returns_after_eviction
from .candidates import (
    arbiter_candidates,
    not_a_candidate,
    podgroup_created,
    podgroup_key,
    settled_waiting,
)
from .count import counts_to_raise
from .inputs import job_scope_refusal, queue_scope_refusal, validate_arbiter_input
from .model import (
    QueueState,
    WaitingJob,
    limits_of,
    queue_states,
    releasing_gpus,
    running_jobs,
    waiting_jobs,
    without_releasing,
)
from .plan import PREEMPT, RECLAIM, REFUSE, Decision, plan_for
from .record import arbiter_diff, arbiter_result, settled
from .rules import NOTHING_EVICTED

# The kinds of facts, in the order ``gathered`` returns them.
KINDS = ("podgroups", "queues", "vcjobs", "pods", "nodes", "pvcs", "leases", "history")


@dataclass(frozen=True)
class ArbiterRequest:
    """What a ``queue_arbiter`` run asks for."""

    tenant: str | None = None
    job: str | None = None
    queue: str | None = None
    settle_seconds: int = 10
    holder_identity: str | None = None
    lease_duration: int = 60
    history_size: int = 100
    wait_for_admission: bool = False
    hold_seconds: int = 45

    @property
    def namespace(self) -> str | None:
        """The tenant's namespace, None for every namespace."""
        return namespace_name(self.tenant) if self.tenant else None


@dataclass(frozen=True)
class ArbiterFacts:
    """What the run read, at ``now``, as the Lease holder ``holder``; a kind is None when
    it was not read (the decision did not need it)."""

    now: datetime
    holder: str = ""
    podgroups: tuple[Mapping[str, Any], ...] | None = None
    queues: tuple[Mapping[str, Any], ...] | None = None
    vcjobs: tuple[Mapping[str, Any], ...] | None = None
    pods: tuple[Mapping[str, Any], ...] | None = None
    nodes: tuple[Mapping[str, Any], ...] | None = None
    # The PersistentVolumeClaims of the namespace of the job decided for.
    pvcs: tuple[Mapping[str, Any], ...] | None = None
    # The Lease queue-arbiter: one object, or none when it does not exist.
    leases: tuple[Mapping[str, Any], ...] | None = None
    # The entries of the history ConfigMap queue-arbiter-history.
    history: tuple[Any, ...] | None = None


@dataclass(frozen=True)
class ArbiterPlan:
    """The decision for one waiting job (``job``, None when there is none) and the run's
    result before anything is evicted, with what the evictions need: the Jobs' uids and
    their pods, and the queues' states (rule reclaim-hold)."""

    result: Mapping[str, Any]
    now: datetime
    holder: str
    job: WaitingJob | None = None
    decision: Decision | None = None
    vcjobs: Sequence[Mapping[str, Any]] = ()
    pods: Sequence[Mapping[str, Any]] = ()
    states: Mapping[str, QueueState] | None = None
    # The managed Queues as read: the victims' eviction counts (rule arbiter-eviction-count).
    queues: Sequence[Mapping[str, Any]] = ()

    @property
    def evicts(self) -> bool:
        return self.decision is not None and self.decision.action in (PREEMPT, RECLAIM)


def parse_arbiter(params: Mapping[str, Any]) -> ArbiterRequest:
    """The options as a request; raises for what rule arbiter-input refuses."""
    validate_arbiter_input(params)
    given = {
        f.name: params[f.name] for f in fields(ArbiterRequest) if params.get(f.name) is not None
    }
    return ArbiterRequest(**given)


# --- the walk: what to read next, and the decision ------------------------------------


class _Unread(Exception):
    """The walk needs a kind not read yet (in ``namespace`` for the PVCs)."""

    def __init__(self, kind: str, namespace: str | None = None):
        super().__init__(kind)
        self.kind = kind
        self.namespace = namespace


def _read(facts: ArbiterFacts, kind: str, namespace: str | None = None) -> tuple[Any, ...]:
    value = getattr(facts, kind)
    if value is None:
        raise _Unread(kind, namespace)
    return value


def nothing_pending(tenant: str | None, settle_seconds: int) -> str:
    where = f" in namespace {namespace_name(tenant)}" if tenant else ""
    return (
        f"no job{where} has been waiting for {settle_seconds} s or more behind a queue at its "
        f"capability; {NOTHING_EVICTED}"
    )


def _no_candidate(
    request: ArbiterRequest, podgroups: Sequence[Mapping[str, Any]], now: float
) -> str:
    if not request.job:
        return nothing_pending(request.tenant, request.settle_seconds)
    namespace = namespace_name(str(request.tenant))
    own = [
        pg
        for pg in podgroups
        if owner_job(pg)[0] == request.job
        and (pg.get("metadata") or {}).get("namespace") == namespace
    ]
    return not_a_candidate(
        f"{namespace}/{request.job}", own[0] if own else None, now, request.settle_seconds
    )


def _supply(
    facts: ArbiterFacts,
    job: WaitingJob,
    states: Mapping[str, QueueState],
    queues: Sequence[Mapping[str, Any]],
    nodes: Sequence[Mapping[str, Any]],
) -> Supply:
    """What rule job-never-runs judges the job the arbiter acts for by, as ``vcjob`` and
    the throttle read it: its queues, the nodes its queue's groups and placement allow,
    and its namespace's PVCs (read only when the job mounts any)."""
    by_name = {str((q.get("metadata") or {}).get("name")): q for q in queues}
    claims = claim_names(_read(facts, "pvcs", job.namespace)) if job.claims else {}
    return Supply(
        chain=limits_of(states, job.queue),
        node_gpus=usable_gpus(nodes, required_groups(by_name, job.queue), job.local_only),
        claims=claims.get(job.namespace, frozenset()),
    )


def _scope(request: ArbiterRequest, facts: ArbiterFacts) -> dict[str, QueueState] | None:
    """The managed queues' states for a scoped run (``job`` or ``queue``), read first;
    raises Refused for a ``queue`` that is not a leaf queue of the tenant (rule
    arbiter-queue-scope)."""
    if not (request.job or request.queue):
        return None
    states = queue_states(_read(facts, "queues"))
    refusal = (
        queue_scope_refusal(str(request.tenant), request.queue, states) if request.queue else None
    )
    if refusal:
        raise Refused(refusal)
    return states


def _decide(request: ArbiterRequest, facts: ArbiterFacts) -> ArbiterPlan:
    """The decision (rule arbiter-plan) over the facts, for the first candidate; raises
    ``_Unread`` for a kind the decision needs and ``facts`` lack, Refused for a scope the
    cluster refuses."""
    stamp = facts.now.timestamp()

    def nothing(reason: str) -> ArbiterPlan:
        return ArbiterPlan(arbiter_result(None, None, reason=reason), facts.now, facts.holder)

    podgroups = _read(facts, "podgroups")
    pending = settled_waiting(podgroups, stamp, request.settle_seconds)
    if request.job:
        pending = [pg for pg in pending if owner_job(pg)[0] == request.job]
    if request.queue:
        pending = [pg for pg in pending if (pg.get("spec") or {}).get("queue") == request.queue]
    if not pending and not request.job and not request.queue:
        return nothing(nothing_pending(request.tenant, request.settle_seconds))
    # A scoped run names its job or queue: refused before anything else is read.
    states = _scope(request, facts)
    if not pending and not request.job:
        return nothing(nothing_pending(request.tenant, request.settle_seconds))
    vcjobs = _read(facts, "vcjobs")
    if request.job and states is not None:
        refusal = job_scope_refusal(str(request.tenant), request.job, list(vcjobs), states)
        if refusal:
            raise Refused(refusal)
    pods = _read(facts, "pods")
    waiting = waiting_jobs(pending, vcjobs, pods)
    if not waiting:
        return nothing(_no_candidate(request, podgroups, stamp))
    queues = _read(facts, "queues")
    # Rule releasing-is-free: the room an earlier eviction is making is not asked for again.
    states = without_releasing(states or queue_states(queues), releasing_gpus(pods))
    nodes = _read(facts, "nodes")
    pool, members = pool_from_nodes(nodes)
    held, _leaving = allocated_from_pods(pods, members)
    pool_gpus = int(pool[GPU])
    # Pods on their way out count as free: the GPUs of an earlier eviction are not freed twice.
    free_gpus = max(0, pool_gpus - int(held[GPU]))
    created = {podgroup_key(pg): podgroup_created(pg) for pg in pending}
    candidates = arbiter_candidates(waiting, created, states, free_gpus, pool_gpus)
    if not candidates:
        return nothing(_no_candidate(request, podgroups, stamp))
    first = candidates[0]
    running = running_jobs(vcjobs, pods)
    supply = _supply(facts, first, states, queues, nodes)
    decision = plan_for(first, states, running, free_gpus, pool_gpus, supply=supply)
    # Rule victim-returns for the victims only, read from their Jobs.
    victim_uids = {v.uid for v in decision.victims}
    returning = {
        uid: returns_after_eviction(j)
        for j in vcjobs
        if (uid := str((j.get("metadata") or {}).get("uid"))) in victim_uids
    }
    after = restart_may_preempt(decision.victims, running, returning)
    result = arbiter_result(first, decision, candidates[1:], after_restart=aftermath_dicts(after))
    planned = ArbiterPlan(
        result, facts.now, facts.holder, first, decision, vcjobs, pods, states, queues
    )
    return _settled(request, facts, planned)


def _settled(request: ArbiterRequest, facts: ArbiterFacts, planned: ArbiterPlan) -> ArbiterPlan:
    """A refusal as rule refusal-while-settling (``record.settled``) judges it: by the
    Lease, then, unless another run holds it, by the arbiter's history."""
    if planned.result["decision"] != REFUSE:
        return planned
    leases = _read(facts, "leases")
    blocker = lease_blocker(QUEUE_ARBITER, leases[0] if leases else None, facts.holder, facts.now)
    history = None if blocker else _read(facts, "history")
    result = settled(dict(planned.result), blocker, history, facts.now, request.lease_duration)
    return replace(planned, result=result)


def next_read(request: ArbiterRequest, facts: ArbiterFacts) -> tuple[str, str | None] | None:
    """The kind the decision needs next and ``facts`` lack (with the namespace of the
    PVCs to read), or None when the facts are enough to decide or to refuse."""
    try:
        _decide(request, facts)
    except _Unread as unread:
        return unread.kind, unread.namespace
    except Refused:
        return None
    return None


def plan_arbiter(request: ArbiterRequest, facts: ArbiterFacts) -> ArbiterPlan:
    """The whole run's decision (rule arbiter-plan for the first waiting job that a
    queue's capability holds back: preempt, reclaim, leave it to Volcano or refuse; rule
    refusal-while-settling for a refusal); raises Refused for a ``job`` or ``queue`` out of
    the tenant's scope and for a refusal read while another run holds the Lease. A kind
    not read counts as empty."""
    filled = {kind: () for kind in KINDS if getattr(facts, kind) is None}
    return _decide(request, replace(facts, **filled))


def warnings(planned: ArbiterPlan) -> list[str]:
    """A refusal is warned about, in its reason's words."""
    result = planned.result
    return [str(result["reason"])] if result["decision"] == REFUSE else []


def report(request: ArbiterRequest, planned: ArbiterPlan) -> dict[str, Any]:
    """The result a check-mode run returns for the plan: the victims it would evict, and
    each victim queue's eviction count now and after (rule arbiter-eviction-count)."""
    result = dict(planned.result)
    if planned.evicts:
        counted = counts_to_raise(planned.queues, result["victims"])
        result.update(changed=True, counted=counted, diff=arbiter_diff(result["victims"], counted))
    return result


# --- the facts as data -------------------------------------------------------------------


def facts_out(facts: ArbiterFacts) -> dict[str, Any]:
    """The facts as ``gathered`` returns them: the run's time and Lease holder, and each
    kind read, as it was read."""
    out: dict[str, Any] = {"now": facts.now.isoformat(), "holder": facts.holder}
    for kind in KINDS:
        value = getattr(facts, kind)
        if value is not None:
            out[kind] = list(value)
    return out


def facts_in(request: ArbiterRequest, data: Mapping[str, Any]) -> ArbiterFacts:
    """Facts given as ``gathered`` returned them (a missing kind is empty); ``now``, the
    time the run decides at, is required."""
    now = _time(data.get("now"))
    if now is None:
        raise PlatformValidationError(
            [
                FieldError(
                    "facts.now",
                    "must be an ISO 8601 time with its offset, as state: gathered returns it",
                )
            ]
        )
    lists = dict(zip(KINDS, fact_lists(data, *KINDS), strict=True))
    return ArbiterFacts(now=now, holder=str(data.get("holder") or ""), **lists)


def _time(value: object) -> datetime | None:
    try:
        moment = datetime.fromisoformat(str(value or ""))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None
