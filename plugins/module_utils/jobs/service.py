# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The jobs domain against the cluster: read, ask the rules, write.

* ``run`` is ``vcjob``: read the tenant's Queues (one list) and the live Job;
  for a new job that asks for GPUs, its queue (one GET, not for a spot queue) and
  the Nodes (one list), so that rule job-fits refuses a job larger than its
  queue's capability or the GPU pool; hold while the large-job throttle blocks
  the queue, create the Job, engage
  the throttle for a large job that does not start, wait for Running; or
  delete the Job.
* ``run_throttle`` is ``large_job_throttle``: one list of tenant Namespaces,
  one of PodGroups, one of throttle ConfigMaps and, when a large-job PodGroup
  is among them, one of Volcano Jobs, for all tenants; write the ConfigMaps
  that change.

The decisions are ``submit``'s and ``throttle``'s. Check mode creates and
deletes nothing (it reports what would be created or deleted); a ConfigMap
apply is the server's dry run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from time import monotonic, sleep
from typing import Any

from ansible.module_utils.common.warnings import warn

from ..capacity.pool import allocated_from_pods, pool_from_nodes, pool_node_resources
from ..common.errors import FieldError, PartialWrite, Refused, raise_if
from ..common.names import (
    HYPERNODE_API,
    JOB_API,
    JOB_FAILED_PHASES,
    JOB_STARTED_PHASES,
    LABEL_MANAGED_BY,
    LABEL_TENANT,
    MANAGED_BY,
    PODGROUP_API,
    QUEUE_API,
    ROOT_QUEUE,
    namespace_name,
)
from ..common.objects import strip_server_fields
from ..common.quantity import GPU
from ..kube.cluster import ApiException, Cluster, TransportError, api_error_message
from ..kube.waiting import wait_for
from ..policy.admission import POLICY_LARGE_JOB_THROTTLE, TENANT_QUEUES_CONFIGMAP
from ..policy.platform_state import POLICY_PLATFORM_STATE
from ..topology.manifests import tree_from_manifests
from ..topology.tree import node_infos
from .classes import job_class_table
from .feasibility import (
    Gang,
    Supply,
    at_most,
    chain_of,
    claim_names,
    gang_of,
    never_runs,
    queue_limits,
    required_groups,
    usable_gpus,
    usable_nodes,
    waits_for,
)
from .submit import (
    changed_fields,
    claim_field,
    demand_field,
    differs_text,
    job_for_queues,
    job_name,
    job_phase,
    not_running_text,
    owned_podgroup,
    podgroup_summary,
    still_throttled_text,
    tenant_leaves,
    throttled_text,
)
from .throttle import (
    CONFIGMAP,
    LARGE_PRIORITY_CLASS,
    Change,
    LargeJob,
    Room,
    blocks,
    cannot_help,
    is_large_podgroup,
    large_jobs,
    largest_domains,
    not_engaged,
    plan_namespace,
    preemptible_gpus,
    read_entries,
    reconcile_report,
    throttled_queues,
    unknown_namespace_errors,
    unmanaged_warning,
)

# Polls while a new large job gets its grace to start are at most this far apart.
GRACE_POLL_SECONDS = 2
# Volcano's job controller creates a Job's PodGroup within a moment of the Job.
PODGROUP_WAIT_SECONDS = 10


def now_utc() -> datetime:
    return datetime.now(UTC)


# --- the throttle: reading -----------------------------------------------------------


def _is_managed(obj: Mapping[str, Any]) -> bool:
    return ((obj.get("metadata") or {}).get("labels") or {}).get(LABEL_MANAGED_BY) == MANAGED_BY


def tenant_namespaces(cluster: Cluster, only: Iterable[str] | None = None) -> dict[str, str]:
    """Namespace -> tenant for every namespace labelled platform.io/tenant (one list)."""
    wanted = set(only or [])
    out = {}
    for ns in cluster.list("v1", "Namespace", label_selector=LABEL_TENANT):
        meta = ns.get("metadata") or {}
        if wanted and meta.get("name") not in wanted:
            continue
        out[meta["name"]] = (meta.get("labels") or {})[LABEL_TENANT]
    return out


def throttle_configmaps(
    cluster: Cluster, namespace: str | None = None
) -> tuple[dict[str, dict], list[str]]:
    """(namespace -> managed throttle ConfigMap, namespaces whose ConfigMap is not managed)."""
    managed: dict[str, dict] = {}
    foreign: list[str] = []
    for cm in cluster.list(
        "v1", "ConfigMap", namespace=namespace, field_selector=f"metadata.name={CONFIGMAP}"
    ):
        ns = cm["metadata"]["namespace"]
        if cm["metadata"]["name"] != CONFIGMAP:
            continue
        if _is_managed(cm):
            managed[ns] = cm
        else:
            foreign.append(ns)
    return managed, sorted(foreign)


def read_large_jobs(
    cluster: Cluster, namespaces: Iterable[str], namespace: str | None = None
) -> tuple[list[LargeJob], list[dict[str, Any]]]:
    """The large jobs of ``namespaces`` and the Volcano Jobs read with them: one list of
    PodGroups (of ``namespace``, or of every namespace) and, only when a large-job PodGroup
    is among them, one list of Volcano Jobs (their owners, whose demand is the GPUs they
    wait for). PodGroups first: a Job is created before its PodGroup, so a PodGroup's Job
    missing from the later list is gone."""
    wanted = set(namespaces)
    podgroups = cluster.list(PODGROUP_API, "PodGroup", namespace=namespace)
    if not any(is_large_podgroup(pg, wanted) for pg in podgroups):
        return [], []
    vcjobs = cluster.list(JOB_API, "Job", namespace=namespace)
    return large_jobs(podgroups, wanted, vcjobs), vcjobs


_UNFINISHED_PODS = "status.phase!=Succeeded,status.phase!=Failed"


def read_room(cluster: Cluster, jobs: list[LargeJob], vcjobs: list[dict[str, Any]]) -> Room | None:
    """What preemption could give the waiting admitted large jobs: one list of Nodes, one of
    unfinished Pods and, when one of them has a hard topology, one of HyperNodes. None when
    this identity may not read them (a tenant's own): then no job is turned away."""
    try:
        nodes = cluster.list("v1", "Node")
        supplies = read_supplies(cluster, jobs, nodes)
        pool, members = pool_from_nodes(nodes, None)
        held, _leaving = allocated_from_pods(
            cluster.list("v1", "Pod", field_selector=_UNFINISHED_PODS), members
        )
        per_node = pool_node_resources(nodes)
        domains = None
        if any(j.hard_tier is not None for j in jobs):
            tree, _errors = tree_from_manifests(cluster.list(HYPERNODE_API, "HyperNode"))
            gpus = {name: int(r[GPU]) for name, r in per_node.items()}
            domains = largest_domains(tree, node_infos(nodes), gpus)
    except ApiException as exc:
        if not _forbidden(exc):
            raise
        warn(
            "could not read the Nodes, Pods or HyperNodes to judge whether preemption can help "
            f"a waiting large job ({api_error_message(exc)}); the throttle engages as it would"
        )
        return None
    pool_gpus = int(pool[GPU])
    return Room(
        pool_gpus=pool_gpus,
        free_gpus=max(0, pool_gpus - int(held[GPU])),
        preemptible=preemptible_gpus(vcjobs),
        domains=domains,
        nodes=list(per_node.values()),
        supplies=supplies,
    )


def read_supplies(
    cluster: Cluster, jobs: list[LargeJob], nodes: list[dict[str, Any]]
) -> dict[str, Supply]:
    """What rule job-never-runs judges each waiting large job by: one list of Queues and,
    when a job mounts any, one of PVCs (of the one namespace when the jobs share it)."""
    if not jobs:
        return {}
    queues = {q["metadata"]["name"]: q for q in cluster.list(QUEUE_API, "Queue")}
    limits = queue_limits(queues.values())
    spaces = {j.namespace for j in jobs}
    only = next(iter(spaces)) if len(spaces) == 1 else None
    mounts = any(j.claims for j in jobs)
    claims = (
        claim_names(cluster.list("v1", "PersistentVolumeClaim", namespace=only)) if mounts else {}
    )
    return {
        j.uid: Supply(
            chain=chain_of(limits, j.queue),
            node_gpus=usable_gpus(nodes, required_groups(queues, j.queue), j.local_only),
            claims=claims.get(j.namespace, frozenset()),
        )
        for j in jobs
    }


def turned_away(
    cluster: Cluster,
    jobs: list[LargeJob],
    vcjobs: list[dict[str, Any]],
    now: datetime,
    skip: Iterable[str] = (),
) -> dict[str, str]:
    """Rule throttle-can-help for every waiting large job but those in ``skip`` (uids):
    uid -> why holding its queue cannot help. The GPUs (Nodes, Pods, HyperNodes), Queues
    and PVCs are read only when such a job waits."""
    skipped = set(skip)
    waiting = [j for j in jobs if j.waiting and j.uid not in skipped]
    # Read whenever a job waits: rule job-never-runs is judged first, so that the reason
    # is the one the arbiter and vcjob give.
    room = read_room(cluster, waiting, vcjobs) if waiting else None
    return {j.uid: why for j in waiting if (why := cannot_help(j, room, now))}


# --- the throttle: writing -------------------------------------------------------------


def write(cluster: Cluster, change: Change, check_mode: bool) -> None:
    """Apply (a server dry run in check mode) or delete (not in check mode) one ConfigMap."""
    if change.action == "apply" and change.manifest is not None:
        cluster.apply(change.manifest)
    elif change.action == "delete" and not check_mode:
        cluster.delete("v1", "ConfigMap", CONFIGMAP, change.namespace, propagation="Background")


def write_as_submitter(cluster: Cluster, change: Change) -> bool:
    """vcjob writes the throttle as whoever submits. A tenant's own identity may not write
    platform state (rule platform-state): then the platform's scheduled large_job_throttle
    run engages and releases it, and this says so. Returns whether it was written."""
    try:
        write(cluster, change, check_mode=False)
    except ApiException as exc:
        if POLICY_PLATFORM_STATE not in api_error_message(exc):
            raise
        warn(
            f"the throttle of {change.namespace} is platform state this identity may not write; "
            "the platform's scheduled large_job_throttle run keeps it"
        )
        return False
    return True


def write_all(cluster: Cluster, changes: list[Change], check_mode: bool) -> None:
    """Write each namespace's change in turn; a failure says which were written."""
    done: list[str] = []
    for change in changes:
        try:
            write(cluster, change, check_mode)
        except (ApiException, TransportError) as exc:
            raise PartialWrite("throttle reconcile", done, exc) from exc
        if change.action != "none":
            done.append(f"{change.action} {change.namespace}/{CONFIGMAP}")


def reconcile_all(
    cluster: Cluster,
    now: datetime,
    timeout: int,
    only: Iterable[str] | None = None,
    check_mode: bool = False,
) -> tuple[list[Change], list[str], list[dict[str, str]]]:
    """Reconcile every tenant namespace (or ``only`` these); returns the changes (written, as
    far as check mode writes), the namespaces skipped because their ConfigMap is not
    managed, and the waiting large jobs rule throttle-can-help turned away (an entry they
    had is released)."""
    namespaces = tenant_namespaces(cluster, only)
    raise_if(unknown_namespace_errors(list(only or []), namespaces))
    jobs, vcjobs = read_large_jobs(cluster, namespaces)
    configmaps, foreign = throttle_configmaps(cluster)
    # Every waiting job is judged, an engaged one too: one that can no longer be helped
    # (enqueue never admitted it) is released.
    blocked = turned_away(cluster, jobs, vcjobs, now)
    changes = [
        plan_namespace(ns, tenant, configmaps.get(ns), jobs, now, timeout, blocked)
        for ns, tenant in sorted(namespaces.items())
        if ns not in foreign
    ]
    write_all(cluster, changes, check_mode)
    return changes, [ns for ns in foreign if ns in namespaces], not_engaged(jobs, blocked)


def reconcile_namespace(
    cluster: Cluster, namespace: str, tenant: str, now: datetime, timeout: int
) -> tuple[Change, dict | None, list[dict[str, str]]]:
    """Reconcile one namespace (vcjob, while it holds a job or right after it submitted a
    large one: never in check mode); returns the change, the ConfigMap as it now is (None:
    none) and the waiting large jobs rule throttle-can-help turned away."""
    jobs, vcjobs = read_large_jobs(cluster, [namespace], namespace)
    cm = cluster.get("v1", "ConfigMap", CONFIGMAP, namespace)
    if cm is not None and not _is_managed(cm):
        return Change(namespace, [], [], "none", None), cm, []
    # Jobs with an entry are left to the scheduled reconcile: vcjob calls this on every
    # poll while it holds, and judging reads the Nodes and Pods.
    blocked = turned_away(cluster, jobs, vcjobs, now, [e.uid for e in read_entries(cm)])
    change = plan_namespace(namespace, tenant, cm, jobs, now, timeout, blocked)
    away = not_engaged(jobs, blocked)
    if change.action != "none" and not write_as_submitter(cluster, change):
        return Change(namespace, change.before, change.before, "none", None), cm, away
    if change.action == "delete":
        return change, None, away
    return change, change.manifest if change.action == "apply" else cm, away


def run_throttle(params: dict[str, Any], cluster: Cluster, check_mode: bool) -> dict[str, Any]:
    """large_job_throttle: reconcile the throttle of every tenant namespace (or the given)."""
    changes, skipped, away = reconcile_all(
        cluster, now_utc(), params["timeout"], params["namespaces"], check_mode
    )
    for ns in skipped:
        warn(unmanaged_warning(ns))
    for job in away:
        warn(
            f"the throttle does not hold {job['queue']} for large job {job['job']}: {job['reason']}"
        )
    return reconcile_report(changes, skipped, away)


# --- vcjob -----------------------------------------------------------------------------


def throttle_denial(exc: Exception) -> bool:
    """The API server refused a create because the throttle's admission policy did."""
    return POLICY_LARGE_JOB_THROTTLE in api_error_message(exc)


def wait_phase(
    cluster: Cluster, namespace: str, name: str, timeout: float, interval: float
) -> tuple[str, dict | None]:
    """Poll the job (one GET each time) until it started or failed, or ``timeout`` seconds
    passed; its phase and the job as last read (None: absent)."""
    _settled, live, _elapsed = wait_for(
        cluster, JOB_API, "Job", job_settled, timeout, interval, name=name, namespace=namespace
    )
    return job_phase(live), live or None


def job_settled(job: Mapping[str, Any] | None) -> bool:
    """The job started or failed: waiting longer changes nothing."""
    phase = job_phase(job)
    return phase in JOB_STARTED_PHASES or phase in JOB_FAILED_PHASES


def hold(
    cluster: Cluster, p: Mapping[str, Any], queue: str, priority_class: str, result: dict
) -> None:
    """Wait while the throttle blocks the queue, reconciling the namespace each poll so that
    the throttle is released once its large job runs or times out; sets ``held_seconds``."""
    namespace = namespace_name(p["tenant"])
    start = monotonic()
    # Not kubernetes.core's Waiter: each turn reconciles (and may write) the throttle.
    while True:
        _change, cm, _away = reconcile_namespace(
            cluster, namespace, p["tenant"], now_utc(), p["throttle_timeout"]
        )
        if not blocks(cm, queue, priority_class):
            result["held_seconds"] = int(monotonic() - start)
            return
        if monotonic() - start >= p["hold_timeout"]:
            raise Refused(still_throttled_text(cm, queue, p["hold_timeout"]), **result)
        sleep(p["wait_sleep"])


def create(cluster: Cluster, p: Mapping[str, Any], desired: dict, result: dict) -> dict:
    """Create the job; with hold_when_throttled, a denial by the throttle's admission policy
    (which may see the throttle before this module did) holds and tries again."""
    meta = desired["metadata"]
    while True:
        try:
            return cluster.create(desired)
        except ApiException as exc:
            if not (p["hold_when_throttled"] and throttle_denial(exc)):
                raise Refused(
                    f"creating job {meta['namespace']}/{meta['name']} failed: "
                    f"{api_error_message(exc)}",
                    **result,
                ) from exc
        held_before = result["held_seconds"]
        hold(cluster, p, desired["spec"]["queue"], desired["spec"]["priorityClassName"], result)
        result["held_seconds"] += held_before


def engage_unless_started(
    cluster: Cluster, p: Mapping[str, Any], desired: dict, created: dict, result: dict
) -> str:
    """A new large job that is not Running within throttle_grace engages the throttle for its
    queue (its GPUs: rule job-demand). Returns the job's phase."""
    meta = desired["metadata"]
    phase, _live = wait_phase(
        cluster,
        meta["namespace"],
        meta["name"],
        p["throttle_grace"],
        min(p["wait_sleep"], GRACE_POLL_SECONDS),
    )
    if phase not in JOB_STARTED_PHASES:
        mine = f"{meta['namespace']}/{meta['name']}"
        uid = (created.get("metadata") or {}).get("uid")
        if not podgroup_created(cluster, meta["namespace"], uid, p["wait_sleep"]):
            why = (
                f"Volcano has not created its PodGroup within {PODGROUP_WAIT_SECONDS} s; the "
                "scheduled large_job_throttle run judges it"
            )
            away = [{"job": mine, "reason": why}]
            change = Change(meta["namespace"], [], [], "none", None)
        else:
            change, _cm, away = reconcile_namespace(
                cluster, meta["namespace"], p["tenant"], now_utc(), p["throttle_timeout"]
            )
        result["throttle_engaged"] = mine in change.engaged
        why = next((j["reason"] for j in away if j["job"] == mine), None)
        if why:
            result["throttle_not_engaged"] = why
            warn(f"the throttle does not hold {desired['spec']['queue']} for {mine}: {why}")
    return phase


def podgroup_created(cluster: Cluster, namespace: str, uid: str | None, interval: float) -> bool:
    """Wait (at most PODGROUP_WAIT_SECONDS) until Volcano's job controller has created the
    job's PodGroup: the throttle judges a large job by it. One LIST of the namespace's
    PodGroups a poll: its name is Volcano's to choose, its owner is the job's uid."""

    def owned(answer: Mapping[str, Any] | None) -> bool:
        return owned_podgroup((answer or {}).get("items") or [], uid) is not None

    found, _list, _elapsed = wait_for(
        cluster,
        PODGROUP_API,
        "PodGroup",
        owned,
        PODGROUP_WAIT_SECONDS,
        min(interval, GRACE_POLL_SECONDS),
        namespace=namespace,
    )
    return found


def wait_running(cluster: Cluster, p: Mapping[str, Any], created: dict, result: dict) -> str:
    """wait: the job's phase once Running; when it is not in wait_timeout, refuse with its
    PodGroup's conditions (why the scheduler has not run it)."""
    meta = created["metadata"]
    namespace, name = meta["namespace"], meta["name"]
    phase, latest = wait_phase(cluster, namespace, name, p["wait_timeout"], p["wait_sleep"])
    if phase in JOB_STARTED_PHASES:
        return phase
    uid = ((latest or created).get("metadata") or {}).get("uid")
    podgroups = cluster.list(PODGROUP_API, "PodGroup", namespace=namespace)
    pg = podgroup_summary(owned_podgroup(podgroups, uid))
    raise Refused(
        not_running_text(namespace, name, phase, p["wait_timeout"], pg),
        podgroup=pg,
        phase=phase,
        **result,
    )


def after_create(
    cluster: Cluster, p: Mapping[str, Any], desired: dict, created: dict, result: dict
) -> str:
    """Engage the throttle (a new large job) and wait (``wait``); returns the job's phase."""
    phase = job_phase(created)
    large = desired["spec"]["priorityClassName"] == LARGE_PRIORITY_CLASS
    if result["changed"] and large and p["engage_throttle"]:
        phase = engage_unless_started(cluster, p, desired, created, result)
    if p["wait"]:
        phase = wait_running(cluster, p, created, result)
    return phase


def _forbidden(exc: Exception) -> bool:
    return getattr(exc, "status", None) == 403


def read_queues(cluster: Cluster, queue: str) -> dict[str, dict[str, Any]]:
    """The Queues rule job-never-runs judges ``queue`` by: every Queue (one list), or, for
    an identity that may not list them (a tenant's own), the queue and its ancestors one
    GET each, as far as it may read (then with a warning naming where it stopped)."""
    try:
        return {q["metadata"]["name"]: q for q in cluster.list(QUEUE_API, "Queue")}
    except ApiException as exc:
        if not _forbidden(exc):
            raise
    found: dict[str, dict[str, Any]] = {}
    name = queue
    while name and name != ROOT_QUEUE and name not in found:
        try:
            live = cluster.get(QUEUE_API, "Queue", name)
        except ApiException as exc:
            if not _forbidden(exc):
                raise
            warn(
                f"this identity may not read Queue {name}; the job's GPUs are not compared "
                "with its capability"
            )
            break
        if live is None:
            break
        found[name] = live
        name = str((live.get("spec") or {}).get("parent") or ROOT_QUEUE)
    return found


def read_nodes(cluster: Cluster) -> list[dict[str, Any]] | None:
    """Every Node (one list); None when this identity may not list them (then with a
    warning: the job's GPUs are not compared with its nodes)."""
    try:
        return cluster.list("v1", "Node")
    except ApiException as exc:
        if not _forbidden(exc):
            raise
        warn("this identity may not list Nodes; the job's GPUs are not compared with its nodes")
        return None


def read_supply(cluster: Cluster, gang: Gang, namespace: str) -> tuple[Supply, list[str]]:
    """What rule job-never-runs judges a job about to be created by: its queue chain, the
    GPUs of the nodes it may use (and their names), and its namespace's PVCs. Only what the
    job asks about is read: no Queues or Nodes for a job without GPUs, no PVCs for one
    that mounts none."""
    queues = read_queues(cluster, gang.queue) if gang.gpus > 0 else {}
    claims = (
        claim_names(cluster.list("v1", "PersistentVolumeClaim", namespace=namespace))
        if gang.claims
        else {}
    )
    node_gpus, members = None, []
    nodes = read_nodes(cluster) if gang.gpus > 0 else None
    if nodes is not None:
        groups = required_groups(queues, gang.queue)
        node_gpus = usable_gpus(nodes, groups, gang.local_only)
        members = usable_nodes(nodes, groups, gang.local_only)
    supply = Supply(
        chain=chain_of(queue_limits(queues.values()), gang.queue),
        node_gpus=node_gpus,
        claims=claims.get(namespace, frozenset()),
    )
    return supply, members


def free_on(cluster: Cluster, supply: Supply, members: list[str]) -> Supply:
    """``supply`` with the GPUs of its nodes that no unfinished pod holds (one Pod list)."""
    if supply.node_gpus is None:
        return supply
    held, _leaving = allocated_from_pods(
        cluster.list("v1", "Pod", field_selector=_UNFINISHED_PODS), members
    )
    return replace(supply, free_gpus=max(0, supply.node_gpus - int(held[GPU])))


def check_feasible(cluster: Cluster, p: Mapping[str, Any], desired: Mapping[str, Any]) -> None:
    """Rule job-never-runs for a job about to be created: refused (PlatformValidationError
    naming the option) when it can never run; rule job-waits-for: a warning saying what it
    waits for when it cannot start now (the Pods are read only then)."""
    gang = gang_of(desired)
    supply, members = read_supply(cluster, gang, desired["metadata"]["namespace"])
    never = never_runs(gang, supply)
    if never is not None:
        field = claim_field(p, gang, supply) or demand_field(p)
        limit = at_most(gang, supply)
        hint = f"; ask for at most {limit} GPUs" if field == demand_field(p) and limit else ""
        raise_if([FieldError(field, never + hint)])
    if gang.gpus <= 0:
        return
    waits = waits_for(gang, free_on(cluster, supply, members))
    if waits is not None:
        warn(f"job {gang.ref} is accepted and waits: {waits}")


def present(p: dict[str, Any], cluster: Cluster, check_mode: bool) -> dict[str, Any]:
    """state=present: check the queue, refuse a live job that differs, hold while throttled,
    create, then engage the throttle and wait as asked."""
    table = job_class_table(p["job_classes"])
    # The tenant's own queue list, in its namespace: a tenant's identity can read it (it
    # cannot list the cluster's Queues), and the admission policies judge by the same list.
    queue_list = cluster.get(
        "v1", "ConfigMap", TENANT_QUEUES_CONFIGMAP, namespace_name(p["tenant"])
    )
    desired, queue_type = job_for_queues(p, table, tenant_leaves(queue_list, p["tenant"]))
    namespace, name = desired["metadata"]["namespace"], desired["metadata"]["name"]
    queue, priority_class = desired["spec"]["queue"], desired["spec"]["priorityClassName"]
    result: dict[str, Any] = {
        "changed": False,
        "queue": {"name": queue, "type": queue_type},
        "held_seconds": 0,
        "throttle_engaged": False,
    }
    live = cluster.get(JOB_API, "Job", name, namespace)
    if live is not None:
        diffs = changed_fields(desired, live)
        if diffs:
            raise Refused(
                differs_text(namespace, name, diffs),
                job=strip_server_fields(live),
                phase=job_phase(live),
                **result,
            )
        created: dict | None = live
    else:
        check_feasible(cluster, p, desired)
        cm = cluster.get("v1", "ConfigMap", CONFIGMAP, namespace)
        if blocks(cm, queue, priority_class):
            text = throttled_text(cm, queue)
            if not p["hold_when_throttled"]:
                raise Refused(
                    text + "; resubmit later, set hold_when_throttled, or use another queue",
                    **result,
                )
            if check_mode:
                warn(text + "; the job would be held until then")
                return {**result, "changed": True, "job": desired, "phase": "Held"}
            hold(cluster, p, queue, priority_class, result)
        # In check mode this is the API server's dry run: Volcano's webhooks and the
        # admission policies judge the job and nothing is stored.
        created = create(cluster, p, desired, result)
        result["changed"] = True
    result["job"] = strip_server_fields(created) or desired
    phase = job_phase(created)
    if created is not None and not check_mode:
        try:
            phase = after_create(cluster, p, desired, created, result)
        except (ApiException, TransportError) as exc:
            if not result["changed"]:
                raise
            raise PartialWrite(
                f"submitting job {namespace}/{name}",
                [f"created Job {namespace}/{name}"],
                exc,
                **result,
            ) from exc
    result["phase"] = phase
    result["diff"] = {"before": strip_server_fields(live) or {}, "after": desired}
    return result


def absent(p: dict[str, Any], cluster: Cluster, check_mode: bool) -> dict[str, Any]:
    """state=absent: delete the job (in check mode, report the job that would be deleted)."""
    namespace, name = namespace_name(p["tenant"]), job_name(p)
    live = cluster.get(JOB_API, "Job", name, namespace)
    before = strip_server_fields(live) or {}
    result = {
        "changed": False,
        "job": before,
        "phase": job_phase(live) if live else "Absent",
        "diff": {"before": before, "after": {}},
    }
    if live is None:
        return result
    deleted = True
    if not check_mode:
        try:
            deleted = cluster.delete(JOB_API, "Job", name, namespace, propagation="Background")
        except ApiException as exc:
            raise Refused(
                f"deleting job {namespace}/{name} failed: {api_error_message(exc)}"
            ) from exc
    result.update(changed=deleted, phase="Absent")
    if deleted and not check_mode:
        result["throttle_released"] = release_throttle(cluster, p, live)
    return result


def release_throttle(cluster: Cluster, p: Mapping[str, Any], live: Mapping[str, Any]) -> list[str]:
    """A deleted large job releases the throttle it engaged at once, not at the next
    scheduled reconcile: when the namespace's throttle has an entry for the Job's uid, the
    namespace is reconciled (the Job is gone, so its entry is dropped). Returns the queues
    released."""
    meta = live.get("metadata") or {}
    namespace, uid = str(meta.get("namespace")), meta.get("uid")
    cm = cluster.get("v1", "ConfigMap", CONFIGMAP, namespace)
    if cm is None or not _is_managed(cm) or uid not in {e.uid for e in read_entries(cm)}:
        return []
    change, _cm, _away = reconcile_namespace(
        cluster, namespace, p["tenant"], now_utc(), p["throttle_timeout"]
    )
    after = set(throttled_queues(change.after))
    return sorted(set(throttled_queues(change.before)) - after)


def run(params: dict[str, Any], cluster: Cluster, check_mode: bool) -> dict[str, Any]:
    """vcjob: submit (state present) or delete (state absent) one Volcano Job."""
    if params["state"] == "absent":
        return absent(params, cluster, check_mode)
    return present(params, cluster, check_mode)
