# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Volcano Job manifests from a kind of job and a few parameters. Pure: no I/O.

Every manifest is complete by itself (schedulerName, queue, priorityClassName,
minAvailable, named tasks, maxRetry, policies, plugins with their arguments spelled
out), so it means the same with or without Volcano's mutating webhook. The class
(``job_classes``) supplies the PriorityClass, network topology, size bounds and billing
type; the kind (``kinds``) the tasks and plugins.

``build_job(params)`` runs every rule of ``request_rules`` first and raises one
PlatformValidationError naming every bad parameter; ``completion.complete_manifest``
does the same for a manifest the caller wrote, with the labels, annotations and
fields made here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..common.errors import raise_if
from ..common.names import (
    ANNOTATION_PLACEMENT,
    ANNOTATION_SPOT_PRICE,
    JOB_API,
    LABEL_BILLING_TYPE,
    LABEL_JOB_CLASS,
    LABEL_MANAGED_BY,
    LABEL_TENANT,
    MANAGED_BY,
    PRIORITY_CLASSES,
    QUEUE_TYPE_PAYG,
    QUEUE_TYPE_SPOT,
    QUEUE_TYPE_SUBSCRIPTION,
    SLA_WAITING_ANNOTATION,
    namespace_name,
)
from ..common.quantity import GPU, RDMA
from ..hybrid.placement import (
    cloud_patterns,
    compliance_labels,
    effective_placement,
    placement_pod_spec,
)
from ..hybrid.vgpu import vgpu_resources
from ..policy.admission import PREEMPTABLE_ANNOTATION
from .checkpoints import CHECKPOINT_ENV_NAMES, checkpoint_pod
from .classes import DEFAULT_CLASSES, JobClass
from .kinds import Role, plugins, roles
from .request import JobRequest, job_placement
from .request_rules import request_errors
from .sla import duration_text
from .spot_price import price_text

KIND = "Job"
SCHEDULER = "volcano"
SHM_VOLUME = "shared-memory"
DATASET_VOLUME = "dataset"
WORKSPACE_VOLUME = "workspace"
# Restart the whole job when a pod is evicted (preempted, reclaimed) or fails:
# a gang job with one member gone only hangs. Bounded by maxRetry.
RESTART_POLICIES = (
    {"event": "PodEvicted", "action": "RestartJob"},
    {"event": "PodFailed", "action": "RestartJob"},
)


def guess_queue_type(queue: str) -> str:
    """The queue type by the naming convention (used only when the Queue's label is not known)."""
    if queue.endswith("-spot"):
        return QUEUE_TYPE_SPOT
    if queue.endswith("-payg"):
        return QUEUE_TYPE_PAYG
    return QUEUE_TYPE_SUBSCRIPTION


def job_labels(tenant: str, job_class: JobClass, billing_type: str) -> dict[str, str]:
    return {
        LABEL_TENANT: tenant,
        LABEL_MANAGED_BY: MANAGED_BY,
        LABEL_JOB_CLASS: job_class.name,
        LABEL_BILLING_TYPE: billing_type,
    }


def _resources(req: JobRequest, gpus: bool) -> dict[str, Any]:
    requests: dict[str, Any] = {
        "cpu": str(req.cpu if gpus else req.head_cpu),
        "memory": str(req.memory if gpus else req.head_memory),
    }
    limits: dict[str, Any] = {}
    if gpus and req.gpus_per_pod:
        requests[GPU] = limits[GPU] = req.gpus_per_pod
    if gpus and req.vgpu:
        shares = vgpu_resources(req.vgpu, req.max_gpus_per_node)
        requests.update(shares)
        limits.update(shares)
    if gpus and req.rdma:
        requests[RDMA] = limits[RDMA] = req.rdma
    out: dict[str, Any] = {"requests": requests}
    if limits:
        out["limits"] = limits
    return out


def _volumes(req: JobRequest) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    volumes: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    if req.dataset_claim:
        volumes.append(
            {
                "name": DATASET_VOLUME,
                "persistentVolumeClaim": {"claimName": req.dataset_claim, "readOnly": True},
            }
        )
        mounts.append(
            {"name": DATASET_VOLUME, "mountPath": req.dataset_mount_path, "readOnly": True}
        )
    if req.workspace_pvc:
        volumes.append(
            {"name": WORKSPACE_VOLUME, "persistentVolumeClaim": {"claimName": req.workspace_pvc}}
        )
        mounts.append({"name": WORKSPACE_VOLUME, "mountPath": req.workspace_mount_path})
    if req.shm_size is not None:
        volumes.append(
            {"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": str(req.shm_size)}}
        )
        mounts.append({"name": SHM_VOLUME, "mountPath": "/dev/shm"})
    return volumes, mounts


def _task(
    req: JobRequest,
    role: Role,
    job_class: JobClass,
    labels: dict[str, str],
    first_gpu_task: bool = False,
) -> dict[str, Any]:
    volumes, mounts = _volumes(req)
    placement = effective_placement(job_placement(req, job_class), req.compliance)
    cloud = cloud_patterns(placement, req.prefetch)
    volumes, mounts = volumes + cloud["volumes"], mounts + cloud["mounts"]
    init_containers = list(cloud["init_containers"])
    env = [{"name": k, "value": str(v)} for k, v in sorted(req.env.items())]
    if req.checkpoint is not None and role.gpus:
        ckpt = checkpoint_pod(req.tenant, req.name, req.checkpoint, first_gpu_task)
        volumes, mounts = volumes + ckpt["volumes"], mounts + ckpt["mounts"]
        # The platform's variables win over a same-named one of the caller's env.
        env = [e for e in env if e["name"] not in CHECKPOINT_ENV_NAMES] + ckpt["env"]
        init_containers += ckpt["init_containers"]
    container: dict[str, Any] = {"name": role.container, "image": req.image}
    if role.command:
        container["command"] = list(role.command)
    if env:
        container["env"] = env
    container["resources"] = _resources(req, role.gpus)
    if mounts:
        container["volumeMounts"] = mounts
    if req.checkpoint_command:
        container["lifecycle"] = {"preStop": {"exec": {"command": list(req.checkpoint_command)}}}
    pod_spec: dict[str, Any] = {"containers": [container], "restartPolicy": role.restart_policy}
    pod_spec.update(pod_identity(req.service_account, req.image_pull_secrets))
    if init_containers:
        pod_spec["initContainers"] = init_containers
    pod_spec.update(placement_pod_spec(placement, req.compliance, req.compliance_zone))
    grace = req.termination_grace_seconds
    if grace is None:
        grace = job_class.termination_grace_seconds
    if grace is None:
        grace = cloud["grace"]
    if grace is not None:
        pod_spec["terminationGracePeriodSeconds"] = grace
    if volumes:
        pod_spec["volumes"] = volumes
    metadata: dict[str, Any] = {"labels": dict(labels)}
    annotations = pod_annotations(job_class, class_annotations(job_class, req.spot_price))
    if annotations:
        metadata["annotations"] = annotations
    task: dict[str, Any] = {
        "name": role.task,
        "replicas": role.replicas,
        "template": {"metadata": metadata, "spec": pod_spec},
    }
    if role.policies:
        task["policies"] = [dict(p) for p in role.policies]
    return task


def pod_identity(
    service_account: str | None, image_pull_secrets: Sequence[str] | None
) -> dict[str, Any]:
    """The pod spec fields of rule pod-identity, each only when given: ``serviceAccountName``
    and ``imagePullSecrets`` (in the order given). A model service's predictor takes the
    same fields (rule inference-pod-identity)."""
    out: dict[str, Any] = {}
    if service_account:
        out["serviceAccountName"] = service_account
    if image_pull_secrets:
        out["imagePullSecrets"] = [{"name": name} for name in image_pull_secrets]
    return out


def build_job(
    params: Mapping[str, Any] | JobRequest, table: Mapping[str, JobClass] | None = None
) -> dict[str, Any]:
    """The complete Volcano Job for a kind, class and parameters; raises PlatformValidationError
    naming every bad parameter, before anything else happens."""
    table = table or DEFAULT_CLASSES
    req = params if isinstance(params, JobRequest) else JobRequest.from_mapping(params)
    raise_if(request_errors(req, table))
    job_class = table[req.job_class]
    queue_type = req.queue_type or guess_queue_type(req.queue)
    labels = job_labels(req.tenant, job_class, job_class.billing_for(queue_type))
    labels.update(compliance_labels(req.compliance))
    made = [r for r in roles(req) if r.replicas > 0]
    first_gpu = next((r for r in made if r.gpus), None)
    tasks = [_task(req, r, job_class, labels, r is first_gpu) for r in made]
    metadata: dict[str, Any] = {
        "name": req.name,
        "namespace": namespace_name(req.tenant),
        "labels": dict(labels),
    }
    annotations = class_annotations(job_class, req.spot_price)
    placement = effective_placement(job_placement(req, job_class), req.compliance)
    if placement:
        annotations[ANNOTATION_PLACEMENT] = placement
    if annotations:
        metadata["annotations"] = annotations
    spec: dict[str, Any] = {
        "schedulerName": SCHEDULER,
        "queue": req.queue,
        "priorityClassName": job_class.priority_class,
        "minAvailable": sum(t["replicas"] for t in tasks),
        "maxRetry": job_class.max_retry if req.max_retry is None else req.max_retry,
        "policies": [dict(p) for p in RESTART_POLICIES],
    }
    kind_plugins = plugins(req.kind)
    if kind_plugins:
        spec["plugins"] = kind_plugins
    if job_class.network_topology:
        spec["networkTopology"] = dict(job_class.network_topology)
    spec["tasks"] = tasks
    return {"apiVersion": JOB_API, "kind": KIND, "metadata": metadata, "spec": spec}


def pod_annotations(job_class: JobClass, job_annotations: Mapping[str, str]) -> dict[str, str]:
    """What every pod of the job carries: not preemptable for a class that is not, and
    (rule billing-labels) a spot job's bid, because metering reads pods, not Volcano
    Jobs (kube-state-metrics' kube_pod_annotations), as it reads the billing labels."""
    out = {}
    if not job_class.preemptable:
        out[PREEMPTABLE_ANNOTATION] = "false"
    if ANNOTATION_SPOT_PRICE in job_annotations:
        out[ANNOTATION_SPOT_PRICE] = job_annotations[ANNOTATION_SPOT_PRICE]
    return out


def class_annotations(job_class: JobClass, spot_price: Any = None) -> dict[str, str]:
    """The Volcano Job annotations a class gives: the spot price (spot) and the admission
    deadline (rule sla-wait-by-class, ``jobs/sla``)."""
    out: dict[str, str] = {}
    if job_class.billing_type == "spot":
        out[ANNOTATION_SPOT_PRICE] = price_text(spot_price)
    if job_class.sla_waiting_seconds is not None:
        out[SLA_WAITING_ANNOTATION] = duration_text(job_class.sla_waiting_seconds)
    return out


def class_of_priority(priority_class: str | None) -> int:
    """The value of a platform PriorityClass (0 when it is none of them)."""
    return PRIORITY_CLASSES.get(priority_class or "", (0, ""))[0]
