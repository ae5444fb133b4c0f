# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``tenant`` through the flow contract (``kube.flow``): its pure steps.

* ``parse``: the options as a ``TenantRequest``, the spec parsed once, every input
  checked before the module connects;
* ``plan``: every decision and refusal over ``TenantFacts`` (rules guarantee-kept, the
  queue tree, capability-above-allocated, busy-queue-removal, cluster-networks,
  queue-name-owned, oversell-guard; for ``absent`` the refusal while jobs or pods run);
* ``report``: what the plan says, as a check-mode run says it; for ``rendered`` the
  manifests (rule rendered-order).

The reads and writes are ``tenants.service``'s (``gather_tenant``, ``apply_tenant``).
Pure: nothing here reads or writes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..capacity.oversell import tenant_oversell_errors
from ..capacity.purchase import purchase_added, purchase_growth
from ..capacity.storage_oversell import (
    class_bounds_of,
    class_capacity,
    class_commitments,
    storage_grows,
    storage_oversell_errors,
)
from ..common.errors import FieldError, PlatformValidationError, Refused, raise_if
from ..common.names import namespace_name
from ..common.objects import index_by_name
from ..kube.flow import GATHERED, PARSED, RENDERED, Flow, fact_lists
from ..queues.parent_list import parent_queue_names
from ..queues.plan import DELETE, queue_steps
from ..workload.pool import commitments_from_queues, pool_from_nodes
from .changes import Changes, step_action, step_manifest, tenant_object_changes
from .inputs import DEFAULT_WAIT_TIMEOUT, parse_absent, parse_writing
from .live import TENANT_KINDS, TenantLive, active_jobs, active_pods, busy_queues
from .network import discovered_networks
from .plan import TenantPlan, plan_tenant
from .render import render_plans
from .spec import TenantSpec, kept_guarantee
from .teams import parent_list_change
from .tenant_queues import queue_name_collisions

ABSENT = "absent"
# The states of option ``state`` (``gathered`` and ``parsed`` are those of ``present``).
STATES = ("present", ABSENT, RENDERED, GATHERED, PARSED)


@dataclass(frozen=True)
class TenantRequest:
    """The ``tenant`` module's options, checked: ``spec`` is None with ``state: absent``."""

    state: str
    name: str
    spec: TenantSpec | None
    guarantee_given: bool = False  # rule guarantee-kept: subscription_guarantee was given
    force: bool = False
    oversell_check: bool = True
    node_selector: Mapping[str, str] = field(default_factory=dict)
    wait: bool = False
    wait_timeout: int = DEFAULT_WAIT_TIMEOUT

    @property
    def absent(self) -> bool:
        return self.state == ABSENT


@dataclass(frozen=True)
class TenantFacts:
    """What the run read, in the order it read it. ``taken``: the queues of a name the
    tenant is to get and lacks that exist (one GET each); ``pool_nodes`` and ``committed``:
    the oversell guard's reads, None when not read (the purchase does not grow);
    ``parent_list``: the parent-queues ConfigMap, None when it does not exist (read last,
    by ``present``). ``jobs``, ``pods`` (in ``live``) and ``gateway``: ``absent``'s."""

    live: TenantLive
    nodes: tuple[dict[str, Any], ...] = ()
    service_cidrs: tuple[dict[str, Any], ...] = ()
    taken: tuple[dict[str, Any], ...] = ()
    pool_nodes: tuple[dict[str, Any], ...] | None = None
    committed: tuple[dict[str, Any], ...] | None = None
    parent_list: dict[str, Any] | None = None
    gateway: tuple[dict[str, Any], ...] = ()
    # Rule storage-class-oversell's reads, None when not read (no class bound grows): the
    # storage role's capacity ConfigMap (empty when absent) and every tenant's bounds.
    storage_capacity: dict[str, Any] | None = None
    class_quotas: tuple[dict[str, Any], ...] | None = None


@dataclass(frozen=True)
class TenantRun:
    """The plan of one run: ``present`` (and ``rendered``, ``parsed``) writes ``plan`` over
    ``facts.live``; ``absent`` deletes ``facts.live``, the active ``jobs`` first."""

    facts: TenantFacts
    spec: TenantSpec | None = None
    plan: TenantPlan | None = None
    added: dict[str, Any] = field(default_factory=dict)
    jobs: tuple[Mapping[str, Any], ...] = ()
    running: dict[str, int] = field(default_factory=dict)
    said: tuple[str, ...] = ()  # what the run warns about


# -- parse -----------------------------------------------------------------------------------


def parse(params: Mapping[str, Any]) -> TenantRequest:
    """Every input of the state asked for, checked at once (``tenants.inputs``); the spec is
    parsed here and nowhere after."""
    state = params.get("state") or "present"
    common = {
        "state": state,
        "force": bool(params.get("force", False)),
        "wait": bool(params.get("wait", False)),
        "wait_timeout": params.get("wait_timeout", DEFAULT_WAIT_TIMEOUT),
    }
    if state == ABSENT:
        return TenantRequest(name=parse_absent(params), spec=None, **common)
    spec = parse_writing(params)
    return TenantRequest(
        name=spec.name,
        spec=spec,
        guarantee_given=params.get("subscription_guarantee") is not None,
        oversell_check=bool(params.get("oversell_check", True)),
        node_selector=dict(params.get("node_selector") or {}),
        **common,
    )


# -- plan ------------------------------------------------------------------------------------


def tenant_new_queues(request: TenantRequest, facts: TenantFacts) -> list[str]:
    """The queues the tenant is to get and does not have: one GET each (rule
    queue-name-owned); none on a re-run."""
    planned = plan_objects(request, facts)
    return [q.name for q in planned.queues if q.name not in facts.live.queues]


def purchase_grows(request: TenantRequest, facts: TenantFacts) -> bool:
    """Rule oversell-guard's trigger: the guard is on and the subscription or the
    pay-as-you-go grant grows over the tenant's own live queues (rule purchase-growth)."""
    spec = request.spec
    if spec is None or not request.oversell_check:
        return False
    current = commitments_from_queues(facts.live.queues.values()).get(request.name)
    grown_sub, grown_payg = purchase_growth(current, spec.subscription, spec.payg)
    return bool(grown_sub or grown_payg)


def class_bounds_wanted(request: TenantRequest) -> dict[str, str]:
    """The storage class bounds the request gives (rule storage-class-bounds)."""
    bounds = request.spec.bounds if request.spec is not None else None
    return dict(bounds.storage_classes) if bounds is not None else {}


def storage_bounds_grow(request: TenantRequest, facts: TenantFacts) -> bool:
    """Rule storage-class-oversell's trigger: the guard is on and a class bound grows over
    the tenant's live ResourceQuota."""
    if not request.oversell_check:
        return False
    live_quota = next(iter((facts.live.objects.get("ResourceQuota") or {}).values()), None)
    return storage_grows(class_bounds_of(live_quota), class_bounds_wanted(request))


def plan_objects(request: TenantRequest, facts: TenantFacts) -> TenantPlan:
    """The tenant's objects and queues (``tenants.plan.plan_tenant``) with the guarantee
    kept (rule guarantee-kept) and the networks the cluster tells; raises as it does."""
    spec = _kept(request, facts)
    live = facts.live
    return plan_tenant(
        spec,
        live.queues,
        busy_queues(live.podgroups, live.queues),
        force=request.force,
        discovered=discovered_networks(facts.nodes, facts.service_cidrs),
    )


def _kept(request: TenantRequest, facts: TenantFacts) -> TenantSpec:
    if request.spec is None:  # narrows the type: absent plans no objects
        raise AssertionError("a present request has a spec")
    if request.guarantee_given:
        return request.spec
    return kept_guarantee(request.spec, None, facts.live.queues)


def plan_present(request: TenantRequest, facts: TenantFacts) -> TenantRun:
    """The objects, then the refusals in the order a run meets them: the plan's own rules,
    a queue name another tenant has, a purchase the pool cannot hold (judged only with the
    guard's reads, which a run makes only when the purchase grows)."""
    spec = _kept(request, facts)
    planned = plan_objects(request, facts)
    found = {q["metadata"]["name"]: q for q in facts.taken}
    raise_if(queue_name_collisions(request.name, planned.queues, found))
    if facts.pool_nodes is not None and purchase_grows(request, facts):
        pool, _members = pool_from_nodes(facts.pool_nodes, request.node_selector)
        commitments = commitments_from_queues(facts.committed or ())
        raise_if(
            tenant_oversell_errors(request.name, pool, commitments, spec.subscription, spec.payg)
        )
    if facts.class_quotas is not None and storage_bounds_grow(request, facts):
        raise_if(
            storage_oversell_errors(
                request.name,
                class_capacity(facts.storage_capacity),
                class_commitments(facts.class_quotas),
                class_bounds_wanted(request),
            )
        )
    added = purchase_added(request.name, facts.live.queues, spec.subscription, spec.payg)
    return TenantRun(facts=facts, spec=spec, plan=planned, added=added)


def plan_absent(request: TenantRequest, facts: TenantFacts) -> TenantRun:
    """What ``absent`` deletes, refused while a Volcano Job or pod is active unless
    ``force``; a tenant with nothing to delete is said (a typo'd name must not pass
    silently), not refused."""
    live, name = facts.live, request.name
    said: tuple[str, ...] = ()
    if not live.queues and not any(live.objects.values()) and not facts.gateway:
        said = (
            f"tenant {name!r} does not exist: no namespace, queue or other object carries "
            f"platform.io/tenant={name}, so nothing was deleted",
        )
    jobs, pods = active_jobs(live.jobs), active_pods(live.pods)
    running = {"jobs": len(jobs), "pods": len(pods)}
    if (jobs or pods) and not request.force:
        raise Refused(
            f"tenant {name!r} still has {len(jobs)} active Volcano Job(s) and {len(pods)} active pod(s) in "
            f"namespace {namespace_name(name)}; wait for them, or force: true to delete the tenant anyway",
            running=running,
        )
    return TenantRun(facts=facts, jobs=tuple(jobs), running=running, said=said)


def plan(request: TenantRequest, facts: TenantFacts) -> TenantRun:
    """The run's plan; raises with every rule the change would break."""
    if request.absent:
        return plan_absent(request, facts)
    return plan_present(request, facts)


def refusal(request: TenantRequest, facts: TenantFacts) -> Exception | None:
    """What the plan refuses on the facts read so far, or None: the gather stops reading
    there, as a run always has."""
    try:
        plan(request, facts)
    except (PlatformValidationError, Refused) as exc:
        return exc
    return None


def warnings_of(planned: TenantRun) -> list[str]:
    return list(planned.said)


# -- report ----------------------------------------------------------------------------------


def present_changes(planned: TenantRun) -> Changes:
    """What a check-mode ``present`` run records, in its order: the parent-queues list, the
    objects that differ, the queue steps, the parent-queues list again."""
    if planned.plan is None:  # narrows the type: a present plan has one
        raise AssertionError("a present plan has objects")
    tenant, live = planned.plan, planned.facts.live
    parents = sorted(set(parent_queue_names(tenant.queues)))
    owned = sorted({q.name for q in tenant.queues} | set(live.queues) | set(tenant.queue_deletes))
    changes = Changes()
    after = parent_list_change(changes, planned.facts.parent_list, parents, parents)
    for manifest, action, current in tenant_object_changes(tenant.objects, live):
        changes.record(manifest, action, current)
    for step in queue_steps(tenant.queues, live.queues, tenant.queue_deletes):
        if step.final or step.action == DELETE:
            current = live.queues.get(step.name)
            changes.record(step_manifest(step), step_action(step, current), current)
    parent_list_change(changes, after, parents, owned)
    return changes


def report(request: TenantRequest, planned: TenantRun) -> dict[str, Any]:
    """What the plan says: for ``rendered`` the tenant's manifests as its first run writes
    them, sorted (rule rendered-order); for ``absent`` what is active; else what a
    check-mode run reports."""
    if request.state == RENDERED and planned.plan is not None:
        return {"manifests": render_plans([planned.plan])}
    if request.absent:
        return {"changed": False, "objects": [], "running": dict(planned.running)}
    changes = present_changes(planned)
    return {
        "changed": changes.changed,
        "objects": changes.objects,
        "diff": changes.diff(),
        "added": planned.added,
    }


# -- facts as data ---------------------------------------------------------------------------


def empty_facts(request: TenantRequest) -> TenantFacts:
    """An empty cluster: no tenant object, no node, no ServiceCIDR (``rendered`` is given
    the networks)."""
    return TenantFacts(
        live=TenantLive(name=request.name, objects={k: {} for _a, k in TENANT_KINDS})
    )


LIST_KEYS = ("queues", "podgroups", "jobs", "pods", "nodes", "service_cidrs", "taken", "gateway")


def facts_out(facts: TenantFacts) -> dict[str, Any]:
    """The facts as ``gathered`` returns them: ``objects`` per kind, each other read a list
    (the guard's reads only when made; ``parent_list`` empty when the ConfigMap is not
    there)."""
    live = facts.live
    lists = (
        live.queues.values(),
        live.podgroups,
        live.jobs,
        live.pods,
        facts.nodes,
        facts.service_cidrs,
        facts.taken,
        facts.gateway,
    )
    out: dict[str, Any] = {
        "objects": {kind: list(objects.values()) for kind, objects in live.objects.items()},
        **{key: [dict(o) for o in items] for key, items in zip(LIST_KEYS, lists, strict=True)},
        "parent_list": [facts.parent_list] if facts.parent_list is not None else [],
    }
    if facts.pool_nodes is not None:
        out["pool_nodes"] = list(facts.pool_nodes)
        out["committed"] = list(facts.committed or ())
    if facts.class_quotas is not None:
        out["storage_capacity"] = [facts.storage_capacity] if facts.storage_capacity else []
        out["class_quotas"] = list(facts.class_quotas)
    return out


def facts_in(request: TenantRequest, data: Mapping[str, Any]) -> TenantFacts:
    """Facts given as ``gathered`` returned them; a list left out is empty, the guard's
    reads left out are an empty pool."""
    objects = data.get("objects") or {}
    raise_if(
        [FieldError("facts.objects", "must map each kind to a list, as state: gathered returns it")]
        if not isinstance(objects, Mapping)
        or not all(isinstance(v, list) for v in objects.values())
        else []
    )
    queues, podgroups, jobs, pods, nodes, cidrs, taken, gateway = fact_lists(data, *LIST_KEYS)
    pool_nodes, committed, parent_list = fact_lists(data, "pool_nodes", "committed", "parent_list")
    capacity, class_quotas = fact_lists(data, "storage_capacity", "class_quotas")
    live = TenantLive(
        name=request.name,
        objects={kind: index_by_name(objects.get(kind) or ()) for _a, kind in TENANT_KINDS},
        queues=index_by_name(queues),
        podgroups=list(podgroups),
        jobs=list(jobs),
        pods=list(pods),
    )
    return TenantFacts(
        live=live,
        nodes=nodes,
        service_cidrs=cidrs,
        taken=taken,
        pool_nodes=pool_nodes,
        committed=committed,
        parent_list=dict(parent_list[0]) if parent_list else None,
        gateway=gateway,
        storage_capacity=dict(capacity[0]) if capacity else None,
        class_quotas=class_quotas if "class_quotas" in data else None,
    )


def tenant_flow(
    gather: Callable[[TenantRequest, Any], TenantFacts],
    apply: Callable[[TenantRequest, TenantRun, Any, bool], dict[str, Any]],
) -> Flow[TenantRequest, TenantFacts, TenantRun]:
    """The ``tenant`` module's flow over these pure steps and the service's ``gather`` and
    ``apply`` (the module hands in steps that import the client only once it connects)."""
    return Flow(
        parse=parse,
        gather=gather,
        plan=plan,
        apply=apply,
        report=report,
        empty=empty_facts,
        facts_out=facts_out,
        facts_in=facts_in,
        warnings_of=warnings_of,
    )
