# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The metering group's recording rules (rule billing-follows-queue and the series the
ledger integrates: rules gpu-hours-source, subscription-over-time, unclaimed-gpus,
vgpu-metered-by-memory) and its evaluation interval (rule metering-interval). Pure and
stdlib only (the local cluster loads the observability package by path).
"""

from __future__ import annotations

import re
from typing import Any

from .kube_state_metrics import (
    GPU_RESOURCE_KSM,
    QUEUE_CAPABILITY_GPUS,
    QUEUE_INFO,
    VCJOB_INFO,
    VGPU_MEMORY_KSM,
    VGPU_NUMBER_KSM,
)

# The memory of one physical GPU of the shared nodes, MiB (an H100's 80 GiB): a vGPU of
# M MiB counts M / this of a GPU (rule vgpu-metered-by-memory).
DEFAULT_VGPU_GPU_MEMORY_MIB = 81920

# Recording rules other parts of the collection read (usage_report).
TENANT_BILLING_GPUS = "platform:tenant_billing_gpus:allocated"
JOB_GPUS = "platform:job_gpus:allocated"
TENANT_SUBSCRIPTION = "platform:tenant_subscription_gpus:info"
UNCLAIMED_POD_GPUS = "platform:pod_gpus:unclaimed"
METERING_GROUP = "platform-metering"

# Intermediate series of the metering group (evaluated in order, so each rule reads the
# ones above it at the same instant).
POD_GPUS_RUNNING = "platform:pod_gpus:running"
POD_QUEUE = "platform:pod_queue:info"
QUEUE_BILLING = "platform:queue_billing:info"
NAMESPACE_TENANT = "platform:namespace_tenant:info"
NODE_LOCATION = "platform:node_location:info"
POD_GPUS_BILLED = "platform:pod_gpus:billed"

# Rule billing-type-of-queue: the billing type a queue type bills as (a stdlib-only copy
# of common/names.py's map, tested equal). A team queue is a
# part of its tenant's subscription; the burst leaf is cloud quota bought by the hour.
BILLING_TYPE_OF_QUEUE_TYPE = {
    "subscription": "subscription",
    "team": "subscription",
    "payg": "payg",
    "spot": "spot",
    "burst": "payg",
}
CLOUD_LOCATION = "cloud"  # common/names.py NODE_LOCATIONS; every other node is "idc"


def _relabel(expr: str, target: str, source: str) -> str:
    return f'label_replace({expr}, "{target}", "$1", "{source}", "(.+)")'


def _billing_type_of_queue() -> str:
    """Rule billing-type-of-queue, as label_replace over each queue type."""
    expr = f'{QUEUE_INFO}{{tenant!=""}}'
    for queue_type, billing_type in BILLING_TYPE_OF_QUEUE_TYPE.items():
        expr = (
            f'label_replace({expr}, "billing_type", "{billing_type}", "queue_type", "{queue_type}")'
        )
    return f"max by (queue, tenant, billing_type) ({expr})"


def _running_gpu_equivalents(gpu_memory_mib: int) -> str:
    """Rule vgpu-metered-by-memory, per container: whole GPUs as requested; N vGPUs of M
    MiB each count N x M / ``gpu_memory_mib`` GPUs; N vGPUs without a memory request
    take their GPUs' whole memory (HAMi's default), so count N."""
    requests = "kube_pod_container_resource_requests"
    on_container = "on (namespace, pod, container)"
    return (
        f'{requests}{{resource="{GPU_RESOURCE_KSM}"}}\n'
        f'or ({requests}{{resource="{VGPU_NUMBER_KSM}"}}\n'
        f'    * {on_container} group_left () {requests}{{resource="{VGPU_MEMORY_KSM}"}}\n'
        f"    / {gpu_memory_mib})\n"
        f'or ({requests}{{resource="{VGPU_NUMBER_KSM}"}}\n'
        f'    unless {on_container} {requests}{{resource="{VGPU_MEMORY_KSM}"}})'
    )


def _priced_jobs() -> str:
    """The billed pods with their Volcano Job's name and, for a spot job, its bid."""
    job_name = _relabel("kube_pod_labels", "job_name", "label_volcano_sh_job_name")
    with_job = (
        f"{POD_GPUS_BILLED}\n"
        f"  * on (namespace, pod) group_left (job_name) max by (namespace, pod, job_name) ({job_name})"
    )
    # The bid is the Job's (admission checked it and keeps its pods' equal); a pod whose
    # Job is already gone (a reclaim's victim while it stops) keeps its own copy.
    job_bid = f'max by (namespace, job_name, spot_price) ({VCJOB_INFO}{{spot_price!=""}})'
    pod_bid = (
        "max by (namespace, pod, spot_price) ("
        + _relabel(
            'kube_pod_annotations{annotation_platform_io_spot_price!=""}',
            "spot_price",
            "annotation_platform_io_spot_price",
        )
        + ")"
    )
    return (
        f"(\n  {with_job}\n  * on (namespace, job_name) group_left (spot_price) {job_bid}\n)\n"
        f"or on (namespace, pod)\n(\n  {with_job}\n  * on (namespace, pod) group_left (spot_price) {pod_bid}\n)\n"
        f"or on (namespace, pod)\n(\n  {with_job}\n)"
    )


def _billing_inputs(vgpu_gpu_memory_mib: int) -> list[dict[str, Any]]:
    """The intermediate series, in order: each pod's running GPUs, its queue, each queue's
    tenant and billing type, each namespace's tenant, each node's location, and the pods'
    GPUs billed by all of them (rule billing-follows-queue)."""
    queue_label = _relabel(
        'kube_pod_labels{label_volcano_sh_queue_name!=""}', "queue", "label_volcano_sh_queue_name"
    )
    queue_annotation = _relabel(
        'kube_pod_annotations{annotation_scheduling_volcano_sh_queue_name!=""}',
        "queue",
        "annotation_scheduling_volcano_sh_queue_name",
    )
    namespace_tenant = _relabel(
        'kube_namespace_labels{label_platform_io_tenant!=""}', "tenant", "label_platform_io_tenant"
    )
    location = (
        f'label_replace(label_replace(kube_node_labels, "location", "idc", "node", ".*"), '
        f'"location", "{CLOUD_LOCATION}", "label_platform_io_node_location", "{CLOUD_LOCATION}")'
    )
    return [
        # Rule running-pod-gpus, per pod and the node it runs on.
        {
            "record": POD_GPUS_RUNNING,
            "expr": f"sum by (namespace, pod, node) (\n{_running_gpu_equivalents(vgpu_gpu_memory_mib)}\n)\n"
            "  * on (namespace, pod) group_left ()\n"
            '  (max by (namespace, pod) (kube_pod_status_phase{phase="Running"}) == 1)',
        },
        {
            "record": POD_QUEUE,
            "expr": f"max by (namespace, pod, queue) ({queue_label})\n"
            f"or on (namespace, pod)\nmax by (namespace, pod, queue) ({queue_annotation})",
        },
        {"record": QUEUE_BILLING, "expr": _billing_type_of_queue()},
        {"record": NAMESPACE_TENANT, "expr": f"max by (namespace, tenant) ({namespace_tenant})"},
        {"record": NODE_LOCATION, "expr": f"max by (node, location) ({location})"},
        {
            "record": POD_GPUS_BILLED,
            "expr": "sum by (namespace, pod, queue, tenant, billing_type, location) (\n"
            f"  (\n    {POD_GPUS_RUNNING}\n"
            f"    * on (namespace, pod) group_left (queue) {POD_QUEUE}\n"
            f'    * on (queue) group_left (tenant, billing_type) {QUEUE_BILLING}{{billing_type!=""}}\n'
            f"    * on (node) group_left (location) {NODE_LOCATION}\n"
            f"  )\n  and on (namespace, tenant) {NAMESPACE_TENANT}\n)",
        },
    ]


def metering_rules(vgpu_gpu_memory_mib: int = DEFAULT_VGPU_GPU_MEMORY_MIB) -> list[dict[str, Any]]:
    """Rule billing-follows-queue: every Running GPU pod is billed to the tenant and billing
    type of the queue it runs in, and only when that tenant is its namespace's. The pod's
    queue is the one Volcano wrote on it (the job controller's label ``volcano.sh/queue-name``,
    else the annotation ``scheduling.volcano.sh/queue-name`` that admission checked on the
    workload); the queue's tenant and type are platform state. No label a tenant writes
    takes part. A GPU pod in a tenant namespace that no queue of the tenant claims is
    ``platform:pod_gpus:unclaimed`` (rule unclaimed-gpus). A pod's GPUs count its vGPUs by
    their memory share (rule vgpu-metered-by-memory)."""
    return [
        *_billing_inputs(vgpu_gpu_memory_mib),
        # Rule gpu-hours-source: GPUs held per tenant, billing type and location, the
        # integrand of the ledger's GPU-hours (usage_report integrates it).
        {
            "record": TENANT_BILLING_GPUS,
            "expr": f"sum by (tenant, billing_type, location) ({POD_GPUS_BILLED})",
        },
        # The same per Volcano Job, with the spot job's bid for the ledger's spot lines.
        {
            "record": JOB_GPUS,
            "expr": "sum by (namespace, tenant, billing_type, location, job_name, spot_price) (\n"
            f"{_priced_jobs()}\n)",
        },
        # Rule subscription-over-time: a tenant's subscription size while its Queue exists,
        # as the label ``gpus`` (count_values makes a label of the value; usage_report
        # counts the samples of each size and prorates by them).
        {
            "record": TENANT_SUBSCRIPTION,
            "expr": 'count_values by (tenant) ("gpus", '
            f'{QUEUE_CAPABILITY_GPUS}{{queue_type="subscription",tenant!=""}})',
        },
        # Rule unclaimed-gpus: GPUs held in a tenant namespace that no billing line claims.
        {
            "record": UNCLAIMED_POD_GPUS,
            "expr": f"sum by (namespace, pod) ({POD_GPUS_RUNNING} and on (namespace) {NAMESPACE_TENANT})\n"
            f"unless on (namespace, pod) {POD_GPUS_BILLED}",
        },
    ]


_DURATION = re.compile(r"^[1-9][0-9]*(ms|s|m|h)$")


def interval_errors(interval: Any) -> list[str]:
    """Rule metering-interval: a Prometheus duration of one unit, such as 30s or 1m."""
    if interval is None or (isinstance(interval, str) and _DURATION.match(interval)):
        return []
    return [f"metering_interval: {interval!r} is not a duration such as 30s or 1m"]
