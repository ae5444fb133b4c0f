# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``federation_platform`` through the flow contract (``kube.flow``): the platform's
own state in the Karmada API server, and its pure steps.

Rule held here:

* Rule federation-platform-propagation (``platform_propagation``).
* Rule federation-admission (``federation_admission``).

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
    ADMISSION_API,
    BURST_QUEUE,
    LABEL_MANAGED_BY,
    MANAGED_BY,
    PLATFORM_NAMESPACE,
    QUEUE_API,
    VOLCANO_NAMESPACE,
)
from ..hybrid.burst import burst_quota_errors
from ..hybrid.federation_placement import POLICY_API, member_failover_taint_policy
from ..hybrid.queues import burst_queue
from ..kube.flow import Flow
from ..policy.admission import admission_manifests, parent_queues_configmap
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
from .platform_admission import (
    AdmissionSettings,
    last_parameterised_errors,
    parse_admission,
    unwanted_admission,
)
from .propagation import propagation_policy
from .run_report import record_deletes, record_writes, result

# Karmada's namespace sync controller copies every Namespace it holds to every member
# unless it carries this label (pkg/controllers/namespace/namespace_sync_controller.go
# Reconcile). A member already has volcano-system from its Volcano install, and the
# copy would not overwrite it: its Work would fail in every member, for ever
# (pkg/util/objectwatcher/objectwatcher.go allowUpdate refuses an object Karmada did not
# make). The Namespace is in Karmada only so that the ConfigMap template has one.
# platform-system likewise: a member has its own, from its bring-up.
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
    (ADMISSION_API, "ValidatingAdmissionPolicy"),
    (ADMISSION_API, "ValidatingAdmissionPolicyBinding"),
    (QUEUE_API, "Queue"),
    (POLICY_API, "PropagationPolicy"),
    (POLICY_API, "ClusterPropagationPolicy"),
)
API_OF = {kind: api for api, kind in PLATFORM_KINDS}
NAMESPACED_KINDS = ("ConfigMap", "PropagationPolicy")
# The namespaces the platform's namespaced objects live in, in Karmada.
PLATFORM_NAMESPACES = (VOLCANO_NAMESPACE, PLATFORM_NAMESPACE)
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
    deleted); ``admission`` which admission policies Karmada holds, and with what."""

    conf_text: str
    cloud_burst_gpus: int | None = None
    admission: AdmissionSettings = field(default_factory=AdmissionSettings)


@dataclass(frozen=True)
class FederationPlatformFacts:
    """What the run read from Karmada: the platform's objects per kind (kind -> name ->
    object)."""

    objects: Mapping[str, Mapping[str, Mapping[str, Any]]] = field(default_factory=dict)

    @property
    def namespace_exists(self) -> bool:
        """Karmada holds every namespace of the platform's (until then, a check-mode run
        only reports the namespaced objects: there is nothing to dry-run them in)."""
        held = self.objects.get("Namespace") or {}
        return all(name in held for name in PLATFORM_NAMESPACES)


@dataclass(frozen=True)
class PlatformFederation:
    """What the platform writes in Karmada for itself: ``templates`` (the Namespaces
    first), ``policies`` (Karmada's, where each template goes) and ``bindings`` (the
    admission policies' bindings, written last: after their policies and parameter)."""

    templates: list[dict[str, Any]]
    policies: list[dict[str, Any]]
    bindings: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class FederationPlatformRun:
    """The plan of one run: ``writes`` in batches, each after the one before (within one,
    concurrently); then ``deletes`` in batches."""

    facts: FederationPlatformFacts
    writes: tuple[tuple[ObjectChange, ...], ...] = ()
    # admission policies switched off: their bindings, then the policies
    deletes: tuple[tuple[Mapping[str, Any], ...], ...] = ()


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
    admission, admission_errors = parse_admission(params)
    raise_if(errors + admission_errors)
    return FederationPlatformRequest(conf_text=text, cloud_burst_gpus=gpus, admission=admission)


# -- the rule --------------------------------------------------------------------------------


def platform_namespace(name: str = VOLCANO_NAMESPACE) -> dict[str, Any]:
    """A platform namespace in Karmada, for the ConfigMap templates only (not copied: see
    SKIP_AUTO_PROPAGATION)."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": {LABEL_MANAGED_BY: MANAGED_BY, SKIP_AUTO_PROPAGATION: "true"},
        },
    }


def federation_admission(
    settings: AdmissionSettings | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Rule federation-admission: the platform's admission policies in Karmada, where its
    API server enforces them on what tenants submit there (a Volcano Job naming another
    tenant's queue is refused at the federation's admission, not left to fail in a
    member), with the leaf policy's parameter, and the pod-placement policy as a site with
    cloud burst has it (a job that may go to a cloud member tolerates its nodes' taint).
    Returns (templates, bindings).

    Karmada's API server is a kube-apiserver: a ValidatingAdmissionPolicy written there
    is enforced there, on the templates, and a parameterised binding whose ConfigMap
    Karmada lacks denies every request it matches (measured with Karmada v1.16.0: every
    Volcano Job refused, ``no params found for policy binding with `Deny`
    parameterNotFoundAction``). So the parameters come with the policies: each tenant's
    queue list is in Karmada already (module federation_tenant), the parent-queues
    ConfigMap is written here in platform-system, and the large-job throttle's is a
    member's own (allowed without it, as in one cluster).

    Not propagated: each member keeps the policies of its own bring-up. Karmada's copy of
    the parent-queues ConfigMap would overwrite the member's list of parent queues (the
    tenant modules own its ``queues`` key), and nothing here is the member's to change."""
    # A federation has cloud members by design: a job that may go to one (local-first,
    # cloud-ok) tolerates its nodes' taint, which the pod-placement policy allows only as a
    # site with cloud burst has it; where a job may go is Karmada's placement to decide.
    settings = settings or AdmissionSettings()
    manifests = admission_manifests(
        **settings.switches,
        cloud_burst=True,
        platform_groups=list(settings.platform_groups),
        image_registries=list(settings.image_registries),
    )
    policies = [m for m in manifests if m["kind"] == "ValidatingAdmissionPolicy"]
    bindings = [m for m in manifests if m["kind"] == "ValidatingAdmissionPolicyBinding"]
    templates = [platform_namespace(PLATFORM_NAMESPACE), parent_queues_configmap(), *policies]
    return templates, bindings


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


def platform_propagation(
    conf_text: str,
    cloud_burst_gpus: int | None = None,
    admission: AdmissionSettings | None = None,
) -> PlatformFederation:
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
      Karmada is neither written nor deleted;
    * Karmada only, too: the admission policies, their bindings and parameter (rule
      federation-admission)."""
    classes = [as_served(c) for c in priority_class_manifests()]
    configmap = scheduler_configmap(conf_text)
    admission_objects, bindings = federation_admission(admission)
    namespaces = [o for o in admission_objects if o["kind"] == "Namespace"]
    templates = [
        platform_namespace(),
        *namespaces,
        volcano_job_customization(),
        member_failover_taint_policy(),
        *classes,
        configmap,
        *(o for o in admission_objects if o["kind"] != "Namespace"),
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
    return PlatformFederation(templates=templates, policies=policies, bindings=bindings)


# -- plan ------------------------------------------------------------------------------------


def plan(
    request: FederationPlatformRequest, facts: FederationPlatformFacts
) -> FederationPlatformRun:
    """What differs from Karmada, in write order: the Namespaces, the other templates, the
    policies and admission bindings (a policy is written after what it selects, so Karmada
    never binds a template that is not there yet; a binding after its admission policy
    and parameter, so it never denies for want of them)."""
    wanted = platform_propagation(request.conf_text, request.cloud_burst_gpus, request.admission)
    raise_if(
        last_parameterised_errors(
            facts.objects.get("ValidatingAdmissionPolicyBinding") or {},
            wanted.bindings,
            request.admission,
        )
    )
    unwanted = unwanted_admission(facts.objects, [*wanted.templates, *wanted.bindings])
    live = TenantLive(name="", objects={k: dict(v) for k, v in facts.objects.items()})
    templates = object_changes(wanted.templates, live)
    batches = (
        [c for c in templates if c[0]["kind"] == "Namespace"],
        [c for c in templates if c[0]["kind"] != "Namespace"],
        object_changes([*wanted.policies, *wanted.bindings], live),
    )
    deletes = (
        [o for o in unwanted if o["kind"] == "ValidatingAdmissionPolicyBinding"],
        [o for o in unwanted if o["kind"] == "ValidatingAdmissionPolicy"],
    )
    return FederationPlatformRun(
        facts=facts,
        writes=tuple(tuple(b) for b in batches if b),
        deletes=tuple(tuple(b) for b in deletes if b),
    )


# -- report ----------------------------------------------------------------------------------


def record_plan(planned: FederationPlatformRun, changes: Changes) -> None:
    """Every write and delete of the plan, in order, as ``changes`` records them."""
    record_writes(planned.writes, changes)
    record_deletes(planned.deletes, changes)


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
        f"(PriorityClasses and scheduler conf to every member, admission policies in Karmada, "
        f"{BURST_QUEUE} {burst})"
    ]
