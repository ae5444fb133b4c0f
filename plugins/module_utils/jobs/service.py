# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The jobs domain against the cluster: the runs of ``vcjob`` and ``large_job_throttle``.

* ``run`` is ``vcjob``: read the tenant's Queues (one list) and the live Job;
  for a new job that asks for GPUs, its queue (one GET, not for a spot queue) and
  the Nodes (one list), so that rule job-fits refuses a job larger than its
  queue's capability or the GPU pool (``supply_io`` reads them); hold while the
  large-job throttle blocks the queue, create the Job, engage the throttle for a
  large job that does not start, wait for Running; or delete the Job.
* ``THROTTLE_FLOW`` is ``large_job_throttle`` (through ``kube.flow``; its pure steps
  are ``jobs/reconcile``): ``throttle_io.gather_throttle`` reads the tenant Namespaces,
  PodGroups, throttle ConfigMaps and, when a large-job PodGroup is among them, Volcano
  Jobs, for all tenants (and, when an admitted large job waits, what rule
  throttle-can-help judges it by); ``apply_throttle`` writes the ConfigMaps that change.

The decisions are ``submit``'s, ``throttle``'s, ``large_job``'s and ``reconcile``'s. Check mode creates
and deletes nothing (it reports what would be created or deleted); a ConfigMap apply
is the server's dry run.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from time import monotonic, sleep
from typing import Any

from ansible.module_utils.common.warnings import warn

from ..common.errors import PartialWrite, Refused, raise_if
from ..common.names import (
    JOB_API,
    JOB_FAILED_PHASES,
    JOB_STARTED_PHASES,
    PODGROUP_API,
    TENANT_QUEUES_CONFIGMAP,
    namespace_name,
)
from ..common.objects import strip_server_fields
from ..kube.cluster import ApiException, Cluster, TransportError, api_error_message
from ..kube.flow import Flow
from ..kube.waiting import wait_for
from ..policy.admission import POLICY_LARGE_JOB_THROTTLE
from ..queues.ownership import listed_leaves
from .classes import job_class_table
from .feasibility import gang_of, waits_for
from .large_job import LARGE_PRIORITY_CLASS
from .reconcile import (
    ThrottleFacts,
    ThrottlePlan,
    ThrottleRequest,
    parse_throttle,
    plan_throttle,
    report_throttle,
)
from .reconcile import facts_in as throttle_facts_in
from .reconcile import facts_out as throttle_facts_out
from .submit import (
    changed_fields,
    differs_text,
    job_for_queues,
    job_name,
    job_phase,
    never_runs_error,
    not_running_text,
    owned_podgroup,
    podgroup_summary,
    still_throttled_text,
    throttled_text,
)
from .supply_io import free_on, read_supply
from .throttle import (
    CONFIGMAP,
    blocks,
    engagement,
    podgroup_missing,
    read_entries,
    throttled_queues,
    unmanaged_warning,
)
from .throttle_io import gather_throttle as gather_reads
from .throttle_io import is_managed, reconcile_namespace, write_all

# Polls while a new large job gets its grace to start are at most this far apart.
GRACE_POLL_SECONDS = 2
# Volcano's job controller creates a Job's PodGroup within a moment of the Job.
PODGROUP_WAIT_SECONDS = 10


def now_utc() -> datetime:
    return datetime.now(UTC)


# --- large_job_throttle ------------------------------------------------------------------


def gather_throttle(request: ThrottleRequest, cluster: Cluster) -> ThrottleFacts:
    """The reconcile's reads (``throttle_io.gather_throttle``), as of now."""
    return gather_reads(cluster, request, now_utc())


def apply_throttle(
    request: ThrottleRequest, planned: ThrottlePlan, cluster: Cluster, check_mode: bool
) -> dict[str, Any]:
    """Write each namespace's ConfigMap that changes, in the plan's order (an apply is a
    dry run in check mode, a delete is not made), then warn about what was left alone."""
    write_all(cluster, list(planned.changes), check_mode)
    for ns in planned.skipped:
        warn(unmanaged_warning(ns))
    for job in planned.turned_away:
        warn(
            f"the throttle does not hold {job['queue']} for large job {job['job']}: {job['reason']}"
        )
    return report_throttle(request, planned)


# Module large_job_throttle: every tenant namespace's throttle ConfigMap kept right.
THROTTLE_FLOW: Flow[ThrottleRequest, ThrottleFacts, ThrottlePlan] = Flow(
    parse=parse_throttle,
    gather=gather_throttle,
    plan=plan_throttle,
    apply=apply_throttle,
    report=report_throttle,
    facts_out=throttle_facts_out,
    facts_in=throttle_facts_in,
)


def run_throttle(params: dict[str, Any], cluster: Cluster, check_mode: bool) -> dict[str, Any]:
    """large_job_throttle: reconcile the throttle of every tenant namespace (or the given)."""
    return THROTTLE_FLOW.run(params, cluster, check_mode)


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
    queue (its GPUs: rule job-demand; what engaging gives: rule throttle-engage,
    ``throttle.engagement``). Returns the job's phase."""
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
            change, away = podgroup_missing(mine, meta["namespace"], PODGROUP_WAIT_SECONDS)
        else:
            change, _cm, away = reconcile_namespace(
                cluster, meta["namespace"], p["tenant"], now_utc(), p["throttle_timeout"]
            )
        result["throttle_engaged"], why = engagement(mine, change, away)
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


def check_feasible(cluster: Cluster, p: Mapping[str, Any], desired: Mapping[str, Any]) -> None:
    """Read what rule job-never-runs (``submit.never_runs_error``) judges a job about to
    be created by, and refuse it (PlatformValidationError naming the option) when it can
    never run; rule job-waits-for: a warning saying what it waits for when it cannot
    start now (the Pods are read only then)."""
    gang = gang_of(desired)
    supply, members = read_supply(cluster, gang, desired["metadata"]["namespace"])
    never = never_runs_error(p, gang, supply)
    if never is not None:
        raise_if([never])
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
    desired, queue_type = job_for_queues(p, table, listed_leaves(queue_list, p["tenant"]))
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
    if cm is None or not is_managed(cm) or uid not in {e.uid for e in read_entries(cm)}:
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
