# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``vcjob`` through the flow contract (``kube.flow``), its pure steps: the
request, the facts as data and back, the plan and what it says (no I/O).

* ``parse``: every check that needs no cluster (``submit.check_submission``); for a job
  present, what the job's checks learn: its queue, its class and what it asks for (its
  gang, rule job-never-runs reads the cluster by it);
* ``plan``: the Job built once, with its queue's type (``submit.job_for_queues``); a live
  Job that differs refused (rule job-immutable); a new one refused when it can never run
  (rule job-never-runs), said when it waits (rule job-waits-for), held or refused while
  the large-job throttle blocks its queue; or the Job deleted.

The reads (``gather``) and the writes, holds and waits (``apply``) are ``service``'s.
Offline:

* ``gathered``: the tenant's queue list, the live Job and, for a new job, what rules
  job-never-runs and job-waits-for judge it by and the namespace's throttle;
* ``parsed``: the submission planned from what ``gathered`` returned, as ``state: present``.

There is no ``rendered``: the job's queue must be one of the cluster's.

With ``federation``, the run's API server is a Karmada federation's: the Job is the
resource template Karmada sends to one member, and the plan adds its PropagationPolicy
(rule federation-placement, read from the Job: ``hybrid/federation_placement``). Where it runs is
Karmada's decision by the members' room, so nothing about nodes, pods, claims or the
throttle is read (each member's own); ``wait`` is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from ..common.errors import FieldError, PlatformValidationError, Refused, raise_if
from ..common.names import (
    LABEL_JOB_CLASS,
    QUEUE_TYPE_SPOT,
    TENANT_QUEUES_CONFIGMAP,
    namespace_name,
)
from ..common.objects import differs, strip_server_fields
from ..hybrid.federation_moves import binding_name, bound_members, recorded_moves
from ..hybrid.federation_placement import federated_job_policy
from ..kube.flow import fact_lists
from ..queues.kinds import leaf_queue_type
from ..queues.ownership import listed_leaves
from .classes import JobClass, class_queue_errors, job_class_table
from .feasibility import Gang, free_from, gang_of, supply_from, waits_for
from .submit import (
    BUILD_KEYS,
    changed_fields,
    check_submission,
    differs_text,
    job_for_queues,
    job_name,
    job_phase,
    never_runs_error,
    queue_of,
    queue_option,
    throttled_text,
)
from .throttle import CONFIGMAP, blocks

# The options the Job is built from (``submit.desired_job``) and judged under.
JOB_KEYS = (*BUILD_KEYS, "name", "tenant", "queue", "kind", "job_class", "manifest")


@dataclass(frozen=True)
class RunSettings:
    """How the run holds, engages the throttle and waits (the options of those names)."""

    tenant: str
    wait: bool
    wait_timeout: int
    hold_when_throttled: bool
    hold_timeout: int
    engage_throttle: bool
    throttle_grace: int
    throttle_timeout: int
    wait_sleep: int


@dataclass(frozen=True)
class SubmitRequest:
    """One Volcano Job present (``job``: the options it is built from) or absent."""

    present: bool
    tenant: str
    namespace: str
    name: str
    settings: RunSettings
    job: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    table: Mapping[str, JobClass] = field(default_factory=lambda: MappingProxyType({}))
    queue: str = ""
    job_class: str = ""
    gang: Gang | None = None
    # The API server is a Karmada federation's: the Job goes with its PropagationPolicy.
    federation: bool = False


@dataclass(frozen=True)
class SubmitFacts:
    """What the run judges by: the tenant's queue list (ConfigMap), the live Job (None:
    none), and for a new job the Queues, the namespace's PVCs, the Nodes and the unfinished
    Pods (None: not read) and the namespace's throttle ConfigMap (None: none)."""

    queue_list: Mapping[str, Any] | None = None
    live: Mapping[str, Any] | None = None
    queues: tuple[Mapping[str, Any], ...] = ()
    pvcs: tuple[Mapping[str, Any], ...] | None = None
    nodes: tuple[Mapping[str, Any], ...] | None = None
    pods: tuple[Mapping[str, Any], ...] | None = None
    throttle: Mapping[str, Any] | None = None
    # With federation: the job's live PropagationPolicy (None: none), and for a job Karmada
    # already holds, its ResourceBinding (None: none, or not read).
    policy: Mapping[str, Any] | None = None
    binding: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class JobPlan:
    """``action``: create, hold (while throttled), throttled (refused), exists (the live
    Job is the desired one), delete or none."""

    action: str
    live: Mapping[str, Any] | None = None
    desired: dict[str, Any] | None = None
    queue_type: str | None = None
    waits: str | None = None
    throttled: str | None = None
    # With federation: the job's PropagationPolicy as it should be (``policy_write``: it
    # must be written, the live one lacks or contradicts it) and as it is (None: none).
    policy: dict[str, Any] | None = None
    policy_write: bool = False
    policy_live: Mapping[str, Any] | None = None
    # With federation, the job's ResourceBinding: where Karmada placed it.
    binding: Mapping[str, Any] | None = None


def parse_job(params: Mapping[str, Any]) -> SubmitRequest:
    """The options as a request; raises, naming every bad option, before connecting.
    ``gathered`` and ``parsed`` are checked as ``present``."""
    present = params["state"] != "absent"
    checked = {**params, "state": "present" if present else "absent"}
    checked_job = check_submission(checked)
    federation = bool(params.get("federation"))
    if federation and params["wait"]:
        raise_if(
            [
                FieldError(
                    "wait",
                    "is not taken with federation: the Job runs in the member Karmada picks; "
                    "its ResourceBinding says which",
                )
            ]
        )
    settings = RunSettings(
        tenant=params["tenant"],
        wait=params["wait"],
        wait_timeout=params["wait_timeout"],
        hold_when_throttled=params["hold_when_throttled"],
        hold_timeout=params["hold_timeout"],
        # A member's throttle is that member's: the federation engages none.
        engage_throttle=params["engage_throttle"] and not federation,
        throttle_grace=params["throttle_grace"],
        throttle_timeout=params["throttle_timeout"],
        wait_sleep=params["wait_sleep"],
    )
    namespace = namespace_name(params["tenant"])
    if checked_job is None:
        return SubmitRequest(
            False, params["tenant"], namespace, job_name(params), settings, federation=federation
        )
    # The checked job's queue's type is not known yet; what it asks for does not depend on
    # that type (only its billing label does), so it says what to read. The Job submitted
    # is built in the plan.
    return SubmitRequest(
        True,
        params["tenant"],
        namespace,
        checked_job["metadata"]["name"],
        settings,
        job=MappingProxyType({key: params[key] for key in JOB_KEYS}),
        table=MappingProxyType(dict(job_class_table(params["job_classes"]))),
        queue=queue_of(params),
        job_class=checked_job["metadata"]["labels"][LABEL_JOB_CLASS],
        gang=gang_of(checked_job),
        federation=federation,
    )


def queue_refused(request: SubmitRequest, queue_list: Mapping[str, Any] | None) -> bool:
    """The plan refuses by the tenant's queue list alone (rules leaf-queue-of-tenant and
    class-fits-queue): nothing more is read."""
    try:
        leaves = listed_leaves(queue_list, request.tenant)
    except PlatformValidationError:
        return True
    queue_type, errors = leaf_queue_type(
        request.queue, leaves, request.tenant, queue_option(request.job)
    )
    return bool(
        errors or class_queue_errors(request.table[request.job_class], request.queue, queue_type)
    )


def supply_of(request: SubmitRequest, facts: SubmitFacts) -> tuple[Any, list[str]]:
    """What rule job-never-runs judges the new job by (``feasibility.supply_from``)."""
    gang = request.gang or Gang("", request.queue, 0)
    queues = {q["metadata"]["name"]: q for q in facts.queues}
    return supply_from(gang, request.namespace, queues, facts.pvcs, facts.nodes)


def base(request: SubmitRequest, planned: JobPlan) -> dict[str, Any]:
    """The keys every answer for a job present starts with."""
    out: dict[str, Any] = {
        "changed": False,
        "queue": {"name": request.queue, "type": planned.queue_type},
        "held_seconds": 0,
        "throttle_engaged": False,
    }
    if planned.policy is not None:
        out["federation"] = federation_answer(planned.policy, planned.policy_write, planned.binding)
    return out


def federation_answer(
    policy: Mapping[str, Any], written: bool, binding: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """With federation: the job's PropagationPolicy, whether this run writes it, the
    placement Karmada is given, the member its binding names now (None: not placed, or a
    new job) and the members it was moved from (rule federation-moves-counted)."""
    meta = policy.get("metadata") or {}
    members = bound_members(binding)
    return {
        "policy": f"{meta.get('namespace')}/{meta.get('name')}",
        "policy_written": written,
        "placement": (policy.get("spec") or {}).get("placement"),
        "member": members[0] if len(members) == 1 else None,
        "moved_from": list(recorded_moves(policy).moved_from),
    }


def plan_job(request: SubmitRequest, facts: SubmitFacts) -> JobPlan:
    """The submission or the deletion; raises for a queue that is not one of the tenant's
    leaves, a job that does not fit it, a live Job that differs, or a new job that can
    never run."""
    live = facts.live
    if not request.present:
        return JobPlan("delete" if live is not None else "none", live, policy_live=facts.policy)
    leaves = listed_leaves(facts.queue_list, request.tenant)
    desired, queue_type = job_for_queues(request.job, request.table, leaves)
    policy = None
    if request.federation:
        spot = queue_type == QUEUE_TYPE_SPOT
        # the job's moves so far stay on its policy (rule federation-moves-counted)
        moves = recorded_moves(facts.policy)
        zone = request.job.get("compliance_zone")
        policy = federated_job_policy(desired, zone, spot, moves.count, moves.annotations())
    write = policy is not None and differs(policy, facts.policy)
    planned = JobPlan(
        "exists",
        live,
        desired,
        queue_type,
        policy=policy,
        policy_write=write,
        policy_live=facts.policy,
        binding=facts.binding,
    )
    if live is not None:
        diffs = changed_fields(desired, live)
        if diffs:
            raise Refused(
                differs_text(request.namespace, request.name, diffs),
                job=strip_server_fields(live),
                phase=job_phase(live),
                **base(request, planned),
            )
        return planned
    gang = request.gang or gang_of(desired)
    supply, members = supply_of(request, facts)
    never = never_runs_error(request.job, gang, supply)
    if never is not None:
        raise_if([never])
    waits = None
    if gang.gpus > 0:
        free = supply
        if supply.node_gpus is not None:
            free = free_from(supply, list(facts.pods or ()), members)
        waits = waits_for(gang, free)
    if blocks(facts.throttle, request.queue, desired["spec"]["priorityClassName"]):
        text = throttled_text(facts.throttle, request.queue)
        action = "hold" if request.settings.hold_when_throttled else "throttled"
        return replace(planned, action=action, waits=waits, throttled=text)
    return replace(planned, action="create", waits=waits)


def throttle_refusal(request: SubmitRequest, planned: JobPlan) -> Refused:
    """A job below large-job while the throttle lists its queue, without hold_when_throttled."""
    return Refused(
        f"{planned.throttled}; resubmit later, set hold_when_throttled, or use another queue",
        **base(request, planned),
    )


def report_job(request: SubmitRequest, planned: JobPlan) -> dict[str, Any]:
    """What the plan does, as a check-mode run says it; raises the throttle's refusal."""
    before = strip_server_fields(planned.live) or {}
    if not request.present:
        gone = planned.action == "delete" or planned.policy_live is not None
        return {
            "changed": gone,
            "job": before,
            "phase": "Absent",
            "diff": job_diff(request, planned, before, {}),
        }
    if planned.action == "throttled":
        raise throttle_refusal(request, planned)
    result = base(request, planned)
    if planned.action == "hold":
        return {**result, "changed": True, "job": planned.desired, "phase": "Held"}
    result["changed"] = planned.action == "create" or planned.policy_write
    result["job"] = before or planned.desired
    result["phase"] = job_phase(planned.live)
    result["diff"] = job_diff(request, planned, before, planned.desired or {})
    return result


def job_diff(
    request: SubmitRequest, planned: JobPlan, before: Mapping[str, Any], after: Mapping[str, Any]
) -> dict[str, Any] | list[dict[str, Any]]:
    """The Job's before and after; with federation, one entry per object, the Job's and its
    PropagationPolicy's (each headed ``Kind/namespace/name``)."""
    if not request.federation:
        return {"before": before, "after": after}
    where = f"{request.namespace}/{request.name}"
    policy_before = strip_server_fields(planned.policy_live) or {}
    policy_after = {} if not request.present else (planned.policy or {})
    return [
        {
            "before_header": f"Job/{where}",
            "after_header": f"Job/{where}",
            "before": before,
            "after": after,
        },
        {
            "before_header": f"PropagationPolicy/{where}",
            "after_header": f"PropagationPolicy/{where}",
            "before": policy_before,
            "after": policy_after,
        },
    ]


def facts_out(facts: SubmitFacts) -> dict[str, Any]:
    def listed(objects: tuple[Mapping[str, Any], ...] | None) -> list[Any] | None:
        return None if objects is None else [dict(o) for o in objects]

    return {
        "configmaps": [dict(c) for c in (facts.queue_list, facts.throttle) if c is not None],
        "jobs": [] if facts.live is None else [dict(facts.live)],
        "propagationpolicies": [] if facts.policy is None else [dict(facts.policy)],
        "resourcebindings": [] if facts.binding is None else [dict(facts.binding)],
        "queues": [dict(q) for q in facts.queues],
        "persistentvolumeclaims": listed(facts.pvcs),
        "nodes": listed(facts.nodes),
        "pods": listed(facts.pods),
    }


def facts_in(request: SubmitRequest, data: Mapping[str, Any]) -> SubmitFacts:
    """Facts given as ``gathered`` returned them (``persistentvolumeclaims``, ``nodes``,
    ``pods`` null: not read)."""
    configmaps, jobs, queues, policies = fact_lists(
        data, "configmaps", "jobs", "queues", "propagationpolicies"
    )
    bindings = fact_lists(data, "resourcebindings")[0] if data.get("resourcebindings") else ()

    def named(objects: tuple[Any, ...], name: str) -> Mapping[str, Any] | None:
        return next((o for o in objects if (o.get("metadata") or {}).get("name") == name), None)

    def read(key: str) -> tuple[Any, ...] | None:
        return None if data.get(key) is None else fact_lists(data, key)[0]

    return SubmitFacts(
        queue_list=named(configmaps, TENANT_QUEUES_CONFIGMAP),
        live=named(jobs, request.name),
        queues=queues,
        pvcs=read("persistentvolumeclaims"),
        nodes=read("nodes"),
        pods=read("pods"),
        throttle=named(configmaps, CONFIGMAP),
        policy=named(policies, request.name),
        binding=named(bindings, binding_name(request.name)),
    )
