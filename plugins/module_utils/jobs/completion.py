# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Volcano Job the caller wrote, completed with the platform's fields and checked
(``complete_manifest``). Pure: no I/O.

The checks it shares with a job request are the request's own functions
(``request_rules.queue_of_tenant_errors``, ``request_rules.int_errors``, the class rules
of ``class_rules``); the labels, annotations and fields it fills in are ``manifest``'s.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ..common.errors import FieldError, PlatformValidationError, raise_if
from ..common.names import (
    ANNOTATION_SPOT_PRICE,
    JOB_API,
    JOB_CLASSES,
    LABEL_BILLING_TYPE,
    LABEL_JOB_CLASS,
    LABEL_MANAGED_BY,
    LABEL_TENANT,
    SLA_WAITING_ANNOTATIONS,
    dns_label_errors,
    namespace_name,
    tenant_name_errors,
)
from ..common.quantity import GPU
from ..workload.demand import job_demand, pod_demand
from .class_rules import MAX_GPUS, MIN_GPUS, SINGLE_NODE, class_bounds_broken, class_price_errors
from .classes import DEFAULT_CLASSES, JobClass, class_queue_errors
from .manifest import (
    KIND,
    RESTART_POLICIES,
    SCHEDULER,
    class_annotations,
    guess_queue_type,
    job_labels,
    pod_annotations,
)
from .request_rules import int_errors, queue_of_tenant_errors
from .sla import parse_duration


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


def _task_errors(tasks: list[Any], max_gpus_per_node: int) -> list[FieldError]:
    """Each task is a mapping with a name, a replica count and pods no larger than the
    largest node."""
    errors: list[FieldError] = []
    for i, task in enumerate(tasks):
        if not isinstance(task, dict):
            errors.append(FieldError(f"manifest.spec.tasks[{i}]", "must be a mapping"))
            continue
        errors += dns_label_errors(f"manifest.spec.tasks[{i}].name", task.get("name"))
        errors += int_errors(f"manifest.spec.tasks[{i}].replicas", task.get("replicas"), 0)
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
    return errors


def _shape_errors(
    out: dict[str, Any], tenant: Any, max_gpus_per_node: int
) -> tuple[list[FieldError], list[Any]]:
    """What the manifest must be whatever its class: a Volcano Job of the tenant's namespace
    and queue, scheduled by Volcano, with valid tasks. Returns the errors and the tasks
    (none when they are not a list). Raises at once when metadata or spec is no mapping."""
    errors: list[FieldError] = list(tenant_name_errors(tenant, "tenant"))
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
    errors += queue_of_tenant_errors("manifest.spec.queue", spec.get("queue"), tenant)
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
    return errors + _task_errors(tasks, max_gpus_per_node), tasks


def _size_errors(jc: JobClass, pods: int, gpus: int) -> list[FieldError]:
    """Rule class-size (``class_rules.class_bounds_broken``), in the manifest's words."""
    words = {
        SINGLE_NODE: f"class {jc.name} runs on a single node but the job has {pods} pods",
        MAX_GPUS: f"the job asks for {gpus} GPUs and class {jc.name} allows at most {jc.max_gpus}",
        MIN_GPUS: f"the job asks for {gpus} GPUs and class {jc.name} is for {jc.min_gpus} GPUs or more",
    }
    return [
        FieldError("manifest.spec.tasks", words[bound])
        for bound in class_bounds_broken(jc, pods, gpus)
    ]


def _class_errors(
    out: dict[str, Any], jc: JobClass, queue_type: str | None, price: Any
) -> list[FieldError]:
    """What the manifest's class asks of it but its size: its PriorityClass, its queue's
    type (when known), its sla waiting time and its spot price."""
    meta, spec = out["metadata"], out["spec"]
    errors = []
    pc = spec.get("priorityClassName")
    if pc not in (None, jc.priority_class):
        errors.append(
            FieldError(
                "manifest.spec.priorityClassName",
                f"{pc!r} does not match class {jc.name}, whose PriorityClass is {jc.priority_class}",
            )
        )
    if queue_type is not None:
        errors += class_queue_errors(jc, spec.get("queue"), queue_type, "manifest.spec.queue")
    errors += sla_annotation_errors(meta.get("annotations") or {}, jc)
    return errors + class_price_errors(jc, price, "leave the spot price out")


def _fill(
    out: dict[str, Any],
    tasks: list[Any],
    tenant: str,
    jc: JobClass,
    qtype: str,
    price: Any,
    pods: int,
) -> None:
    """Write the platform's fields into a checked manifest: namespace, labels, annotations,
    schedulerName, priorityClassName, minAvailable, maxRetry, policies, networkTopology,
    and each task's labels, annotations and termination grace period."""
    meta, spec = out["metadata"], out["spec"]
    meta["namespace"] = namespace_name(tenant)
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
    if not isinstance(manifest, Mapping):
        raise PlatformValidationError([FieldError("manifest", "must be a Volcano Job (a mapping)")])
    out = copy.deepcopy(dict(manifest))
    errors, tasks = _shape_errors(out, tenant, max_gpus_per_node)
    name, class_errors = _class_of_manifest(out, job_class, table)
    raise_if(errors + class_errors)
    if not (name is not None):  # narrows the type; cannot happen
        raise AssertionError("name is not None")
    jc = table[name]
    annotations = out["metadata"].get("annotations") or {}
    price = spot_price if spot_price is not None else annotations.get(ANNOTATION_SPOT_PRICE)
    errors = _class_errors(out, jc, queue_type, price)
    demand = job_demand(out)
    raise_if(errors + _size_errors(jc, demand.pods, demand.gpus))
    qtype = queue_type or guess_queue_type(out["spec"].get("queue"))
    _fill(out, tasks, tenant, jc, qtype, price, demand.pods)
    return out
