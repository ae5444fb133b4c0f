# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The spot queues' capabilities for a cluster state (pure: lists in, plan out).

Puts rule pool, rule committed, rule spot-offer (``spot/offer``: the unsold GPUs by
default, or the unused ones) and rule spot-apportionment together (``spot/lending``: by
share by default, or by share and then lent to waiting spot gangs): from the Nodes, the
managed Queues and (offer ``unused`` or apportionment ``demand``) the unfinished Pods and
the PodGroups, every spot queue's new capability (deserved 0), which queues change, and
the table ``spot_capacity`` reports.

* Rule spot-pool-not-empty (``empty_pool_errors``): a node selector that selects no
  node, or nodes without GPUs, is refused unless the empty pool is asked for (no
  selector: never refused).
* Rule spot-capability-floor (``spot_capability_floor``): a spot capability never
  carries a cpu or memory of 0, which Volcano reads as unlimited.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..common.errors import FieldError, raise_if
from ..common.names import QUEUE_API
from ..common.objects import differs
from ..common.quantity import CPU, GPU, MEMORY, Resources, render
from ..workload.pool import (
    POOL_RESOURCES,
    commitments_from_queues,
    node_matches,
    pool_from_nodes,
    pool_node_resources,
)
from .apportion import UNITS, apportion_spot, share
from .lending import APPORTION_DEMAND, APPORTION_SHARE, apportion_by_demand, spot_demand
from .offer import OFFER_UNSOLD, spot_offer

# Volcano 1.15.1 reads a queue capability of 0 cpu or 0 memory as unlimited
# (pkg/scheduler/plugins/capacity/capacity.go and proportion/proportion.go:
# ``if attr.capability.MilliCPU <= 0 { attr.capability.MilliCPU = math.MaxFloat64 }``,
# the same for Memory); only extended resources such as nvidia.com/gpu honour 0.
# A spot capability that is to hold nothing is written at the smallest unit the
# apportionment uses instead: 1m cpu, 1Mi memory.
CAPABILITY_FLOOR = {
    CPU: Decimal(UNITS[CPU].numerator) / UNITS[CPU].denominator,
    MEMORY: Decimal(UNITS[MEMORY].numerator),
}


def spot_capability_floor(capability: Mapping[str, Decimal]) -> Resources:
    """Rule spot-capability-floor: a cpu or memory capability of 0 (or less) becomes the
    smallest unit (1m cpu, 1Mi memory), because Volcano reads 0 as unlimited; GPUs stay
    as they are (0 GPUs is honoured)."""
    out = dict(capability)
    for resource, floor in CAPABILITY_FLOOR.items():
        if resource in out and out[resource] <= 0:
            out[resource] = floor
    return out


def empty_pool_errors(
    node_selector: Mapping[str, str] | None,
    listed: int,
    members: int,
    pool_gpus: Decimal,
    allow_empty_pool: bool = False,
) -> list[FieldError]:
    """Rule spot-pool-not-empty: a pool without a node or without a GPU would set every
    spot queue to 0 GPUs (a typo in ``node_selector`` looks exactly like that), so it is
    refused unless ``allow_empty_pool`` says it is meant. ``listed`` is how many Nodes
    the selector matched, ``members`` how many of them are Ready and schedulable.

    Without a selector nothing can be mistyped: a cluster whose GPU nodes have not
    joined yet (a first bring-up) simply has no idle GPUs."""
    if allow_empty_pool or not node_selector or (members > 0 and pool_gpus > 0):
        return []
    if members == 0:
        found = f"matches {listed} node(s), {members} of them Ready and schedulable"
    else:
        found = (
            f"matches {listed} node(s) ({members} Ready and schedulable) with 0 allocatable GPUs"
        )
    return [
        FieldError(
            "node_selector",
            f"{dict(node_selector or {})!r} {found}; every spot queue would get 0 GPUs. "
            "Fix the selector, or set allow_empty_pool: true if the pool is meant to be empty",
        )
    ]


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


@dataclass(frozen=True)
class TenantSpot:
    """One tenant's line of the plan, rendered as a row only when it is reported
    (``recompute_result``): an unchanged run over 10,000 tenants reports none."""

    tenant: str
    queue: str | None  # its spot queue; None without one
    subscription: Decimal  # subscribed GPUs
    old: Resources  # the live spot capability
    new: Resources  # the computed one
    changed: bool
    by_share: Decimal | None = None  # apportionment demand: its share's GPUs before lending

    def row(self, total_subscription: Decimal) -> dict[str, Any]:
        """The row ``spot_capacity`` reports: C(share) is the tenant's fraction of the
        idle pool, C(old) null without a spot queue."""
        row = {
            "tenant": self.tenant,
            "queue": self.queue,
            "subscription": int(self.subscription),
            "share": round(float(share(self.subscription, total_subscription)), 6),
            "old": dict(render(self.old)) if self.queue else None,
            "new": dict(render(self.new)),
            "changed": self.changed,
        }
        if self.by_share is not None:
            # GPUs it lends (negative) or borrows (positive) against its share.
            row["lent"] = int(self.new.get(GPU, 0) - self.by_share)
        return row


@dataclass
class SpotCapacityPlan:
    pool: Resources
    idle: Resources  # what spot may hold, by rule spot-offer
    offer: str = OFFER_UNSOLD
    apportion: str = APPORTION_SHARE
    total_subscription: Decimal = Decimal(0)  # every tenant's subscribed GPUs
    tenants: list[TenantSpot] = field(default_factory=list)  # sorted by tenant
    changes: list[dict[str, Any]] = field(default_factory=list)  # manifests to apply
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def rows(self) -> list[dict[str, Any]]:
        """Every tenant's row (see ``TenantSpot.row``)."""
        return [t.row(self.total_subscription) for t in self.tenants]

    def changed_rows(self) -> list[dict[str, Any]]:
        """The rows of the tenants whose spot capability changes."""
        return [t.row(self.total_subscription) for t in self.tenants if t.changed]


def plan_spot_capacity(
    nodes: Iterable[Mapping[str, Any]],
    queues: Iterable[Mapping[str, Any]],
    node_selector: Mapping[str, str] | None = None,
    allow_empty_pool: bool = False,
    offer: str = OFFER_UNSOLD,
    pods: Iterable[Mapping[str, Any]] = (),
    podgroups: Iterable[Mapping[str, Any]] = (),
    apportion: str = APPORTION_SHARE,
) -> SpotCapacityPlan:
    """Every tenant's spot capability, and the spot queues whose value changes; raises
    PlatformValidationError when rule spot-pool-not-empty refuses the pool. ``offer``
    ``unused`` reads ``pods`` (the unfinished ones), ``podgroups`` and the team queues
    among ``queues`` (rule spot-offer); ``apportion`` ``demand`` reads the spot queues'
    pods and PodGroups among them (rule spot-lending)."""
    pods, podgroups = list(pods), list(podgroups)
    queue_list = list(queues)
    node_list = list(nodes)
    pool, members = pool_from_nodes(node_list, node_selector)
    raise_if(
        empty_pool_errors(
            node_selector,
            sum(1 for n in node_list if node_matches(n, node_selector)),
            len(members),
            pool[GPU],
            allow_empty_pool,
        )
    )
    commitments = commitments_from_queues(queue_list)
    idle = spot_offer(offer, pool, commitments.values(), pods, podgroups, queue_list, members)
    subscriptions = {t: c.subscription[GPU] for t, c in commitments.items()}
    shares = apportion_spot(idle, subscriptions)
    capability = shares
    if apportion == APPORTION_DEMAND:
        allocatable = pool_node_resources(node_list, node_selector)
        demand = spot_demand(pods, podgroups, queue_list, allocatable)
        capability = apportion_by_demand(idle, subscriptions, demand)
    live_specs = {(q.get("metadata") or {}).get("name"): (q.get("spec") or {}) for q in queue_list}
    plan = SpotCapacityPlan(
        pool=pool,
        idle=idle,
        offer=offer,
        apportion=apportion,
        total_subscription=sum(subscriptions.values(), Decimal(0)),
    )
    for tenant in sorted(commitments):
        c = commitments[tenant]
        new = spot_capability_floor(capability[tenant])
        changed = False
        if not c.spot_queue:
            if c.subscription[GPU] > 0:
                gpus = render(new).get(GPU, 0)
                plan.warnings.append(
                    f"tenant {tenant!r} has a subscription but no spot queue; its share "
                    f"({gpus} GPUs) stays unused until the queue exists"
                )
        else:
            desired = spot_queue_spec(new)
            live = live_specs.get(c.spot_queue) or {}
            if differs(desired, {k: live.get(k) for k in desired}):
                changed = True
                plan.changes.append(spot_queue_manifest(c.spot_queue, new))
                plan.before[c.spot_queue] = {k: live.get(k) for k in desired}
                plan.after[c.spot_queue] = desired
        by_share = shares[tenant].get(GPU, Decimal(0)) if apportion == APPORTION_DEMAND else None
        plan.tenants.append(
            TenantSpot(
                tenant, c.spot_queue, c.subscription[GPU], c.spot_capability, new, changed, by_share
            )
        )
    return plan


# What spot_capacity's ``tenants`` lists: ``changed`` only the tenants whose spot
# capability changes (a fleet of 10,000 tenants otherwise returns, and an AWX job
# stores, 10,000 rows every minute to say that nothing moved), ``all`` every tenant.
REPORTS = ("changed", "all")


def recompute_counts(plan: SpotCapacityPlan) -> dict[str, int]:
    """How many tenants the plan covers, how many have a spot queue, and how many of
    those change: the whole fleet in a few numbers, whatever ``report`` lists."""
    spot_queues = sum(1 for t in plan.tenants if t.queue)
    changed = len(plan.changes)
    return {
        "tenants": len(plan.tenants),
        "spot_queues": spot_queues,
        "changed": changed,
        "unchanged": spot_queues - changed,
    }


def recompute_result(plan: SpotCapacityPlan, report: str = "changed") -> dict[str, Any]:
    """spot_capacity's result for a plan: pool, idle (what spot may hold) and the offer
    that says what idle means, the counts, the rows ``report`` asks for (see ``REPORTS``)
    and the spot queues it changes (``changed`` and ``diff`` come with the writes)."""
    rows = plan.rows if report == "all" else plan.changed_rows()
    return {
        "pool": render(plan.pool),
        "idle": render(plan.idle),
        "offer": plan.offer,
        "apportion": plan.apportion,
        "counts": recompute_counts(plan),
        "tenants": rows,
        "updated": [m["metadata"]["name"] for m in plan.changes],
    }
