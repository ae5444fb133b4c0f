# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule run-summary for ``tenant_info``: the tenants and their queues as a small table a
person reads, quantities in people's units (rule quantity-for-people). Pure: the module's
``tenants`` return in, lines out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..common.quantity import CPU, GPU, MEMORY, for_people
from ..common.table import aligned

HEADING = ("TENANT", "QUEUE", "STATE", "GPUS", "CORES", "MEMORY", "JOBS")
# Not set: no guarantee, or (a capability) no limit of the queue's own.
UNSET = "-"


def amounts(queue: Mapping[str, Any], resource: str) -> str:
    """``allocated/deserved/capability`` of one resource, in people's units; nothing
    allocated is 0, a quota not set is ``-``."""
    allocated = for_people((queue.get("allocated") or {}).get(resource, 0), resource)
    quotas = (
        for_people(values[resource], resource) if resource in values else UNSET
        for values in (queue.get("deserved") or {}, queue.get("capability") or {})
    )
    return "/".join((allocated, *quotas))


def queue_label(queue: Mapping[str, Any]) -> str:
    """``subscription``, ``payg``, ``spot`` or ``team <name>``."""
    return f"team {queue['team']}" if queue.get("team") else str(queue.get("type") or queue["name"])


def tenant_rows(tenant: Mapping[str, Any]) -> list[list[str]]:
    """One row per queue, each naming its tenant (a row that began with spaces would be
    quoted by Ansible's YAML output, out of line with the others)."""
    name = tenant["name"] if tenant.get("namespace") else f"{tenant['name']} (no namespace)"
    queues = tenant.get("queues") or []
    if not queues:
        return [[name, "(no queues)", "", "", "", "", str(tenant.get("active_jobs", 0))]]
    return [
        [
            name,
            queue_label(q),
            str(q.get("state") or UNSET),
            amounts(q, GPU),
            amounts(q, CPU),
            amounts(q, MEMORY),
            str(q.get("active_jobs", 0)),
        ]
        for q in queues
    ]


def tenants_summary(tenants: Sequence[Mapping[str, Any]]) -> list[str]:
    """A headline, then the table: per queue its state, then GPUs, cores and memory as
    allocated/deserved/capability (``-`` not set), and its active Volcano Jobs."""
    queues = sum(len(t.get("queues") or []) for t in tenants)
    jobs = sum(int(t.get("active_jobs") or 0) for t in tenants)
    head = (
        f"{len(tenants)} tenant(s), {queues} queue(s), {jobs} active Volcano Job(s); "
        "GPUS, CORES, MEMORY as allocated/deserved/capability (- not set)"
    )
    if not tenants:
        return [f"{head}: no tenant"]
    rows = [list(HEADING), *(row for t in tenants for row in tenant_rows(t))]
    return [head, *aligned(rows, right={6})]


def info_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    """``tenant_info``'s ``summary`` (``kube.runner.run_module(summary=...)``)."""
    del params, check_mode  # a read: the same words in check mode
    return tenants_summary(result.get("tenants") or [])
