# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The names, labels and annotations every part of the platform shares.

This module is the code form of CONVENTIONS.md: change a name here and in
that document together, never one without the other.
"""

from __future__ import annotations

import re

from .errors import FieldError

# API versions: Kubernetes 1.35 and Volcano 1.15.1. Every file names them from here.
QUEUE_API = "scheduling.volcano.sh/v1beta1"
PODGROUP_API = "scheduling.volcano.sh/v1beta1"
JOB_API = "batch.volcano.sh/v1alpha1"
HYPERNODE_API = "topology.volcano.sh/v1alpha1"
ADMISSION_API = "admissionregistration.k8s.io/v1"
LEASE_API = "coordination.k8s.io/v1"
SERVICE_CIDR_API = "networking.k8s.io/v1"

# Phases, as Volcano and Kubernetes report them.
JOB_FINISHED_PHASES = ("Completed", "Failed", "Terminated", "Aborted")  # a Job that holds nothing
JOB_FAILED_PHASES = ("Failed", "Aborted", "Terminated")
JOB_STARTED_PHASES = ("Running", "Completing", "Completed")  # a Job that got its pods
JOB_HOLDING_PHASES = ("Running",)  # a Job whose pods hold their GPUs
PODGROUP_WAITING_PHASES = ("Pending", "Inqueue")  # not yet allocated by the scheduler
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
MANAGED_BY = "gpucloud-platform"
FIELD_MANAGER = "gpucloud-platform"
MANAGED_SELECTOR = f"{LABEL_MANAGED_BY}={MANAGED_BY}"

# Spot queues' and PAYG queues' capability/deserved are written by the
# capacity modules with a partial apply, so under a manager of their own (a
# partial apply under FIELD_MANAGER would drop the labels and parent that the
# tenant's full apply set).
CAPACITY_FIELD_MANAGER = "gpucloud-platform-capacity"
SPOT_RECLAIM_LEASE = "spot-reclaim"
SPOT_RECLAIM_HISTORY = "spot-reclaim-history"
EVENT_REASON_SPOT_RECLAIMED = "SpotReclaimed"

PLATFORM_NAMESPACE = "platform-system"
VOLCANO_NAMESPACE = "volcano-system"
ROOT_QUEUE = "root"

QUEUE_TYPE_SUBSCRIPTION = "subscription"
QUEUE_TYPE_TEAM = "team"
QUEUE_TYPE_PAYG = "payg"
QUEUE_TYPE_SPOT = "spot"
QUEUE_TYPES = (QUEUE_TYPE_SUBSCRIPTION, QUEUE_TYPE_TEAM, QUEUE_TYPE_PAYG, QUEUE_TYPE_SPOT)
# The suffix each tenant-level queue type gets in its queue name.
QUEUE_SUFFIX = {
    QUEUE_TYPE_SUBSCRIPTION: "subscription",
    QUEUE_TYPE_PAYG: "payg",
    QUEUE_TYPE_SPOT: "spot",
}

BILLING_TYPES = ("subscription", "payg", "spot")
JOB_CLASSES = ("critical", "large", "normal", "debug", "spot")

# PriorityClass name -> (value, preemptionPolicy)
PRIORITY_CLASSES = {
    "critical-job": (1000, "PreemptLowerPriority"),
    "large-job": (800, "PreemptLowerPriority"),
    "normal-job": (100, "PreemptLowerPriority"),
    "debug-job": (50, "Never"),
    "spot-job": (50, "PreemptLowerPriority"),
}

DNS_LABEL_MAX = 63
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# "tenant-" + tenant + "-" + "subscription" is the longest name a tenant gets
# without teams; team queues are checked one by one against the same limit.
TENANT_NAME_MAX = DNS_LABEL_MAX - len("tenant-") - len("-subscription")


def namespace_name(tenant: str) -> str:
    return f"tenant-{tenant}"


def queue_name(tenant: str, queue_type: str, team: str | None = None) -> str:
    if queue_type == QUEUE_TYPE_TEAM:
        if not team:
            raise ValueError("a team queue needs a team name")
        return f"tenant-{tenant}-{team}"
    return f"tenant-{tenant}-{QUEUE_SUFFIX[queue_type]}"


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
