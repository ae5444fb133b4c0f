# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``tenant_catalog`` module as the contract's steps (``kube.flow``): the request,
the facts one run reads, the plan made from them, and what the plan says.

* ``CatalogRequest``: the options, parsed before the module connects
  (``source_io.parse_request``, which reads the ``src`` file).
* ``CatalogFacts``: the fleet as its LISTs returned it, and what runs in and is held by
  each tenant to prune (``service.gather_catalog``).
* ``plan_catalog``: every tenant's work (rule catalog-plan), the prune bound and the
  confirmation of data (rules catalog-prune-max, catalog-prune-data, catalog-prune), the
  oversell guard over the whole catalog, the refusal with ``on_refusal: fail``, and the
  sale (rule catalog-sale); the writes in their order for ``service.apply_catalog``.
* ``report_catalog``: the answer of ``rendered`` (the manifests) and of ``parsed`` (what a
  check-mode run on the gathered cluster reports, from the plan alone).

Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ansible.module_utils.common.warnings import warn

from ..capacity.purchase import CatalogSale, catalog_sale
from ..common.errors import FieldError, PartialWrite, Refused, raise_if
from ..kube.flow import RENDERED, fact_lists
from ..queues.model import reading_once
from ..queues.parent_list import parent_queue_names
from ..queues.plan import CREATE, DELETE, UPDATE
from ..tenants.changes import Changes, step_action, step_manifest
from ..tenants.live import queues_in_delete_order
from ..tenants.network import discovered_networks
from ..tenants.teams import parent_list_after, parent_list_manifest
from .fleet import Fleet, fleet_purchases, group_fleet
from .gather import gather_fleet
from .plan import (
    PRUNE_MAX_DEFAULT,
    TenantWork,
    counts,
    plan_tenant_work,
    prune_candidates,
    prune_data_refusal,
    prune_max_errors,
    prune_refusal,
    summary_row,
    tenant_status,
)
from .rendered import rendered_catalog
from .sale import oversell_check, sale_line, spot_after
from .spec import Catalog

PARENT_LIST_WHAT = "writing the tenant catalog's parent-queues list"


@dataclass(frozen=True)
class CatalogRequest:
    """The module's options, checked. ``options`` keeps the run-wide options the sale,
    its reclaim and the oversell guard read (``node_selector``, ``oversell_check``,
    ``reclaim``, ``demand_reason`` and the reclaim's)."""

    state: str
    catalog: Catalog | None
    options: Mapping[str, Any] = field(default_factory=dict)
    prune: bool = False
    max_prune: int = PRUNE_MAX_DEFAULT
    prune_confirm: tuple[str, ...] = ()
    force: bool = False
    on_refusal: str = "fail"
    workers: int = 8
    progress_file: str | None = None


@dataclass
class CatalogFacts:
    """The fleet as read: ``objects`` maps each tenant kind, in the order read (a prune
    deletes them in reverse), to its LIST selected by the tenant label; every Queue,
    PodGroup and Node; the ServiceCIDRs; the parent-queues list; and ``running``: the
    active Jobs and pods and the data of each tenant to prune."""

    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    queues: list[dict[str, Any]] = field(default_factory=list)
    podgroups: list[dict[str, Any]] = field(default_factory=list)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    service_cidrs: list[dict[str, Any]] = field(default_factory=list)
    parent_list: dict[str, Any] | None = None
    running: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The storage role's capacity per class (rule catalog-storage-oversell); None: unknown.
    storage_capacity: dict[str, Any] | None = None
    # When the run started reading (the progress lines count from it); not a fact.
    started: float | None = field(default=None, compare=False)

    def fleet(self) -> Fleet:
        """The objects cut into one ``TenantLive`` per tenant (``fleet.group_fleet``)."""
        return Fleet(
            tenants=group_fleet(self.objects, self.queues, self.podgroups),
            queues={q["metadata"]["name"]: q for q in self.queues},
            nodes=self.nodes,
            service_cidrs=self.service_cidrs,
            parent_list=self.parent_list,
        )


@dataclass
class CatalogPlan:
    """What the run writes, in order: ``todo`` (the tenants not refused; ``busy`` says
    which of them have writes), the parent-queues list's ``parents`` and ``owned``, and
    the ``sale``. ``rendered``: the manifests of ``state: rendered``."""

    works: list[TenantWork] = field(default_factory=list)
    prunes: list[TenantWork] = field(default_factory=list)
    todo: list[TenantWork] = field(default_factory=list)
    busy: list[bool] = field(default_factory=list)
    parents: set[str] = field(default_factory=set)
    owned: set[str] = field(default_factory=set)
    sale: CatalogSale | None = None
    parent_list: dict[str, Any] | None = None
    rendered: dict[str, Any] | None = None
    kinds: tuple[str, ...] = ()  # the tenant kinds in the order read; a prune deletes in reverse
    started: float | None = None


# -- facts -----------------------------------------------------------------------------------


def empty_facts(request: CatalogRequest) -> CatalogFacts:
    """The facts of a cluster with nothing on it (``state: rendered``)."""
    return CatalogFacts()


def facts_out(facts: CatalogFacts) -> dict[str, Any]:
    """The facts as ``state: gathered`` returns them."""
    return {
        "objects": {kind: list(items) for kind, items in facts.objects.items()},
        "queues": list(facts.queues),
        "podgroups": list(facts.podgroups),
        "nodes": list(facts.nodes),
        "service_cidrs": list(facts.service_cidrs),
        "parent_list": facts.parent_list,
        "running": dict(facts.running),
    }


def facts_in(request: CatalogRequest, data: Mapping[str, Any]) -> CatalogFacts:
    """The facts given to ``state: parsed``, as ``gathered`` returned them."""
    queues, podgroups, nodes, cidrs = fact_lists(
        data, "queues", "podgroups", "nodes", "service_cidrs"
    )
    errors = [
        FieldError(f"facts.{key}", "must be a mapping, as state: gathered returns it")
        for key in ("objects", "running", "parent_list")
        if data.get(key) is not None and not isinstance(data.get(key), Mapping)
    ]
    objects = data.get("objects") or {}
    errors += (
        [
            FieldError(f"facts.objects.{kind}", "must be a list, as state: gathered returns it")
            for kind, items in objects.items()
            if not isinstance(items, list)
        ]
        if isinstance(objects, Mapping)
        else []
    )
    raise_if(errors)
    return CatalogFacts(
        objects={kind: [dict(o) for o in items] for kind, items in objects.items()},
        queues=[dict(q) for q in queues],
        podgroups=[dict(p) for p in podgroups],
        nodes=[dict(n) for n in nodes],
        service_cidrs=[dict(c) for c in cidrs],
        parent_list=dict(data["parent_list"]) if data.get("parent_list") else None,
        running={k: dict(v) for k, v in (data.get("running") or {}).items()},
    )


def gathered_entries(facts: CatalogFacts) -> list[dict[str, Any]]:
    """Rule gathered-entry over the fleet: ``state: gathered``'s ``tenants``."""
    fleet = facts.fleet()
    return gather_fleet(fleet.tenants, discovered_networks(fleet.nodes, fleet.service_cidrs))


def prune_names(request: CatalogRequest, facts: CatalogFacts) -> list[str]:
    """The tenants whose Jobs, pods and data the run reads: none unless it prunes, and
    none when they are more than ``max_prune`` (the plan refuses the run, before any such
    read). Rule catalog-prune picks them (``prune_candidates``)."""
    if not request.prune or request.catalog is None:
        return []
    names = prune_candidates(facts.fleet().tenants, request.catalog.names)
    return [] if prune_max_errors(names, request.max_prune) else names


# -- plan ------------------------------------------------------------------------------------


def plan_prunes(request: CatalogRequest, fleet: Fleet, facts: CatalogFacts) -> list[TenantWork]:
    """The tenants to prune with what runs in them: too many stops the whole run (rule
    catalog-prune-max); each is refused while it runs work (rule catalog-prune) or holds
    data ``prune_confirm`` does not name (rule catalog-prune-data)."""
    if not request.prune or request.catalog is None:
        return []
    names = prune_candidates(fleet.tenants, request.catalog.names)
    raise_if(prune_max_errors(names, request.max_prune))
    missing = [n for n in names if n not in facts.running]
    raise_if(
        [
            FieldError(
                f"facts.running.{name}",
                "is missing: gather with the same catalog and prune: true",
            )
            for name in missing
        ]
    )
    prunes = []
    for name in names:
        running = facts.running[name]
        work = TenantWork(name=name, live=fleet.live(name), prune=True)
        work.live.jobs = list(running.get("jobs") or [])
        work.live.pods = list(running.get("pods") or [])
        work.running = {"jobs": len(work.live.jobs), "pods": len(work.live.pods)}
        work.errors = prune_refusal(name, work.running, request.force)
        work.errors += prune_data_refusal(
            name, running.get("data") or {}, list(request.prune_confirm)
        )
        prunes.append(work)
    return prunes


def refuse_if_any(request: CatalogRequest, works: Sequence[TenantWork]) -> None:
    """With ``on_refusal: fail`` one refused tenant stops the run before any write,
    naming every refused tenant (raises ``Refused``)."""
    refused = [w for w in works if w.refused]
    if not refused or request.on_refusal != "fail":
        return
    rows = [summary_row(w, tenant_status(w, False), []) for w in works]
    raise Refused(
        f"{len(refused)} tenant(s) of the catalog are refused, so nothing was written: "
        + "; ".join(f"{w.name}: {' / '.join(w.errors)}" for w in refused[:20])
        + ("; ..." if len(refused) > 20 else "")
        + " (on_refusal: skip writes the others)",
        summary=[r for r in rows if r["status"] == "refused"],
        counts=counts(rows),
    )


def sale_planned(
    options: Mapping[str, Any],
    fleet: Fleet,
    works: Sequence[TenantWork],
    prunes: Sequence[TenantWork],
) -> CatalogSale:
    """Rule catalog-sale for the tenants this run writes and prunes (a refused one keeps
    its live purchase): the one place a catalog run's sale is worked out, pure, so that
    ``parsed`` says it too."""
    pool, live = fleet_purchases(options, fleet)
    desired = {
        w.spec.name: (w.spec.subscription, w.spec.payg) for w in works if w.spec and not w.refused
    }
    return catalog_sale(pool, live, desired, [w.name for w in prunes if not w.refused])


def has_writes(work: TenantWork) -> bool:
    """Whether the run sends anything for ``work``: a prune, a queue step, or an object
    that differs. An unchanged tenant is not handed to the write pool at all."""
    if work.prune:
        return True
    if work.plan is None:
        return False
    return bool(work.steps) or bool(work.object_changes)


def plan_catalog(request: CatalogRequest, facts: CatalogFacts) -> CatalogPlan:
    """Every decision of the run, before its first write (see the module docstring)."""
    catalog = request.catalog
    if catalog is None:
        raise AssertionError("a plan needs a catalog")
    if request.state == RENDERED:
        return CatalogPlan(rendered=rendered_catalog(catalog))
    fleet = facts.fleet()
    with reading_once():  # each live Queue is parsed once for the whole plan
        # What every tenant's egress cuts out, discovered once (given CIDRs win).
        networks = discovered_networks(fleet.nodes, fleet.service_cidrs)
        works = [
            plan_tenant_work(spec, fleet.live(spec.name), fleet.queues, networks, request.force)
            for spec in catalog.tenants
        ]
        prunes = plan_prunes(request, fleet, facts)
        oversell_check(
            request.options,
            catalog,
            fleet,
            [w.name for w in prunes if not w.refused],
            facts.storage_capacity,
        )
    refuse_if_any(request, [*works, *prunes])
    todo = [w for w in (*works, *prunes) if not w.refused]
    parents: set[str] = set()
    owned: set[str] = set()
    for work in todo:
        if work.plan is not None:
            parents |= parent_queue_names(work.plan.queues)
            owned |= {q.name for q in work.plan.queues} | set(work.plan.queue_deletes)
        owned |= set(work.live.queues)
    return CatalogPlan(
        works=works,
        prunes=prunes,
        todo=todo,
        busy=[has_writes(w) for w in todo],
        parents=parents,
        owned=owned,
        sale=sale_planned(request.options, fleet, works, prunes),
        parent_list=fleet.parent_list,
        kinds=tuple(facts.objects),
        started=facts.started,
    )


# -- what the plan says ----------------------------------------------------------------------


def sold_of(
    sale: CatalogSale,
    reclaimed: Mapping[str, Any] | None,
    recomputed: Mapping[str, Any] | None,
    check_mode: bool,
    notes: Sequence[str] = (),
) -> dict[str, Any]:
    """What the run sold, reclaimed and left to spot (rule catalog-sale-summary), with the
    reclaim's jobs and counts in the diff as ``spot_reclaim`` shows them. The recompute's
    queues are in ``spot.updated``, not in the diff: check mode, which does not
    recompute, shows the same diff as the run."""
    spot = spot_after(sale, recomputed)
    reclaim_diff = (reclaimed or {}).get("diff") or {}
    diff = {
        side: {f"spot reclaim {k}": v for k, v in (reclaim_diff.get(side) or {}).items()}
        for side in ("before", "after")
    }
    return {
        "sale": {**sale.as_dict(), "summary": sale_line(sale, reclaimed, spot, check_mode)},
        "reclaim": dict((reclaimed or {}).get("reclaim") or {}),
        "spot": spot,
        "changed": bool((reclaimed or {}).get("changed")) or bool(spot["updated"]),
        "diff": diff,
        "notes": list(notes),
    }


def run_result(
    planned: CatalogPlan,
    results: Sequence[Any],
    run_changes: Changes,
    failed: Mapping[str, BaseException],
    sold: Mapping[str, Any],
    describe: Callable[[BaseException], str] = str,
) -> dict[str, Any]:
    """The per-tenant table, the objects written and the diff, with the sale (``sold``:
    ``sold_of``); a failed tenant (``describe`` says its error) makes the run fail,
    naming what every tenant wrote (each write is idempotent: run again)."""
    by_name = {w.name: r for w, r in zip(planned.todo, results, strict=True)}
    rows, objects, done = [], list(run_changes.objects), list(run_changes.done)
    before, after = dict(run_changes.before), dict(run_changes.after)
    for work in (*planned.works, *planned.prunes):
        result = by_name.get(work.name)
        changes = getattr(result, "changes", None) if isinstance(result, BaseException) else result
        written = changes.objects if changes is not None else []
        row = summary_row(work, tenant_status(work, bool(written)), written)
        if work.name in failed:
            row["status"], row["error"] = "failed", describe(failed[work.name])
        rows.append(row)
        if changes is not None:
            objects += changes.objects
            done += changes.done
            before.update(changes.before)
            after.update(changes.after)
    before.update((sold.get("diff") or {}).get("before") or {})
    after.update((sold.get("diff") or {}).get("after") or {})
    result: dict[str, Any] = {
        "changed": bool(objects) or bool(sold.get("changed")),
        "summary": rows,
        "counts": counts([r for r in rows if r["status"] != "failed"]),
        "objects": objects,
        "diff": {"before": before, "after": after},
        **{k: sold[k] for k in ("sale", "reclaim", "spot") if k in sold},
    }
    # Warned through Ansible's collector (module.warn), never a result key: ansible-core
    # 2.19 deprecates ``warnings`` passed to exit_json.
    notes = list(sold.get("notes") or [])
    refused = [r["name"] for r in rows if r["status"] == "refused"]
    if refused:
        notes.append(
            f"{len(refused)} tenant(s) refused and left as they are (on_refusal: skip): "
            + ", ".join(refused[:20])
        )
    for note in notes:
        warn(note)
    if failed:
        first = next(iter(failed.values()))
        raise PartialWrite(
            f"the tenant catalog ({len(failed)} tenant(s) failed: {', '.join(sorted(failed)[:10])})",
            done,
            first,
            summary=rows,
            counts=result["counts"],
            **{k: sold[k] for k in ("sale", "reclaim", "spot") if k in sold},
        )
    return result


def parent_list_change(
    changes: Changes, live: Mapping[str, Any] | None, parents: Sequence[str], owned: Sequence[str]
) -> Mapping[str, Any] | None:
    """What ``write_io.sync_parent_queues`` records in check mode, and the list after it."""
    manifest = parent_list_manifest(live, sorted(set(parents)), sorted(set(owned)))
    if manifest is None:
        return live
    changes.record(manifest, CREATE if live is None else UPDATE, live)
    return parent_list_after(live, manifest)


def tenant_changes(
    work: TenantWork, parent_list: Mapping[str, Any] | None, kinds: Sequence[str]
) -> Changes:
    """What one tenant's writes record in check mode (``write_io.write_tenant_objects``,
    ``write_io.delete_tenant``), from the plan alone."""
    changes = Changes()
    live = work.live
    if work.prune:
        for obj in live.jobs:
            changes.record(obj, DELETE, obj)
        for queue in queues_in_delete_order(live.queues):
            changes.record(queue, DELETE, queue)
        parent_list_change(changes, parent_list, [], list(live.queues))
        for kind in reversed(kinds):
            for obj in live.objects.get(kind, {}).values():
                changes.record(obj, DELETE, obj)
        return changes
    for manifest, action, current in work.object_changes:
        changes.record(manifest, action, current)
    for step in work.steps:
        queue = live.queues.get(step.name)
        if step.final or step.action == DELETE:
            changes.record(step_manifest(step), step_action(step, queue), queue)
    return changes


def report_catalog(request: CatalogRequest, planned: CatalogPlan) -> dict[str, Any]:
    """What the plan says without writing: ``rendered``'s manifests, or what a check-mode
    run reports (``parsed``). The sale's reclaim reads the spot jobs under its Lease when
    the run applies, so a plan that reclaims says the sale but no victims."""
    if planned.rendered is not None:
        return dict(planned.rendered)
    if planned.sale is None:
        raise AssertionError("a plan of state present has a sale")
    run_changes = Changes()
    after = parent_list_change(run_changes, planned.parent_list, planned.parents, planned.parents)
    results: list[Any] = [
        tenant_changes(w, planned.parent_list, planned.kinds) if busy else Changes()
        for w, busy in zip(planned.todo, planned.busy, strict=True)
    ]
    parent_list_change(run_changes, after, planned.parents, planned.owned)
    sold = sold_of(planned.sale, None, None, True)
    return run_result(planned, results, run_changes, {}, sold)
