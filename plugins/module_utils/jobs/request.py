# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a caller may say about a job (``JobRequest``) and the placement it runs at. Pure:
no I/O.

The rules a request must meet are ``request_rules``'; the tasks each kind makes of it
are ``kinds``'; the Volcano Job built from it is ``manifest``'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ..common.errors import FieldError, raise_if
from ..common.names import dataset_claim
from .classes import JobClass


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
    # A published dataset version, {name, version} (rule dataset-version): its claim
    dataset: dict[str, Any] | None = None
    dataset_mount_path: str = "/data"
    workspace_pvc: str | None = None
    workspace_mount_path: str = "/workspace"
    env: dict[str, str] = field(default_factory=dict)
    max_retry: int | None = None
    spot_price: Any = None
    termination_grace_seconds: int | None = None
    checkpoint_command: list[str] | None = None
    # The checkpoint convention (rule checkpoint-convention): {claim, image, keep, interval}
    checkpoint: dict[str, Any] | None = None
    max_gpus_per_node: int = 8
    vgpu: dict[str, Any] | None = None
    placement: str | None = None
    compliance: bool = False
    compliance_zone: str | None = None
    prefetch: dict[str, Any] | None = None
    # The pods' identity (rule pod-identity): the ServiceAccount they run as and the
    # Secrets they pull their images with, both of the tenant's namespace.
    service_account: str | None = None
    image_pull_secrets: list[str] = field(default_factory=list)

    @property
    def dataset_claim(self) -> str | None:
        """The claim mounted at ``dataset_mount_path``: ``dataset_pvc``, or the published
        claim of ``dataset``."""
        if self.dataset_pvc:
            return self.dataset_pvc
        if (
            isinstance(self.dataset, Mapping)
            and self.dataset.get("name")
            and self.dataset.get("version")
        ):
            return dataset_claim(str(self.dataset["name"]), str(self.dataset["version"]))
        return None

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


def job_placement(req: JobRequest, job_class: JobClass | None) -> str | None:
    """The job's placement: its own, else its class's (``JobClass.placement``)."""
    if req.placement is not None:
        return req.placement
    return job_class.placement if job_class is not None else None
