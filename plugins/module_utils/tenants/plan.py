# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every object a tenant should have: its Namespace, RBAC, NetworkPolicy, queue list,
ResourceQuota and LimitRange, and its queues (rule tenant-namespace and the whole plan).
Pure: the live queues and the discovered cluster networks are handed in.

``plan_tenant`` takes the checked input (``tenants.spec``) and what live state says
(running jobs, allocated resources, team queues made by ``team_queue``) and returns
the desired objects, or raises with every rule the change would break.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..common.errors import raise_if
from ..common.names import (
    QUEUE_TYPE_PAYG,
    QUEUE_TYPE_SPOT,
    namespace_name,
    queue_name,
    tenant_labels,
)
from ..policy.admission import LABEL_ALLOW_CRITICAL, tenant_queues_configmap
from ..queues.model import Queue, read_live
from ..queues.rules import tree_errors
from .bounds import bounds_from, limit_range, resource_quota
from .network import ClusterNetworks, cluster_networks, egress_blocks, network_policy
from .rbac import queue_reader, role, role_binding
from .spec import TenantSpec
from .tenant_queues import (
    changed_capability_errors,
    leaf_queue_types,
    live_teams,
    payg_queue,
    removal_errors,
    spot_queue,
    subscription_queue,
    team_queue,
    with_vgpu,
)

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


@dataclass
class TenantPlan:
    """What a tenant should look like: objects in write order (Namespace first,
    queues parents first) and the team queues to remove."""

    namespace: dict[str, Any]
    objects: list[dict[str, Any]]
    queues: list[Queue]
    queue_deletes: list[str] = field(default_factory=list)


def desired_queues(
    spec: TenantSpec, live: Mapping[str, Mapping[str, Any]]
) -> tuple[list[Queue], list[str]]:
    """The tenant's queues (parents first) and the team queues to remove.

    ``live`` maps queue name to the live Queue manifest of this tenant."""
    tenant = spec.name
    sub = subscription_queue(tenant, spec.subscription, spec.subscription_guarantee)
    if spec.teams is None:
        teams = live_teams(tenant, live)
        removed: list[str] = []
    else:
        teams = [team_queue(tenant, t) for t in spec.teams]
        wanted = {t.name for t in teams}
        removed = [q.name for q in live_teams(tenant, live) if q.name not in wanted]
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
