# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The job class table: the one place that says what a class of job gets.

A class (``platform.io/job-class``) decides the PriorityClass, the network
topology constraint, the queue types it may be submitted to, how large it may
be and the billing type. The defaults follow the design (sections 5.3 and
8.5); a caller may merge a mapping over them (``job_class_table(overrides)``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..common.errors import FieldError, raise_if
from ..common.names import (
    BILLING_TYPE_OF_QUEUE_TYPE,
    JOB_CLASSES,
    PRIORITY_CLASSES,
    QUEUE_TYPE_PAYG,
    QUEUE_TYPE_SPOT,
    QUEUE_TYPE_SUBSCRIPTION,
    QUEUE_TYPE_TEAM,
    QUEUE_TYPES,
    SLA_FORBIDDEN_PRIORITY_CLASSES,
)
from ..hybrid.placement import PLACEMENTS
from .sla import SLA_WAITING_MAX_SECONDS

TOPOLOGY_MODES = ("hard", "soft")
# Billing type of a job in a queue of this type (label platform.io/billing-type).


@dataclass(frozen=True)
class JobClass:
    """One row of the class table.

    ``network_topology`` is the Volcano Job's ``spec.networkTopology`` (None:
    no constraint). ``max_gpus``/``min_gpus`` bound the GPUs of the whole job
    (None: no bound). ``multi_node`` False means the job is one pod.
    ``billing_type`` None means "the billing type of the queue".
    ``preemptable`` False marks every task template
    ``volcano.sh/preemptable: "false"`` (neither preempt nor reclaim takes it).
    ``termination_grace_seconds`` None keeps the Kubernetes default.
    ``placement``: the class's hybrid-cloud placement (``hybrid/placement``), which a job's
    own overrides; None: none.
    ``sla_waiting_seconds``: how long the job's PodGroup may wait for admission before
    Volcano's sla plugin admits it past its queue's capability, so that preempt and
    reclaim start for it (``jobs/sla``); None: the job waits for room like any other
    (rule sla-wait-by-class: never on debug or spot).
    """

    name: str
    priority_class: str
    network_topology: dict[str, Any] | None
    queue_types: tuple[str, ...]
    max_gpus: int | None = None
    min_gpus: int | None = None
    multi_node: bool = True
    billing_type: str | None = None
    preemptable: bool = True
    max_retry: int = 3
    termination_grace_seconds: int | None = None
    sla_waiting_seconds: int | None = None
    # Where the class's jobs may run in a hybrid cluster (hybrid/placement): a job's own
    # placement wins; None: wherever its queue's node groups allow.
    placement: str | None = None

    def billing_for(self, queue_type: str) -> str:
        """Rule billing-type: the class's own billing type, else the queue's."""
        return self.billing_type or BILLING_TYPE_OF_QUEUE_TYPE[queue_type]

    def as_dict(self) -> dict[str, Any]:
        return {
            "priority_class": self.priority_class,
            "network_topology": dict(self.network_topology) if self.network_topology else None,
            "queue_types": list(self.queue_types),
            "max_gpus": self.max_gpus,
            "min_gpus": self.min_gpus,
            "multi_node": self.multi_node,
            "billing_type": self.billing_type,
            "preemptable": self.preemptable,
            "max_retry": self.max_retry,
            "termination_grace_seconds": self.termination_grace_seconds,
            "sla_waiting_seconds": self.sla_waiting_seconds,
            "placement": self.placement,
        }


_LEAF_PAID = (QUEUE_TYPE_SUBSCRIPTION, QUEUE_TYPE_TEAM, QUEUE_TYPE_PAYG)
_SUBSCRIPTION_ONLY = (QUEUE_TYPE_SUBSCRIPTION, QUEUE_TYPE_TEAM)

DEFAULT_CLASSES: dict[str, JobClass] = {
    # Design 5.3: critical inference and training run in subscription (team)
    # queues; 8.5: inference needs no topology constraint. Never preempted.
    "critical": JobClass(
        name="critical",
        priority_class="critical-job",
        network_topology=None,
        queue_types=_SUBSCRIPTION_ONLY,
        preemptable=False,
        sla_waiting_seconds=5,
    ),
    # 32+ GPUs, one network performance domain (8.5: hard, tier 2).
    "large": JobClass(
        name="large",
        priority_class="large-job",
        network_topology={"mode": "hard", "highestTierAllowed": 2},
        queue_types=_LEAF_PAID,
        min_gpus=32,
        sla_waiting_seconds=5,
    ),
    "normal": JobClass(
        name="normal",
        priority_class="normal-job",
        network_topology={"mode": "soft"},
        queue_types=_LEAF_PAID,
        sla_waiting_seconds=10,
    ),
    # One node, at most 8 GPUs, subscription (team) queues only (5.3).
    "debug": JobClass(
        name="debug",
        priority_class="debug-job",
        network_topology=None,
        queue_types=_SUBSCRIPTION_ONLY,
        max_gpus=8,
        multi_node=False,
    ),
    # Spot queues only; 5-minute graceful stop for a checkpoint (second document).
    "spot": JobClass(
        name="spot",
        priority_class="spot-job",
        network_topology={"mode": "soft"},
        queue_types=(QUEUE_TYPE_SPOT,),
        billing_type="spot",
        termination_grace_seconds=300,
    ),
}

_OVERRIDE_KEYS = tuple(DEFAULT_CLASSES["large"].as_dict())


def _int_or_none_errors(field: str, value: Any, minimum: int) -> list[FieldError]:
    if value is None:
        return []
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        return [
            FieldError(
                field, f"{value!r} must be a whole number >= {minimum}, or null for no bound"
            )
        ]
    return []


def topology_errors(field: str, value: Any) -> list[FieldError]:
    """Rule network-topology: null, {mode: soft} or {mode: hard, highestTierAllowed: N >= 1}."""
    if value is None:
        return []
    if not isinstance(value, Mapping):
        return [
            FieldError(
                field,
                f"{value!r} must be a mapping like {{mode: hard, highestTierAllowed: 2}} or null",
            )
        ]
    errors = []
    unknown = sorted(set(value) - {"mode", "highestTierAllowed", "highestTierName"})
    if unknown:
        errors.append(
            FieldError(
                field, f"unknown key(s) {', '.join(unknown)}; use mode and highestTierAllowed"
            )
        )
    mode = value.get("mode")
    if mode not in TOPOLOGY_MODES:
        errors.append(
            FieldError(f"{field}.mode", f"{mode!r} is not one of {', '.join(TOPOLOGY_MODES)}")
        )
    tier = value.get("highestTierAllowed")
    if tier is not None and (isinstance(tier, bool) or not isinstance(tier, int) or tier < 1):
        errors.append(
            FieldError(f"{field}.highestTierAllowed", f"{tier!r} must be a whole number >= 1")
        )
    if mode == "hard" and tier is None and not value.get("highestTierName"):
        errors.append(
            FieldError(
                f"{field}.highestTierAllowed",
                "hard mode needs the highest tier a job may span, e.g. 2",
            )
        )
    return errors


def _override_errors(name: str, row: Any) -> list[FieldError]:
    base = f"job_classes.{name}"
    if name not in DEFAULT_CLASSES:
        return [
            FieldError(
                base, f"{name!r} is not a job class; the classes are {', '.join(JOB_CLASSES)}"
            )
        ]
    if not isinstance(row, Mapping):
        return [FieldError(base, f"{row!r} must be a mapping of {', '.join(_OVERRIDE_KEYS)}")]
    errors = []
    for key in sorted(set(row) - set(_OVERRIDE_KEYS)):
        errors.append(
            FieldError(f"{base}.{key}", f"unknown setting; use one of {', '.join(_OVERRIDE_KEYS)}")
        )
    if "priority_class" in row and row["priority_class"] not in PRIORITY_CLASSES:
        errors.append(
            FieldError(
                f"{base}.priority_class",
                f"{row['priority_class']!r} is not a platform PriorityClass; use one of {', '.join(PRIORITY_CLASSES)}",
            )
        )
    if "network_topology" in row:
        errors.extend(topology_errors(f"{base}.network_topology", row["network_topology"]))
    if "queue_types" in row:
        types = row["queue_types"]
        if (
            not isinstance(types, list | tuple)
            or not types
            or any(t not in QUEUE_TYPES for t in types)
        ):
            errors.append(
                FieldError(
                    f"{base}.queue_types",
                    f"{types!r} must be a non-empty list of {', '.join(QUEUE_TYPES)}",
                )
            )
    for key, minimum in (("max_gpus", 0), ("min_gpus", 0), ("termination_grace_seconds", 0)):
        if key in row:
            errors.extend(_int_or_none_errors(f"{base}.{key}", row[key], minimum))
    if "max_retry" in row and (
        isinstance(row["max_retry"], bool)
        or not isinstance(row["max_retry"], int)
        or row["max_retry"] < 0
    ):
        errors.append(
            FieldError(f"{base}.max_retry", f"{row['max_retry']!r} must be a whole number >= 0")
        )
    errors.extend(sla_setting_errors(name, row))
    if "placement" in row and row["placement"] not in (None, *PLACEMENTS):
        errors.append(
            FieldError(
                f"{base}.placement",
                f"{row['placement']!r} must be {', '.join(PLACEMENTS)} or null (rule placement)",
            )
        )
    for key in ("multi_node", "preemptable"):
        if key in row and not isinstance(row[key], bool):
            errors.append(FieldError(f"{base}.{key}", f"{row[key]!r} must be true or false"))
    if "billing_type" in row and row["billing_type"] not in (None, "subscription", "payg", "spot"):
        errors.append(
            FieldError(
                f"{base}.billing_type",
                f"{row['billing_type']!r} must be subscription, payg, spot or null",
            )
        )
    return errors


def sla_setting_errors(name: str, row: Mapping[str, Any]) -> list[FieldError]:
    """Rule sla-wait-by-class, for the table: a waiting time is null or 1 to
    SLA_WAITING_MAX_SECONDS seconds, and never on a class whose PriorityClass must not take
    GPUs from others (debug never preempts; spot takes from nobody)."""
    if "sla_waiting_seconds" not in row:
        return []
    field = f"job_classes.{name}.sla_waiting_seconds"
    value = row["sla_waiting_seconds"]
    if value is None:
        return []
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not 1 <= value <= SLA_WAITING_MAX_SECONDS
    ):
        return [
            FieldError(
                field,
                f"{value!r} must be a whole number of seconds from 1 to {SLA_WAITING_MAX_SECONDS}, or null",
            )
        ]
    priority_class = row.get("priority_class", DEFAULT_CLASSES[name].priority_class)
    if priority_class in SLA_FORBIDDEN_PRIORITY_CLASSES:
        return [
            FieldError(
                field,
                f"{value!r}: a {priority_class} never takes GPUs from other jobs, so it is never admitted "
                "past its queue's capability; set null",
            )
        ]
    return []


def job_class_table(overrides: Mapping[str, Any] | None = None) -> dict[str, JobClass]:
    """Rule job-class-table: the defaults with the caller's settings merged over them, per class
    and per setting; raises PlatformValidationError naming every bad setting."""
    overrides = overrides or {}
    errors: list[FieldError] = []
    for name, row in overrides.items():
        errors.extend(_override_errors(str(name), row))
    raise_if(errors)
    table = dict(DEFAULT_CLASSES)
    for name, row in overrides.items():
        changes = dict(row)
        if "queue_types" in changes:
            changes["queue_types"] = tuple(changes["queue_types"])
        if changes.get("network_topology") is not None:
            changes["network_topology"] = dict(changes["network_topology"])
        table[name] = replace(table[name], **changes)
    return table


def class_queue_errors(
    job_class: JobClass, queue: str, queue_type: str | None, field: str = "queue"
) -> list[FieldError]:
    """Rule class-fits-queue: a class is submitted only to the queue types of its table row."""
    if queue_type is None:
        return [
            FieldError(
                field,
                f"{queue!r} has no platform.io/queue-type label; submit to a queue the platform created",
            )
        ]
    if queue_type in job_class.queue_types:
        return []
    return [
        FieldError(
            field,
            f"{queue!r} is a {queue_type} queue and class {job_class.name} runs only in "
            f"{' or '.join(job_class.queue_types)} queues; choose such a queue or another class",
        )
    ]
