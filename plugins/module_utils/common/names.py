# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The names, labels and annotations every part of the platform shares.

This module is the code form of CONVENTIONS.md: change a name here and in
that document together, never one without the other.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .errors import FieldError

# API versions: Kubernetes 1.35 and Volcano 1.15.1. Every file names them from here.
QUEUE_API = "scheduling.volcano.sh/v1beta1"
PODGROUP_API = "scheduling.volcano.sh/v1beta1"
JOB_API = "batch.volcano.sh/v1alpha1"
# KServe's InferenceGraph: a tenant's routers live in the gateway's namespace.
GRAPH_API = "serving.kserve.io/v1alpha1"
HYPERNODE_API = "topology.volcano.sh/v1alpha1"
ADMISSION_API = "admissionregistration.k8s.io/v1"
LEASE_API = "coordination.k8s.io/v1"
SERVICE_CIDR_API = "networking.k8s.io/v1"
# Fluid v1.0.8's Dataset and AlluxioRuntime: a published dataset version's cache.
FLUID_API = "data.fluid.io/v1alpha1"

# Phases, as Volcano and Kubernetes report them.
JOB_FINISHED_PHASES = ("Completed", "Failed", "Terminated", "Aborted")  # a Job that holds nothing
JOB_FAILED_PHASES = ("Failed", "Aborted", "Terminated")
JOB_STARTED_PHASES = ("Running", "Completing", "Completed")  # a Job that got its pods
JOB_HOLDING_PHASES = ("Running",)  # a Job whose pods hold their GPUs
PODGROUP_WAITING_PHASES = ("Pending", "Inqueue")  # not yet allocated by the scheduler
PODGROUP_RUNNING_PHASE = "Running"  # the scheduler allocated it (minMember of its pods)
# The condition vc-scheduler sets on a PodGroup a session could not allocate.
PODGROUP_UNSCHEDULABLE = "Unschedulable"
POD_ACTIVE_PHASES = ("Pending", "Running")
POD_TERMINAL_PHASES = ("Succeeded", "Failed")

PREFIX = "platform.io/"
LABEL_TENANT = PREFIX + "tenant"
LABEL_QUEUE_TYPE = PREFIX + "queue-type"
LABEL_TEAM = PREFIX + "team"
LABEL_MANAGED_BY = PREFIX + "managed-by"
LABEL_BILLING_TYPE = PREFIX + "billing-type"
LABEL_JOB_CLASS = PREFIX + "job-class"
ANNOTATION_SPOT_PRICE = PREFIX + "spot-price"
# When a pay-as-you-go grant last grew (rule payg-grace).
ANNOTATION_PAYG_GRANTED_AT = PREFIX + "payg-granted-at"
# How many GPUs of a pay-as-you-go grant are cloud GPUs, out of the tenant's burst quota
# (rule payg-cloud-part, capacity/cloud.py); the rest of the grant is IDC GPUs.
ANNOTATION_PAYG_CLOUD_GPUS = PREFIX + "payg-cloud-gpus"
# The queue Volcano schedules a plain pod (a Deployment's, an InferenceService's) in.
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
# The queue of a Volcano Job's pod, as the job controller writes it (label and annotation).
JOB_POD_QUEUE_KEY = "volcano.sh/queue-name"


def pod_queue(meta: Mapping[str, Any]) -> str:
    """Rule pod-queue: the queue Volcano schedules a pod in, from a pod's metadata: the
    job controller's ``volcano.sh/queue-name`` (label, then annotation) on a Volcano Job's
    pod, else the annotation ``scheduling.volcano.sh/queue-name`` of a plain pod; "" when
    it has neither."""
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    return str(
        labels.get(JOB_POD_QUEUE_KEY)
        or annotations.get(JOB_POD_QUEUE_KEY)
        or annotations.get(VOLCANO_QUEUE_ANNOTATION)
        or ""
    )


# The PodGroup a pod Volcano schedules belongs to (set by Volcano's controllers).
POD_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
# On a spot Queue: how many of its jobs the platform has reclaimed, ever (a counter
# kube-state-metrics exports; rule spot-reclaim-count).
ANNOTATION_SPOT_RECLAIMED = PREFIX + "spot-reclaimed-jobs"
# Hybrid cloud (docs/hybrid-cloud.md): where a node is, and what a job may use.
LABEL_NODE_LOCATION = PREFIX + "node-location"  # idc | cloud
LABEL_CLOUD_PROVIDER = PREFIX + "cloud-provider"
LABEL_COMPLIANCE_ZONE = PREFIX + "compliance-zone"  # on IDC nodes of a compliance zone
LABEL_COMPLIANCE = PREFIX + "compliance"  # "restricted" on a job and its pods: IDC only
ANNOTATION_PLACEMENT = PREFIX + "placement"  # local-only | local-first | cloud-ok
ANNOTATION_IDC_LATENCY = PREFIX + "idc-latency-ms"  # on cloud nodes
# On a federated job's PropagationPolicy (rule federation-moves-counted): the member Karmada
# last placed the job in, and the members it moved the job away from (comma-separated).
ANNOTATION_PLACED_IN = PREFIX + "placed-in"
ANNOTATION_MOVED_FROM = PREFIX + "moved-from"
NODE_LOCATIONS = ("idc", "cloud")
COMPLIANCE_RESTRICTED = "restricted"
NODEGROUP_LABEL = "volcano.sh/nodegroup-name"  # read by Volcano's nodegroup plugin
REGION_LABEL = "topology.kubernetes.io/region"
# Virtual Kubelet's own taint on the nodes it registers (node/nodeutil, provider name as value).
CLOUD_TAINT_KEY = "virtual-kubelet.io/provider"
BURST_QUEUE = "cloud-burst"
QUEUE_TYPE_BURST = "burst"
# Rule spot-price's bounds, per GPU-hour: below SPOT_PRICE_LIMIT, with at most
# SPOT_PRICE_DECIMALS decimal places (the admission policy's pattern is built from them).
SPOT_PRICE_LIMIT = 1_000_000
SPOT_PRICE_DECIMALS = 6
MANAGED_BY = "gpucloud-platform"
FIELD_MANAGER = "gpucloud-platform"
MANAGED_SELECTOR = f"{LABEL_MANAGED_BY}={MANAGED_BY}"
# The ConfigMap in a tenant's namespace listing its leaf queues (rule queue-ownership).
TENANT_QUEUES_CONFIGMAP = "platform-queues"

# Spot queues' and PAYG queues' capability/deserved are written by the
# capacity modules with a partial apply, so under a manager of their own (a
# partial apply under FIELD_MANAGER would drop the labels and parent that the
# tenant's full apply set).
CAPACITY_FIELD_MANAGER = "gpucloud-platform-capacity"
# Node-group labels, taints and queue affinities (hybrid/service) are applied alone, under
# their own manager, for the same reason.
NODEGROUP_FIELD_MANAGER = "gpucloud-platform-nodegroups"
# A tenant's burst leaf in its queue list ConfigMap: a key the tenant module's own apply of
# that ConfigMap (under FIELD_MANAGER) must keep.
BURST_FIELD_MANAGER = "gpucloud-platform-burst"
# Volcano's own components write fields of every queue (vc-controller-manager defaults
# spec.parent; vc-scheduler and the queue controller write status). Who created a queue
# is judged without them (rule queue-name-owned).
VOLCANO_FIELD_MANAGERS = frozenset({"vc-controller-manager", "vc-scheduler", "queue-controller"})
SPOT_RECLAIM_LEASE = "spot-reclaim"
SPOT_RECLAIM_HISTORY = "spot-reclaim-history"
EVENT_REASON_SPOT_RECLAIMED = "SpotReclaimed"
# The in-tenant arbiter (arbiter/service.py): its Lease, its history ConfigMap (both in
# PLATFORM_NAMESPACE) and the reasons of the Events it records on the jobs it evicts and
# on the job it made room for.
QUEUE_ARBITER_LEASE = "queue-arbiter"
QUEUE_ARBITER_HISTORY = "queue-arbiter-history"
EVENT_REASON_ARBITER_EVICTED = "ArbiterEvicted"
EVENT_REASON_ARBITER_MADE_ROOM = "ArbiterMadeRoom"
# Counts of the jobs a platform action stopped, kept as annotations on the job's Queue
# (as ANNOTATION_SPOT_RECLAIMED is on the spot queue), exported by kube-state-metrics and
# alerted per tenant, so each tenant's alert route hears of them.
ANNOTATION_ARBITER_EVICTED = PREFIX + "arbiter-evicted-jobs"
ANNOTATION_GPU_QUARANTINE_DISRUPTED = PREFIX + "gpu-quarantine-disrupted-jobs"
# GPU health (gpu_health): the taint on a node whose GPUs failed, with effect NoSchedule.
TAINT_GPU_UNHEALTHY = PREFIX + "gpu-unhealthy"
# The Node condition types whose status True says a node's GPUs failed, by default: a
# node-problem-detector custom plugin reporting the GPUs sets a condition of its own name,
# GpuUnhealthy in the platform's docs (gpu_health's unhealthy_conditions and the event
# source's gpu_unhealthy_conditions).
GPU_UNHEALTHY_CONDITIONS = ("GpuUnhealthy",)
# On a quarantined node (gpu_health): when the platform quarantined it (RFC 3339), why (the
# failing signals), whether the platform cordoned it ("true") or found it cordoned already
# ("false": never uncordoned by the release), and since when it has been healthy again.
ANNOTATION_GPU_QUARANTINED_AT = PREFIX + "gpu-quarantined-at"
ANNOTATION_GPU_QUARANTINE_REASON = PREFIX + "gpu-quarantine-reason"
ANNOTATION_GPU_QUARANTINE_CORDONED = PREFIX + "gpu-quarantine-cordoned"
ANNOTATION_GPU_HEALTHY_SINCE = PREFIX + "gpu-healthy-since"
GPU_HEALTH_HISTORY = "gpu-health-history"
EVENT_REASON_GPU_QUARANTINED = "GpuQuarantined"
EVENT_REASON_GPU_RELEASED = "GpuReleased"

PLATFORM_NAMESPACE = "platform-system"
# The object store (docs/object-store.md): in platform-system, the platform's connection
# Secret; in a tenant's namespace, the Secret with the tenant's keys and the
# ServiceAccount that lists it (an InferenceService with an s3:// model runs as it).
OBJECT_STORE_NAME = "platform-object-store"
# In platform-system: each StorageClass's capacity (class -> size), written by the storage
# role from storage_classes[].capacity (rule storage-class-oversell).
STORAGE_CAPACITY_CONFIGMAP = "platform-storage-capacity"
# Kubernetes' ResourceQuota key of one class's requested storage: <class> + this.
STORAGE_CLASS_QUOTA_SUFFIX = ".storageclass.storage.k8s.io/requests.storage"
VOLCANO_NAMESPACE = "volcano-system"
ROOT_QUEUE = "root"

QUEUE_TYPE_SUBSCRIPTION = "subscription"
QUEUE_TYPE_TEAM = "team"
QUEUE_TYPE_PAYG = "payg"
QUEUE_TYPE_SPOT = "spot"
# The queues that hold what tenants bought (rule committed without the spot queues): the
# oversell guard reads only these, not the spot and team queues of every tenant, which
# with thousands of tenants is a third of a fleet list's bytes less.
COMMITTED_SELECTOR = (
    f"{MANAGED_SELECTOR},{LABEL_QUEUE_TYPE} in ({QUEUE_TYPE_SUBSCRIPTION},{QUEUE_TYPE_PAYG})"
)
# A tenant's three billing queues (what it bought and its spot queue), without the team
# queues under its subscription: what the spot and pay-as-you-go services read.
BILLING_SELECTOR = (
    f"{MANAGED_SELECTOR},{LABEL_QUEUE_TYPE} in "
    f"({QUEUE_TYPE_SUBSCRIPTION},{QUEUE_TYPE_PAYG},{QUEUE_TYPE_SPOT})"
)
QUEUE_TYPES = (QUEUE_TYPE_SUBSCRIPTION, QUEUE_TYPE_TEAM, QUEUE_TYPE_PAYG, QUEUE_TYPE_SPOT)
# The suffix each tenant-level queue type gets in its queue name.
QUEUE_SUFFIX = {
    QUEUE_TYPE_SUBSCRIPTION: "subscription",
    QUEUE_TYPE_PAYG: "payg",
    QUEUE_TYPE_SPOT: "spot",
    # A tenant's cloud quota, a leaf under the platform's cloud-burst queue (hybrid/burst).
    QUEUE_TYPE_BURST: "burst",
}

BILLING_TYPES = ("subscription", "payg", "spot")
# Rule billing-type-of-queue: what a GPU-second in a queue of each type bills as. A team
# queue is part of its tenant's subscription; the burst leaf is cloud quota bought by the
# hour. The meter (observability/metering_rules.py, which keeps a stdlib-only copy tested equal),
# the admission policy queue-billing and the job builders all read it.
BILLING_TYPE_OF_QUEUE_TYPE = {
    QUEUE_TYPE_SUBSCRIPTION: "subscription",
    QUEUE_TYPE_TEAM: "subscription",
    QUEUE_TYPE_PAYG: "payg",
    QUEUE_TYPE_SPOT: "spot",
    QUEUE_TYPE_BURST: "payg",
}
JOB_CLASSES = ("critical", "large", "normal", "debug", "spot")

# PriorityClass name -> (value, preemptionPolicy)
PRIORITY_CLASSES = {
    "critical-job": (1000, "PreemptLowerPriority"),
    "large-job": (800, "PreemptLowerPriority"),
    "normal-job": (100, "PreemptLowerPriority"),
    "debug-job": (50, "Never"),
    "spot-job": (50, "PreemptLowerPriority"),
}

# Volcano's sla plugin (jobs/sla): the admission deadline of a PodGroup. Volcano reads
# volcano.sh/sla-waiting-time first, then the bare sla-waiting-time
# (pkg/scheduler/api/job_info.go, SetPodGroup).
SLA_WAITING_ANNOTATION = "volcano.sh/sla-waiting-time"
SLA_WAITING_ANNOTATIONS = (SLA_WAITING_ANNOTATION, "sla-waiting-time")
# The PriorityClasses that may never carry a waiting time (rule sla-wait-by-class: debug
# jobs never preempt, spot jobs take nothing from anyone).
SLA_FORBIDDEN_PRIORITY_CLASSES = ("debug-job", "spot-job")

# vGPU resource names of Volcano's default device configuration (hybrid/vgpu;
# pkg/scheduler/api/devices/config/vgpu.go, config.go GetDefaultDevicesConfig).
VGPU_NUMBER = "volcano.sh/vgpu-number"
VGPU_MEMORY = "volcano.sh/vgpu-memory"
VGPU_CORES = "volcano.sh/vgpu-cores"
# Read only when the device ConfigMap names it (resourceMemoryPercentageName);
# the default configuration leaves it empty, so Volcano ignores it.
VGPU_MEMORY_PERCENTAGE = "volcano.sh/vgpu-memory-percentage"
VGPU_RESOURCES = (VGPU_NUMBER, VGPU_MEMORY, VGPU_CORES, VGPU_MEMORY_PERCENTAGE)
# The node annotation HAMi's device plugin writes and Volcano's vgpu device reads.
VGPU_NODE_REGISTER = "volcano.sh/node-vgpu-register"
# The vGPU resources a queue's capability bounds. Measured on vc-scheduler 1.15.1
# (tests/conformance/test_vgpu.py): a capability that does not name a resource leaves it
# unlimited (the capacity plugin keeps only the named scalars, and with enableHierarchy a
# queue inherits what its parent names, up to root, which names the cluster's total);
# a 0 for a scalar resource holds the queue to 0 (the job is not even enqueued). So every
# tenant queue names all three, 0 where nothing was bought.
VGPU_QUEUE_RESOURCES = (VGPU_NUMBER, VGPU_MEMORY, VGPU_CORES)

DNS_LABEL_MAX = 63
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# "tenant-" + tenant + "-" + "subscription" is the longest name a tenant gets
# without teams; team queues are checked one by one against the same limit.
TENANT_NAME_MAX = DNS_LABEL_MAX - len("tenant-") - len("-subscription")


def namespace_name(tenant: str) -> str:
    return f"tenant-{tenant}"


def dataset_claim(dataset: str, version: str) -> str:
    """The claim a published dataset version is mounted by (``datasets/objects``)."""
    return f"dataset-{dataset}-{version}"


def dataset_cache(dataset: str, version: str) -> str:
    """The Fluid Dataset and AlluxioRuntime of a published dataset version's cache
    (``datasets/cache``). Not ``dataset_claim``'s name: Fluid makes a claim named after
    its Dataset in the same namespace."""
    return f"cache-{dataset}-{version}"


def queue_name(tenant: str, queue_type: str, team: str | None = None) -> str:
    if queue_type == QUEUE_TYPE_TEAM:
        if not team:
            raise ValueError("a team queue needs a team name")
        return f"tenant-{tenant}-{team}"
    return f"tenant-{tenant}-{QUEUE_SUFFIX[queue_type]}"


def owner_tenant(labels: Mapping[str, Any] | None) -> str:
    """The tenant a platform object (a queue, a namespace, a graph) belongs to: its
    ``platform.io/tenant`` label, "" for none. Platform state: a tenant cannot write the
    label on a Queue or a Namespace (rule queue-ownership, ``queues/ownership``)."""
    return str((labels or {}).get(LABEL_TENANT) or "")


def is_managed(labels: Mapping[str, Any] | None) -> bool:
    """Whether the platform manages the object these labels are of."""
    return (labels or {}).get(LABEL_MANAGED_BY) == MANAGED_BY


def tenant_labels(tenant: str, **extra: str) -> dict[str, str]:
    labels = {LABEL_TENANT: tenant, LABEL_MANAGED_BY: MANAGED_BY}
    labels.update(extra)
    return labels


def queue_labels(tenant: str, queue_type: str, team: str | None = None) -> dict[str, str]:
    labels = tenant_labels(tenant, **{LABEL_QUEUE_TYPE: queue_type})
    if team:
        labels[LABEL_TEAM] = team
    return labels


def dns_label_errors(field: str, value: object, max_len: int = DNS_LABEL_MAX) -> list[FieldError]:
    """Rule dns-label: lower-case letters, digits and '-', starting and ending alphanumeric."""
    if not isinstance(value, str) or not value:
        return [FieldError(field, f"{value!r} must be a non-empty string (a DNS-1123 label)")]
    errors = []
    if not _DNS_LABEL.match(value):
        errors.append(
            FieldError(
                field,
                f"{value!r} is not a DNS-1123 label (lower-case letters, digits and '-', "
                "starting and ending with a letter or digit)",
            )
        )
    if len(value) > max_len:
        errors.append(
            FieldError(
                field, f"{value!r} is {len(value)} characters; at most {max_len} are allowed"
            )
        )
    return errors


def tenant_namespace_errors(namespace: object, field: str = "namespace") -> list[FieldError]:
    """Rule tenant-namespace: a DNS-1123 label of the form ``tenant-<name>`` whose name
    passes rule tenant-name (what ``namespace_name`` gives a tenant); anything else, such
    as ``kube-system`` or ``../x``, is not a tenant's namespace."""
    errors = dns_label_errors(field, namespace)
    if errors:
        return errors
    if not isinstance(namespace, str):  # narrows the type; cannot happen
        raise AssertionError("isinstance(namespace, str)")
    prefix = namespace_name("")
    tenant = namespace[len(prefix) :] if namespace.startswith(prefix) else ""
    if not tenant or tenant_name_errors(tenant, field):
        return [
            FieldError(
                field,
                f"{namespace!r} is not a tenant namespace ({prefix}<tenant>, the tenant name a "
                f"DNS-1123 label of at most {TENANT_NAME_MAX} characters)",
            )
        ]
    return []


def tenant_name_errors(tenant: object, field: str = "name") -> list[FieldError]:
    """Rule tenant-name: a DNS-1123 label short enough for every derived queue name."""
    return dns_label_errors(field, tenant, TENANT_NAME_MAX)


def team_name_errors(tenant: str, team: object, field: str) -> list[FieldError]:
    """Rule team-name: a DNS-1123 label whose queue name fits in 63 characters and
    cannot be mistaken for a tenant-level queue of this or another tenant."""
    room = DNS_LABEL_MAX - len(f"tenant-{tenant}-")
    errors = dns_label_errors(field, team, max(room, 1))
    if errors:
        return errors
    if not (isinstance(team, str)):  # narrows the type; cannot happen
        raise AssertionError("isinstance(team, str)")
    for suffix in QUEUE_SUFFIX.values():
        if team == suffix or team.endswith("-" + suffix):
            errors.append(
                FieldError(
                    field,
                    f"{team!r} would name queue 'tenant-{tenant}-{team}', which is reserved for the "
                    f"{suffix} queue of a tenant; choose a team name that does not end in '{suffix}'",
                )
            )
    return errors


# Label keys and values (k8s.io/apimachinery/pkg/util/validation: IsQualifiedName,
# IsValidLabelValue, IsDNS1123Subdomain).
LABEL_NAME_MAX = 63
LABEL_PREFIX_MAX = 253
LABEL_VALUE_MAX = 63
_LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME_WORDS = "letters, digits, '-', '_' and '.', starting and ending with a letter or digit"


DNS_SUBDOMAIN_MAX = 253


def is_dns_subdomain(value: object) -> bool:
    """A DNS-1123 subdomain (k8s.io/apimachinery IsDNS1123Subdomain): the one check every
    rule that names objects uses."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= DNS_SUBDOMAIN_MAX
        and bool(_DNS_SUBDOMAIN.match(value))
    )


def dns_subdomain_errors(field: str, value: object) -> list[FieldError]:
    """Rule dns-subdomain: an object name such as a Volcano Job's, lower-case letters, digits,
    '-' and '.', each dot-separated part starting and ending alphanumeric, at most 253
    characters."""
    if not isinstance(value, str) or not value:
        return [FieldError(field, f"{value!r} must be a non-empty string (a DNS-1123 subdomain)")]
    if len(value) > DNS_SUBDOMAIN_MAX:
        return [
            FieldError(
                field,
                f"{value!r} is {len(value)} characters; at most {DNS_SUBDOMAIN_MAX} are allowed",
            )
        ]
    if not _DNS_SUBDOMAIN.match(value):
        return [
            FieldError(
                field,
                f"{value!r} is not a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', "
                "each part starting and ending with a letter or digit)",
            )
        ]
    return []


def label_key_errors(field: str, key: object) -> list[FieldError]:
    """Rule label-key: a Kubernetes qualified name, ``[prefix/]name``: the optional prefix a
    DNS-1123 subdomain of at most 253 characters, the name at most 63 characters of
    letters, digits, '-', '_' and '.', starting and ending with a letter or digit."""
    if not isinstance(key, str) or not key:
        return [FieldError(field, f"{key!r} is not a label key (a non-empty string)")]
    prefix, slash, name = key.rpartition("/")
    problems = []
    if slash:
        if not prefix:
            problems.append("its prefix before '/' is empty")
        elif len(prefix) > LABEL_PREFIX_MAX:
            problems.append(
                f"its prefix is {len(prefix)} characters; at most {LABEL_PREFIX_MAX} are allowed"
            )
        elif not _DNS_SUBDOMAIN.match(prefix):
            problems.append(
                f"its prefix {prefix!r} is not a DNS-1123 subdomain (lower-case letters, digits, "
                "'-' and '.')"
            )
    if not name:
        problems.append("its name is empty")
    elif len(name) > LABEL_NAME_MAX:
        problems.append(f"its name is {len(name)} characters; at most {LABEL_NAME_MAX} are allowed")
    elif not _LABEL_NAME.match(name):
        problems.append(f"its name {name!r} must be {_LABEL_NAME_WORDS}")
    if not problems:
        return []
    return [
        FieldError(
            field,
            f"{key!r} is not a label key ([prefix/]name): " + "; ".join(problems),
        )
    ]


def label_value_errors(field: str, value: object) -> list[FieldError]:
    """Rule label-value: a Kubernetes label value, empty or at most 63 characters of letters,
    digits, '-', '_' and '.', starting and ending with a letter or digit."""
    if not isinstance(value, str):
        return [FieldError(field, f"{value!r} must be a string (a label value)")]
    if len(value) > LABEL_VALUE_MAX:
        return [
            FieldError(
                field,
                f"{value!r} is {len(value)} characters; a label value has at most "
                f"{LABEL_VALUE_MAX}",
            )
        ]
    if value and not _LABEL_NAME.match(value):
        return [
            FieldError(field, f"{value!r} is not a label value (empty, or {_LABEL_NAME_WORDS})")
        ]
    return []


def label_map_errors(field: str, labels: object) -> list[FieldError]:
    """Rule label-key and rule label-value over a mapping of label key to value; each error
    names ``<field>.<key>``."""
    if not isinstance(labels, Mapping):
        return [FieldError(field, f"{labels!r} must be a mapping of label key to value")]
    errors: list[FieldError] = []
    for key, value in labels.items():
        where = f"{field}.{key}"
        errors += label_key_errors(where, key)
        errors += label_value_errors(where, value)
    return errors


# One requirement of a label selector string (k8s.io/apimachinery/pkg/labels/selector.go):
# ``key``, ``!key``, ``key=value``, ``key==value``, ``key!=value``, ``key in (a,b)``,
# ``key notin (a,b)``.
_SET_REQUIREMENT = re.compile(r"^(?P<key>\S+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_EQUALITY_REQUIREMENT = re.compile(r"^(?P<key>[^=!\s]+)\s*(?P<op>==|!=|=)\s*(?P<value>\S*)$")


def _selector_terms(selector: str) -> list[str]:
    """The requirements of a selector: split on the commas outside parentheses."""
    terms, depth, current = [], 0, []
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            terms.append("".join(current))
            current = []
        else:
            current.append(char)
    terms.append("".join(current))
    return [t.strip() for t in terms]


def label_selector_errors(field: str, selector: object) -> list[FieldError]:
    """Rule label-selector: a label selector string (``a=b,c!=d,e in (f,g),!h``) whose every
    key is a label key and every value a label value (rule label-key, rule label-value);
    None or empty selects everything."""
    if selector is None:
        return []
    if not isinstance(selector, str):
        return [FieldError(field, f"{selector!r} must be a label selector string")]
    if not selector.strip():
        return []
    errors: list[FieldError] = []
    for term in _selector_terms(selector):
        where = f"{field}[{term!r}]"
        set_match = _SET_REQUIREMENT.match(term)
        equality = _EQUALITY_REQUIREMENT.match(term)
        if set_match:
            key = set_match["key"]
            values = [v.strip() for v in set_match["values"].split(",")]
            errors += label_key_errors(where, key)
            for value in values:
                errors += label_value_errors(where, value)
        elif equality:
            errors += label_key_errors(where, equality["key"])
            errors += label_value_errors(where, equality["value"])
        elif (term and not any(c in term for c in "=!() ")) or term.startswith("!"):
            errors += label_key_errors(where, term[1:] if term.startswith("!") else term)
        else:
            errors.append(
                FieldError(
                    field,
                    f"{selector!r} is not a label selector: {term!r} is not key, !key, key=value, "
                    "key!=value, key in (values) or key notin (values)",
                )
            )
    return errors
