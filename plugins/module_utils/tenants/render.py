# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``state: rendered``: the manifests a catalog (or one tenant) becomes, without a
cluster, for a GitOps repository.

Rule rendered-order (``sorted_manifests``): the output is stable and sorted, so a
re-render of an unchanged catalog is byte-for-byte the same: cluster-scoped objects
before namespaced ones, then in the order the platform writes kinds (Namespace, RBAC,
NetworkPolicy, ConfigMaps, then Queues parents first), then by namespace and name.
Each Queue carries its capacity fields merged in, as the first run writes them (the
pay-as-you-go and spot capabilities are afterwards the platform's reconciles' to
change: a GitOps tool should ignore differences in their ``spec.capability``). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..common.names import ROOT_QUEUE
from ..policy.admission import PARAM_KEY_QUEUES, parent_queues_configmap
from ..queues.model import Queue
from ..queues.parent_list import parent_queue_names
from .network import ClusterNetworks
from .plan import TenantPlan, plan_tenant
from .spec import TenantSpec

KIND_ORDER = (
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "NetworkPolicy",
    "ConfigMap",
    "ResourceQuota",
    "LimitRange",
    "Queue",
)


def queue_manifest(queue: Queue) -> dict[str, Any]:
    """A queue as its first write leaves it: whole (rule queue-created-whole)."""
    return queue.whole_manifest()


def _sort_key(manifest: Mapping[str, Any]) -> tuple[int, int, int, str, str]:
    kind = manifest.get("kind", "")
    meta = manifest.get("metadata") or {}
    parent = (manifest.get("spec") or {}).get("parent") if kind == "Queue" else None
    depth = 0 if parent in (None, "", ROOT_QUEUE) else 1
    order = KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)
    return (
        order,
        depth,
        1 if meta.get("namespace") else 0,
        meta.get("namespace", ""),
        meta["name"],
    )


def sorted_manifests(manifests: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rule rendered-order: the manifests in a stable order, cluster-scoped first, then by
    the order the platform writes kinds, then by namespace and name (see the module
    docstring)."""
    return [dict(m) for m in sorted(manifests, key=_sort_key)]


def tenant_manifests(spec: TenantSpec, networks: ClusterNetworks) -> list[dict[str, Any]]:
    """One new tenant's objects and queues (no live state: as the first run makes it)."""
    plan = plan_tenant(spec, {}, {}, False, networks)
    return [*plan.objects, *(queue_manifest(q) for q in plan.queues)]


def parent_list_manifest(specs: Sequence[TenantSpec], networks: ClusterNetworks) -> dict | None:
    """The parent-queues list the catalog's tenants need (None when no tenant has teams)."""
    parents: set[str] = set()
    for spec in specs:
        parents |= parent_queue_names(plan_tenant(spec, {}, {}, False, networks).queues)
    if not parents:
        return None
    manifest = parent_queues_configmap()
    manifest["data"] = {PARAM_KEY_QUEUES: ",".join(sorted(parents))}
    return manifest


def render_plans(plans: Sequence[TenantPlan]) -> list[dict[str, Any]]:
    """Every manifest of tenants already planned on an empty cluster, with the parent-queues
    list they need, sorted (rule rendered-order): ``render_catalog`` without planning
    again (the ``tenant`` module's ``rendered``, planned by its flow)."""
    manifests: list[dict[str, Any]] = []
    parents: set[str] = set()
    for plan in plans:
        manifests += [*plan.objects, *(queue_manifest(q) for q in plan.queues)]
        parents |= parent_queue_names(plan.queues)
    if parents:
        parent_list = parent_queues_configmap()
        parent_list["data"] = {PARAM_KEY_QUEUES: ",".join(sorted(parents))}
        manifests.append(parent_list)
    return sorted_manifests(manifests)


def render_catalog(specs: Sequence[TenantSpec], networks: ClusterNetworks) -> list[dict[str, Any]]:
    """Every manifest of the catalog, sorted (rule rendered-order)."""
    manifests: list[dict[str, Any]] = []
    for spec in specs:
        manifests += tenant_manifests(spec, networks)
    parent_list = parent_list_manifest(specs, networks)
    if parent_list is not None:
        manifests.append(parent_list)
    return sorted_manifests(manifests)
