# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``federation_platform`` through the flow contract (``kube.flow``): the platform's
own state in the Karmada API server, and its pure steps.

Rule held here:

* Rule federation-platform-propagation (``platform_propagation``).

* ``parse``: the options as a ``FederationPlatformRequest``: the scheduler configuration
  as the scheduling_policy role takes it (actions, tiers, configurations; checked by
  ``policy.scheduler_conf_rules.scheduler_conf_errors``, each error naming its option)
  and ``cloud_burst_gpus``;
* ``plan``: the templates and policies that differ from Karmada's, in write order (the
  Namespace, then the templates, then the policies). Nothing is ever deleted: ``cloud-burst``
  left out is left as it is (its jobs may be running in a cloud member);
* ``report``: what the plan says, as a check-mode run says it.

The reads and writes are ``federation.platform_federation_io``'s. Pure: nothing here reads
or writes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..common.errors import FieldError, raise_if
from ..common.names import (
    BURST_QUEUE,
    LABEL_MANAGED_BY,
    MANAGED_BY,
    QUEUE_API,
    VOLCANO_NAMESPACE,
)
from ..hybrid.burst import burst_quota_errors
from ..hybrid.federation_placement import POLICY_API, member_failover_taint_policy
from ..hybrid.queues import burst_queue
from ..kube.flow import Flow
from ..policy.priority_classes import priority_class_manifests
from ..policy.scheduler_conf_builder import (
    DEFAULT_ACTIONS,
    DEFAULT_TIERS,
    render_scheduler_conf,
    scheduler_configmap,
)
from ..policy.scheduler_conf_rules import scheduler_conf_errors
from ..tenants.changes import Changes, ObjectChange, object_changes
from ..tenants.live import TenantLive
from ..tenants.summary import object_counts
from .interpreter import CONFIG_API, volcano_job_customization
from .members import CLOUD, IDC
from .propagation import propagation_policy
from .run_report import record_writes, result

# Karmada's namespace sync controller copies every Namespace it holds to every member
# unless it carries this label (pkg/controllers/namespace/namespace_sync_controller.go
# Reconcile). A member already has volcano-system from its Volcano install, and the
# copy would not overwrite it: its Work would fail in every member, for ever
# (pkg/util/objectwatcher/objectwatcher.go allowUpdate refuses an object Karmada did not
# make). The Namespace is in Karmada only so that the ConfigMap template has one.
SKIP_AUTO_PROPAGATION = "namespace.karmada.io/skip-auto-propagation"
# Every member already holds a scheduler ConfigMap (its bring-up's) and may hold the
# PriorityClasses or cloud-burst (a single-cluster bring-up's): Karmada leaves an object
# it did not make alone unless the policy says Overwrite
# (pkg/apis/policy/v1alpha1/propagation_types.go ConflictResolution, default Abort).
OVERWRITE = "Overwrite"

POLICY_PRIORITY_CLASSES = "gpucloud-platform-priority-classes"
POLICY_SCHEDULER_CONF = "gpucloud-platform-scheduler-conf"
POLICY_CLOUD_BURST = "gpucloud-platform-cloud-burst"

# Every kind the platform writes in Karmada, in the order a run reads them (one LIST
# each, selected by platform.io/managed-by); the namespaced ones live in volcano-system.
PLATFORM_KINDS = (
    ("v1", "Namespace"),
    (CONFIG_API, "ResourceInterpreterCustomization"),
    (POLICY_API, "ClusterTaintPolicy"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("v1", "ConfigMap"),
    (QUEUE_API, "Queue"),
    (POLICY_API, "PropagationPolicy"),
    (POLICY_API, "ClusterPropagationPolicy"),
)
NAMESPACED_KINDS = ("ConfigMap", "PropagationPolicy")
POLICY_KINDS = ("PropagationPolicy", "ClusterPropagationPolicy")

# option -> the key of volcano-scheduler.conf it sets
CONF_OPTIONS = {
    "scheduler_actions": "actions",
    "scheduler_tiers": "tiers",
    "scheduler_configurations": "configurations",
}


@dataclass(frozen=True)
class FederationPlatformRequest:
    """The ``federation_platform`` module's options, checked: ``conf_text`` the scheduler
    configuration to write; ``cloud_burst_gpus`` None when left out (not written, not
    deleted)."""

    conf_text: str
    cloud_burst_gpus: int | None = None


@dataclass(frozen=True)
class FederationPlatformFacts:
    """What the run read from Karmada: the platform's objects per kind (kind -> name ->
    object)."""

    objects: Mapping[str, Mapping[str, Mapping[str, Any]]] = field(default_factory=dict)

    @property
    def namespace_exists(self) -> bool:
        return VOLCANO_NAMESPACE in (self.objects.get("Namespace") or {})


@dataclass(frozen=True)
class PlatformFederation:
    """What the platform writes in Karmada for itself: ``templates`` (the Namespace first)
    and ``policies``."""

    templates: list[dict[str, Any]]
    policies: list[dict[str, Any]]


@dataclass(frozen=True)
class FederationPlatformRun:
    """The plan of one run: ``writes`` in batches, each after the one before (within one,
    concurrently)."""

    facts: FederationPlatformFacts
    writes: tuple[tuple[ObjectChange, ...], ...] = ()


# -- parse -----------------------------------------------------------------------------------


def _list_errors(value: object, option: str, item: type, what: str) -> list[FieldError]:
    """A list option of ``item`` elements, as the scheduling_policy role refuses one."""
    if isinstance(value, (str, Mapping)) or not isinstance(value, Sequence):
        return [FieldError(option, f"{value!r} is not a list; give a list of {what}")]
    return [
        FieldError(f"{option}[{i}]", f"{v!r} is not {what}")
        for i, v in enumerate(value)
        if not isinstance(v, item) or (item is str and not str(v).strip())
    ]


def _option_of(error: FieldError) -> FieldError:
    """A scheduler configuration error, its field named by the option that set it."""
    for option, key in CONF_OPTIONS.items():
        if error.field == key or error.field.startswith((f"{key}[", f"{key}.")):
            return FieldError(option + error.field[len(key) :], error.message)
    return FieldError("scheduler_tiers", str(error)) if not error.field else error


def conf_text(params: Mapping[str, Any]) -> tuple[str, list[FieldError]]:
    """The scheduler configuration's text from the options (defaults: the platform's
    actions and tiers) and what rules it breaks, each error naming its option."""
    actions = params.get("scheduler_actions")
    tiers = params.get("scheduler_tiers")
    configurations = params.get("scheduler_configurations")
    errors = []
    if actions is not None:
        errors += _list_errors(actions, "scheduler_actions", str, "an action name")
    if tiers is not None:
        errors += _list_errors(tiers, "scheduler_tiers", Mapping, "a tier mapping")
    if configurations is not None:
        errors += _list_errors(
            configurations, "scheduler_configurations", Mapping, "a configuration mapping"
        )
    if errors:
        return "", errors
    text = render_scheduler_conf(
        actions=DEFAULT_ACTIONS if actions is None else [a.strip() for a in actions],
        tiers=DEFAULT_TIERS if tiers is None else tiers,
        configurations=configurations or None,
    )
    return text, [_option_of(e) for e in scheduler_conf_errors(text)]


def parse(params: Mapping[str, Any]) -> FederationPlatformRequest:
    """Every option checked at once, before the module connects."""
    text, errors = conf_text(params)
    gpus = params.get("cloud_burst_gpus")
    if gpus is not None:
        errors += [
            FieldError("cloud_burst_gpus", e.message)
            for e in burst_quota_errors(gpus, None, BURST_QUEUE)
        ]
    raise_if(errors)
    return FederationPlatformRequest(conf_text=text, cloud_burst_gpus=gpus)


# -- the rule --------------------------------------------------------------------------------


def platform_namespace() -> dict[str, Any]:
    """volcano-system in Karmada, for the ConfigMap template only (not copied: see
    SKIP_AUTO_PROPAGATION)."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": VOLCANO_NAMESPACE,
            "labels": {LABEL_MANAGED_BY: MANAGED_BY, SKIP_AUTO_PROPAGATION: "true"},
        },
    }


def platform_policy(
    kind: str, name: str, objects: Sequence[Mapping[str, Any]], *where: str
) -> dict[str, Any]:
    """A policy sending ``objects`` to the members at ``where``, overwriting a member's
    own copy."""
    meta: dict[str, Any] = {"name": name, "labels": {LABEL_MANAGED_BY: MANAGED_BY}}
    if kind == "PropagationPolicy":
        meta["namespace"] = objects[0]["metadata"]["namespace"]
    policy = propagation_policy(kind, meta, objects, *where)
    policy["spec"]["conflictResolution"] = OVERWRITE
    return policy


def as_served(priority_class: Mapping[str, Any]) -> dict[str, Any]:
    """The PriorityClass without ``globalDefault: false``: the API server leaves a false
    one out of what it returns (``omitempty``), so a template saying it would look changed
    on every run; false is the default."""
    return {k: v for k, v in priority_class.items() if not (k == "globalDefault" and v is False)}


def platform_propagation(conf_text: str, cloud_burst_gpus: int | None = None) -> PlatformFederation:
    """Rule federation-platform-propagation: the platform's interpreter customization
    stays in Karmada, its PriorityClasses and Volcano scheduler ConfigMap go to every
    member (each member's own copy overwritten) and its ``cloud-burst`` queue, when given,
    to the cloud members only.

    * Karmada only: the ResourceInterpreterCustomization of a Volcano Job (rule
      federation-job-replicas; Karmada's, nothing to propagate), the ClusterTaintPolicy
      that marks a lost member (rule federation-member-failover; Karmada's too) and the
      Namespace volcano-system (the ConfigMap template's; each member has its own);
    * every member (IDC and cloud): the five PriorityClasses (a ClusterPropagationPolicy)
      and the Volcano scheduler ConfigMap holding ``conf_text`` (a PropagationPolicy in
      volcano-system), each member's copy overwritten;
    * cloud members only, when ``cloud_burst_gpus`` is given: the parent queue
      ``cloud-burst`` capped at that many GPUs (rule burst-cloud-only), parent of the
      tenants' burst leaves. Left out, nothing is said about it: a ``cloud-burst`` in
      Karmada is neither written nor deleted."""
    classes = [as_served(c) for c in priority_class_manifests()]
    configmap = scheduler_configmap(conf_text)
    templates = [
        platform_namespace(),
        volcano_job_customization(),
        member_failover_taint_policy(),
        *classes,
        configmap,
    ]
    policies = [
        platform_policy("ClusterPropagationPolicy", POLICY_PRIORITY_CLASSES, classes, IDC, CLOUD),
        platform_policy("PropagationPolicy", POLICY_SCHEDULER_CONF, [configmap], IDC, CLOUD),
    ]
    if cloud_burst_gpus is not None:
        # No node groups: Karmada holds no Nodes, and a cloud member's nodes are all cloud.
        queue = burst_queue([], cloud_burst_gpus)
        templates.append(queue)
        policies.append(
            platform_policy("ClusterPropagationPolicy", POLICY_CLOUD_BURST, [queue], CLOUD)
        )
    return PlatformFederation(templates=templates, policies=policies)


# -- plan ------------------------------------------------------------------------------------


def plan(
    request: FederationPlatformRequest, facts: FederationPlatformFacts
) -> FederationPlatformRun:
    """What differs from Karmada, in write order: the Namespace, the other templates, the
    policies (a policy is written after what it selects, so Karmada never binds a
    template that is not there yet)."""
    wanted = platform_propagation(request.conf_text, request.cloud_burst_gpus)
    live = TenantLive(name="", objects={k: dict(v) for k, v in facts.objects.items()})
    templates = object_changes(wanted.templates, live)
    batches = (
        [c for c in templates if c[0]["kind"] == "Namespace"],
        [c for c in templates if c[0]["kind"] != "Namespace"],
        object_changes(wanted.policies, live),
    )
    return FederationPlatformRun(facts=facts, writes=tuple(tuple(b) for b in batches if b))


# -- report ----------------------------------------------------------------------------------


def record_plan(planned: FederationPlatformRun, changes: Changes) -> None:
    """Every write of the plan, in order, as ``changes`` records them."""
    record_writes(planned.writes, changes)


def report(request: FederationPlatformRequest, planned: FederationPlatformRun) -> dict[str, Any]:
    """What a check-mode run reports."""
    changes = Changes()
    record_plan(planned, changes)
    return result(changes)


def federation_platform_flow(
    gather: Callable[[FederationPlatformRequest, Any], FederationPlatformFacts],
    apply: Callable[[FederationPlatformRequest, FederationPlatformRun, Any, bool], dict[str, Any]],
) -> Flow[FederationPlatformRequest, FederationPlatformFacts, FederationPlatformRun]:
    """The module's flow over these pure steps and the I/O's ``gather`` and ``apply``."""
    return Flow(parse=parse, gather=gather, plan=plan, apply=apply, report=report)


# -- summary ---------------------------------------------------------------------------------


def federation_platform_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    """What was (in check mode, would be) written in Karmada, in one line a person reads."""
    gpus = params.get("cloud_burst_gpus")
    burst = "left as it is" if gpus is None else f"{gpus} GPUs"
    objects = result.get("objects") or []
    return [
        f"platform in the federation: {object_counts(objects, check_mode)} "
        f"(PriorityClasses and scheduler conf to every member, {BURST_QUEUE} {burst})"
    ]
