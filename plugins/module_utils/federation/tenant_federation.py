# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``federation_tenant`` through the flow contract (``kube.flow``): its pure steps.

A tenant's objects in the Karmada API server: the templates and policies of rule
federation-tenant-propagation (``federation.propagation.tenant_propagation``), over the
single-cluster plan of the tenant (``tenants.plan.plan_tenant``) with the templates in
Karmada as the live state.

* ``parse``: the options as a ``FederationTenantRequest``: the tenant's spec as module
  ``tenant`` parses it (``tenants.inputs``), ``burst_gpus``, ``payg_cloud_gpus`` and the
  networks, which Karmada cannot tell (it has no Nodes and no ServiceCIDRs): ``pod_cidr``
  and ``service_cidr`` are required, ``node_cidrs`` optional;
* ``plan``: the objects that differ from Karmada's (Namespace first, then the templates,
  then the policies), the tenant's objects Karmada holds that are no longer wanted (a
  removed team, a burst leaf given up) to delete; ``absent``: every object of the tenant,
  children first;
* ``report``: what the plan says, as a check-mode run says it.

The reads and writes are ``federation.tenant_federation_io``'s. Pure: nothing here reads
or writes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..common.errors import FieldError, PlatformValidationError, raise_if
from ..common.names import BURST_QUEUE, QUEUE_API, ROOT_QUEUE, is_managed
from ..hybrid.burst import burst_quota_errors
from ..hybrid.federation_placement import POLICY_API
from ..kube.flow import Flow
from ..queues.parent_list import parent_queue_names
from ..tenants.changes import Changes, ObjectChange, tenant_object_changes
from ..tenants.inputs import parse_absent, parse_present
from ..tenants.live import TENANT_KINDS, TenantLive
from ..tenants.network import ClusterNetworks, Network
from ..tenants.plan import TenantPlan, plan_tenant
from ..tenants.spec import TenantSpec, kept_guarantee, parse_cidrs
from ..tenants.summary import object_counts
from ..tenants.teams import parent_list_change
from ..tenants.tenant_queues import queue_name_collisions
from .propagation import TenantFederation, tenant_propagation
from .run_report import record_deletes, record_writes, result

PRESENT = "present"
ABSENT = "absent"
STATES = (PRESENT, ABSENT)

# The Karmada policies a tenant has, each read with one LIST (the PropagationPolicy in
# the tenant's namespace, the others cluster-wide).
POLICY_KINDS = (
    (POLICY_API, "PropagationPolicy"),
    (POLICY_API, "ClusterPropagationPolicy"),
    (POLICY_API, "ClusterOverridePolicy"),
)
# Every kind of a tenant's objects in Karmada, in the order a run reads them.
FEDERATION_KINDS = (*TENANT_KINDS, (QUEUE_API, "Queue"), *POLICY_KINDS)
API_OF = {kind: api for api, kind in FEDERATION_KINDS}


@dataclass(frozen=True)
class FederationTenantRequest:
    """The ``federation_tenant`` module's options, checked: ``spec`` is None with
    ``state: absent``; ``node_networks`` the members' node addresses, cut out of the
    tenant's egress as module ``tenant`` cuts out its cluster's."""

    state: str
    name: str
    spec: TenantSpec | None = None
    guarantee_given: bool = False
    burst_gpus: int | None = None
    payg_cloud_gpus: int = 0
    node_networks: tuple[Network, ...] = ()

    @property
    def absent(self) -> bool:
        return self.state == ABSENT


@dataclass(frozen=True)
class FederationTenantFacts:
    """What the run read from Karmada: the tenant's objects per kind (``objects``: kind ->
    name -> object, its queues under ``Queue``, its policies under their kinds) and
    ``taken``: the queues of a name the tenant is to get and lacks that exist (one GET
    each, rule queue-name-owned); ``parent_list``: the federation's parent-queues
    ConfigMap (``federation_platform``'s, rule federation-admission), None while Karmada
    has none."""

    objects: Mapping[str, Mapping[str, Mapping[str, Any]]] = field(default_factory=dict)
    taken: tuple[Mapping[str, Any], ...] = ()
    parent_list: Mapping[str, Any] | None = None

    def live(self, name: str) -> TenantLive:
        """The objects as ``tenants.live.TenantLive``, for the single-cluster comparison."""
        objects = {kind: dict(self.objects.get(kind) or {}) for _a, kind in FEDERATION_KINDS}
        return TenantLive(name=name, objects=objects, queues=objects["Queue"])

    @property
    def namespace_exists(self) -> bool:
        return bool(self.objects.get("Namespace"))


@dataclass(frozen=True)
class FederationTenantRun:
    """The plan of one run: ``writes`` in batches, each batch after the one before
    (within one, concurrently); then ``deletes`` in batches. ``federation``: the desired
    templates and policies (None with ``absent``). ``parents``: the tenant's queues the
    parent-queues list names, of the ``owned`` it decides (rule parent-queues-list)."""

    facts: FederationTenantFacts
    writes: tuple[tuple[ObjectChange, ...], ...] = ()
    deletes: tuple[tuple[Mapping[str, Any], ...], ...] = ()
    federation: TenantFederation | None = None
    parents: tuple[str, ...] = ()
    owned: tuple[str, ...] = ()


# -- parse -----------------------------------------------------------------------------------


def network_errors(params: Mapping[str, Any]) -> list[FieldError]:
    """The Karmada API server has no Nodes and no ServiceCIDRs: the members' networks are
    given."""
    return [
        FieldError(
            key,
            "is required: the Karmada API server tells no cluster network; give one that "
            "holds every member's",
        )
        for key in ("pod_cidr", "service_cidr")
        if not params.get(key)
    ]


def node_networks(raw: object) -> tuple[tuple[Network, ...], list[FieldError]]:
    """Option ``node_cidrs``: each a CIDR (rule cidr)."""
    if raw is None:
        return (), []
    nets, errors = parse_cidrs(raw, "node_cidrs")
    return tuple(nets), errors


def count_errors(params: Mapping[str, Any]) -> list[FieldError]:
    """``burst_gpus`` (rule burst-quota) and ``payg_cloud_gpus``: whole numbers, 0 or more.
    Whether the cloud part fits the grant is the plan's (rule
    federation-tenant-propagation): the grant may be the live one."""
    errors = [
        FieldError("burst_gpus", e.message)
        for e in (
            burst_quota_errors(params["burst_gpus"], None, BURST_QUEUE)
            if params.get("burst_gpus") is not None
            else []
        )
    ]
    cloud = params.get("payg_cloud_gpus", 0)
    if isinstance(cloud, bool) or not isinstance(cloud, int) or cloud < 0:
        errors.append(
            FieldError("payg_cloud_gpus", f"{cloud!r} must be a whole number of GPUs, 0 or more")
        )
    return errors


def parse(params: Mapping[str, Any]) -> FederationTenantRequest:
    """Every input of the state asked for, checked at once, before the module connects."""
    state = params.get("state") or PRESENT
    if state == ABSENT:
        return FederationTenantRequest(state=state, name=parse_absent(params))
    nodes, errors = node_networks(params.get("node_cidrs"))
    errors += network_errors(params) + count_errors(params)
    try:
        spec = parse_present(params)
    except PlatformValidationError as exc:
        raise PlatformValidationError([*exc.errors, *errors]) from None
    raise_if(errors)
    return FederationTenantRequest(
        state=state,
        name=spec.name,
        spec=spec,
        guarantee_given=params.get("subscription_guarantee") is not None,
        burst_gpus=params.get("burst_gpus"),
        payg_cloud_gpus=int(params.get("payg_cloud_gpus") or 0),
        node_networks=nodes,
    )


# -- plan ------------------------------------------------------------------------------------


def desired(request: FederationTenantRequest, facts: FederationTenantFacts) -> TenantFederation:
    """The tenant's templates and policies (rule federation-tenant-propagation) over its
    single-cluster plan, with Karmada's templates as the live queues; raises as
    ``plan_tenant`` and ``tenant_propagation`` do, and for a queue name another tenant has
    (rule queue-name-owned)."""
    tenant = tenant_plan(request, facts)
    return tenant_propagation(tenant, request.burst_gpus, request.payg_cloud_gpus)


def tenant_plan(request: FederationTenantRequest, facts: FederationTenantFacts) -> TenantPlan:
    """The tenant's single-cluster plan, with Karmada's templates as the live queues."""
    if request.spec is None:  # narrows the type: absent plans no objects
        raise AssertionError("a present request has a spec")
    live = facts.live(request.name)
    spec = request.spec
    if not request.guarantee_given:
        spec = kept_guarantee(spec, None, live.queues)
    # No PodGroup lives in Karmada: what runs is the members' to protect (their Volcano
    # refuses a queue change below what it holds), not judged here.
    tenant = plan_tenant(
        spec, live.queues, discovered=ClusterNetworks(nodes=list(request.node_networks))
    )
    found = {q["metadata"]["name"]: q for q in facts.taken}
    raise_if(queue_name_collisions(request.name, tenant.queues, found))
    return tenant


def new_queue_names(request: FederationTenantRequest, facts: FederationTenantFacts) -> list[str]:
    """The queues the tenant is to get and Karmada does not hold for it: one GET each (rule
    queue-name-owned); none on a re-run."""
    live = facts.objects.get("Queue") or {}
    wanted = desired(request, facts).templates
    return [
        o["metadata"]["name"]
        for o in wanted
        if o["kind"] == "Queue" and o["metadata"]["name"] not in live
    ]


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    return obj["kind"], obj["metadata"]["name"]


def stale(
    facts: FederationTenantFacts, wanted: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The tenant's objects in Karmada the platform made and no longer wants (a removed
    team's queue, a burst leaf or a cloud part given up, with their policies)."""
    keep = {_key(o) for o in wanted}
    return [
        obj
        for _a, kind in FEDERATION_KINDS
        for obj in (facts.objects.get(kind) or {}).values()
        if (kind, obj["metadata"]["name"]) not in keep
        and is_managed((obj.get("metadata") or {}).get("labels"))
    ]


def delete_batches(
    objects: Sequence[Mapping[str, Any]],
) -> tuple[tuple[Mapping[str, Any], ...], ...]:
    """Children first: the templates but the Namespace and the queues under ``root`` (team
    queues and the burst leaf go before their parents, which a member's Volcano refuses to
    delete while they have children), then the queues under ``root``, then the policies,
    then the Namespace (Karmada removes what it propagated once a template is gone)."""
    policies = {kind for _a, kind in POLICY_KINDS}

    def top_queue(o: Mapping[str, Any]) -> bool:
        return o["kind"] == "Queue" and (o.get("spec") or {}).get("parent") in (
            ROOT_QUEUE,
            "",
            None,
        )

    batches = (
        [o for o in objects if o["kind"] not in policies | {"Namespace"} and not top_queue(o)],
        [o for o in objects if top_queue(o)],
        [o for o in objects if o["kind"] in policies],
        [o for o in objects if o["kind"] == "Namespace"],
    )
    return tuple(tuple(batch) for batch in batches if batch)


def plan_present(
    request: FederationTenantRequest, facts: FederationTenantFacts
) -> FederationTenantRun:
    """What differs, in write order: the Namespace, the other templates, the policies; then
    what the tenant no longer has."""
    tenant = tenant_plan(request, facts)
    federation = tenant_propagation(tenant, request.burst_gpus, request.payg_cloud_gpus)
    live = facts.live(request.name)
    templates = tenant_object_changes(federation.templates, live)
    policies = tenant_object_changes(federation.policies, live)
    batches = (
        [c for c in templates if c[0]["kind"] == "Namespace"],
        [c for c in templates if c[0]["kind"] != "Namespace"],
        policies,
    )
    gone = stale(facts, [*federation.templates, *federation.policies])
    return FederationTenantRun(
        facts=facts,
        writes=tuple(tuple(b) for b in batches if b),
        deletes=delete_batches(gone),
        federation=federation,
        parents=tuple(sorted(parent_queue_names(tenant.queues))),
        owned=owned_queues(facts, federation.templates),
    )


def owned_queues(
    facts: FederationTenantFacts, templates: Sequence[Mapping[str, Any]] = ()
) -> tuple[str, ...]:
    """The queue names this run decides in the parent-queues list (rule
    parent-queues-list): the tenant's in Karmada and those it is to get."""
    names = set(facts.objects.get("Queue") or {})
    names |= {o["metadata"]["name"] for o in templates if o["kind"] == "Queue"}
    return tuple(sorted(names))


def plan(request: FederationTenantRequest, facts: FederationTenantFacts) -> FederationTenantRun:
    """The run's plan; raises with every rule the change would break. ``absent``: every
    object of the tenant the platform made, children first."""
    if request.absent:
        return FederationTenantRun(
            facts=facts, deletes=delete_batches(stale(facts, [])), owned=owned_queues(facts)
        )
    return plan_present(request, facts)


def refusal(request: FederationTenantRequest, facts: FederationTenantFacts) -> Exception | None:
    """What the plan refuses on the facts read so far, or None: the gather stops there."""
    try:
        plan(request, facts)
    except PlatformValidationError as exc:
        return exc
    return None


# -- report ----------------------------------------------------------------------------------


def record_plan(planned: FederationTenantRun, changes: Changes) -> None:
    """Every write and delete of the plan, in order, as ``changes`` records them: the
    parent-queues list's first (the tenant's parents listed before their children are
    written), then the objects, then the list's last (the rest of its queues unlisted)."""
    parent_list = planned.facts.parent_list
    if parent_list is not None:
        parents = planned.parents
        parent_list = parent_list_change(changes, parent_list, parents, parents)
    record_writes(planned.writes, changes)
    record_deletes(planned.deletes, changes)
    if parent_list is not None:
        parent_list_change(changes, parent_list, planned.parents, planned.owned)


def report(request: FederationTenantRequest, planned: FederationTenantRun) -> dict[str, Any]:
    """What a check-mode run reports."""
    changes = Changes()
    record_plan(planned, changes)
    return result(changes)


def federation_tenant_flow(
    gather: Callable[[FederationTenantRequest, Any], FederationTenantFacts],
    apply: Callable[[FederationTenantRequest, FederationTenantRun, Any, bool], dict[str, Any]],
) -> Flow[FederationTenantRequest, FederationTenantFacts, FederationTenantRun]:
    """The module's flow over these pure steps and the I/O's ``gather`` and ``apply``."""
    return Flow(parse=parse, gather=gather, plan=plan, apply=apply, report=report)


# -- summary ---------------------------------------------------------------------------------


def federation_tenant_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    """The tenant and what was (in check mode, would be) written in Karmada, in one line
    a person reads, as the tenant modules say theirs."""
    objects = result.get("objects") or []
    line = f"tenant {params['name']} in the federation: {object_counts(objects, check_mode)}"
    if params.get("state", PRESENT) == PRESENT:
        burst = params.get("burst_gpus")
        line += (
            f" (payg cloud part {params.get('payg_cloud_gpus') or 0} GPUs, "
            f"burst leaf {'none' if burst is None else f'{burst} GPUs'})"
        )
    return [line]
