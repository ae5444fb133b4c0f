# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``checkpoint_retention`` module's request, facts and plan.

Which buckets it sweeps is derived from the store (rule checkpoint-buckets): every
tenant's checkpoint bucket (``tenant-<tenant>-checkpoints``) that the tenant's own
account owns, or only the given tenant's. A bucket of that name owned by someone else is
not the tenant's, and is left alone.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..common.errors import FieldError, PlatformValidationError, raise_if
from ..common.names import tenant_name_errors
from .buckets import bucket_name, identity_of
from .connection import CONNECTION_SECRET, StoreConnection
from .retention import DEFAULT_KEEP, Checkpoint, checkpoints, expired, keep_errors

PURPOSE = "checkpoints"
_PREFIX, _SUFFIX = bucket_name("", PURPOSE).split("--")  # "tenant", "checkpoints"


@dataclass(frozen=True)
class RetentionRequest:
    tenant: str | None = None
    keep: int = DEFAULT_KEEP
    job: str | None = None


def parse_retention(params: Mapping[str, Any]) -> RetentionRequest:
    errors: list[FieldError] = []
    tenant = params.get("tenant")
    if tenant is not None:
        errors += tenant_name_errors(tenant, "tenant")
    keep = params.get("keep", DEFAULT_KEEP)
    errors += keep_errors(keep)
    job = params.get("job")
    if job is not None and (not isinstance(job, str) or not job or "/" in job):
        errors.append(
            FieldError("job", f"{job!r} must be a job's name (the first part of its keys)")
        )
    raise_if(errors)
    return RetentionRequest(tenant=tenant, keep=int(keep), job=job)


def tenant_of_bucket(bucket: str) -> str | None:
    """The tenant whose checkpoint bucket this name is, or None."""
    head, tail = f"{_PREFIX}-", f"-{_SUFFIX}"
    if bucket.startswith(head) and bucket.endswith(tail) and len(bucket) > len(head) + len(tail):
        tenant = bucket[len(head) : -len(tail)]
        return tenant if not tenant_name_errors(tenant) else None
    return None


def checkpoint_buckets(request: RetentionRequest, owners: Mapping[str, str]) -> dict[str, str]:
    """Rule checkpoint-buckets: bucket -> tenant, for the buckets a run sweeps."""
    out = {}
    for bucket, owner in sorted(owners.items()):
        tenant = tenant_of_bucket(bucket)
        if tenant is None or owner != identity_of(tenant):
            continue
        if request.tenant is None or tenant == request.tenant:
            out[bucket] = tenant
    return out


@dataclass(frozen=True)
class RetentionFacts:
    connection: StoreConnection | None
    connection_errors: tuple[FieldError, ...] = ()
    buckets: Mapping[str, str] = field(default_factory=dict)  # bucket -> tenant
    objects: Mapping[str, Sequence[Mapping[str, Any]]] = field(default_factory=dict)


@dataclass(frozen=True)
class RetentionPlan:
    request: RetentionRequest
    connection: StoreConnection | None = field(default=None, repr=False)
    buckets: Mapping[str, str] = field(default_factory=dict)
    found: Mapping[str, tuple[Checkpoint, ...]] = field(default_factory=dict)
    expired: Mapping[str, tuple[Checkpoint, ...]] = field(default_factory=dict)


def plan_retention(request: RetentionRequest, facts: RetentionFacts) -> RetentionPlan:
    if facts.connection is None:
        raise PlatformValidationError(
            list(facts.connection_errors) or [FieldError(CONNECTION_SECRET, "no object store")]
        )
    if request.tenant is not None and not facts.buckets:
        raise PlatformValidationError(
            [
                FieldError(
                    "tenant",
                    f"{request.tenant!r} has no checkpoint bucket of its own "
                    f"({bucket_name(request.tenant, PURPOSE)}); give it one with "
                    "gpucloud.platform.tenant_object_store",
                )
            ]
        )
    found: dict[str, tuple[Checkpoint, ...]] = {}
    gone: dict[str, tuple[Checkpoint, ...]] = {}
    for bucket in facts.buckets:
        listed = [
            c
            for c in checkpoints(facts.objects.get(bucket) or ())
            if request.job is None or c.job == request.job
        ]
        found[bucket] = tuple(listed)
        gone[bucket] = tuple(expired(listed, request.keep))
    return RetentionPlan(
        request=request,
        connection=facts.connection,
        buckets=dict(facts.buckets),
        found=found,
        expired=gone,
    )


def report_retention(request: RetentionRequest, planned: RetentionPlan) -> dict[str, Any]:
    """Per bucket: its tenant, the checkpoints found, kept and deleted (as job/name)."""
    rows = []
    for bucket, tenant in planned.buckets.items():
        gone = planned.expired.get(bucket, ())
        found = planned.found.get(bucket, ())
        rows.append(
            {
                "bucket": bucket,
                "tenant": tenant,
                "checkpoints": len(found),
                "kept": len(found) - len(gone),
                "deleted": [c.where for c in gone],
                "objects_deleted": sum(len(c.keys) for c in gone),
                "bytes_freed": sum(c.size for c in gone),
            }
        )
    return {
        "changed": any(r["deleted"] for r in rows),
        "keep": request.keep,
        "buckets": rows,
    }
