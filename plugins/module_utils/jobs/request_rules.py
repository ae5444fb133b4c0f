# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules a job request must meet, each one named function, and ``request_errors``,
which runs every rule. Pure: no I/O.

Every rule has one signature, ``rule_xxx(req, job_class) -> list[FieldError]``: the
request and its class (None when ``req.job_class`` names none of the table's). A rule
with a rule id says so first in its docstring ("Rule <id>:"). ``RULES`` lists every rule
``request_errors`` runs, in the order of its errors; nothing is built while one is broken.

The checks a caller's own manifest repeats (``completion``) call the same functions:
``queue_of_tenant_errors`` (rule leaf-queue-of-tenant, by name) and ``int_errors`` here,
and the class rules of ``class_rules`` (spot-price by class, class-size). A model service
checks its pods' identity with ``pod_identity_errors`` (rule inference-pod-identity).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from ..common.errors import FieldError, PlatformValidationError
from ..common.names import (
    JOB_CLASSES,
    dns_label_errors,
    dns_subdomain_errors,
    is_dns_subdomain,
    tenant_name_errors,
)
from ..common.quantity import parse
from ..hybrid.placement import CLOUD_PLACEMENTS, placement_errors, prefetch_errors
from ..hybrid.vgpu import MAX_VGPU_NUMBER, vgpu_conflict_errors, vgpu_request_errors
from ..queues.kinds import queue_name_errors
from .checkpoints import checkpoint_errors
from .class_rules import class_price_errors, class_size_errors
from .classes import DEFAULT_CLASSES, JobClass, class_queue_errors
from .kinds import KINDS, pod_name_room, roles
from .request import JobRequest, job_placement

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")

Rule = Callable[[JobRequest, "JobClass | None"], list[FieldError]]


# --- checks shared with the manifest completion ------------------------------------------------


def int_errors(
    name: str, value: Any, minimum: int, maximum: int | None = None, why: str = ""
) -> list[FieldError]:
    """``value`` is a whole number from ``minimum`` (to ``maximum``)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return [FieldError(name, f"{value!r} must be a whole number")]
    if value < minimum or (maximum is not None and value > maximum):
        bound = f">= {minimum}" if maximum is None else f"between {minimum} and {maximum}"
        return [FieldError(name, f"{value} must be {bound}{why}")]
    return []


def queue_of_tenant_errors(option: str, queue: Any, tenant: Any) -> list[FieldError]:
    """Rule leaf-queue-of-tenant, as far as the name decides it (``queues.kinds``): the queue
    of option ``option`` belongs to ``tenant``. Not judged while the tenant is no string
    (rule tenant-name refuses it)."""
    if not isinstance(tenant, str):
        return []
    return queue_name_errors(option, queue, tenant)


def pod_identity_errors(service_account: Any, image_pull_secrets: Any) -> list[FieldError]:
    """What rule pod-identity asks of the options ``service_account`` and
    ``image_pull_secrets``, each error naming the option (and the secret's index): the
    ServiceAccount, when given, a DNS-1123 subdomain; the Secrets a list (a string is
    refused, never read as its characters) of DNS-1123 subdomains, each named once. None
    stands for an option not given."""
    errors: list[FieldError] = []
    if service_account is not None:
        errors += dns_subdomain_errors("service_account", service_account)
    if image_pull_secrets is None:
        return errors
    if not isinstance(image_pull_secrets, list | tuple):
        return [
            *errors,
            FieldError(
                "image_pull_secrets",
                f"{image_pull_secrets!r} must be a list of Secret names, for example "
                "[registry-credentials]; one Secret is a list of one",
            ),
        ]
    first: dict[str, int] = {}
    for i, secret in enumerate(image_pull_secrets):
        where = f"image_pull_secrets[{i}]"
        bad = dns_subdomain_errors(where, secret)
        errors += bad
        if bad:
            continue
        if secret in first:
            errors.append(
                FieldError(
                    where,
                    f"{secret!r} is named twice (also image_pull_secrets[{first[secret]}]); "
                    "name each Secret once",
                )
            )
        else:
            first[secret] = i
    return errors


# --- what several rules ask of a request -------------------------------------------------------


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


def _count_errors(name: str, value: Any) -> list[FieldError]:
    return int_errors(name, value, 1, why=" (a job needs at least one pod of each task)")


def _counts_ok(req: JobRequest) -> bool:
    """replicas and ps_replicas are both whole numbers of 1 or more (the pods can be counted)."""
    return not _count_errors("replicas", req.replicas) and not _count_errors(
        "ps_replicas", req.ps_replicas
    )


def _largest_node(req: JobRequest) -> int | None:
    """The GPUs of the largest node, when max_gpus_per_node says it."""
    value = req.max_gpus_per_node
    return value if isinstance(value, int) and value > 0 else None


def _gpus_per_pod_errors(req: JobRequest) -> list[FieldError]:
    max_node = _largest_node(req)
    return int_errors(
        "gpus_per_pod",
        req.gpus_per_pod,
        0,
        max_node,
        why=f" (a pod runs on one node and the largest node has {max_node} GPUs)"
        if max_node
        else "",
    )


# --- the rules, in the order of their errors ---------------------------------------------------


def rule_tenant_name(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """Rule tenant-name: ``tenant`` is a DNS-1123 label short enough for its queue names."""
    return tenant_name_errors(req.tenant, "tenant")


def rule_leaf_queue_of_tenant(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """Rule leaf-queue-of-tenant, as far as the name decides it: ``queue`` is the tenant's."""
    return queue_of_tenant_errors("queue", req.queue, req.tenant)


def rule_job_kinds(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """Rule job-kinds: ``kind`` is one of KINDS."""
    if req.kind in KINDS:
        return []
    return [FieldError("kind", f"{req.kind!r} is not a kind of job; use one of {', '.join(KINDS)}")]


def rule_known_class(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """``job_class`` is a class of the table."""
    if job_class is not None:
        return []
    return [
        FieldError(
            "job_class",
            f"{req.job_class!r} is not a job class; use one of {', '.join(JOB_CLASSES)}",
        )
    ]


def rule_image(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """``image`` is given: the container image to run."""
    if isinstance(req.image, str) and req.image.strip():
        return []
    return [
        FieldError(
            "image",
            "is required: the container image to run, e.g. registry.example.com/train:v1",
        )
    ]


def rule_max_gpus_per_node(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """``max_gpus_per_node`` (the GPUs of the largest node) is a whole number of 1 or more."""
    return int_errors("max_gpus_per_node", req.max_gpus_per_node, 1)


def rule_pod_counts(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """``replicas`` (and, for kind ps_worker, ``ps_replicas``) is 1 or more: a job needs at
    least one pod of each task."""
    errors = _count_errors("replicas", req.replicas)
    if req.kind == "ps_worker":
        errors += _count_errors("ps_replicas", req.ps_replicas)
    return errors


def rule_single_is_one_pod(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """A job of kind single is one pod."""
    if req.kind != "single" or not _counts_ok(req) or req.replicas == 1:
        return []
    return [
        FieldError(
            "replicas",
            f"{req.replicas}: a single job is one pod; set replicas: 1, or use pytorch_ddp",
        )
    ]


def rule_gpus_per_pod(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """``gpus_per_pod`` is 0 or more, and at most the GPUs of the largest node."""
    return _gpus_per_pod_errors(req)


def rule_vgpu_request(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """Rule vgpu-request: ``vgpu`` (``hybrid.vgpu``), its number bounded by the largest node."""
    return vgpu_request_errors("vgpu", req.vgpu, _largest_node(req) or MAX_VGPU_NUMBER)


def rule_vgpu_or_whole_gpu(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """Rule vgpu-or-whole-gpu: whole GPUs or vGPUs, never both (``hybrid.vgpu``)."""
    return vgpu_conflict_errors("vgpu", req.gpus_per_pod, req.vgpu)


def rule_rdma(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """``rdma`` is a whole number of 0 or more."""
    return int_errors("rdma", req.rdma, 0)


def rule_pod_resources(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """``cpu``, ``memory``, ``head_cpu`` and ``head_memory`` are quantities above 0."""
    errors: list[FieldError] = []
    for name in ("cpu", "memory", "head_cpu", "head_memory"):
        errors += _quantity_errors(name, getattr(req, name))
    return errors


def rule_shm_size(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """``shm_size``, when given, is a quantity above 0."""
    if req.shm_size is None:
        return []
    return _quantity_errors("shm_size", req.shm_size)


def rule_pvc_names(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """``dataset_pvc`` and ``workspace_pvc``, when given, are PersistentVolumeClaim names."""
    errors = []
    for name in ("dataset_pvc", "workspace_pvc"):
        value = getattr(req, name)
        if value is not None and not is_dns_subdomain(value):
            errors.append(
                FieldError(
                    name, f"{value!r} is not a PersistentVolumeClaim name (a DNS-1123 subdomain)"
                )
            )
    return errors


def rule_pod_identity(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """Rule pod-identity: ``service_account`` (when given) and ``image_pull_secrets`` (a list,
    each Secret named once) are DNS-1123 subdomains. Every pod of the job runs as that
    ServiceAccount of the tenant's namespace and pulls its images with those Secrets
    (``pod_identity_errors``)."""
    return pod_identity_errors(req.service_account, req.image_pull_secrets)


def rule_mount_paths(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """``dataset_mount_path`` and ``workspace_mount_path`` are absolute paths other than /
    and /dev/shm."""
    errors = []
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
    return errors


def rule_dataset_version(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """Rule dataset-version: ``dataset`` names a published version, ``{name, version}``
    (both DNS labels), mounted read-only at ``dataset_mount_path`` from its claim
    ``dataset-<name>-<version>`` (gpucloud.platform.dataset); not beside ``dataset_pvc``,
    which mounts at the same path."""
    if req.dataset is None:
        return []
    if not isinstance(req.dataset, Mapping) or set(req.dataset) != {"name", "version"}:
        return [
            FieldError(
                "dataset",
                f"{req.dataset!r} must be {{name: <dataset>, version: <version>}}, a published version",
            )
        ]
    errors = dns_label_errors("dataset.name", req.dataset["name"])
    errors += dns_label_errors("dataset.version", req.dataset["version"])
    if req.dataset_pvc:
        errors.append(
            FieldError(
                "dataset", "give dataset or dataset_pvc, not both: both mount at dataset_mount_path"
            )
        )
    return errors


def rule_checkpoint(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """Rule checkpoint-options (``checkpoints.checkpoint_errors``), and the claim is not
    also the dataset's or the workspace's: it mounts at ``/checkpoints``."""
    errors = checkpoint_errors(req.checkpoint)
    if errors or req.checkpoint is None:
        return errors
    claim = req.checkpoint["claim"]
    if claim in (req.dataset_claim, req.workspace_pvc):
        errors.append(
            FieldError("checkpoint.claim", f"{claim!r} is already the job's dataset or workspace")
        )
    return errors


def rule_distinct_mounts(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """A job with both PVCs mounts them at two paths."""
    if not (
        req.dataset_claim
        and req.workspace_pvc
        and req.dataset_mount_path == req.workspace_mount_path
    ):
        return []
    return [
        FieldError(
            "workspace_mount_path",
            f"{req.workspace_mount_path!r} is also the dataset mount path",
        )
    ]


def rule_command_form(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """``command``, ``worker_command`` and ``checkpoint_command``, when given, are non-empty
    lists of strings."""
    errors: list[FieldError] = []
    for name in ("command", "worker_command", "checkpoint_command"):
        errors += _command_errors(name, getattr(req, name))
    return errors


def rule_command_required(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """Kinds pytorch_ddp and mpi need ``command``: what torchrun or mpirun starts."""
    if req.kind not in ("pytorch_ddp", "mpi") or req.command:
        return []
    what = (
        "the training script and its arguments, run under torchrun"
        if req.kind == "pytorch_ddp"
        else "the program mpirun starts"
    )
    return [FieldError("command", f"is required for kind {req.kind}: {what}")]


def rule_ray_takes_no_command(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """Kind ray takes no command: Volcano's ray plugin starts the head and workers."""
    if req.kind != "ray":
        return []
    return [
        FieldError(
            name,
            "kind ray takes no command: Volcano's ray plugin starts the head and workers (ray start); "
            "submit work with 'ray job submit' to <job>-head-svc:8265",
        )
        for name in ("command", "worker_command")
        if getattr(req, name)
    ]


def rule_one_command(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """Kinds single and pytorch_ddp run one command in every pod: no ``worker_command``."""
    if req.kind not in ("single", "pytorch_ddp") or not req.worker_command:
        return []
    return [
        FieldError("worker_command", f"kind {req.kind} runs one command in every pod; use command")
    ]


def rule_env(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """``env`` maps environment variable names to strings (or numbers)."""
    if not isinstance(req.env, Mapping):
        return [FieldError("env", f"{req.env!r} must be a mapping of variable name to value")]
    errors = []
    for key, value in req.env.items():
        if not isinstance(key, str) or not _ENV_NAME.match(key):
            errors.append(FieldError(f"env.{key}", "is not a valid environment variable name"))
        elif not isinstance(value, str | int | float) or isinstance(value, bool):
            errors.append(FieldError(f"env.{key}", f"{value!r} must be a string"))
    return errors


def rule_max_retry(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """``max_retry``, when given, is a whole number of 0 or more."""
    if req.max_retry is None:
        return []
    return int_errors("max_retry", req.max_retry, 0)


def rule_termination_grace(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """``termination_grace_seconds``, when given, is a whole number of 0 or more."""
    if req.termination_grace_seconds is None:
        return []
    return int_errors("termination_grace_seconds", req.termination_grace_seconds, 0)


def rule_placement(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """Rule placement: the job's placement, its own or its class's (with rules
    compliance-local-only and cloud-patterns, ``hybrid.placement.placement_errors``)."""
    return placement_errors(
        job_placement(req, job_class), req.compliance, req.compliance_zone, req.checkpoint_command
    )


def rule_cloud_patterns(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """Rule cloud-patterns: a prefetch is an image and a command (``hybrid.placement``), and
    only a job that may run on a cloud node has one."""
    errors = prefetch_errors(req.prefetch)
    placement = job_placement(req, job_class)
    if req.prefetch is not None and placement not in CLOUD_PLACEMENTS:
        errors.append(
            FieldError(
                "prefetch",
                f"copies data onto a cloud node; placement {placement!r} never runs on one",
            )
        )
    return errors


def rule_job_name(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """Rule dns-label: ``name`` is a DNS-1123 label that leaves room for its pods' names
    (<job>-<task>-<index>, a host name), judged once the pods can be counted."""
    if not isinstance(req.name, str):
        return dns_label_errors("name", req.name)
    if req.kind in KINDS and _counts_ok(req):
        return dns_label_errors("name", req.name, max(pod_name_room(req), 1))
    return []


def rule_spot_price(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """Rule spot-price: a job of class spot carries its price per GPU-hour; any other none."""
    if job_class is None:
        return []
    return class_price_errors(job_class, req.spot_price, "leave spot_price out or use class spot")


def rule_class_fits_queue(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """Rule class-fits-queue: the class is submitted only to the queue types of its table
    row (``classes.class_queue_errors``), judged when the queue's type is known."""
    if job_class is None or req.queue_type is None or not isinstance(req.queue, str):
        return []
    return class_queue_errors(job_class, req.queue, req.queue_type)


def rule_class_size(req: JobRequest, job_class: JobClass | None) -> list[FieldError]:
    """Rule class-size: the job's pods and GPUs are within its class's bounds, judged once
    the kind, the pod counts and the GPUs per pod are valid."""
    if job_class is None or req.kind not in KINDS or not _counts_ok(req):
        return []
    if _gpus_per_pod_errors(req):
        return []
    return class_size_errors(job_class, roles(req), req.gpus_per_pod)


# Every rule request_errors runs, in the order of its errors.
RULES: tuple[Rule, ...] = (
    rule_tenant_name,
    rule_leaf_queue_of_tenant,
    rule_job_kinds,
    rule_known_class,
    rule_image,
    rule_max_gpus_per_node,
    rule_pod_counts,
    rule_single_is_one_pod,
    rule_gpus_per_pod,
    rule_vgpu_request,
    rule_vgpu_or_whole_gpu,
    rule_rdma,
    rule_pod_resources,
    rule_shm_size,
    rule_pvc_names,
    rule_dataset_version,
    rule_pod_identity,
    rule_mount_paths,
    rule_distinct_mounts,
    rule_checkpoint,
    rule_command_form,
    rule_command_required,
    rule_ray_takes_no_command,
    rule_one_command,
    rule_env,
    rule_max_retry,
    rule_termination_grace,
    rule_placement,
    rule_cloud_patterns,
    rule_job_name,
    rule_spot_price,
    rule_class_fits_queue,
    rule_class_size,
)


def request_errors(
    req: JobRequest, table: Mapping[str, JobClass] | None = None
) -> list[FieldError]:
    """Every rule a job request must meet (``RULES``), collected (nothing is built while one
    is broken)."""
    table = table or DEFAULT_CLASSES
    job_class = table.get(req.job_class) if isinstance(req.job_class, str) else None
    errors: list[FieldError] = []
    for rule in RULES:
        errors += rule(req, job_class)
    return errors
