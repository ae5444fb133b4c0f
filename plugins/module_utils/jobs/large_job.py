# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A large job as the large-job throttle (``throttle``) sees it, and whether holding its
queue can help it. Pure: no I/O.

A large job is a PodGroup of PriorityClass ``large-job`` together with the
Volcano Job that owns it (``ownerReferences``); its GPUs are the Job's demand
(rule job-demand, ``demand.gpus_and_pods``). A PodGroup whose Job is not there
(deleted, its PodGroup waiting for the garbage collector, or a PodGroup no
Volcano Job owns) is no large job: it neither engages nor holds a queue
(rule throttle-large-job, ``large_jobs``; rule throttle-trigger, ``podgroup_waits``).

Rule throttle-can-help (``cannot_help``): a waiting large job holds its queue only
when it can ever run at all (rule job-never-runs, ``jobs/feasibility``, the rule ``vcjob``
and the queue arbiter use: a missing PVC, more GPUs than its nodes or a capability above
it; its words are the reason), GPUs are what it waits for (rule job-waits-for: an
admitted job whose queues have room and whose GPUs are free waits for something else,
its volumes or its placement) and preemption can give it its GPUs: its PodGroup is admitted, or Pending for less
than ``ENQUEUE_SETTLE_SECONDS`` past its sla waiting time (``jobs/sla``: sla admits it
then, even in a full queue; Volcano's preempt and gangpreempt skip Pending jobs;
a new PodGroup is Pending until the next enqueue, and the throttle must be in place
before that cycle's preemption frees the GPUs); it fits the pool; the free GPUs plus
those of the running jobs below large-job in its queue cover it; and with a hard
network topology one HyperNode of the tiers it may use spans that many GPUs.
Otherwise holding its team's submissions helps nothing: the job does not engage, an
entry it has is released, and the run says why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal
from typing import Any

from ..common.names import PODGROUP_WAITING_PHASES
from ..common.quantity import render
from ..common.times import as_utc, read_rfc3339
from ..topology.tree import NodeInfo, Tree, nodes_under
from ..workload.demand import gpus_and_pods, pod_demand, replicas_of
from .feasibility import Gang, Supply, claims_of, local_only, never_runs, waits_for
from .sla import waiting_seconds

LARGE_PRIORITY_CLASS = "large-job"
# Volcano's enqueue runs every scheduling period (1 s by default): a PodGroup still
# Pending after ten of them is one enqueue does not admit.
ENQUEUE_SETTLE_SECONDS = 10


@dataclass(frozen=True)
class LargeJob:
    """A large job's PodGroup as the throttle sees it; ``uid`` is the Volcano Job's."""

    uid: str
    namespace: str
    queue: str
    job: str
    podgroup: str
    gpus: int
    waiting: bool
    # Past Volcano's enqueue (Inqueue): only then do preempt and gangpreempt act for it.
    admitted: bool = True
    # highestTierAllowed of a hard network topology; None: no hard constraint.
    hard_tier: int | None = None
    # When the PodGroup was created (RFC 3339; "" unknown: counted as long ago).
    created: str = ""
    # One pod of each task that has replicas: (task name, what the pod asks for).
    pods: tuple[tuple[str, Mapping[str, Decimal]], ...] = ()
    # The PodGroup's sla waiting time (jobs/sla): after it, sla admits the PodGroup past
    # its queue's capability. None: enqueue admits it only when its queue has room.
    sla_wait: float | None = None
    # What rule job-never-runs reads of the Job: its PVCs and placement.
    claims: tuple[str, ...] = ()
    local_only: bool = False

    @property
    def gang(self) -> Gang:
        return Gang(
            f"{self.namespace}/{self.job}", self.queue, self.gpus, self.claims, self.local_only
        )


@dataclass(frozen=True)
class Room:
    """What preemption could give a waiting large job (rule throttle-can-help)."""

    pool_gpus: int
    free_gpus: int
    # queue -> GPUs of its running jobs below large-job (what preemption may evict)
    preemptible: Mapping[str, int] = field(default_factory=dict)
    # tier -> the most GPUs one HyperNode of that tier or below spans; None: not read,
    # empty: the cluster has no HyperNode
    domains: Mapping[int, int] | None = None
    # What each pool node can hold (allocatable GPUs, cpu, memory); None: not read
    nodes: Sequence[Mapping[str, Decimal]] | None = None
    # uid -> what rule job-never-runs judges that job by (its queues, nodes and PVCs)
    supplies: Mapping[str, Supply] = field(default_factory=dict)


def parse_time(value: object) -> datetime | None:
    """A Kubernetes time (UTC when it names no zone); None when it is not one."""
    parsed = read_rfc3339(value) if isinstance(value, str) else None
    return as_utc(parsed) if parsed else None


def podgroup_phase(podgroup: Mapping[str, Any]) -> str:
    """A PodGroup's phase. Volcano's job controller creates a PodGroup without a status;
    the scheduler gives it Pending in its next session. Until then it is Pending too,
    or a large job submitted a moment ago would be judged neither waiting nor admitted."""
    return str((podgroup.get("status") or {}).get("phase") or "Pending")


def podgroup_waits(podgroup: Mapping[str, Any]) -> bool:
    """Rule throttle-trigger: a PodGroup waits while its phase is Pending (or not set yet)
    or Inqueue and fewer than minMember of its pods run (the scheduler could not
    allocate it)."""
    status = podgroup.get("status") or {}
    if podgroup_phase(podgroup) not in PODGROUP_WAITING_PHASES:
        return False
    running = int(status.get("running") or 0)
    min_member = int((podgroup.get("spec") or {}).get("minMember") or 1)
    return running < min_member


def podgroup_admitted(podgroup: Mapping[str, Any]) -> bool:
    """Past enqueue: any phase but Pending (Volcano's preempt actions skip Pending jobs)."""
    return podgroup_phase(podgroup) != "Pending"


def hard_tier(spec: Mapping[str, Any]) -> int | None:
    """``highestTierAllowed`` of a hard ``networkTopology`` (a PodGroup's or a Job's spec)."""
    topology = spec.get("networkTopology") or {}
    if topology.get("mode") != "hard":
        return None
    tier = topology.get("highestTierAllowed")
    return tier if isinstance(tier, int) and not isinstance(tier, bool) else None


def preemptible_gpus(vcjobs: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Per queue, the GPUs of its Running Volcano Jobs below large-job (rule job-demand):
    what gangpreempt may take for a large job of that queue."""
    out: dict[str, int] = {}
    for job in vcjobs:
        spec = job.get("spec") or {}
        if spec.get("priorityClassName") in ("critical-job", LARGE_PRIORITY_CLASS):
            continue
        if ((job.get("status") or {}).get("state") or {}).get("phase") != "Running":
            continue
        queue = str(spec.get("queue") or "default")
        out[queue] = out.get(queue, 0) + gpus_and_pods(job)[0]
    return out


def largest_domains(
    tree: Tree, nodes: Sequence[NodeInfo], node_gpus: Mapping[str, int]
) -> dict[int, int]:
    """Tier -> the most GPUs (of ``node_gpus``, the pool's nodes) that one HyperNode of that
    tier or a lower one spans: the largest job a hard topology up to that tier can place."""
    by_tier: dict[int, int] = {}
    for name, hn in tree.items():
        gpus = sum(node_gpus.get(n, 0) for n in nodes_under(tree, name, nodes))
        by_tier[hn.tier] = max(by_tier.get(hn.tier, 0), gpus)
    out: dict[int, int] = {}
    best = 0
    for tier in sorted(by_tier):
        best = max(best, by_tier[tier])
        out[tier] = best
    return out


def pending_seconds(job: LargeJob, now: datetime) -> int | None:
    """How long a PodGroup that enqueue has not admitted has been Pending (None: it is
    admitted); an unknown creation time counts as long ago."""
    if job.admitted:
        return None
    created = parse_time(job.created)
    if created is None:
        return ENQUEUE_SETTLE_SECONDS
    return max(0, int((now - created).total_seconds()))


def settle_seconds(job: LargeJob) -> float:
    """How long a Pending PodGroup may stay Pending before enqueue is judged not to admit it:
    ten scheduling periods, after its sla waiting time when it has one (sla admits it then)."""
    return ENQUEUE_SETTLE_SECONDS + (job.sla_wait or 0)


def pod_fits_no_node(
    pods: Iterable[tuple[str, Mapping[str, Decimal]]], nodes: Sequence[Mapping[str, Decimal]]
) -> str | None:
    """The first task whose pod no pool node can hold (every resource it asks for at once)."""
    for task, shape in pods:
        if not any(all(node.get(r, 0) >= v for r, v in shape.items()) for node in nodes):
            return task
    return None


def cannot_help(job: LargeJob, room: Room | None, now: datetime) -> str | None:
    """Rule throttle-can-help: why holding the queue cannot get ``job`` its GPUs, or None
    when preemption can (see the module docstring). ``room`` None: the GPUs could not be
    read, so only the PodGroup's phase is judged. A job that can never run (rule
    job-never-runs, the arbiter's own) is turned away first, in that rule's words."""
    supply = room.supplies.get(job.uid) if room is not None else None
    never = never_runs(job.gang, supply) if supply is not None else None
    if never is not None:
        return never
    pending = pending_seconds(job, now)
    if pending is not None and pending >= settle_seconds(job):
        deadline = (
            f", not even past its sla waiting time of {job.sla_wait:g} s"
            if job.sla_wait is not None
            else " (its queue or the cluster has no room for it, and it has no sla waiting time)"
        )
        return (
            f"its PodGroup has been Pending for {pending} s: Volcano's enqueue has not admitted "
            f"it{deadline}, and preemption acts only for admitted jobs"
        )
    if room is None:
        return None
    if job.gpus > room.pool_gpus:
        return f"it asks for {job.gpus} GPUs and the pool has {room.pool_gpus}"
    misfit = pod_fits_no_node(job.pods, room.nodes) if room.nodes is not None else None
    if misfit is not None:
        shape = ", ".join(f"{r} {v}" for r, v in render(dict(job.pods)[misfit]).items())
        return (
            f"a pod of its task {misfit!r} asks for {shape}, more than any node of the pool holds"
        )
    freeable = room.preemptible.get(job.queue, 0)
    if job.gpus > room.free_gpus + freeable:
        return (
            f"it asks for {job.gpus} GPUs; {room.free_gpus} are free and the running jobs below "
            f"large-job in {job.queue} hold {freeable}, so preemption cannot free enough"
        )
    # Without any HyperNode there is no tree to judge against: left to the scheduler.
    if job.hard_tier is not None and room.domains:
        fits = [gpus for tier, gpus in room.domains.items() if tier <= job.hard_tier]
        most = max(fits, default=0)
        if job.gpus > most:
            return (
                f"its hard network topology (tier {job.hard_tier} or below) places at most "
                f"{most} GPUs in one HyperNode, and it asks for {job.gpus}"
            )
    # Last, so that a more precise reason above is the one given.
    if supply is not None and job.admitted:
        waits = waits_for(job.gang, replace(supply, free_gpus=room.free_gpus))
        if waits is None:
            return (
                f"its queues have room and {room.free_gpus} GPUs are free for its {job.gpus}: "
                "it waits for something other than GPUs (its volumes or its placement), which "
                "holding its team's submissions does not give it"
            )
    return None


def owner_job(podgroup: Mapping[str, Any]) -> tuple[str, str]:
    """(name, uid) of the Volcano Job that owns a PodGroup (the PodGroup's own, if none)."""
    meta = podgroup.get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        if ref.get("kind") == "Job" and str(ref.get("apiVersion", "")).startswith(
            "batch.volcano.sh/"
        ):
            return str(ref.get("name")), str(ref.get("uid"))
    return str(meta.get("name")), str(meta.get("uid") or meta.get("name"))


def is_large_podgroup(podgroup: Mapping[str, Any], namespaces: Iterable[str]) -> bool:
    """A PodGroup of PriorityClass large-job in one of ``namespaces``, not being deleted."""
    meta = podgroup.get("metadata") or {}
    spec = podgroup.get("spec") or {}
    return (
        meta.get("namespace") in set(namespaces)
        and spec.get("priorityClassName") == LARGE_PRIORITY_CLASS
        and not meta.get("deletionTimestamp")
    )


def task_pods(vcjob: Mapping[str, Any]) -> tuple[tuple[str, Mapping[str, Decimal]], ...]:
    """One pod of each task with replicas, as rule job-demand counts a pod."""
    out = []
    for i, task in enumerate((vcjob.get("spec") or {}).get("tasks") or []):
        if replicas_of(task) <= 0:
            continue
        spec = ((task.get("template") or {}).get("spec")) or {}
        shape = {r: v for r, v in pod_demand(spec, f"spec.tasks[{i}].template.spec").items() if v}
        out.append((str(task.get("name") or i), shape))
    return tuple(out)


def large_jobs(
    podgroups: Iterable[Mapping[str, Any]],
    namespaces: Iterable[str],
    vcjobs: Iterable[Mapping[str, Any]],
) -> list[LargeJob]:
    """Rule throttle-large-job: the large jobs in the given namespaces, waiting or not. Each is
    a large-job PodGroup whose owning Volcano Job is in ``vcjobs``, with that Job's GPUs (rule
    job-demand); a PodGroup whose Job is not listed is none (see the module docstring)."""
    wanted = set(namespaces)
    by_uid = {(j.get("metadata") or {}).get("uid"): j for j in vcjobs}
    out = []
    for pg in podgroups:
        if not is_large_podgroup(pg, wanted):
            continue
        job, uid = owner_job(pg)
        vcjob = by_uid.get(uid)
        if vcjob is None:
            continue
        meta = pg.get("metadata") or {}
        out.append(
            LargeJob(
                uid=uid,
                namespace=str(meta["namespace"]),
                queue=str((pg.get("spec") or {}).get("queue") or "default"),
                job=job,
                podgroup=str(meta.get("name")),
                gpus=gpus_and_pods(vcjob)[0],
                waiting=podgroup_waits(pg),
                admitted=podgroup_admitted(pg),
                hard_tier=hard_tier(pg.get("spec") or {}),
                created=str(meta.get("creationTimestamp") or ""),
                pods=task_pods(vcjob),
                sla_wait=waiting_seconds(meta.get("annotations")),
                claims=claims_of(vcjob),
                local_only=local_only(vcjob),
            )
        )
    return out
