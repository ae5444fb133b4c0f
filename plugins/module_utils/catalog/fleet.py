# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The whole fleet as one LIST per kind returned it, cut into one ``TenantLive`` per
tenant: the catalog plans each tenant from the same objects the ``tenant`` module
would read for it alone, without a request per tenant. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..common.names import LABEL_MANAGED_BY, MANAGED_BY, namespace_name, owner_tenant
from ..tenants.live import TenantLive
from ..workload.pool import TenantCommitment, commitments_from_queues, pool_from_nodes

# The kinds a tenant owns besides its queues, as ``tenants.service`` writes them.
NAMESPACED_KINDS = ("Role", "RoleBinding", "NetworkPolicy", "ConfigMap")


@dataclass
class Fleet:
    """Every tenant's live objects, and the cluster-wide reads the plans share."""

    tenants: dict[str, TenantLive] = field(default_factory=dict)
    queues: dict[str, dict[str, Any]] = field(default_factory=dict)  # every Queue by name
    nodes: list[dict[str, Any]] = field(default_factory=list)
    service_cidrs: list[dict[str, Any]] = field(default_factory=list)
    parent_list: dict[str, Any] | None = None

    def live(self, tenant: str) -> TenantLive:
        """The tenant's objects; an empty ``TenantLive`` for a tenant not there yet."""
        return self.tenants.get(tenant) or TenantLive(name=tenant)


def tenant_of(obj: Mapping[str, Any]) -> str | None:
    return owner_tenant((obj.get("metadata") or {}).get("labels")) or None


def group_fleet(
    objects: Mapping[str, Iterable[Mapping[str, Any]]],
    queues: Iterable[Mapping[str, Any]],
    podgroups: Iterable[Mapping[str, Any]] = (),
) -> dict[str, TenantLive]:
    """``objects`` maps a kind to its LIST (selected by the tenant label); ``queues`` is
    every Queue. Namespaced objects count for a tenant only inside its own namespace, so
    a label copied onto another namespace's object never makes it the tenant's."""
    tenants: dict[str, TenantLive] = {}

    def entry(name: str) -> TenantLive:
        live = tenants.get(name)
        if live is None:  # not setdefault: that would build a TenantLive for every object
            live = tenants[name] = TenantLive(name=name, objects={})
        return live

    for kind, items in objects.items():
        for obj in items:
            name = tenant_of(obj)
            if not name:
                continue
            meta = obj.get("metadata") or {}
            if meta.get("namespace") and meta["namespace"] != namespace_name(name):
                continue
            entry(name).objects.setdefault(kind, {})[meta.get("name", "")] = dict(obj)
    for queue in queues:
        name = tenant_of(queue)
        if name:
            entry(name).queues[(queue.get("metadata") or {}).get("name", "")] = dict(queue)
    by_namespace = {namespace_name(name): live for name, live in tenants.items()}
    for pg in podgroups:
        live = by_namespace.get((pg.get("metadata") or {}).get("namespace", ""))
        if live is not None:
            live.podgroups.append(dict(pg))
    for live in tenants.values():
        for kind in objects:
            live.objects.setdefault(kind, {})
    return tenants


def fleet_purchases(
    params: Mapping[str, Any], fleet: Fleet
) -> tuple[dict[str, Decimal], dict[str, TenantCommitment]]:
    """The pool (``node_selector``) and every tenant's purchase, from the fleet as read:
    no request."""
    pool, _members = pool_from_nodes(fleet.nodes, params.get("node_selector") or {})
    managed = [
        q
        for q in fleet.queues.values()
        if ((q.get("metadata") or {}).get("labels") or {}).get(LABEL_MANAGED_BY) == MANAGED_BY
    ]
    return pool, commitments_from_queues(managed)
