# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The queue arbiter's reads and the decision made of them (I/O: ``decide`` lists
through a ``Cluster``, the deciding is the pure rules of ``arbiter/plan``).

One list per kind, in the tenant's namespace when ``tenant`` is given: PodGroups first,
and only when one waits and is settled (or ``job`` or ``queue`` is given) the Volcano
Jobs, the managed Queues, the unfinished Pods and the Nodes (Pods and Nodes
cluster-wide: the free GPUs are the pool's), then the PVCs of the job decided for when it
mounts any. A run with nothing waiting makes its one list and nothing else. The decision
is for the first candidate only (rule arbiter-plan), the others reported as ``waiting``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..capacity.pool import allocated_from_pods, pool_from_nodes
from ..common.errors import Refused
from ..common.names import (
    JOB_API,
    MANAGED_SELECTOR,
    PODGROUP_API,
    QUEUE_API,
    namespace_name,
)
from ..common.quantity import GPU
from ..jobs.feasibility import Supply, claim_names, required_groups, usable_gpus
from ..jobs.large_job import owner_job
from ..kube.cluster import Cluster
from .aftermath import aftermath_dicts, restart_may_preempt, returns_after_eviction
from .candidates import (
    arbiter_candidates,
    not_a_candidate,
    podgroup_created,
    podgroup_key,
    settled_waiting,
)
from .inputs import job_scope_refusal, queue_scope_refusal
from .model import (
    WaitingJob,
    limits_of,
    queue_states,
    releasing_gpus,
    running_jobs,
    waiting_jobs,
    without_releasing,
)
from .plan import PREEMPT, RECLAIM, Decision, plan_for
from .record import arbiter_result
from .rules import NOTHING_EVICTED

_UNFINISHED_PODS = "status.phase!=Succeeded,status.phase!=Failed"


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
