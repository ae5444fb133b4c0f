# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The queues a tenant should have, and the rules a change of them must keep. Pure: no
I/O, the live queues are handed in.

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

``TeamSpec`` is one team's queue as the ``tenant`` and ``team_queue`` modules take it
(``tenants.spec`` reads it); the tenant's whole plan is ``tenants.plan``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..common import quantity
from ..common.errors import FieldError, raise_if
from ..common.names import (
    QUEUE_TYPE_PAYG,
    QUEUE_TYPE_SPOT,
    QUEUE_TYPE_SUBSCRIPTION,
    QUEUE_TYPE_TEAM,
    VGPU_QUEUE_RESOURCES,
    queue_name,
)
from ..hybrid.vgpu import vgpu_queue_capability
from ..queues.model import Queue, allocated, foreign_owner, read_live
from ..queues.ownership import leaf_types
from ..queues.rules import rule_capability_above_allocated, tree_errors


@dataclass
class TeamSpec:
    name: str
    deserved: quantity.Resources = field(default_factory=dict)
    capability: quantity.Resources = field(default_factory=dict)
    guarantee: quantity.Resources = field(default_factory=dict)
    source: str | None = None


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


def live_teams(tenant: str, live: Mapping[str, Mapping[str, Any]]) -> list[Queue]:
    """The team queues among the tenant's live queues (those under its subscription queue)."""
    parent = queue_name(tenant, QUEUE_TYPE_SUBSCRIPTION)
    teams = []
    for name in sorted(live):
        queue = read_live(live[name])
        if queue is not None and queue.parent == parent:
            teams.append(queue)
    return teams


# --------------------------------------------------------------------------
# Checks against live state
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


def leaf_queue_types(queues: Sequence[Queue]) -> dict[str, str]:
    """The tenant's queues that take jobs, each with its type: rule queue-ownership's leaf
    queues (``queues/ownership.leaf_types``), written as its ``platform-queues`` list."""
    return leaf_types((q.name, q.parent, str(q.queue_type)) for q in queues)


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
