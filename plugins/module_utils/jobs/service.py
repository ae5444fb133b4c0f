# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The jobs domain against the cluster: the runs of ``vcjob`` and ``large_job_throttle``.

* ``JOB_FLOW`` is ``vcjob`` (through ``kube.flow``; its pure steps are ``submission``):
  ``gather_job`` reads the tenant's queue list and the live Job; for a new job that asks
  for GPUs, the Queues and the Nodes (``supply_io``), so that rule job-never-runs refuses
  a job larger than its queue's capability or the GPU pool, then the Pods and the
  throttle; ``apply_job`` holds while the large-job throttle blocks the queue, creates
  the Job, engages the throttle for a large job that does not start, waits for Running;
  or deletes the Job. ``run`` is the flow's run.
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
from dataclasses import replace
from datetime import UTC, datetime
from time import monotonic, sleep
from typing import Any

from ansible.module_utils.common.warnings import warn

from ..common.errors import PartialWrite, Refused
from ..common.names import (
    JOB_API,
    JOB_FAILED_PHASES,
    JOB_STARTED_PHASES,
    PODGROUP_API,
    TENANT_QUEUES_CONFIGMAP,
    namespace_name,
)
from ..common.objects import strip_server_fields
from ..hybrid.federation_moves import BINDING_API, binding_name
from ..hybrid.federation_placement import POLICY_API
from ..kube.cluster import ApiException, Cluster, TransportError, api_error_message
from ..kube.flow import Flow
from ..kube.waiting import wait_for
from ..policy.admission import POLICY_LARGE_JOB_THROTTLE
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
from .submission import (
    JobPlan,
    RunSettings,
    SubmitFacts,
    SubmitRequest,
    base,
    facts_in,
    facts_out,
    job_diff,
    parse_job,
    plan_job,
    queue_refused,
    report_job,
    supply_of,
    throttle_refusal,
)
from .submit import (
    job_phase,
    never_runs_error,
    not_running_text,
    owned_podgroup,
    podgroup_summary,
    still_throttled_text,
)
from .supply_io import read_nodes, read_queues, unfinished_pods
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


def hold(cluster: Cluster, s: RunSettings, queue: str, priority_class: str, result: dict) -> None:
    """Wait while the throttle blocks the queue, reconciling the namespace each poll so that
    the throttle is released once its large job runs or times out; sets ``held_seconds``."""
    namespace = namespace_name(s.tenant)
    start = monotonic()
    # Not kubernetes.core's Waiter: each turn reconciles (and may write) the throttle.
    while True:
        _change, cm, _away = reconcile_namespace(
            cluster, namespace, s.tenant, now_utc(), s.throttle_timeout
        )
        if not blocks(cm, queue, priority_class):
            result["held_seconds"] = int(monotonic() - start)
            return
        if monotonic() - start >= s.hold_timeout:
            raise Refused(still_throttled_text(cm, queue, s.hold_timeout), **result)
        sleep(s.wait_sleep)


def create(cluster: Cluster, s: RunSettings, desired: dict, result: dict) -> dict:
    """Create the job; with hold_when_throttled, a denial by the throttle's admission policy
    (which may see the throttle before this module did) holds and tries again."""
    meta = desired["metadata"]
    while True:
        try:
            return cluster.create(desired)
        except ApiException as exc:
            if not (s.hold_when_throttled and throttle_denial(exc)):
                raise Refused(
                    f"creating job {meta['namespace']}/{meta['name']} failed: "
                    f"{api_error_message(exc)}",
                    **result,
                ) from exc
        held_before = result["held_seconds"]
        hold(cluster, s, desired["spec"]["queue"], desired["spec"]["priorityClassName"], result)
        result["held_seconds"] += held_before


def write_policy(cluster: Cluster, policy: dict[str, Any], result: dict) -> None:
    """The job's PropagationPolicy, by server-side apply."""
    meta = policy["metadata"]
    try:
        cluster.apply(policy)
    except ApiException as exc:
        raise Refused(
            f"writing PropagationPolicy {meta['namespace']}/{meta['name']} failed: "
            f"{api_error_message(exc)}",
            **result,
        ) from exc


def engage_unless_started(
    cluster: Cluster, s: RunSettings, desired: dict, created: dict, result: dict
) -> str:
    """A new large job that is not Running within throttle_grace engages the throttle for its
    queue (its GPUs: rule job-demand; what engaging gives: rule throttle-engage,
    ``throttle.engagement``). Returns the job's phase."""
    meta = desired["metadata"]
    phase, _live = wait_phase(
        cluster,
        meta["namespace"],
        meta["name"],
        s.throttle_grace,
        min(s.wait_sleep, GRACE_POLL_SECONDS),
    )
    if phase not in JOB_STARTED_PHASES:
        mine = f"{meta['namespace']}/{meta['name']}"
        uid = (created.get("metadata") or {}).get("uid")
        if not podgroup_created(cluster, meta["namespace"], uid, s.wait_sleep):
            change, away = podgroup_missing(mine, meta["namespace"], PODGROUP_WAIT_SECONDS)
        else:
            change, _cm, away = reconcile_namespace(
                cluster, meta["namespace"], s.tenant, now_utc(), s.throttle_timeout
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


def wait_running(cluster: Cluster, s: RunSettings, created: dict, result: dict) -> str:
    """wait: the job's phase once Running; when it is not in wait_timeout, refuse with its
    PodGroup's conditions (why the scheduler has not run it)."""
    meta = created["metadata"]
    namespace, name = meta["namespace"], meta["name"]
    phase, latest = wait_phase(cluster, namespace, name, s.wait_timeout, s.wait_sleep)
    if phase in JOB_STARTED_PHASES:
        return phase
    uid = ((latest or created).get("metadata") or {}).get("uid")
    podgroups = cluster.list(PODGROUP_API, "PodGroup", namespace=namespace)
    pg = podgroup_summary(owned_podgroup(podgroups, uid))
    raise Refused(
        not_running_text(namespace, name, phase, s.wait_timeout, pg),
        podgroup=pg,
        phase=phase,
        **result,
    )


def after_create(
    cluster: Cluster, s: RunSettings, desired: dict, created: dict, result: dict
) -> str:
    """Engage the throttle (a new large job) and wait (``wait``); returns the job's phase."""
    phase = job_phase(created)
    large = desired["spec"]["priorityClassName"] == LARGE_PRIORITY_CLASS
    if result["changed"] and large and s.engage_throttle:
        phase = engage_unless_started(cluster, s, desired, created, result)
    if s.wait:
        phase = wait_running(cluster, s, created, result)
    return phase


def gather_job(request: SubmitRequest, cluster: Cluster) -> SubmitFacts:
    """The Job (one GET); for a job present first the tenant's queue list (one GET), and
    for a new job what rule job-never-runs judges it by (``supply_io``: only what the job
    asks about), the unfinished Pods when it can run and asks for GPUs (rule
    job-waits-for), then the namespace's throttle. Nothing more is read once the plan
    refuses by what was read."""
    policy = read_policy(request, cluster)
    if not request.present:
        live = cluster.get(JOB_API, "Job", request.name, request.namespace)
        return SubmitFacts(live=live, policy=policy)
    # The tenant's own queue list, in its namespace: a tenant's identity can read it (it
    # cannot list the cluster's Queues), and the admission policies judge by the same list.
    queue_list = cluster.get("v1", "ConfigMap", TENANT_QUEUES_CONFIGMAP, request.namespace)
    if queue_refused(request, queue_list):
        return SubmitFacts(queue_list, policy=policy)
    live = cluster.get(JOB_API, "Job", request.name, request.namespace)
    gang = request.gang
    if live is not None or gang is None:
        binding = read_binding(request, cluster) if live is not None else None
        return SubmitFacts(queue_list, live, policy=policy, binding=binding)
    queues = read_queues(cluster, gang.queue) if gang.gpus > 0 else {}
    if request.federation:
        # The members' nodes, pods, claims and throttles are theirs: Karmada places the
        # job by the members' room (rule federation-placement).
        return SubmitFacts(queue_list, None, tuple(queues.values()), policy=policy)
    pvcs = (
        cluster.list("v1", "PersistentVolumeClaim", namespace=request.namespace)
        if gang.claims
        else None
    )
    nodes = read_nodes(cluster) if gang.gpus > 0 else None
    facts = SubmitFacts(queue_list, None, tuple(queues.values()), _tuple(pvcs), _tuple(nodes))
    supply, _members = supply_of(request, facts)
    if never_runs_error(request.job, gang, supply) is not None:
        return facts
    pods = unfinished_pods(cluster) if gang.gpus > 0 and supply.node_gpus is not None else None
    throttle = cluster.get("v1", "ConfigMap", CONFIGMAP, request.namespace)
    return replace(facts, pods=_tuple(pods), throttle=throttle)


def read_policy(request: SubmitRequest, cluster: Cluster) -> Mapping[str, Any] | None:
    """With federation, the job's PropagationPolicy (one GET); else None, unread."""
    if not request.federation:
        return None
    return cluster.get(POLICY_API, "PropagationPolicy", request.name, request.namespace)


def read_binding(request: SubmitRequest, cluster: Cluster) -> Mapping[str, Any] | None:
    """With federation, the ResourceBinding Karmada made for the job (one GET): where it
    placed it; else None, unread."""
    if not request.federation:
        return None
    return cluster.get(
        BINDING_API, "ResourceBinding", binding_name(request.name), request.namespace
    )


def _tuple(objects: list[dict[str, Any]] | None) -> tuple[dict[str, Any], ...] | None:
    return None if objects is None else tuple(objects)


def apply_job(
    request: SubmitRequest, planned: JobPlan, cluster: Cluster, check_mode: bool
) -> dict[str, Any]:
    """vcjob: the plan's submission (hold while throttled, create, then engage the throttle
    and wait as asked) or deletion."""
    if not request.present:
        return absent(request, planned, cluster, check_mode)
    if planned.waits is not None and request.gang is not None:
        warn(f"job {request.gang.ref} is accepted and waits: {planned.waits}")
    if planned.action == "throttled":
        raise throttle_refusal(request, planned)
    s, desired = request.settings, planned.desired or {}
    result = base(request, planned)
    live = planned.live
    if planned.policy_write and planned.policy is not None:
        # Before the Job: Karmada places a template as soon as a policy selects it, and
        # without its own policy another one (a namespace-wide one) could select it first.
        # In check mode, the API server's dry run.
        write_policy(cluster, planned.policy, result)
        result["changed"] = True
    if planned.action == "hold":
        if check_mode:
            warn(f"{planned.throttled}; the job would be held until then")
            return report_job(request, planned)
        hold(cluster, s, request.queue, desired["spec"]["priorityClassName"], result)
    if planned.action in ("hold", "create"):
        # In check mode this is the API server's dry run: Volcano's webhooks and the
        # admission policies judge the job and nothing is stored.
        created: Mapping[str, Any] | None = create(cluster, s, desired, result)
        result["changed"] = True
    else:
        created = live
    result["job"] = strip_server_fields(created) or desired
    phase = job_phase(created)
    if created is not None and not check_mode and not request.federation:
        try:
            phase = after_create(cluster, s, desired, created, result)
        except (ApiException, TransportError) as exc:
            if not result["changed"]:
                raise
            where = f"{request.namespace}/{request.name}"
            raise PartialWrite(
                f"submitting job {where}", [f"created Job {where}"], exc, **result
            ) from exc
    result["phase"] = phase
    result["diff"] = job_diff(request, planned, strip_server_fields(live) or {}, desired)
    return result


def absent(
    request: SubmitRequest, planned: JobPlan, cluster: Cluster, check_mode: bool
) -> dict[str, Any]:
    """state=absent: delete the job (in check mode, report the job that would be deleted)."""
    namespace, name, live = request.namespace, request.name, planned.live
    result = report_job(request, planned)
    deleted = True
    if live is None and planned.policy_live is None:
        return result
    if not check_mode:
        try:
            if live is not None:
                deleted = cluster.delete(JOB_API, "Job", name, namespace, propagation="Background")
            if planned.policy_live is not None:
                # After the Job: Karmada removes the job from its member when the template
                # goes, whichever policy placed it.
                cluster.delete(POLICY_API, "PropagationPolicy", name, namespace)
        except ApiException as exc:
            raise Refused(
                f"deleting job {namespace}/{name} failed: {api_error_message(exc)}"
            ) from exc
    result.update(changed=deleted, phase="Absent")
    if live is None:
        return result
    if deleted and not check_mode:
        result["throttle_released"] = release_throttle(cluster, request.settings, live)
    return result


def release_throttle(cluster: Cluster, s: RunSettings, live: Mapping[str, Any]) -> list[str]:
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
        cluster, namespace, s.tenant, now_utc(), s.throttle_timeout
    )
    after = set(throttled_queues(change.after))
    return sorted(set(throttled_queues(change.before)) - after)


# Module vcjob: one Volcano Job submitted or deleted.
JOB_FLOW: Flow[SubmitRequest, SubmitFacts, JobPlan] = Flow(
    parse=parse_job,
    gather=gather_job,
    plan=plan_job,
    apply=apply_job,
    report=report_job,
    facts_out=facts_out,
    facts_in=facts_in,
)


def run(params: dict[str, Any], cluster: Cluster, check_mode: bool) -> dict[str, Any]:
    """vcjob: submit (state present) or delete (state absent) one Volcano Job, through
    its flow (``JOB_FLOW``)."""
    return JOB_FLOW.run(params, cluster, check_mode)
