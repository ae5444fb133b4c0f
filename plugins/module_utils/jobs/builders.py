# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Volcano Job manifests from a kind of job and a few parameters.

Kinds (design section 9): ``pytorch_ddp``, ``ps_worker``, ``mpi``, ``spark``,
``ray``, ``single``. Every manifest is complete by itself (schedulerName,
queue, priorityClassName, minAvailable, named tasks, maxRetry, policies,
plugins with their arguments spelled out), so it means the same with or
without Volcano's mutating webhook. The class (``job_classes``) supplies the
PriorityClass, network topology, size bounds and billing type.

``build_job(params)`` validates everything first and raises one
PlatformValidationError naming every bad parameter; ``complete_manifest``
does the same for a manifest the caller wrote.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from decimal import Decimal, InvalidOperation
from typing import Any

from ..common.errors import FieldError, PlatformValidationError, raise_if
from ..common.names import (
    ANNOTATION_PLACEMENT,
    ANNOTATION_SPOT_PRICE,
    JOB_API,
    JOB_CLASSES,
    LABEL_BILLING_TYPE,
    LABEL_JOB_CLASS,
    LABEL_MANAGED_BY,
    LABEL_TENANT,
    MANAGED_BY,
    PRIORITY_CLASSES,
    QUEUE_TYPE_PAYG,
    QUEUE_TYPE_SPOT,
    QUEUE_TYPE_SUBSCRIPTION,
    SPOT_PRICE_DECIMALS,
    SPOT_PRICE_LIMIT,
    dns_label_errors,
    is_dns_subdomain,
    namespace_name,
    tenant_name_errors,
)
from ..common.quantity import GPU, RDMA, parse
from ..hybrid.placement import (
    CLOUD_PLACEMENTS,
    cloud_patterns,
    compliance_labels,
    effective_placement,
    placement_errors,
    placement_pod_spec,
    prefetch_errors,
)
from ..hybrid.vgpu import (
    MAX_VGPU_NUMBER,
    vgpu_conflict_errors,
    vgpu_request_errors,
    vgpu_resources,
)
from ..policy.admission import PREEMPTABLE_ANNOTATION
from ..queues.kinds import queue_name_errors
from .classes import DEFAULT_CLASSES, JobClass, class_queue_errors
from .demand import job_demand, pod_demand
from .sla import SLA_WAITING_ANNOTATION, SLA_WAITING_ANNOTATIONS, duration_text, parse_duration

KIND = "Job"
SCHEDULER = "volcano"
KINDS = ("pytorch_ddp", "ps_worker", "mpi", "spark", "ray", "single")
# Volcano's svc plugin writes one "<task>.host" file per task here.
HOSTFILE_DIR = "/etc/volcano"
SHM_VOLUME = "shared-memory"
DATASET_VOLUME = "dataset"
WORKSPACE_VOLUME = "workspace"
PYTORCH_PORT = 23456
TF_PORT = 2222
SSH_PORT = 22
RAY_PORTS = {"port": 6379, "dashboardPort": 8265, "clientPort": 10001}
# Restart the whole job when a pod is evicted (preempted, reclaimed) or fails:
# a gang job with one member gone only hangs. Bounded by maxRetry.
RESTART_POLICIES = (
    {"event": "PodEvicted", "action": "RestartJob"},
    {"event": "PodFailed", "action": "RestartJob"},
)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


@dataclass
class JobRequest:
    """What a caller may say about a job; everything else follows from the kind and class.

    ``replicas`` counts the GPU pods: the nodes of a pytorch_ddp job (master
    plus workers), the workers of ps_worker, mpi and ray, the executors of
    spark; a single job has exactly one. The coordinating pod (ps, mpi
    master, spark driver, ray head) gets ``head_cpu``/``head_memory`` and no
    GPUs.
    """

    name: str
    tenant: str
    queue: str
    kind: str
    job_class: str = "normal"
    image: str = ""
    queue_type: str | None = None
    command: list[str] | None = None
    worker_command: list[str] | None = None
    replicas: int = 1
    ps_replicas: int = 1
    gpus_per_pod: int = 0
    cpu: Any = "4"
    memory: Any = "16Gi"
    head_cpu: Any = "4"
    head_memory: Any = "16Gi"
    rdma: int = 0
    shm_size: Any = None
    dataset_pvc: str | None = None
    dataset_mount_path: str = "/data"
    workspace_pvc: str | None = None
    workspace_mount_path: str = "/workspace"
    env: dict[str, str] = field(default_factory=dict)
    max_retry: int | None = None
    spot_price: Any = None
    termination_grace_seconds: int | None = None
    checkpoint_command: list[str] | None = None
    max_gpus_per_node: int = 8
    vgpu: dict[str, Any] | None = None
    placement: str | None = None
    compliance: bool = False
    compliance_zone: str | None = None
    prefetch: dict[str, Any] | None = None

    @classmethod
    def from_mapping(cls, params: Mapping[str, Any]) -> JobRequest:
        """Build from a mapping; unknown keys and missing required ones are refused by name.
        Keys whose value is None take the default."""
        known = {f.name for f in fields(cls)}
        errors = [
            FieldError(k, f"unknown parameter; the parameters are {', '.join(sorted(known))}")
            for k in sorted(set(params) - known)
        ]
        for required in ("name", "tenant", "queue", "kind"):
            if params.get(required) in (None, ""):
                errors.append(FieldError(required, "is required"))
        raise_if(errors)
        return cls(**{k: v for k, v in params.items() if v is not None})


@dataclass(frozen=True)
class Role:
    """One task of a kind: its name, pod count, container name, whether it gets GPUs."""

    task: str
    replicas: int
    container: str
    gpus: bool
    command: list[str] | None
    restart_policy: str = "Never"
    policies: tuple[dict[str, str], ...] = ()


def _int_errors(
    name: str, value: Any, minimum: int, maximum: int | None = None, why: str = ""
) -> list[FieldError]:
    if isinstance(value, bool) or not isinstance(value, int):
        return [FieldError(name, f"{value!r} must be a whole number")]
    if value < minimum or (maximum is not None and value > maximum):
        bound = f">= {minimum}" if maximum is None else f"between {minimum} and {maximum}"
        return [FieldError(name, f"{value} must be {bound}{why}")]
    return []


def _quantity_errors(name: str, value: Any, positive: bool = True) -> list[FieldError]:
    try:
        number = parse(value, name)
    except PlatformValidationError as exc:
        return exc.errors
    if positive and number == 0:
        return [FieldError(name, f"{value!r} must be more than 0")]
    return []


def _command_errors(name: str, value: Any) -> list[FieldError]:
    if value is None:
        return []
    if (
        not isinstance(value, list | tuple)
        or not value
        or not all(isinstance(x, str) for x in value)
    ):
        return [
            FieldError(
                name, f"{value!r} must be a non-empty list of strings (program and arguments)"
            )
        ]
    return []


def spot_price_errors(value: Any, field_name: str = "spot_price") -> list[FieldError]:
    """Rule spot-price: a spot job carries a finite decimal price per GPU-hour greater than 0
    and below SPOT_PRICE_LIMIT, with at most SPOT_PRICE_DECIMALS decimal places (the bounds
    the admission policy's pattern holds every spot Job to, so a price the module accepts is
    never refused by the API server, and every consumer compares plain numbers)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return [
            FieldError(
                field_name,
                "a spot job needs its price per GPU-hour (for example '0.3'); the platform reclaims the "
                "cheapest spot jobs first",
            )
        ]
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        return [
            FieldError(field_name, f"{value!r} is not a number; give a decimal price such as '0.3'")
        ]
    if isinstance(value, bool) or not number.is_finite() or number <= 0:
        return [
            FieldError(
                field_name, f"{value!r} must be a decimal price greater than 0, such as '0.3'"
            )
        ]
    if number >= SPOT_PRICE_LIMIT:
        return [
            FieldError(
                field_name,
                f"{value!r} is too large; a spot price must be below {SPOT_PRICE_LIMIT} per "
                "GPU-hour",
            )
        ]
    exponent = number.normalize().as_tuple().exponent
    if isinstance(exponent, int) and -exponent > SPOT_PRICE_DECIMALS:
        return [
            FieldError(
                field_name,
                f"{value!r} has more than {SPOT_PRICE_DECIMALS} decimal places; round it to "
                f"at most {SPOT_PRICE_DECIMALS}",
            )
        ]
    return []


def price_text(value: Any) -> str:
    """The annotation value of a valid price: a plain decimal string."""
    return format(Decimal(str(value).strip()).normalize(), "f")


def guess_queue_type(queue: str) -> str:
    """The queue type by the naming convention (used only when the Queue's label is not known)."""
    if queue.endswith("-spot"):
        return QUEUE_TYPE_SPOT
    if queue.endswith("-payg"):
        return QUEUE_TYPE_PAYG
    return QUEUE_TYPE_SUBSCRIPTION


def roles(req: JobRequest) -> list[Role]:
    """Rule job-kinds: the tasks of each kind (design section 9), coordinator first."""
    gpus = max(req.gpus_per_pod, 1)
    cmd = list(req.command) if req.command else None
    wcmd = list(req.worker_command) if req.worker_command else None
    if req.kind == "pytorch_ddp":
        torchrun = [
            "torchrun",
            "--nnodes=$(WORLD_SIZE)",
            "--node_rank=$(RANK)",
            f"--nproc_per_node={gpus}",
            "--master_addr=$(MASTER_ADDR)",
            "--master_port=$(MASTER_PORT)",
            *(cmd or []),
        ]
        return [
            Role("master", 1, "trainer", True, torchrun),
            Role("worker", req.replicas - 1, "trainer", True, torchrun),
        ]
    if req.kind == "ps_worker":
        return [
            Role("ps", req.ps_replicas, "ps", False, cmd),
            Role("worker", req.replicas, "worker", True, wcmd or cmd),
        ]
    if req.kind == "mpi":
        mpirun = [
            "mpirun",
            "--allow-run-as-root",
            "--hostfile",
            f"{HOSTFILE_DIR}/worker.host",
            "-np",
            str(req.replicas * gpus),
            "-npernode",
            str(gpus),
            *(cmd or []),
        ]
        return [
            Role(
                "master",
                1,
                "mpi",
                False,
                mpirun,
                "OnFailure",
                ({"event": "TaskCompleted", "action": "CompleteJob"},),
            ),
            Role("worker", req.replicas, "mpi", True, wcmd or ["/usr/sbin/sshd", "-D"]),
        ]
    if req.kind == "spark":
        return [
            Role(
                "driver",
                1,
                "spark-driver",
                False,
                cmd,
                "Never",
                ({"event": "TaskCompleted", "action": "CompleteJob"},),
            ),
            Role("executor", req.replicas, "spark-executor", True, wcmd),
        ]
    if req.kind == "ray":
        # Volcano's ray plugin writes both commands (ray start --head / --address).
        return [
            Role("head", 1, "head", False, None),
            Role("worker", req.replicas, "worker", True, None),
        ]
    return [Role("task", 1, "trainer", True, cmd, "OnFailure")]


def plugins(kind: str) -> dict[str, list[str]]:
    """Rule job-plugins: Volcano job plugins per kind, with their arguments written out."""
    if kind == "pytorch_ddp":
        return {
            "pytorch": ["--master=master", "--worker=worker", f"--port={PYTORCH_PORT}"],
            "svc": [],
            "env": [],
        }
    if kind == "ps_worker":
        return {
            "tensorflow": ["--ps=ps", "--worker=worker", f"--port={TF_PORT}"],
            "svc": [],
            "env": [],
        }
    if kind == "mpi":
        return {
            "mpi": ["--master=master", "--worker=worker", f"--port={SSH_PORT}"],
            "ssh": [],
            "svc": [],
            "env": [],
        }
    if kind == "spark":
        return {"svc": [], "env": []}
    if kind == "ray":
        args = [
            "--head=head",
            "--headContainer=head",
            "--worker=worker",
            "--workerContainer=worker",
        ]
        args += [f"--{k}={v}" for k, v in RAY_PORTS.items()]
        return {"ray": args, "svc": []}
    return {}


def gpu_pods(req: JobRequest) -> int:
    return sum(r.replicas for r in roles(req) if r.gpus)


def _pod_name_room(req: JobRequest) -> int:
    """Pods are named <job>-<task>-<index> and that name is also the pod's host name (63 characters)."""
    longest = max((len(f"-{r.task}-{max(r.replicas - 1, 0)}") for r in roles(req)), default=0)
    return 63 - longest


def request_errors(
    req: JobRequest, table: Mapping[str, JobClass] | None = None
) -> list[FieldError]:
    """Every rule a job request must meet, collected (nothing is built while one is broken)."""
    table = table or DEFAULT_CLASSES
    errors: list[FieldError] = []
    errors += tenant_name_errors(req.tenant, "tenant")
    if isinstance(req.tenant, str):
        errors += queue_name_errors("queue", req.queue, req.tenant)
    kind_ok = req.kind in KINDS
    if not kind_ok:
        errors.append(
            FieldError("kind", f"{req.kind!r} is not a kind of job; use one of {', '.join(KINDS)}")
        )
    job_class = table.get(req.job_class) if isinstance(req.job_class, str) else None
    if job_class is None:
        errors.append(
            FieldError(
                "job_class",
                f"{req.job_class!r} is not a job class; use one of {', '.join(JOB_CLASSES)}",
            )
        )
    if not isinstance(req.image, str) or not req.image.strip():
        errors.append(
            FieldError(
                "image",
                "is required: the container image to run, e.g. registry.example.com/train:v1",
            )
        )
    errors += _int_errors("max_gpus_per_node", req.max_gpus_per_node, 1)
    counts_ok = True
    for name, value in (("replicas", req.replicas), ("ps_replicas", req.ps_replicas)):
        errs = _int_errors(name, value, 1, why=" (a job needs at least one pod of each task)")
        counts_ok = counts_ok and not errs
        if name == "replicas" or req.kind == "ps_worker":
            errors += errs
    if req.kind == "single" and counts_ok and req.replicas != 1:
        errors.append(
            FieldError(
                "replicas",
                f"{req.replicas}: a single job is one pod; set replicas: 1, or use pytorch_ddp",
            )
        )
    max_node = (
        req.max_gpus_per_node
        if isinstance(req.max_gpus_per_node, int) and req.max_gpus_per_node > 0
        else None
    )
    gpu_errs = _int_errors(
        "gpus_per_pod",
        req.gpus_per_pod,
        0,
        max_node,
        why=f" (a pod runs on one node and the largest node has {max_node} GPUs)"
        if max_node
        else "",
    )
    errors += gpu_errs
    errors += vgpu_request_errors("vgpu", req.vgpu, max_node or MAX_VGPU_NUMBER)
    errors += vgpu_conflict_errors("vgpu", req.gpus_per_pod, req.vgpu)
    errors += _int_errors("rdma", req.rdma, 0)
    for name in ("cpu", "memory", "head_cpu", "head_memory"):
        errors += _quantity_errors(name, getattr(req, name))
    if req.shm_size is not None:
        errors += _quantity_errors("shm_size", req.shm_size)
    for name in ("dataset_pvc", "workspace_pvc"):
        value = getattr(req, name)
        if value is not None and not is_dns_subdomain(value):
            errors.append(
                FieldError(
                    name, f"{value!r} is not a PersistentVolumeClaim name (a DNS-1123 subdomain)"
                )
            )
    mounts = {}
    for name in ("dataset_mount_path", "workspace_mount_path"):
        value = getattr(req, name)
        if (
            not isinstance(value, str)
            or not value.startswith("/")
            or value.rstrip("/") in ("", "/dev/shm")
        ):
            errors.append(
                FieldError(name, f"{value!r} must be an absolute path other than / and /dev/shm")
            )
        mounts[name] = value
    if (
        req.dataset_pvc
        and req.workspace_pvc
        and mounts["dataset_mount_path"] == mounts["workspace_mount_path"]
    ):
        errors.append(
            FieldError(
                "workspace_mount_path",
                f"{mounts['workspace_mount_path']!r} is also the dataset mount path",
            )
        )
    for name in ("command", "worker_command", "checkpoint_command"):
        errors += _command_errors(name, getattr(req, name))
    if req.kind in ("pytorch_ddp", "mpi") and not req.command:
        what = (
            "the training script and its arguments, run under torchrun"
            if req.kind == "pytorch_ddp"
            else "the program mpirun starts"
        )
        errors.append(FieldError("command", f"is required for kind {req.kind}: {what}"))
    if req.kind == "ray":
        for name in ("command", "worker_command"):
            if getattr(req, name):
                errors.append(
                    FieldError(
                        name,
                        "kind ray takes no command: Volcano's ray plugin starts the head and workers (ray start); "
                        "submit work with 'ray job submit' to <job>-head-svc:8265",
                    )
                )
    if req.kind in ("single", "pytorch_ddp") and req.worker_command:
        errors.append(
            FieldError(
                "worker_command", f"kind {req.kind} runs one command in every pod; use command"
            )
        )
    if not isinstance(req.env, Mapping):
        errors.append(FieldError("env", f"{req.env!r} must be a mapping of variable name to value"))
    else:
        for key, value in req.env.items():
            if not isinstance(key, str) or not _ENV_NAME.match(key):
                errors.append(FieldError(f"env.{key}", "is not a valid environment variable name"))
            elif not isinstance(value, str | int | float) or isinstance(value, bool):
                errors.append(FieldError(f"env.{key}", f"{value!r} must be a string"))
    if req.max_retry is not None:
        errors += _int_errors("max_retry", req.max_retry, 0)
    if req.termination_grace_seconds is not None:
        errors += _int_errors("termination_grace_seconds", req.termination_grace_seconds, 0)
    placement = job_placement(req, job_class)
    errors += placement_errors(
        placement, req.compliance, req.compliance_zone, req.checkpoint_command
    )
    errors += prefetch_errors(req.prefetch)
    if req.prefetch is not None and placement not in CLOUD_PLACEMENTS:
        errors.append(
            FieldError(
                "prefetch",
                f"copies data onto a cloud node; placement {placement!r} never runs on one",
            )
        )
    if kind_ok and counts_ok and isinstance(req.name, str):
        errors += dns_label_errors("name", req.name, max(_pod_name_room(req), 1))
    elif not isinstance(req.name, str):
        errors += dns_label_errors("name", req.name)
    if job_class is not None:
        if job_class.billing_type == "spot":
            errors += spot_price_errors(req.spot_price)
        elif req.spot_price is not None:
            errors.append(
                FieldError(
                    "spot_price",
                    f"class {job_class.name} is not billed as spot; leave spot_price out or use class spot",
                )
            )
        if req.queue_type is not None and isinstance(req.queue, str):
            errors += class_queue_errors(job_class, req.queue, req.queue_type)
        if kind_ok and counts_ok and not gpu_errs:
            errors += class_size_errors(job_class, roles(req), req.gpus_per_pod)
    return errors


def job_placement(req: JobRequest, job_class: JobClass | None) -> str | None:
    """The job's placement: its own, else its class's (``JobClass.placement``)."""
    if req.placement is not None:
        return req.placement
    return job_class.placement if job_class is not None else None


def class_size_errors(
    job_class: JobClass, job_roles: list[Role], gpus_per_pod: int
) -> list[FieldError]:
    """Rule class-size: the class's GPU bounds and single-node rule (debug: one pod, at most 8 GPUs;
    large: 32 GPUs or more)."""
    pods = sum(r.replicas for r in job_roles)
    gpus = sum(r.replicas for r in job_roles if r.gpus) * gpus_per_pod
    errors = []
    if not job_class.multi_node and pods > 1:
        errors.append(
            FieldError(
                "replicas",
                f"class {job_class.name} runs on a single node but this job has {pods} pods with {gpus} GPUs; "
                "use kind single with replicas: 1, or class normal for a multi-node job",
            )
        )
    if job_class.max_gpus is not None and gpus > job_class.max_gpus:
        errors.append(
            FieldError(
                "gpus_per_pod",
                f"the job asks for {gpus} GPUs and class {job_class.name} allows at most {job_class.max_gpus}; "
                "ask for fewer, or use class normal",
            )
        )
    if job_class.min_gpus is not None and gpus < job_class.min_gpus:
        errors.append(
            FieldError(
                "gpus_per_pod",
                f"the job asks for {gpus} GPUs and class {job_class.name} is for jobs of {job_class.min_gpus} GPUs "
                "or more; use class normal",
            )
        )
    return errors


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
    if req.dataset_pvc:
        volumes.append(
            {
                "name": DATASET_VOLUME,
                "persistentVolumeClaim": {"claimName": req.dataset_pvc, "readOnly": True},
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
    req: JobRequest, role: Role, job_class: JobClass, labels: dict[str, str]
) -> dict[str, Any]:
    volumes, mounts = _volumes(req)
    placement = effective_placement(job_placement(req, job_class), req.compliance)
    cloud = cloud_patterns(placement, req.prefetch)
    volumes, mounts = volumes + cloud["volumes"], mounts + cloud["mounts"]
    container: dict[str, Any] = {"name": role.container, "image": req.image}
    if role.command:
        container["command"] = list(role.command)
    if req.env:
        container["env"] = [{"name": k, "value": str(v)} for k, v in sorted(req.env.items())]
    container["resources"] = _resources(req, role.gpus)
    if mounts:
        container["volumeMounts"] = mounts
    if req.checkpoint_command:
        container["lifecycle"] = {"preStop": {"exec": {"command": list(req.checkpoint_command)}}}
    pod_spec: dict[str, Any] = {"containers": [container], "restartPolicy": role.restart_policy}
    if cloud["init_containers"]:
        pod_spec["initContainers"] = cloud["init_containers"]
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
    tasks = [_task(req, r, job_class, labels) for r in roles(req) if r.replicas > 0]
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


def sla_annotation_errors(annotations: Mapping[str, Any], job_class: JobClass) -> list[FieldError]:
    """Rule sla-wait-by-class, for a caller's manifest: a class without a waiting time (debug,
    spot) carries none, and a waiting time set by hand is one Volcano can read."""
    errors = []
    for key in SLA_WAITING_ANNOTATIONS:
        if key not in annotations:
            continue
        field = f"manifest.metadata.annotations.{key}"
        if job_class.sla_waiting_seconds is None:
            errors.append(
                FieldError(
                    field,
                    f"{annotations[key]!r}: class {job_class.name} is never admitted past its queue's "
                    "capability (it takes GPUs from nobody); remove the annotation",
                )
            )
        elif parse_duration(annotations[key]) is None:
            errors.append(
                FieldError(
                    field,
                    f"{annotations[key]!r} is not a duration above zero Volcano reads (e.g. '30s', '2m')",
                )
            )
    return errors


def _class_of_manifest(
    manifest: Mapping[str, Any], job_class: str | None, table: Mapping[str, JobClass]
) -> tuple[str | None, list[FieldError]]:
    labels = (manifest.get("metadata") or {}).get("labels") or {}
    labelled = labels.get(LABEL_JOB_CLASS)
    pc = (manifest.get("spec") or {}).get("priorityClassName")
    if job_class and labelled and labelled != job_class:
        return None, [
            FieldError(
                f"manifest.metadata.labels.{LABEL_JOB_CLASS}",
                f"{labelled!r} contradicts job_class {job_class!r}",
            )
        ]
    name = job_class or labelled
    if name is None and pc:
        by_pc = [n for n, c in table.items() if c.priority_class == pc]
        if len(by_pc) == 1:
            name = by_pc[0]
    if name is None:
        return None, [
            FieldError(
                "job_class",
                "is required: give job_class or the manifest's platform.io/job-class label",
            )
        ]
    if name not in table:
        return None, [
            FieldError(
                "job_class", f"{name!r} is not a job class; use one of {', '.join(JOB_CLASSES)}"
            )
        ]
    return name, []


def complete_manifest(
    manifest: Mapping[str, Any],
    tenant: str,
    queue_type: str | None = None,
    job_class: str | None = None,
    spot_price: Any = None,
    table: Mapping[str, JobClass] | None = None,
    max_gpus_per_node: int = 8,
) -> dict[str, Any]:
    """A caller's Volcano Job with the platform's fields filled in and checked: namespace, labels,
    schedulerName, priorityClassName, networkTopology, maxRetry, minAvailable, policies, the
    spot price and (critical) the non-preemptable mark. A field the caller set to something the
    class forbids is refused, naming it."""
    table = table or DEFAULT_CLASSES
    errors: list[FieldError] = list(tenant_name_errors(tenant, "tenant"))
    if not isinstance(manifest, Mapping):
        raise PlatformValidationError([FieldError("manifest", "must be a Volcano Job (a mapping)")])
    out = copy.deepcopy(dict(manifest))
    if out.get("apiVersion") != JOB_API or out.get("kind") != KIND:
        errors.append(
            FieldError(
                "manifest",
                f"must be apiVersion {JOB_API}, kind {KIND}; got {out.get('apiVersion')!r}, {out.get('kind')!r}",
            )
        )
    meta = out.setdefault("metadata", {})
    spec = out.setdefault("spec", {})
    if not isinstance(meta, dict) or not isinstance(spec, dict):
        raise_if([*errors, FieldError("manifest", "metadata and spec must be mappings")])
    errors += dns_label_errors("manifest.metadata.name", meta.get("name"))
    ns = namespace_name(tenant) if isinstance(tenant, str) else None
    if meta.get("namespace") not in (None, ns):
        errors.append(
            FieldError(
                "manifest.metadata.namespace",
                f"{meta['namespace']!r} is not tenant {tenant}'s namespace {ns}",
            )
        )
    queue = spec.get("queue")
    if isinstance(tenant, str):
        errors += queue_name_errors("manifest.spec.queue", queue, tenant)
    if spec.get("schedulerName") not in (None, SCHEDULER):
        errors.append(
            FieldError(
                "manifest.spec.schedulerName",
                f"{spec['schedulerName']!r}: jobs are scheduled by {SCHEDULER}",
            )
        )
    tasks = spec.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        errors.append(FieldError("manifest.spec.tasks", "must list at least one task"))
        tasks = []
    for i, task in enumerate(tasks):
        if not isinstance(task, dict):
            errors.append(FieldError(f"manifest.spec.tasks[{i}]", "must be a mapping"))
            continue
        errors += dns_label_errors(f"manifest.spec.tasks[{i}].name", task.get("name"))
        errors += _int_errors(f"manifest.spec.tasks[{i}].replicas", task.get("replicas"), 0)
        try:
            per_pod = int(
                pod_demand(
                    (task.get("template") or {}).get("spec") or {},
                    f"manifest.spec.tasks[{i}].template.spec",
                )[GPU]
            )
        except PlatformValidationError as exc:
            errors += exc.errors
            continue
        if per_pod > max_gpus_per_node:
            errors.append(
                FieldError(
                    f"manifest.spec.tasks[{i}]",
                    f"a pod asks for {per_pod} GPUs and the largest node has {max_gpus_per_node}; split it across more pods",
                )
            )
    name, class_errors = _class_of_manifest(out, job_class, table)
    errors += class_errors
    raise_if(errors)
    if not (name is not None):  # narrows the type; cannot happen
        raise AssertionError("name is not None")
    jc = table[name]
    pc = spec.get("priorityClassName")
    if pc not in (None, jc.priority_class):
        errors.append(
            FieldError(
                "manifest.spec.priorityClassName",
                f"{pc!r} does not match class {name}, whose PriorityClass is {jc.priority_class}",
            )
        )
    if queue_type is not None:
        errors += class_queue_errors(jc, queue, queue_type, "manifest.spec.queue")
    qtype = queue_type or guess_queue_type(queue)
    annotations = meta.get("annotations") or {}
    price = spot_price if spot_price is not None else annotations.get(ANNOTATION_SPOT_PRICE)
    errors += sla_annotation_errors(annotations, jc)
    if jc.billing_type == "spot":
        errors += spot_price_errors(price, "spot_price")
    elif price is not None:
        errors.append(
            FieldError(
                "spot_price", f"class {name} is not billed as spot; leave the spot price out"
            )
        )
    demand = job_demand(out)
    pods, gpus = demand.pods, demand.gpus
    if not jc.multi_node and pods > 1:
        errors.append(
            FieldError(
                "manifest.spec.tasks",
                f"class {name} runs on a single node but the job has {pods} pods",
            )
        )
    if jc.max_gpus is not None and gpus > jc.max_gpus:
        errors.append(
            FieldError(
                "manifest.spec.tasks",
                f"the job asks for {gpus} GPUs and class {name} allows at most {jc.max_gpus}",
            )
        )
    if jc.min_gpus is not None and gpus < jc.min_gpus:
        errors.append(
            FieldError(
                "manifest.spec.tasks",
                f"the job asks for {gpus} GPUs and class {name} is for {jc.min_gpus} GPUs or more",
            )
        )
    raise_if(errors)
    meta["namespace"] = ns
    labels = meta.setdefault("labels", {})
    labels.update(job_labels(tenant, jc, jc.billing_for(qtype)))
    own = meta.setdefault("annotations", {})
    for key, value in class_annotations(jc, price).items():
        if key == ANNOTATION_SPOT_PRICE or not any(k in own for k in SLA_WAITING_ANNOTATIONS):
            own[key] = value
    if not own:
        del meta["annotations"]
    spec["schedulerName"] = SCHEDULER
    spec["priorityClassName"] = jc.priority_class
    spec.setdefault("minAvailable", pods)
    spec.setdefault("maxRetry", jc.max_retry)
    spec.setdefault("policies", [dict(p) for p in RESTART_POLICIES])
    if jc.network_topology and "networkTopology" not in spec:
        spec["networkTopology"] = dict(jc.network_topology)
    for task in tasks:
        tmeta = task.setdefault("template", {}).setdefault("metadata", {})
        tlabels = tmeta.setdefault("labels", {})
        tlabels.update(
            {
                k: labels[k]
                for k in (LABEL_TENANT, LABEL_JOB_CLASS, LABEL_BILLING_TYPE, LABEL_MANAGED_BY)
            }
        )
        extra = pod_annotations(jc, own)
        if extra:
            tmeta.setdefault("annotations", {}).update(extra)
        if jc.termination_grace_seconds is not None:
            task["template"].setdefault("spec", {}).setdefault(
                "terminationGracePeriodSeconds", jc.termination_grace_seconds
            )
    return out


def class_of_priority(priority_class: str | None) -> int:
    """The value of a platform PriorityClass (0 when it is none of them)."""
    return PRIORITY_CLASSES.get(priority_class or "", (0, ""))[0]
