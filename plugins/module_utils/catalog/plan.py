# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one catalog run does to each tenant, decided before the first write.

Rules held here:

* Rule catalog-plan (``plan_tenant_work``): each catalog tenant gets the plan the
  ``tenant`` module would make for it alone (``tenants.plan.plan_tenant``), with the
  same refusals (capability below allocated, busy team removals, egress into the
  cluster), and writes only the objects and queue steps that differ.
* Rule catalog-queue-name-owned (``foreign_queue_errors``): a queue a catalog tenant
  is to get must not exist for a tenant outside it.
* Rules catalog-prune-empty, catalog-prune-max (``prune_empty_errors``,
  ``prune_max_errors``): a catalog that names no tenant never prunes, and a run prunes at
  most ``max_prune`` tenants; both stop the whole run before any write, whatever
  ``on_refusal`` says.
* Rule catalog-prune-data (``prune_data_refusal``): a tenant to prune that holds
  PersistentVolumeClaims or Secrets of its own is refused unless ``prune_confirm``
  names it.
* Rule catalog-prune (``prune_candidates``): a tenant the platform manages (its
  namespace or queues carry ``platform.io/tenant``) and the catalog no longer names
  is removed only with ``prune: true``, and, while it has active Volcano Jobs or pods,
  only with ``force: true`` too.
* Rule catalog-status (``tenant_status``): each tenant is reported ``created`` (it had
  no namespace), ``changed``, ``unchanged``, ``refused`` or ``pruned``.

Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..common.errors import FieldError, PlatformValidationError
from ..common.names import QUEUE_TYPE_TEAM
from ..queues.model import foreign_owner
from ..queues.plan import QueueStep, queue_steps
from ..tenants.changes import ObjectChange, tenant_object_changes
from ..tenants.live import TenantLive, busy_queues
from ..tenants.network import ClusterNetworks
from ..tenants.plan import TenantPlan, plan_tenant
from ..tenants.spec import TenantSpec

CREATED = "created"
CHANGED = "changed"
UNCHANGED = "unchanged"
REFUSED = "refused"
PRUNED = "pruned"
STATUSES = (CREATED, CHANGED, UNCHANGED, REFUSED, PRUNED)


@dataclass
class TenantWork:
    """One tenant's part of the run: its plan, or why it is refused."""

    name: str
    live: TenantLive
    spec: TenantSpec | None = None
    plan: TenantPlan | None = None
    steps: list[QueueStep] = field(default_factory=list)
    # The Namespace, RBAC, NetworkPolicy and ConfigMaps that differ from the live ones.
    object_changes: list[ObjectChange] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    prune: bool = False
    running: dict[str, int] = field(default_factory=dict)

    @property
    def refused(self) -> bool:
        return bool(self.errors)


def foreign_queue_errors(
    spec: TenantSpec, plan: TenantPlan, queues: Mapping[str, Mapping[str, Any]]
) -> list[FieldError]:
    """Rule catalog-queue-name-owned against every live Queue (no request per queue)."""
    errors = []
    for queue in plan.queues:
        other = queues.get(queue.name)
        if other is None:
            continue
        whose = foreign_owner(other, spec.name)
        if whose is not None:
            errors.append(
                FieldError(
                    "teams" if queue.queue_type == QUEUE_TYPE_TEAM else "name",
                    f"queue {queue.name} already exists and belongs to {whose}; "
                    "rename the team or the tenant (rule catalog-queue-name-owned)",
                )
            )
    return errors


def plan_tenant_work(
    spec: TenantSpec,
    live: TenantLive,
    queues: Mapping[str, Mapping[str, Any]],
    networks: ClusterNetworks,
    force: bool = False,
) -> TenantWork:
    """Rule catalog-plan for one tenant; a refusal is kept on the work, not raised, so
    the run reports every refused tenant at once."""
    work = TenantWork(name=spec.name, live=live, spec=spec)
    try:
        plan = plan_tenant(
            spec, live.queues, busy_queues(live.podgroups, live.queues), force, networks
        )
    except PlatformValidationError as exc:
        work.errors = exc.messages
        return work
    collisions = foreign_queue_errors(spec, plan, queues)
    if collisions:
        work.errors = [str(e) for e in collisions]
        return work
    work.plan = plan
    work.steps = queue_steps(plan.queues, live.queues, plan.queue_deletes)
    # Compared once: whether the tenant is written at all, and what is written.
    work.object_changes = tenant_object_changes(plan.objects, live)
    return work


def prune_candidates(fleet: Mapping[str, TenantLive], catalog: Sequence[str]) -> list[str]:
    """Rule catalog-prune: the managed tenants the catalog does not name, sorted."""
    wanted = set(catalog)
    return sorted(name for name in fleet if name not in wanted)


# Rule catalog-prune-max: how many tenants one run may prune unless the caller raises it.
PRUNE_MAX_DEFAULT = 5


def prune_empty_errors(prune: bool, catalog: Sequence[str]) -> list[FieldError]:
    """Rule catalog-prune-empty: a catalog that names no tenant never prunes. A missing,
    misspelt or empty catalog file reads like that, and would delete every tenant."""
    if not prune or catalog:
        return []
    return [
        FieldError(
            "prune",
            "the catalog names no tenant, so prune would delete every tenant the platform manages; "
            "a catalog file that is empty, or a misspelt variable that left the catalog empty, looks "
            "like this. Refused whatever on_refusal says (rule catalog-prune-empty)",
        )
    ]


def prune_max_errors(candidates: Sequence[str], max_prune: int) -> list[FieldError]:
    """Rule catalog-prune-max: more tenants to prune than ``max_prune`` stops the whole run
    before any write, naming them, whatever on_refusal says."""
    if len(candidates) <= max_prune:
        return []
    listed = ", ".join(candidates[:50]) + (", ..." if len(candidates) > 50 else "")
    return [
        FieldError(
            "max_prune",
            f"the run would prune {len(candidates)} tenants, more than {max_prune}: {listed}. "
            "Raise max_prune to at least that many if the catalog is right (rule catalog-prune-max)",
        )
    ]


def prune_data_refusal(name: str, data: Mapping[str, int], confirmed: Sequence[str]) -> list[str]:
    """Rule catalog-prune-data: a tenant holding claims or Secrets of its own (their data
    goes with its namespace) is pruned only when this run's ``prune_confirm`` names it."""
    if name in confirmed or not (data.get("claims") or data.get("secrets")):
        return []
    return [
        f"tenant {name!r} is not in the catalog but holds {data.get('claims', 0)} "
        f"PersistentVolumeClaim(s) and {data.get('secrets', 0)} Secret(s), whose data goes with "
        "its namespace; name it in prune_confirm to prune it (rule catalog-prune-data)"
    ]


def prune_refusal(name: str, running: Mapping[str, int], force: bool) -> list[str]:
    """Rule catalog-prune: a tenant with active work stays unless forced."""
    if force or not (running.get("jobs") or running.get("pods")):
        return []
    return [
        f"tenant {name!r} is not in the catalog but still has {running.get('jobs', 0)} active "
        f"Volcano Job(s) and {running.get('pods', 0)} active pod(s); wait for them, or "
        "force: true to prune it anyway (rule catalog-prune)"
    ]


def tenant_status(work: TenantWork, wrote_anything: bool) -> str:
    """Rule catalog-status: the tenant is reported ``created``, ``changed``, ``unchanged``,
    ``refused`` or ``pruned``."""
    if work.refused:
        return REFUSED
    if work.prune:
        return PRUNED if wrote_anything else UNCHANGED
    if not wrote_anything:
        return UNCHANGED
    return CHANGED if work.live.namespace_exists else CREATED


def summary_row(work: TenantWork, status: str, objects: Sequence[Mapping[str, Any]]) -> dict:
    """One line of the run's per-tenant table."""
    row: dict[str, Any] = {"name": work.name, "status": status, "objects": len(objects)}
    if work.errors:
        row["errors"] = list(work.errors)
    if work.running:
        row["running"] = dict(work.running)
    return row


def counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """How many tenants ended in each status (every status named, 0 included)."""
    out = dict.fromkeys(STATUSES, 0)
    for row in rows:
        out[row["status"]] += 1
    return out
