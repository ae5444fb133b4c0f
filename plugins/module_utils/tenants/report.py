# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What ``tenant_info`` reports: listed Namespaces, Queues and Volcano Jobs
grouped by tenant, with each queue's quotas, allocation and active jobs. Pure:
``tenants.service`` lists, this sums."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..common import quantity
from ..common.errors import PlatformValidationError
from ..common.names import LABEL_TENANT, ROOT_QUEUE
from ..queues.model import Queue, allocated
from .live import active_jobs


def queue_entry(q: Queue, manifest: Mapping[str, Any], active: int) -> dict[str, Any]:
    """One queue of a tenant as reported, quantities as manifests write them."""
    return {
        "name": q.name,
        "type": q.queue_type,
        "team": q.team,
        "parent": q.parent,
        "state": (manifest.get("status") or {}).get("state"),
        "guarantee": quantity.render(q.guarantee),
        "deserved": quantity.render(q.deserved),
        "capability": quantity.render(q.capability),
        "allocated": quantity.render(allocated(manifest)),
        "active_jobs": active,
    }


def summarize(
    namespaces: Sequence[Mapping[str, Any]],
    queues: Sequence[Mapping[str, Any]],
    jobs: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """One entry per tenant (by the ``platform.io/tenant`` label), sorted by name;
    its queues parents first. Jobs count only in a tenant's own namespace, and
    a queue that does not parse is left out rather than failing the report."""
    tenants: dict[str, dict[str, Any]] = {}

    def entry(name: str) -> dict[str, Any]:
        return tenants.setdefault(
            name, {"name": name, "namespace": None, "active_jobs": 0, "queues": []}
        )

    ns_tenant: dict[str, str] = {}
    for ns in namespaces:
        meta = ns.get("metadata") or {}
        tenant = (meta.get("labels") or {}).get(LABEL_TENANT)
        if tenant:
            entry(tenant)["namespace"] = meta["name"]
            ns_tenant[meta["name"]] = tenant
    per_queue: dict[str, int] = {}
    for job in active_jobs(jobs):
        ns = (job.get("metadata") or {}).get("namespace")
        if ns in ns_tenant:
            entry(ns_tenant[ns])["active_jobs"] += 1
            q = (job.get("spec") or {}).get("queue")
            if q:
                per_queue[q] = per_queue.get(q, 0) + 1
    for manifest in queues:
        try:
            q = Queue.from_manifest(manifest)
        except PlatformValidationError:
            continue
        if q.tenant:
            entry(q.tenant)["queues"].append(queue_entry(q, manifest, per_queue.get(q.name, 0)))
    for t in tenants.values():
        t["queues"].sort(key=lambda q: (q["parent"] != ROOT_QUEUE, q["name"]))
    return [tenants[k] for k in sorted(tenants)]
