# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What ``vcjob`` submits and when it refuses, as pure rules.

* the options must make sense together before anything is read
  (``option_errors``, ``check_submission``);
* the manifest is built from a kind or completed from the caller's
  (``desired_job``): checked before connecting with the queue's type unknown, then built
  once with it (``job_for_queues``);
* rule leaf-queue-of-tenant: the queue is a leaf queue of the tenant
  (``queues/kinds.leaf_queue_type``);
* rule job-immutable: a Volcano Job cannot change once created, so a live job
  of that name must already be the desired one (``changed_fields``);
* what the module reports: the job's phase, its PodGroup's conditions, and the
  texts of its refusals.

The reading and writing (queues, the live job, the throttle, waiting) is
``service``'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.errors import FieldError, PlatformValidationError, raise_if
from ..common.names import dataset_claim
from ..common.objects import differs
from ..queues.kinds import leaf_queue_type
from .classes import JobClass, job_class_table
from .completion import complete_manifest
from .feasibility import Gang, Supply, at_most, never_runs
from .manifest import build_job
from .request import JobRequest
from .throttle import KEY_REASON, KEY_UNTIL

# The options of vcjob that go to the job builder as they are.
BUILD_KEYS = (
    "image",
    "command",
    "worker_command",
    "replicas",
    "ps_replicas",
    "gpus_per_pod",
    "cpu",
    "memory",
    "head_cpu",
    "head_memory",
    "rdma",
    "shm_size",
    "dataset_pvc",
    "dataset",
    "dataset_mount_path",
    "workspace_pvc",
    "workspace_mount_path",
    "env",
    "max_retry",
    "spot_price",
    "termination_grace_seconds",
    "checkpoint_command",
    "checkpoint",
    "max_gpus_per_node",
    "vgpu",
    "placement",
    "compliance",
    "compliance_zone",
    "prefetch",
    "service_account",
    "image_pull_secrets",
)
# The options a job built from ``kind`` takes and a caller's manifest says itself, in its
# task templates (rule pod-identity): refused with ``manifest``, never dropped unsaid.
POD_IDENTITY_KEYS = {
    "service_account": "serviceAccountName",
    "image_pull_secrets": "imagePullSecrets",
}
SECONDS_KEYS = ("wait_timeout", "hold_timeout", "throttle_grace", "throttle_timeout")
# Shown in the refusal of a live job that differs; the rest are counted, not named.
MAX_NAMED_FIELDS = 10


def job_name(p: Mapping[str, Any]) -> str:
    """The job's name: the option, else the manifest's."""
    return p["name"] or ((p["manifest"] or {}).get("metadata") or {}).get("name")


def option_errors(p: Mapping[str, Any]) -> list[FieldError]:
    """The options that do not make sense together, whatever the cluster holds."""
    errors = []
    if p["state"] == "present" and not p["kind"] and p["manifest"] is None:
        errors.append(FieldError("kind", "give kind (with its parameters) or manifest"))
    if p["state"] != "absent" and p["manifest"] is not None:
        for key, field in POD_IDENTITY_KEYS.items():
            if p.get(key):
                errors.append(
                    FieldError(
                        key,
                        f"applies to a job built from kind; with manifest, set {field} in the "
                        "pod template of each of its tasks",
                    )
                )
        if p.get("checkpoint"):
            errors.append(
                FieldError(
                    "checkpoint",
                    "applies to a job built from kind (rule checkpoint-convention); with "
                    "manifest, its claim, variables and containers are the manifest's to write",
                )
            )
    if p["state"] == "absent" and not job_name(p):
        errors.append(FieldError("name", "is required to delete a job"))
    for key in SECONDS_KEYS:
        if p[key] < 0:
            errors.append(FieldError(key, f"{p[key]} must be 0 or more seconds"))
    if p["wait_sleep"] < 1:
        errors.append(FieldError("wait_sleep", f"{p['wait_sleep']} must be at least 1 second"))
    return errors


def desired_job(
    p: Mapping[str, Any], table: Mapping[str, JobClass], queue_type: str | None
) -> dict[str, Any]:
    """The manifest to submit; raises PlatformValidationError naming every bad parameter.
    ``queue_type`` None (not read yet) lets the builder guess it from the queue's name."""
    if p["manifest"] is not None:
        manifest = dict(p["manifest"])
        meta = dict(manifest.get("metadata") or {})
        if p["name"]:
            meta["name"] = p["name"]
        manifest["metadata"] = meta
        if p["queue"]:
            manifest["spec"] = {**(manifest.get("spec") or {}), "queue": p["queue"]}
        return complete_manifest(
            manifest,
            p["tenant"],
            queue_type=queue_type,
            job_class=p["job_class"],
            spot_price=p["spot_price"],
            table=table,
            max_gpus_per_node=p["max_gpus_per_node"],
        )
    params = {k: p[k] for k in BUILD_KEYS}
    params.update(
        name=p["name"],
        tenant=p["tenant"],
        queue=p["queue"],
        kind=p["kind"],
        job_class=p["job_class"] or "normal",
        queue_type=queue_type,
    )
    return build_job(JobRequest.from_mapping(params), table)


def check_submission(p: Mapping[str, Any]) -> dict[str, Any] | None:
    """Every check that needs no cluster, before connecting: the options, the class table
    and (state present) the job itself; one PlatformValidationError names every problem.
    Returns the checked job (its queue's type not known yet; None: state absent)."""
    errors = option_errors(p)
    checked = None
    try:
        table = job_class_table(p["job_classes"])
        if p["state"] == "present" and not errors:
            checked = desired_job(p, table, None)
    except PlatformValidationError as exc:
        errors += exc.errors
    raise_if(errors)
    return checked


def demand_field(p: Mapping[str, Any]) -> str:
    """The option a job's GPU demand is refused under (rule job-fits): the manifest's
    tasks, else ``replicas`` for a job of several pods, else ``gpus_per_pod``."""
    if p["manifest"] is not None:
        return "manifest.spec.tasks"
    if (p.get("replicas") or 1) > 1:
        return "replicas"
    return "gpus_per_pod"


def claim_field(p: Mapping[str, Any], gang: Gang, supply: Supply) -> str | None:
    """The option a missing PVC is refused under (rule job-never-runs): ``dataset_pvc`` or
    ``workspace_pvc`` when it names it, else the manifest's tasks; None when every PVC
    the job mounts exists (or the PVCs were not read)."""
    if supply.claims is None:
        return None
    missing = [c for c in gang.claims if c not in supply.claims]
    if not missing:
        return None
    for option in ("dataset_pvc", "workspace_pvc"):
        if p.get(option) == missing[0]:
            return option
    dataset = p.get("dataset")
    if isinstance(dataset, Mapping) and missing[0] == dataset_claim(
        str(dataset.get("name")), str(dataset.get("version"))
    ):
        return "dataset"
    return "manifest.spec.tasks"


def never_runs_error(p: Mapping[str, Any], gang: Gang, supply: Supply) -> FieldError | None:
    """Rule job-never-runs for a job about to be created: the error naming the option
    (``claim_field``, else ``demand_field``, then with the most GPUs it can ask for), or
    None when it can run."""
    never = never_runs(gang, supply)
    if never is None:
        return None
    field = claim_field(p, gang, supply) or demand_field(p)
    limit = at_most(gang, supply)
    hint = f"; ask for at most {limit} GPUs" if field == demand_field(p) and limit else ""
    return FieldError(field, never + hint)


def queue_of(p: Mapping[str, Any]) -> str:
    """The job's queue as the options give it: ``queue``, else the manifest's (the builder
    keeps it as it is)."""
    return p.get("queue") or ((p.get("manifest") or {}).get("spec") or {}).get("queue") or ""


def queue_option(p: Mapping[str, Any]) -> str:
    """The option the job's queue came from, named when the queue is refused."""
    return "queue" if p.get("queue") else "manifest.spec.queue"


def job_for_queues(
    p: Mapping[str, Any], table: Mapping[str, JobClass], leaves: Mapping[str, str]
) -> tuple[dict[str, Any], str | None]:
    """The manifest to submit now that the tenant's leaf queues are known, built once with
    its queue's type, and that type; raises PlatformValidationError when the queue breaks
    leaf-queue-of-tenant or the job does not fit the queue's type."""
    queue_type, errors = leaf_queue_type(queue_of(p), leaves, p["tenant"], queue_option(p))
    desired: dict[str, Any] = {}
    if not errors:
        try:
            desired = desired_job(p, table, queue_type)
        except PlatformValidationError as exc:
            errors += exc.errors
    raise_if(errors)
    return desired, queue_type


def changed_fields(desired: Any, live: Any, path: str = "") -> list[str]:
    """Rule job-immutable: the dotted paths where ``live`` lacks or contradicts ``desired``
    (fields the server added are no difference). A Volcano Job cannot be changed, so any
    path is a refusal."""
    if isinstance(desired, dict) and isinstance(live, dict):
        out = []
        for k, v in desired.items():
            out += changed_fields(v, live.get(k), f"{path}.{k}" if path else k)
        return out
    return [path or "(root)"] if differs(desired, live) else []


def differs_text(namespace: str, name: str, fields: list[str]) -> str:
    return (
        f"job {namespace}/{name} exists and differs in {', '.join(fields[:MAX_NAMED_FIELDS])}; "
        "a Volcano Job cannot be changed: delete it (state: absent) or submit under another name"
    )


def job_phase(job: Mapping[str, Any] | None) -> str:
    """A job's ``status.state.phase``; a job without one (just created) is Pending."""
    return (((job or {}).get("status") or {}).get("state") or {}).get("phase") or "Pending"


def throttled_text(configmap: Mapping[str, Any] | None, queue: str) -> str:
    """Why a job below large-job is held, in the admission policy's own words."""
    data = (configmap or {}).get("data") or {}
    return (
        f"spec.queue: {queue} accepts no jobs below large-job until {data.get(KEY_UNTIL)} "
        f"because {data.get(KEY_REASON)}"
    )


def still_throttled_text(configmap: Mapping[str, Any] | None, queue: str, timeout: int) -> str:
    data = (configmap or {}).get("data") or {}
    return (
        f"queue {queue} was still throttled after {timeout} s (until {data.get(KEY_UNTIL)}: "
        f"{data.get(KEY_REASON)}); try again later or submit to another queue"
    )


def owned_podgroup(podgroups: list[Mapping[str, Any]], uid: str | None) -> Mapping[str, Any] | None:
    """The PodGroup whose ownerReferences name the job with ``uid``."""
    for pg in podgroups:
        for ref in (pg.get("metadata") or {}).get("ownerReferences") or []:
            if ref.get("uid") == uid:
                return pg
    return None


def podgroup_summary(pg: Mapping[str, Any] | None) -> dict[str, Any]:
    """A PodGroup's name, phase and conditions: why the scheduler has not run its job."""
    if not pg:
        return {}
    status = pg.get("status") or {}
    return {
        "name": pg["metadata"]["name"],
        "phase": status.get("phase"),
        "conditions": [
            {k: c.get(k) for k in ("type", "status", "reason", "message") if c.get(k) is not None}
            for c in status.get("conditions") or []
        ],
    }


def not_running_text(
    namespace: str, name: str, phase: str, timeout: int, pg: Mapping[str, Any]
) -> str:
    """The failure of a wait that timed out, with the PodGroup's conditions."""
    text = f"job {namespace}/{name} is {phase}, not Running, after {timeout} s"
    if not pg:
        return text + "; it has no PodGroup yet"
    detail = "; ".join(
        f"{c.get('type')}={c.get('status')}: {c.get('reason', '')} {c.get('message', '')}".strip()
        for c in pg.get("conditions", [])
    )
    return text + f"; PodGroup {pg['name']} is {pg['phase']}: {detail}"
