# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the ``queue_arbiter`` module accepts (pure: no I/O).

* Rule arbiter-input (``arbiter_input_errors``): every check before the first request:
  ``tenant`` a tenant name (rule tenant-name), ``job`` a DNS-1123 subdomain (rule
  dns-subdomain) and only with ``tenant``, ``queue`` one of the tenant's queue names
  (``tenant-<tenant>-``, rule leaf-queue-of-tenant) and only with ``tenant``, ``settle_seconds`` and ``history_size`` 0 or
  more, ``lease_duration`` 1 or more. Each error names its field.
* Rule arbiter-job-scope (``job_scope_refusal``): a ``job`` must be a Volcano Job of the
  tenant's namespace in one of the tenant's queues (checked once the cluster is read).
* Rule arbiter-queue-scope (``queue_scope_refusal``): a ``queue`` must be a managed leaf
  queue of the tenant (rule leaf-queue-of-tenant, checked once the queues are read).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.errors import FieldError, raise_if
from ..common.names import (
    LABEL_MANAGED_BY,
    LABEL_QUEUE_TYPE,
    LABEL_TENANT,
    MANAGED_BY,
    dns_subdomain_errors,
    namespace_name,
    tenant_name_errors,
)
from ..queues.kinds import leaf_queue_errors, queue_facts, queue_name_errors, tenant_leaves
from .model import QueueState
from .rules import NOTHING_EVICTED

# The least value of each number option.
_LEAST = {"settle_seconds": 0, "lease_duration": 1, "history_size": 0, "hold_seconds": 0}


def arbiter_input_errors(params: Mapping[str, Any]) -> list[FieldError]:
    """Rule arbiter-input: every check ``queue_arbiter`` makes before its first request."""
    errors: list[FieldError] = []
    tenant, job = params.get("tenant"), params.get("job")
    if tenant is not None:
        errors += tenant_name_errors(tenant, "tenant")
    if job is not None:
        errors += dns_subdomain_errors("job", job)
        if tenant is None:
            errors.append(
                FieldError(
                    "job",
                    f"{job!r} needs tenant: a job is named within its tenant's namespace "
                    "(tenant-<tenant>)",
                )
            )
    queue = params.get("queue")
    if queue is not None:
        if tenant is None:
            errors.append(
                FieldError(
                    "queue",
                    f"{queue!r} needs tenant: the arbiter acts for one tenant's queue at a time",
                )
            )
        else:
            errors += queue_name_errors("queue", queue, tenant)
    for name, least in _LEAST.items():
        value = params.get(name)
        if value is not None and value < least:
            errors.append(FieldError(name, f"{value} is too small; {least} or more is accepted"))
    hold, lease = params.get("hold_seconds"), params.get("lease_duration")
    if hold is not None and lease is not None and hold >= lease >= 1:
        errors.append(
            FieldError(
                "hold_seconds",
                f"{hold} must be less than lease_duration ({lease}): the run holds its Lease "
                "while it holds the queues",
            )
        )
    return errors


def validate_arbiter_input(params: Mapping[str, Any]) -> None:
    """``arbiter_input_errors``, raising PlatformValidationError."""
    raise_if(arbiter_input_errors(params))


def job_scope_refusal(
    tenant: str,
    job: str,
    vcjobs: list[Mapping[str, Any]],
    states: Mapping[str, QueueState],
) -> str | None:
    """Rule arbiter-job-scope: why ``job`` (option ``job``) is not one the arbiter may act
    for in ``tenant``, or None. ``vcjobs`` are the Volcano Jobs listed in the tenant's
    namespace; the Job's queue must be a managed queue labelled with the tenant."""
    namespace = namespace_name(tenant)
    found = next(
        (
            j
            for j in vcjobs
            if (j.get("metadata") or {}).get("name") == job
            and (j.get("metadata") or {}).get("namespace") == namespace
        ),
        None,
    )
    if found is None:
        return f"job: {job!r} is not a Volcano Job in namespace {namespace}; {NOTHING_EVICTED}"
    queue = str((found.get("spec") or {}).get("queue") or "default")
    state = states.get(queue)
    if state is None:
        return (
            f"job: {namespace}/{job} is in queue {queue}, which is not a queue of the platform; "
            f"{NOTHING_EVICTED}"
        )
    if state.tenant != tenant:
        return (
            f"job: {namespace}/{job} is in queue {queue}, which belongs to tenant "
            f"{state.tenant!r}, not {tenant!r}; {NOTHING_EVICTED}"
        )
    return None


def queue_scope_refusal(tenant: str, queue: str, states: Mapping[str, QueueState]) -> str | None:
    """Rule arbiter-queue-scope, that is rule leaf-queue-of-tenant over the managed queues
    just listed: why ``queue`` (option ``queue``) is not one the arbiter may act for in
    ``tenant``, or None. A parent queue holds no job, so the arbiter would find nothing to
    do there and say so as if the queue were fine."""
    facts = queue_facts(
        (
            s.name,
            s.parent,
            {LABEL_TENANT: s.tenant, LABEL_QUEUE_TYPE: s.queue_type, LABEL_MANAGED_BY: MANAGED_BY},
        )
        for s in states.values()
    )
    errors = leaf_queue_errors("queue", queue, tenant, tenant_leaves(tenant, facts), facts)
    return f"{errors[0]}; {NOTHING_EVICTED}" if errors else None
