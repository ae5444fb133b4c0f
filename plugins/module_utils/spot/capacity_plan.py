# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The spot queues' capabilities for a cluster state (pure: lists in, plan out).

Puts rule pool, rule committed, rule idle-for-spot and rule
spot-apportionment together: from the Nodes and the managed Queues, every
spot queue's new capability (deserved 0), which queues change, and the
table ``spot_capacity`` reports.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..capacity.pool import POOL_RESOURCES, commitments_from_queues, idle_for_spot, pool_from_nodes
from ..common.names import QUEUE_API
from ..common.objects import differs
from ..common.quantity import GPU, Resources, render
from .apportion import apportion_spot, shares


def spot_queue_spec(capability: Mapping[str, Decimal]) -> dict[str, Any]:
    """What spot_capacity writes on a spot queue: the capability, deserved 0."""
    return {
        "capability": dict(render(capability)),
        "deserved": dict(render({r: Decimal(0) for r in POOL_RESOURCES})),
    }


def spot_queue_manifest(queue: str, capability: Mapping[str, Decimal]) -> dict[str, Any]:
    """A partial Queue for server-side apply: only the fields spot_capacity owns."""
    return {
        "apiVersion": QUEUE_API,
        "kind": "Queue",
        "metadata": {"name": queue},
        "spec": spot_queue_spec(capability),
    }


@dataclass
class SpotCapacityPlan:
    pool: Resources
    idle: Resources
    rows: list[dict[str, Any]] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)  # manifests to apply
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def plan_spot_capacity(
    nodes: Iterable[Mapping[str, Any]],
    queues: Iterable[Mapping[str, Any]],
    node_selector: Mapping[str, str] | None = None,
) -> SpotCapacityPlan:
    """Every tenant's spot capability, and the spot queues whose value changes."""
    queue_list = list(queues)
    pool, _unused = pool_from_nodes(nodes, node_selector)
    commitments = commitments_from_queues(queue_list)
    idle = idle_for_spot(
        pool, [c.subscription for c in commitments.values()], [c.payg for c in commitments.values()]
    )
    subscriptions = {t: c.subscription[GPU] for t, c in commitments.items()}
    capability = apportion_spot(idle, subscriptions)
    share = shares(subscriptions)
    live_specs = {(q.get("metadata") or {}).get("name"): (q.get("spec") or {}) for q in queue_list}
    plan = SpotCapacityPlan(pool=pool, idle=idle)
    for tenant in sorted(commitments):
        c = commitments[tenant]
        new = capability[tenant]
        row = {
            "tenant": tenant,
            "queue": c.spot_queue,
            "subscription": int(c.subscription[GPU]),
            "share": round(float(share[tenant]), 6),
            "old": dict(render(c.spot_capability)) if c.spot_queue else None,
            "new": dict(render(new)),
            "changed": False,
        }
        if not c.spot_queue:
            if c.subscription[GPU] > 0:
                plan.warnings.append(
                    f"tenant {tenant!r} has a subscription but no spot queue; its share "
                    f"({row['new'].get(GPU, 0)} GPUs) stays unused until the queue exists"
                )
            plan.rows.append(row)
            continue
        desired = spot_queue_spec(new)
        live = live_specs.get(c.spot_queue) or {}
        if differs(desired, {k: live.get(k) for k in desired}):
            row["changed"] = True
            plan.changes.append(spot_queue_manifest(c.spot_queue, new))
            plan.before[c.spot_queue] = {k: live.get(k) for k in desired}
            plan.after[c.spot_queue] = desired
        plan.rows.append(row)
    return plan


def recompute_result(plan: SpotCapacityPlan) -> dict[str, Any]:
    """spot_capacity's result for a plan: pool, idle, one row per tenant and the
    spot queues it changes (``changed`` and ``diff`` come with the writes)."""
    return {
        "pool": render(plan.pool),
        "idle": render(plan.idle),
        "tenants": plan.rows,
        "updated": [m["metadata"]["name"] for m in plan.changes],
    }
