# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A tenant as the ``tenant`` and ``team_queue`` modules take it, and every
object it should have.

``parse_tenant_spec`` checks the whole input and raises one
``PlatformValidationError`` carrying every problem, before anything is read
or written. ``plan_tenant`` then adds what live state says (running jobs,
allocated resources, team queues made by ``team_queue``) and returns the
desired objects, or every rule the change would break.

Queues per tenant (all labelled ``platform.io/tenant`` and
``platform.io/queue-type``):

- ``tenant-<name>-subscription``: deserved = capability = the purchase.
- ``tenant-<name>-<team>``: under the subscription queue, own deserved,
  capability (unset: bounded by the subscription) and guarantee.
- ``tenant-<name>-payg``: deserved = capability; 0 at creation unless given,
  and kept as it is when not given (the pay-as-you-go scaler moves it).
- ``tenant-<name>-spot``: deserved 0; capability 0 GPUs at creation and never
  written again here (the spot recompute owns it).

Every queue's capability also names the vGPU resources (rule vgpu-queue-capability,
``hybrid/vgpu.py``): the subscription and its teams the ``vgpu`` purchase, every other
queue (and all of them without a purchase) what its pods hold, 0 when idle. These keys
are the tenant apply's on every queue, pay-as-you-go and spot included.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from ..common import quantity
from ..common.errors import FieldError, PlatformValidationError, raise_if
from ..common.names import (
    QUEUE_TYPE_PAYG,
    QUEUE_TYPE_SPOT,
    QUEUE_TYPE_SUBSCRIPTION,
    QUEUE_TYPE_TEAM,
    namespace_name,
    queue_name,
    team_name_errors,
    tenant_labels,
    tenant_name_errors,
)
from ..hybrid.vgpu import VGPU_QUEUE_RESOURCES, vgpu_purchase, vgpu_queue_capability
from ..policy.admission import LABEL_ALLOW_CRITICAL, tenant_queues_configmap
from ..queues.model import Queue, allocated, foreign_owner, read_live
from ..queues.parent_list import parent_queue_names
from ..queues.rules import rule_capability_above_allocated, tree_errors
from .bounds import TenantBounds, bounds_from, limit_range, resource_quota
from .network import (
    DEFAULT_EGRESS_CIDRS,
    ClusterNetworks,
    Network,
    cluster_networks,
    egress_blocks,
    network_policy,
    parse_cidr,
)
from .rbac import default_subjects, queue_reader, role, role_binding, subject_errors

# Pod Security for tenant namespaces: baseline is enforced (GPU images commonly run as
# root, which restricted refuses); restricted is audited and warned about, so a tenant
# sees what a stricter cluster would refuse. Pinned to the cluster's minor version.
POD_SECURITY_VERSION = "v1.35"
POD_SECURITY_LABELS = {
    "pod-security.kubernetes.io/enforce": "baseline",
    "pod-security.kubernetes.io/enforce-version": POD_SECURITY_VERSION,
    "pod-security.kubernetes.io/audit": "restricted",
    "pod-security.kubernetes.io/audit-version": POD_SECURITY_VERSION,
    "pod-security.kubernetes.io/warn": "restricted",
    "pod-security.kubernetes.io/warn-version": POD_SECURITY_VERSION,
}

TEAM_FIELDS = ("name", "deserved", "capability", "guarantee")


@dataclass
class TeamSpec:
    name: str
    deserved: quantity.Resources = field(default_factory=dict)
    capability: quantity.Resources = field(default_factory=dict)
    guarantee: quantity.Resources = field(default_factory=dict)
    source: str | None = None


@dataclass
class TenantSpec:
    name: str
    subscription: quantity.Resources
    subscription_guarantee: quantity.Resources = field(default_factory=dict)
    payg: quantity.Resources | None = None
    teams: list[TeamSpec] | None = None
    subjects: list[dict[str, str]] = field(default_factory=list)
    egress_cidrs: list[Network] = field(default_factory=list)
    pod_cidr: Network | None = None  # None: the cluster's own (rule cluster-networks)
    service_cidr: Network | None = None
    egress_to_nodes: bool = False
    egress_to_metadata: bool = False
    allow_critical: bool = False
    bounds: TenantBounds | None = None  # None: derived from the purchase (rule tenant-bounds)
    vgpu: quantity.Resources | None = None  # None: no vGPU bought (rule vgpu-purchase)


@dataclass
class TenantPlan:
    """What a tenant should look like: objects in write order (Namespace first,
    queues parents first) and the team queues to remove."""

    namespace: dict[str, Any]
    objects: list[dict[str, Any]]
    queues: list[Queue]
    queue_deletes: list[str] = field(default_factory=list)


def _resources(
    raw: object, path: str, errors: list[FieldError], allow_empty: bool = True
) -> quantity.Resources:
    try:
        return quantity.parse_resources(raw, path, allow_empty=allow_empty)
    except PlatformValidationError as exc:
        errors.extend(exc.errors)
        return {}


def kept_guarantee(
    spec: TenantSpec, given: object, live_queues: Mapping[str, Mapping[str, Any]]
) -> TenantSpec:
    """Rule guarantee-kept: a ``subscription_guarantee`` left out keeps the live
    subscription queue's guarantee, as a left-out ``payg`` keeps the live grant and
    left-out ``teams`` keep the team queues. A purchase flow that only changes sizes or
    networks (``tenant_update.yml``) then never drops a guarantee its teams still name;
    an empty mapping given says "no guarantee"."""
    if given is not None:
        return spec
    live = live_queues.get(queue_name(spec.name, QUEUE_TYPE_SUBSCRIPTION)) or {}
    guarantee = ((live.get("spec") or {}).get("guarantee") or {}).get("resource") or {}
    if not guarantee:
        return spec
    kept = quantity.parse_resources(guarantee, "live subscription queue guarantee")
    return replace(spec, subscription_guarantee=kept)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def parse_team(tenant: str, raw: object, path: str, errors: list[FieldError]) -> TeamSpec | None:
    """One team entry: {name, deserved, capability, guarantee}. ``path`` ""
    means the team's fields are top-level options (``team_queue``)."""
    if not isinstance(raw, Mapping):
        errors.append(
            FieldError(
                path or "team",
                f"{raw!r} must be a mapping with name, deserved, capability, guarantee",
            )
        )
        return None
    for key in sorted(set(raw) - set(TEAM_FIELDS)):
        errors.append(
            FieldError(_join(path, key), f"is not a team field; use {', '.join(TEAM_FIELDS)}")
        )
    name_errors = team_name_errors(tenant, raw.get("name"), _join(path, "name"))
    errors += name_errors
    team = TeamSpec(
        name=str(raw.get("name")),
        deserved=_resources(raw.get("deserved"), _join(path, "deserved"), errors),
        capability=_resources(raw.get("capability"), _join(path, "capability"), errors),
        guarantee=_resources(raw.get("guarantee"), _join(path, "guarantee"), errors),
        source=path,
    )
    return None if name_errors else team


def parse_teams(
    tenant: str, raw: object, field_name: str = "teams"
) -> tuple[list[TeamSpec] | None, list[FieldError]]:
    if raw is None:
        return None, []
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        return None, [FieldError(field_name, f"{raw!r} must be a list of teams")]
    errors: list[FieldError] = []
    teams: list[TeamSpec] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(raw):
        team = parse_team(tenant, entry, f"{field_name}[{i}]", errors)
        if team is None:
            continue
        if team.name in seen:
            errors.append(
                FieldError(
                    f"{field_name}[{i}].name",
                    f"{team.name!r} is already {field_name}[{seen[team.name]}]; team names are unique",
                )
            )
            continue
        seen[team.name] = i
        teams.append(team)
    return teams, errors


def parse_egress(
    egress_cidrs: object, pod_cidr: object, service_cidr: object
) -> tuple[list[Network], Network | None, Network | None, list[FieldError]]:
    """The egress CIDRs and the pod and service CIDRs the caller gave (None: read the
    cluster's); each must be a CIDR. Whether an egress CIDR reaches into the cluster is
    ``network.egress_blocks``' decision (``given_egress_errors`` and ``plan_tenant``)."""
    errors: list[FieldError] = []
    given: list[Network | None] = []
    for value, path in ((pod_cidr, "pod_cidr"), (service_cidr, "service_cidr")):
        net = None
        if value is not None:
            net, errs = parse_cidr(value, path)
            errors += errs
        given.append(net)
    if egress_cidrs is None:
        egress_cidrs = list(DEFAULT_EGRESS_CIDRS)
    if not isinstance(egress_cidrs, Sequence) or isinstance(egress_cidrs, str):
        errors.append(FieldError("egress_cidrs", f"{egress_cidrs!r} must be a list of CIDRs"))
        return [], given[0], given[1], errors
    egress: list[Network] = []
    for i, value in enumerate(egress_cidrs):
        net, errs = parse_cidr(value, f"egress_cidrs[{i}]")
        errors += errs
        if net is not None:
            egress.append(net)
    return egress, given[0], given[1], errors


def given_egress_errors(
    egress: Sequence[Network],
    pod_cidr: Network | None,
    service_cidr: Network | None,
    egress_to_metadata: bool,
) -> list[FieldError]:
    """Rule egress-outside-cluster against what is known before any request (the pod and
    service CIDRs given, the metadata address), so that such an egress CIDR is reported with
    the other input errors; ``plan_tenant`` judges it again with the cluster's networks."""
    given = ClusterNetworks(
        pods=[pod_cidr] if pod_cidr is not None else [],
        services=[service_cidr] if service_cidr is not None else [],
    )
    return egress_blocks(egress, given, egress_to_metadata=egress_to_metadata)[1]


def parse_tenant_spec(params: Mapping[str, Any]) -> TenantSpec:
    """Check every input of ``state: present``; raise once with every error."""
    errors: list[FieldError] = []
    name = params.get("name")
    errors += tenant_name_errors(name, "name")
    tenant = name if isinstance(name, str) else ""
    subscription = _resources(params.get("subscription"), "subscription", errors, allow_empty=False)
    if params.get("subscription") is not None and subscription and quantity.GPU not in subscription:
        errors.append(
            FieldError(
                f"subscription.{quantity.GPU}",
                "is missing; the purchase names its GPUs (0 is allowed)",
            )
        )
    if params.get("subscription") is None:
        errors.append(
            FieldError("subscription", "is required: the purchased nvidia.com/gpu, cpu and memory")
        )
    guarantee = _resources(params.get("subscription_guarantee"), "subscription_guarantee", errors)
    payg = None
    if params.get("payg") is not None:
        payg = _resources(params.get("payg"), "payg", errors)
    teams, team_errors = parse_teams(tenant, params.get("teams"))
    errors += team_errors
    subjects = params.get("subjects")
    if subjects is None:
        subjects = default_subjects(tenant)
    errors += subject_errors(subjects)
    egress, pod_cidr, service_cidr, egress_errors = parse_egress(
        params.get("egress_cidrs"), params.get("pod_cidr"), params.get("service_cidr")
    )
    errors += egress_errors
    errors += given_egress_errors(
        egress, pod_cidr, service_cidr, bool(params.get("egress_to_metadata", False))
    )
    if tenant and subscription and teams and not tenant_name_errors(name, "name"):
        errors += input_tree_errors(tenant, subscription, guarantee, teams)
    bounds = bounds_from(params.get("bounds"), subscription, payg, errors)
    vgpu = vgpu_purchase(params.get("vgpu"), "vgpu", errors)
    raise_if(errors)
    return TenantSpec(
        name=tenant,
        subscription=subscription,
        subscription_guarantee=guarantee,
        payg=payg,
        teams=teams,
        subjects=[dict(s) for s in subjects],
        egress_cidrs=egress,
        pod_cidr=pod_cidr,
        service_cidr=service_cidr,
        egress_to_nodes=bool(params.get("egress_to_nodes", False)),
        egress_to_metadata=bool(params.get("egress_to_metadata", False)),
        allow_critical=bool(params.get("allow_critical", False)),
        bounds=bounds,
        vgpu=vgpu,
    )


def input_tree_errors(
    tenant: str,
    subscription: quantity.Resources,
    guarantee: quantity.Resources,
    teams: Sequence[TeamSpec],
) -> list[FieldError]:
    """The queue-tree rules that the input alone decides (the subscription
    queue and its teams), so that one failed run reports them together with
    every other bad field instead of after a first fix; live state (busy
    queues, allocations) is checked later by plan_tenant."""
    known = {team.name for team in teams}
    if len(known) != len(teams):
        return []
    sub = subscription_queue(tenant, subscription, guarantee)
    return tree_errors([sub, *(team_queue(tenant, t) for t in teams)])


# --------------------------------------------------------------------------
# Desired queues
# --------------------------------------------------------------------------


def subscription_queue(
    tenant: str, purchase: quantity.Resources, guarantee: quantity.Resources
) -> Queue:
    return Queue(
        name=queue_name(tenant, QUEUE_TYPE_SUBSCRIPTION),
        queue_type=QUEUE_TYPE_SUBSCRIPTION,
        tenant=tenant,
        deserved=dict(purchase),
        capability=dict(purchase),
        guarantee=dict(guarantee),
        source="subscription",
    )


def team_queue(tenant: str, team: TeamSpec) -> Queue:
    return Queue(
        name=queue_name(tenant, QUEUE_TYPE_TEAM, team.name),
        parent=queue_name(tenant, QUEUE_TYPE_SUBSCRIPTION),
        queue_type=QUEUE_TYPE_TEAM,
        tenant=tenant,
        team=team.name,
        deserved=dict(team.deserved),
        capability=dict(team.capability),
        guarantee=dict(team.guarantee),
        source=team.source,
        # Rule team-reclaim-by-platform: Volcano's reclaim and gangreclaim skip a queue
        # whose reclaimable is false. Left on, gangreclaim takes a borrowing team's jobs in
        # its own order (measured: a normal job before a debug job, and more than the
        # need); the queue arbiter takes them lowest priority first, newest first, never
        # below the team's deserved, and only as many as the need (arbiter/rules).
        reclaimable=False,
    )


def payg_queue(tenant: str, amount: quantity.Resources, write: bool) -> Queue:
    """The pay-as-you-go queue; its deserved/capability are capacity fields,
    written here only when ``write`` (at creation, or when given)."""
    return Queue(
        name=queue_name(tenant, QUEUE_TYPE_PAYG),
        queue_type=QUEUE_TYPE_PAYG,
        tenant=tenant,
        deserved=dict(amount),
        capability=dict(amount),
        source="payg",
        capacity_fields=("deserved", "capability"),
        write_capacity=write,
    )


def spot_queue(tenant: str, capability: quantity.Resources | None) -> Queue:
    """The spot queue; ``capability`` None means "at creation": 0 GPUs, the
    only time this module writes it."""
    return Queue(
        name=queue_name(tenant, QUEUE_TYPE_SPOT),
        queue_type=QUEUE_TYPE_SPOT,
        tenant=tenant,
        deserved={quantity.GPU: Decimal(0)},
        capability=dict(capability) if capability is not None else {quantity.GPU: Decimal(0)},
        source="spot",
        # Rule spot-not-reclaimable: Volcano never reclaims spot jobs on its own. Its
        # reclaim and gangreclaim actions skip a queue whose reclaimable is false
        # (actions/gangreclaim/gangreclaim.go and actions/reclaim/reclaim.go, 1.15.1); left
        # on, gangreclaim evicts spot jobs in its own order, with no SpotReclaimed Event and
        # no history. Spot is reclaimed by the platform's delete, cheapest first.
        reclaimable=False,
        # The spot recompute owns both (it writes deserved 0 for cpu and
        # memory too); counting deserved as ours would report a change on
        # every run after a recompute.
        capacity_fields=("deserved", "capability"),
        write_capacity=capability is None,
    )


def with_vgpu(
    queue: Queue,
    purchase: quantity.Resources | None,
    live: Mapping[str, Mapping[str, Any]],
    deserved: bool = False,
) -> Queue:
    """``queue`` with the vGPU part of its capability (and, where deserved equals
    capability, of its deserved) from rule vgpu-queue-capability."""
    in_use = allocated(live[queue.name]) if queue.name in live else {}
    vgpu = vgpu_queue_capability(purchase, in_use)
    queue.capability = {**queue.capability, **vgpu}
    if deserved:
        queue.deserved = {**queue.deserved, **vgpu}
    return queue


def _live_teams(tenant: str, live: Mapping[str, Mapping[str, Any]]) -> list[Queue]:
    parent = queue_name(tenant, QUEUE_TYPE_SUBSCRIPTION)
    teams = []
    for name in sorted(live):
        queue = read_live(live[name])
        if queue is not None and queue.parent == parent:
            teams.append(queue)
    return teams


def desired_queues(
    spec: TenantSpec, live: Mapping[str, Mapping[str, Any]]
) -> tuple[list[Queue], list[str]]:
    """The tenant's queues (parents first) and the team queues to remove.

    ``live`` maps queue name to the live Queue manifest of this tenant."""
    tenant = spec.name
    sub = subscription_queue(tenant, spec.subscription, spec.subscription_guarantee)
    if spec.teams is None:
        teams = _live_teams(tenant, live)
        removed: list[str] = []
    else:
        teams = [team_queue(tenant, t) for t in spec.teams]
        wanted = {t.name for t in teams}
        removed = [q.name for q in _live_teams(tenant, live) if q.name not in wanted]
    payg_name = queue_name(tenant, QUEUE_TYPE_PAYG)
    zero = {res: Decimal(0) for res in spec.subscription}
    current = read_live(live[payg_name]) if payg_name in live else None
    if spec.payg is not None:
        payg = payg_queue(tenant, {**zero, **spec.payg}, write=True)
    elif current is not None:
        payg = payg_queue(tenant, current.capability, write=False)
    else:
        payg = payg_queue(tenant, zero, write=True)
    spot_name = queue_name(tenant, QUEUE_TYPE_SPOT)
    spot_live = read_live(live[spot_name]) if spot_name in live else None
    spot = spot_queue(tenant, spot_live.capability if spot_live is not None else None)
    # vGPU is sold with the subscription, which its teams share; pay-as-you-go and spot
    # hold none beyond what their pods hold (rule vgpu-queue-capability).
    with_vgpu(sub, spec.vgpu, live, deserved=True)
    with_vgpu(payg, None, live, deserved=True)
    with_vgpu(spot, None, live)
    for team in teams:
        with_vgpu(team, spec.vgpu, live)
    return [sub, payg, spot, *teams], removed


# --------------------------------------------------------------------------
# Checks against live state, and the whole plan
# --------------------------------------------------------------------------


def changed_capability_errors(
    queues: Sequence[Queue], live: Mapping[str, Mapping[str, Any]], skip: Sequence[str] = ()
) -> list[FieldError]:
    """Rule capability-above-allocated for every queue this run would change."""
    errors: list[FieldError] = []
    for q in queues:
        if q.name in skip or q.name not in live or q.queue_type == QUEUE_TYPE_SPOT:
            continue
        current = read_live(live[q.name])
        if current is not None and current.capability == q.capability:
            continue
        errors += rule_capability_above_allocated(q, allocated(live[q.name]))
    return errors


def removal_errors(
    names: Sequence[str], busy: Mapping[str, int], field_name: str
) -> list[FieldError]:
    """Rule busy-queue-removal: a queue with running jobs is not removed unless forced."""
    return [
        FieldError(
            field_name,
            f"removes queue {name}, which has {busy[name]} running job(s) or pod group(s); "
            "wait for them, or force: true to remove it anyway",
        )
        for name in names
        if busy.get(name)
    ]


def plan_tenant(
    spec: TenantSpec,
    live_queues: Mapping[str, Mapping[str, Any]],
    busy: Mapping[str, int] | None = None,
    force: bool = False,
    discovered: ClusterNetworks | None = None,
) -> TenantPlan:
    """Every object the tenant should have; raises with every rule the change
    would break (queue tree, capability below allocated, busy removals, egress
    into the cluster, a cluster network neither given nor discovered)."""
    busy = busy or {}
    queues, removed = desired_queues(spec, live_queues)
    errors = tree_errors(queues, busy)
    if not force:
        errors += changed_capability_errors(queues, live_queues)
        errors += removal_errors(removed, busy, "teams")
    networks, network_errors = cluster_networks(
        spec.pod_cidr, spec.service_cidr, discovered or ClusterNetworks()
    )
    egress, egress_errors = egress_blocks(
        spec.egress_cidrs, networks, spec.egress_to_nodes, spec.egress_to_metadata
    )
    raise_if([*errors, *network_errors, *egress_errors])
    namespace = tenant_namespace(spec.name, spec.allow_critical)
    bounds = spec.bounds or bounds_from(None, spec.subscription, spec.payg, [])
    objects = [
        namespace,
        role(spec.name),
        role_binding(spec.name, spec.subjects),
        network_policy(spec.name, egress),
        tenant_queues_configmap(spec.name, leaf_queue_types(queues)),
        *queue_reader(spec.name, spec.subjects, sorted(q.name for q in queues)),
        resource_quota(spec.name, bounds),
        limit_range(spec.name, bounds),
    ]
    return TenantPlan(namespace=namespace, objects=objects, queues=queues, queue_deletes=removed)


def tenant_namespace(tenant: str, allow_critical: bool = False) -> dict[str, Any]:
    """Rule tenant-namespace: the tenant's namespace, with Pod Security ``baseline``
    enforced (no privileged pod, host namespace or hostPath; ``restricted`` audited and
    warned about) and, where the platform allows it, critical jobs."""
    labels = {**tenant_labels(tenant), **POD_SECURITY_LABELS}
    labels[LABEL_ALLOW_CRITICAL] = "true" if allow_critical else "false"
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": namespace_name(tenant), "labels": labels},
    }


def leaf_queue_types(queues: Sequence[Queue]) -> dict[str, str]:
    """Rule queue-of-own-tenant's parameter: the tenant's queues that take jobs (every
    queue that is no other queue's parent), each with its type."""
    parents = parent_queue_names(queues)
    return {q.name: str(q.queue_type) for q in queues if q.name not in parents}


def plan_team_change(
    tenant: str,
    team: TeamSpec | None,
    remove: str | None,
    live_queues: Mapping[str, Mapping[str, Any]],
    busy: Mapping[str, int] | None = None,
    force: bool = False,
) -> list[Queue]:
    """The tenant's queues after adding/resizing ``team`` or removing the team
    named ``remove``; raises with every rule the change would break."""
    busy = busy or {}
    sub_name = queue_name(tenant, QUEUE_TYPE_SUBSCRIPTION)
    errors: list[FieldError] = []
    if sub_name not in live_queues:
        raise_if(
            [FieldError("tenant", f"{tenant!r} has no queue {sub_name}; create the tenant first")]
        )
    queues = [q for q in (read_live(m) for m in live_queues.values()) if q is not None]
    if team is not None:
        # A team shares its tenant's vGPU purchase: the subscription queue's vGPU
        # capability, as the tenant module last wrote it (none written: what it holds).
        sub = read_live(live_queues[sub_name])
        bought = {
            k: v for k, v in (sub.capability if sub else {}).items() if k in VGPU_QUEUE_RESOURCES
        }
        wanted = with_vgpu(team_queue(tenant, team), bought or None, live_queues)
        queues = [q for q in queues if q.name != wanted.name] + [wanted]
        errors += tree_errors(queues, busy)
        if not force:
            errors += changed_capability_errors([wanted], live_queues)
    elif remove is not None:
        name = queue_name(tenant, QUEUE_TYPE_TEAM, remove)
        queues = [q for q in queues if q.name != name]
        if not force:
            errors += removal_errors([name], busy, "team.name")
    raise_if(errors)
    return queues


def queue_name_collisions(
    tenant: str, queues: Sequence[Queue], found: Mapping[str, Mapping[str, Any]]
) -> list[FieldError]:
    """Rule queue-name-owned: every queue the tenant is to get that already exists belongs to
    it. ``found`` holds the live queues of those names the tenant does not have yet."""
    errors = []
    for queue in queues:
        other = found.get(queue.name)
        if other is None:
            continue
        whose = foreign_owner(other, tenant)
        if whose is None:
            continue
        errors.append(
            FieldError(
                queue.source or "name",
                f"makes queue {queue.name}, which already exists and belongs to {whose}; "
                "choose another name",
            )
        )
    return errors
