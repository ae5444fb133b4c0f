# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the in-tenant arbiter sees: queues, running jobs and waiting jobs (pure, no I/O).

Inside a fully used subscription Volcano 1.15.1 cannot make room for a team below its
deserved (see "A full subscription" in docs/scheduling-policy.md). The arbiter evicts
whole lower-priority jobs itself; these
records are what its rules (``arbiter/rules.py``) decide on, built from the objects one
list per kind returns:

* ``queue_states``: Volcano Queues -> ``QueueState`` (GPUs only: ``spec.deserved``,
  ``spec.capability`` and ``status.allocated`` of ``nvidia.com/gpu``; a missing deserved
  or capability is None, ``spec.parent`` defaults to ``root``). The capability that
  bounds a queue is rule effective-capability (``effective_capability``, whose one home
  is ``queues.capability``): the smallest capability of the queue and its ancestors.
* ``running_jobs``: Running Volcano Jobs (and their pods) -> ``RunningJob``, GPUs by rule
  job-demand, priority from the platform's PriorityClasses, and whether preempt and
  reclaim may take them (rule arbiter-preemptable, ``job_preemptable``).
* ``waiting_jobs``: waiting PodGroups with the Volcano Job that owns them -> ``WaitingJob``.

A quantity that is not one is refused with its path (``common/quantity.parse``): counting
it as 0 would make a queue look emptier, or a job smaller, than the scheduler sees it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..common.names import (
    JOB_HOLDING_PHASES,
    LABEL_QUEUE_TYPE,
    POD_TERMINAL_PHASES,
    PRIORITY_CLASSES,
    ROOT_QUEUE,
    owner_tenant,
    pod_queue,
)
from ..common.quantity import GPU, parse
from ..jobs.classes import DEFAULT_CLASSES
from ..jobs.feasibility import Gang, Limit, claims_of, local_only
from ..jobs.large_job import owner_job, podgroup_waits
from ..jobs.sla import waiting_seconds
from ..policy.admission import PREEMPTABLE_ANNOTATION
from ..queues.capability import effective_limit
from ..spot.victims import format_time, parse_time
from ..workload.demand import gpus_and_pods, pod_demand

# The platform's class names, from the class table (their values from names.PRIORITY_CLASSES).
CRITICAL_CLASS = DEFAULT_CLASSES["critical"].priority_class
LARGE_CLASS = DEFAULT_CLASSES["large"].priority_class
NORMAL_CLASS = DEFAULT_CLASSES["normal"].priority_class
DEBUG_CLASS = DEFAULT_CLASSES["debug"].priority_class
SPOT_CLASS = DEFAULT_CLASSES["spot"].priority_class
# Label Volcano's job controller puts on every pod of a Job.
LABEL_VOLCANO_JOB_NAME = "volcano.sh/job-name"
# What Go's strconv.ParseBool reads as false (Volcano parses the mark with it).
_FALSE_WORDS = ("0", "f", "F", "false", "FALSE", "False")


def priority_of(priority_class: str | None) -> int:
    """The value of a platform PriorityClass; any other name (or none) is 0, what
    Kubernetes gives a pod without a known PriorityClass."""
    if priority_class in PRIORITY_CLASSES:
        return PRIORITY_CLASSES[priority_class][0]
    return 0


def class_preempts(priority_class: str | None) -> bool:
    """A platform PriorityClass preempts unless its preemptionPolicy is Never (debug-job);
    any other name is taken to preempt (Kubernetes' default policy)."""
    return PRIORITY_CLASSES.get(priority_class or "", (0, "PreemptLowerPriority"))[1] != "Never"


@dataclass(frozen=True)
class QueueState:
    """One Volcano queue, GPUs only. ``deserved_gpus``/``capability_gpus`` None: not set
    (a missing deserved counts 0; a missing capability is bounded by the parent, rule
    effective-capability). ``allocated_gpus`` is ``status.allocated``: for a parent queue
    Volcano reports the sum over its children, at least that sum (rule
    parent-allocation, ``with_children_allocation``)."""

    name: str
    parent: str
    deserved_gpus: int | None
    capability_gpus: int | None
    allocated_gpus: int
    queue_type: str
    tenant: str

    @property
    def deserved(self) -> int:
        """The deserved GPUs, a missing deserved counting 0 (as Volcano reads it)."""
        return self.deserved_gpus or 0


@dataclass(frozen=True)
class RunningJob:
    """One Running Volcano Job as the victim rules see it; ``started`` in seconds since
    the epoch, ``uid`` the Job's (the caller deletes exactly the job it chose)."""

    namespace: str
    name: str
    uid: str
    queue: str
    priority_class: str
    priority: int
    gpus: int
    started: float
    preemptable: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
            "queue": self.queue,
            "priority_class": self.priority_class,
            "priority": self.priority,
            "gpus": self.gpus,
            "started_at": format_time(self.started),
            "preemptable": self.preemptable,
        }


@dataclass(frozen=True)
class WaitingJob:
    """A job whose PodGroup waits (``podgroup_phase`` Pending or Inqueue) for GPUs."""

    namespace: str
    name: str
    uid: str
    queue: str
    priority_class: str
    priority: int
    gpus: int
    podgroup_phase: str
    # The PodGroup's sla waiting time (jobs/sla), None without one: sla admits the
    # PodGroup after it, and Volcano's gangpreempt then preempts for it.
    sla_wait: float | None = None
    # What rule job-never-runs (jobs/feasibility) reads of the Job: PVCs and placement.
    claims: tuple[str, ...] = ()
    local_only: bool = False

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def gang(self) -> Gang:
        return Gang(self.ref, self.queue, self.gpus, self.claims, self.local_only)


def _gpus(resources: object, path: str) -> int | None:
    """``nvidia.com/gpu`` of a resource list; None when the list does not name it."""
    if not isinstance(resources, Mapping) or GPU not in resources:
        return None
    return int(parse(resources[GPU], f"{path}.{GPU}"))


def queue_states(queues: Iterable[Mapping[str, Any]]) -> dict[str, QueueState]:
    """Volcano Queue objects -> ``QueueState`` by name (see the module docstring)."""
    out: dict[str, QueueState] = {}
    for q in queues:
        meta = q.get("metadata") or {}
        spec = q.get("spec") or {}
        labels = meta.get("labels") or {}
        name = str(meta.get("name") or "")
        where = name
        out[name] = QueueState(
            name=name,
            parent=str(spec.get("parent") or ROOT_QUEUE),
            deserved_gpus=_gpus(spec.get("deserved"), f"{where}.spec.deserved"),
            capability_gpus=_gpus(spec.get("capability"), f"{where}.spec.capability"),
            allocated_gpus=_gpus(
                (q.get("status") or {}).get("allocated"), f"{where}.status.allocated"
            )
            or 0,
            queue_type=str(labels.get(LABEL_QUEUE_TYPE) or ""),
            tenant=owner_tenant(labels),
        )
    return with_children_allocation(out)


def with_children_allocation(states: Mapping[str, QueueState]) -> dict[str, QueueState]:
    """Rule parent-allocation: a parent queue's allocation is at least the sum of its
    children's. vc-scheduler writes each Queue's status on its own, so a parent's can lag
    its children's by a cycle; read alone it would make a full subscription look as if it
    had room, and the arbiter would call a blocked job one that fits."""
    children: dict[str, list[str]] = {}
    for state in states.values():
        children.setdefault(state.parent, []).append(state.name)
    out: dict[str, QueueState] = {}

    def settle(name: str, seen: frozenset[str]) -> int:
        if name in out:
            return out[name].allocated_gpus
        state = states[name]
        below = sum(
            settle(child, seen | {name})
            for child in children.get(name, ())
            if child in states and child not in seen and child != name
        )
        out[name] = replace(state, allocated_gpus=max(state.allocated_gpus, below))
        return out[name].allocated_gpus

    for name in states:
        settle(name, frozenset())
    return out


def releasing_gpus(pods: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """GPUs per queue of the pods on their way out: bound to a node, not ended, with a
    deletion timestamp (an eviction's victims while they stop)."""
    out: dict[str, int] = {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        if not meta.get("deletionTimestamp") or not spec.get("nodeName"):
            continue
        if (pod.get("status") or {}).get("phase") in POD_TERMINAL_PHASES:
            continue
        queue = pod_queue(meta)
        if not queue:
            continue
        gpus = int(pod_demand(spec, f"pods[{meta.get('name', '')}].spec")[GPU])
        if gpus:
            out[queue] = out.get(queue, 0) + gpus
    return out


def without_releasing(
    states: Mapping[str, QueueState], releasing: Mapping[str, int]
) -> dict[str, QueueState]:
    """Rule releasing-is-free: each queue's allocation less the GPUs its pods (and its
    children's) are giving back. Volcano counts a stopping pod as allocated (Releasing)
    until it is gone; the arbiter counts it free, as it does on the nodes, so that the
    room an eviction is making is not asked for twice (measured: a second arbiter run
    started with the first saw the victims still allocated and refused the job as over
    its subscription)."""
    taken: dict[str, int] = {}
    for queue, gpus in releasing.items():
        for name in ancestry(states, queue):
            taken[name] = taken.get(name, 0) + gpus
    return {
        name: replace(state, allocated_gpus=max(0, state.allocated_gpus - taken.get(name, 0)))
        if name in taken
        else state
        for name, state in states.items()
    }


def ancestry(states: Mapping[str, QueueState], name: str) -> list[str]:
    """The queue ``name`` and its ancestors, nearest first, up to (not including) ``root``;
    it stops at a parent that is not in ``states`` and at a cycle."""
    chain: list[str] = []
    current = states.get(name)
    while current is not None and current.name not in chain:
        chain.append(current.name)
        if current.parent == ROOT_QUEUE:
            break
        current = states.get(current.parent)
    return chain


def limits_of(states: Mapping[str, QueueState], name: str) -> tuple[Limit, ...]:
    """The queue and its ancestors as rule job-never-runs reads them (jobs/feasibility)."""
    return tuple(
        Limit(
            q,
            states[q].capability_gpus,
            states[q].allocated_gpus,
            states[q].parent,
            states[q].queue_type,
        )
        for q in ancestry(states, name)
    )


def effective_capability(states: Mapping[str, QueueState], name: str) -> int | None:
    """Rule effective-capability (``queues.capability``) in GPUs over the queue and its
    ancestors; None when no queue up to ``root`` limits GPUs (the root queue is unlimited)."""
    return effective_limit(states[queue].capability_gpus for queue in ancestry(states, name))


def _is_false(value: object) -> bool:
    return isinstance(value, str) and value.strip() in _FALSE_WORDS


def marked_non_preemptable(metadata: Mapping[str, Any] | None) -> bool:
    """``volcano.sh/preemptable: "false"`` on a pod's (or task template's) metadata: the
    annotation, else the label (Volcano reads the annotation first, then the label)."""
    meta = metadata or {}
    annotations = meta.get("annotations") or {}
    if PREEMPTABLE_ANNOTATION in annotations:
        return _is_false(annotations[PREEMPTABLE_ANNOTATION])
    return _is_false((meta.get("labels") or {}).get(PREEMPTABLE_ANNOTATION))


def pods_of(job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The pods of a Volcano Job that have not ended: those its ``ownerReferences`` name
    (by the Job's uid), or that carry its ``volcano.sh/job-name`` label in its namespace."""
    meta = job.get("metadata") or {}
    uid, name, namespace = meta.get("uid"), meta.get("name"), meta.get("namespace")
    out = []
    for pod in pods:
        pmeta = pod.get("metadata") or {}
        if pmeta.get("namespace") != namespace:
            continue
        if (pod.get("status") or {}).get("phase") in POD_TERMINAL_PHASES:
            continue
        owned = uid is not None and any(
            ref.get("kind") == "Job"
            and str(ref.get("apiVersion", "")).startswith("batch.volcano.sh/")
            and ref.get("uid") == uid
            for ref in pmeta.get("ownerReferences") or []
        )
        if owned or (pmeta.get("labels") or {}).get(LABEL_VOLCANO_JOB_NAME) == name:
            out.append(pod)
    return out


def job_preemptable(job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]] = ()) -> bool:
    """Rule arbiter-preemptable: a Volcano Job may be a victim unless its PriorityClass is
    critical-job, or any task template, or any of its pods (``pods_of``), is marked
    ``volcano.sh/preemptable: "false"`` (which removes it from Volcano's preempt and reclaim
    too: the arbiter never takes what Volcano would not)."""
    spec = job.get("spec") or {}
    if spec.get("priorityClassName") == CRITICAL_CLASS:
        return False
    for task in spec.get("tasks") or []:
        if marked_non_preemptable((task.get("template") or {}).get("metadata")):
            return False
    return not any(marked_non_preemptable(p.get("metadata")) for p in pods_of(job, pods))


def running_jobs(
    vcjobs: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]] = ()
) -> list[RunningJob]:
    """The Running Volcano Jobs (``status.state.phase`` Running, not being deleted: those
    are leaving already) as ``RunningJob``: GPUs by rule job-demand, ``started`` from
    ``status.state.lastTransitionTime``, else ``metadata.creationTimestamp`` (neither:
    0, the oldest), priority from the PriorityClass, ``preemptable`` by rule
    arbiter-preemptable."""
    pod_list = list(pods)
    out = []
    for job in vcjobs:
        meta = job.get("metadata") or {}
        state = (job.get("status") or {}).get("state") or {}
        if state.get("phase") not in JOB_HOLDING_PHASES or meta.get("deletionTimestamp"):
            continue
        spec = job.get("spec") or {}
        namespace = str(meta.get("namespace") or "")
        name = str(meta.get("name") or "")
        where = f"{namespace}/{name}"
        if state.get("lastTransitionTime"):
            started = parse_time(
                state["lastTransitionTime"], f"{where}.status.state.lastTransitionTime"
            )
        elif meta.get("creationTimestamp"):
            started = parse_time(meta["creationTimestamp"], f"{where}.metadata.creationTimestamp")
        else:
            started = 0.0
        priority_class = str(spec.get("priorityClassName") or "")
        out.append(
            RunningJob(
                namespace=namespace,
                name=name,
                uid=str(meta.get("uid") or ""),
                queue=str(spec.get("queue") or "default"),
                priority_class=priority_class,
                priority=priority_of(priority_class),
                gpus=gpus_and_pods(job)[0],
                started=started,
                preemptable=job_preemptable(job, pod_list),
            )
        )
    return out


def placed(vcjob: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> bool:
    """Rule placed-is-not-waiting: at least ``minAvailable`` of the Job's pods are bound to a
    node and not on their way out. The scheduler has placed the job; its queue's
    ``status.allocated`` may count them already while the PodGroup and the Job still say
    Pending (measured: a second arbiter run, started with the first, read b2 bound but
    Pending and refused it as over the subscription, its own GPUs counted twice)."""
    spec = vcjob.get("spec") or {}
    # Volcano's admission fills minAvailable in with every task's replicas when it is 0.
    need = int(spec.get("minAvailable") or 0) or sum(
        int(t.get("replicas") or 0) for t in spec.get("tasks") or []
    )
    bound = [
        p
        for p in pods_of(vcjob, pods)
        if (p.get("spec") or {}).get("nodeName")
        and not (p.get("metadata") or {}).get("deletionTimestamp")
    ]
    return need > 0 and len(bound) >= need


def waiting_jobs(
    podgroups: Iterable[Mapping[str, Any]],
    vcjobs: Iterable[Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]] | None = None,
) -> list[WaitingJob]:
    """The waiting jobs (rule throttle-trigger, ``jobs/large_job.podgroup_waits``: a PodGroup
    Pending or Inqueue with fewer than minMember pods running), each a PodGroup together
    with the Volcano Job its ``ownerReferences`` name, with that Job's GPUs (rule
    job-demand), queue and PriorityClass. A PodGroup whose Job is not listed, or that is
    being deleted, is none; so is one whose Job is already Running: the scheduler writes
    the PodGroup's phase and running count at the end of its session, after the job
    controller has seen the pods run, and in between the job would be counted twice, as
    running and as waiting (measured: a second arbiter run then refused to make room
    that had been made). With ``pods``, a job the scheduler has placed is none too (rule
    placed-is-not-waiting)."""
    by_uid = {(j.get("metadata") or {}).get("uid"): j for j in vcjobs}
    pod_list = list(pods) if pods is not None else None
    out = []
    for pg in podgroups:
        meta = pg.get("metadata") or {}
        if meta.get("deletionTimestamp") or not podgroup_waits(pg):
            continue
        name, uid = owner_job(pg)
        vcjob = by_uid.get(uid)
        if vcjob is None:
            continue
        if ((vcjob.get("status") or {}).get("state") or {}).get("phase") in JOB_HOLDING_PHASES:
            continue
        if pod_list is not None and placed(vcjob, pod_list):
            continue
        spec = vcjob.get("spec") or {}
        pg_spec = pg.get("spec") or {}
        priority_class = str(
            spec.get("priorityClassName") or pg_spec.get("priorityClassName") or ""
        )
        out.append(
            WaitingJob(
                namespace=str(meta.get("namespace") or ""),
                name=name,
                uid=uid,
                queue=str(spec.get("queue") or pg_spec.get("queue") or "default"),
                priority_class=priority_class,
                priority=priority_of(priority_class),
                gpus=gpus_and_pods(vcjob)[0],
                podgroup_phase=str((pg.get("status") or {}).get("phase") or ""),
                sla_wait=waiting_seconds(meta.get("annotations")),
                claims=claims_of(vcjob),
                local_only=local_only(vcjob),
            )
        )
    return out
