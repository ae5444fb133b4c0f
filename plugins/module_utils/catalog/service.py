# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the ``tenant_catalog`` module does with a ``kube.Cluster``: read the whole fleet
with one LIST per kind, plan every tenant, check the catalog as a whole, then write
only what differs, ``workers`` tenants at a time.

Order: the parent-queues list gains every new parent first (a team queue is written
only after its subscription queue is listed), then each tenant's objects and queues
(one tenant's writes in order, tenants side by side), then pruned tenants, then the
list drops the parents no tenant has any more. Decisions come from the pure core
(``catalog.spec``, ``catalog.plan``, ``tenants.render``, ``catalog.gather``); a
tenant's writes are the ``tenant`` module's own (``tenants.write_io``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ansible.module_utils.common.warnings import warn

from ..capacity.purchase import CatalogSale
from ..common.errors import PartialWrite, PlatformValidationError, Refused, raise_if
from ..common.names import (
    JOB_API,
    LABEL_MANAGED_BY,
    LABEL_TENANT,
    MANAGED_BY,
    PODGROUP_API,
    QUEUE_API,
    SERVICE_CIDR_API,
    namespace_name,
)
from ..kube import cluster as kube
from ..kube.cluster import NotFoundError, ResourceNotFoundError
from ..queues.model import reading_once
from ..queues.parent_list import parent_queue_names
from ..tenants.changes import Changes
from ..tenants.live import active_jobs, active_pods
from ..tenants.network import discovered_networks
from ..tenants.read_io import TENANT_KINDS, read_parent_queues
from ..tenants.write_io import (
    delete_tenant,
    reported_part_way,
    sync_parent_queues,
    write_tenant_objects,
)
from .fleet import Fleet, group_fleet
from .gather import gather_fleet
from .inputs import parse_options
from .plan import (
    PRUNE_MAX_DEFAULT,
    PRUNED,
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
from .sale import oversell_check, sale_line, spot_after
from .sale_io import reclaim_for_sale, recompute_after_sale, sale_of
from .source_io import catalog_from
from .spec import Catalog

# The kinds read for the fleet, each with one LIST selected by the tenant label: the
# kinds a tenant owns besides its queues.
FLEET_KINDS = TENANT_KINDS
# A progress line at most this often (seconds), and after the last tenant.
PROGRESS_INTERVAL = 2.0


class Progress:
    """Lines appended to ``progress_file`` while the run writes (``tail -f`` it):
    an Ansible module prints nothing until it ends."""

    def __init__(self, path: str | None, total: int, clock: Callable[[], float] = time.monotonic):
        self.path = Path(path) if path else None
        self.total = total
        self.done = 0
        self.by_status: dict[str, int] = {}
        self._clock = clock
        self._start = clock()
        self._last = 0.0
        self._lock = threading.Lock()

    def say(self, text: str) -> None:
        if self.path is None:
            return
        with self.path.open("a", encoding="utf-8") as out:
            out.write(f"[{self._clock() - self._start:7.1f}s] {text}\n")

    def tenant_done(self, status: str) -> None:
        with self._lock:
            self.done += 1
            self.by_status[status] = self.by_status.get(status, 0) + 1
            now = self._clock()
            if self.done < self.total and now - self._last < PROGRESS_INTERVAL:
                return
            self._last = now
            parts = ", ".join(f"{k} {v}" for k, v in sorted(self.by_status.items()))
            self.say(f"tenants {self.done}/{self.total} ({parts})")


# -- reads -----------------------------------------------------------------------------------


def read_fleet(cluster: kube.Cluster, workers: int) -> Fleet:
    """One LIST per kind, sent side by side: the tenants' objects by the tenant label,
    every Queue, PodGroup and Node, the ServiceCIDRs, and the parent-queues list."""

    def service_cidrs() -> list[dict[str, Any]]:
        try:
            return cluster.list(SERVICE_CIDR_API, "ServiceCIDR")
        except (ResourceNotFoundError, NotFoundError):
            return []

    calls: list[Callable[[], Any]] = [
        (lambda a=a, k=k: cluster.list(a, k, label_selector=LABEL_TENANT)) for a, k in FLEET_KINDS
    ]
    calls += [
        lambda: cluster.list(QUEUE_API, "Queue"),
        lambda: cluster.list(PODGROUP_API, "PodGroup"),
        lambda: cluster.list("v1", "Node"),
        service_cidrs,
        lambda: read_parent_queues(cluster),
    ]
    results = cluster.concurrently(calls, workers)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    objects = {kind: results[i] for i, (_api, kind) in enumerate(FLEET_KINDS)}
    queues, podgroups, nodes, cidrs, parent_list = results[len(FLEET_KINDS) :]
    return Fleet(
        tenants=group_fleet(objects, queues, podgroups),
        queues={q["metadata"]["name"]: q for q in queues},
        nodes=nodes,
        service_cidrs=cidrs,
        parent_list=parent_list,
    )


def read_running(cluster: kube.Cluster, names: Sequence[str], workers: int) -> dict[str, dict]:
    """Active Volcano Jobs and pods of each tenant to prune, and the data it holds (its
    claims, and the Secrets the platform did not write): four LISTs in its namespace."""

    def one(name: str) -> dict[str, Any]:
        ns = namespace_name(name)
        jobs = cluster.list(JOB_API, "Job", namespace=ns)
        pods = cluster.list("v1", "Pod", namespace=ns)
        claims = cluster.list("v1", "PersistentVolumeClaim", namespace=ns)
        secrets = cluster.list("v1", "Secret", namespace=ns)
        own = [
            s
            for s in secrets
            if ((s.get("metadata") or {}).get("labels") or {}).get(LABEL_MANAGED_BY) != MANAGED_BY
        ]
        return {
            "jobs": active_jobs(jobs),
            "pods": active_pods(pods),
            "data": {"claims": len(claims), "secrets": len(own)},
        }

    results = cluster.concurrently([lambda n=n: one(n) for n in names], workers)
    out = {}
    for name, result in zip(names, results, strict=True):
        if isinstance(result, BaseException):
            raise result
        out[name] = result
    return out


# -- checks before the first write -----------------------------------------------------------


def plan_all(
    params: Mapping[str, Any], catalog: Catalog, fleet: Fleet, cluster: kube.Cluster
) -> tuple[list[TenantWork], list[TenantWork]]:
    """Every catalog tenant's work, and the tenants to prune with what runs in them."""
    # What every tenant's egress cuts out, discovered once (given CIDRs win in the plan).
    networks = discovered_networks(fleet.nodes, fleet.service_cidrs)
    force = bool(params.get("force"))
    works = [
        plan_tenant_work(spec, fleet.live(spec.name), fleet.queues, networks, force)
        for spec in catalog.tenants
    ]
    prunes: list[TenantWork] = []
    if params.get("prune"):
        names = prune_candidates(fleet.tenants, catalog.names)
        # Before anything is read per tenant: too many to prune stops the whole run.
        raise_if(prune_max_errors(names, params.get("max_prune", PRUNE_MAX_DEFAULT)))
        running = read_running(cluster, names, params.get("workers", 8))
        confirmed = params.get("prune_confirm") or []
        for name in names:
            work = TenantWork(name=name, live=fleet.live(name), prune=True)
            work.live.jobs = list(running[name]["jobs"])
            work.live.pods = list(running[name]["pods"])
            work.running = {"jobs": len(work.live.jobs), "pods": len(work.live.pods)}
            work.errors = prune_refusal(name, work.running, force)
            work.errors += prune_data_refusal(name, running[name]["data"], confirmed)
            prunes.append(work)
    return works, prunes


# -- writes ----------------------------------------------------------------------------------


def has_writes(work: TenantWork) -> bool:
    """Whether ``write_one`` would send anything for ``work``: a prune, a queue step, or
    an object that differs. An unchanged tenant is not handed to the write pool at all."""
    if work.prune:
        return True
    if work.plan is None:
        return False
    return bool(work.steps) or bool(work.object_changes)


def write_one(
    cluster: kube.Cluster, work: TenantWork, check_mode: bool, progress: Progress
) -> Changes:
    changes = Changes()
    # The progress line counts what happened, not what was planned: a tenant whose writes
    # failed is "failed", and check mode only says what would be done.
    done = PRUNED if work.prune else "written"
    status = f"would be {done}" if check_mode else done
    try:
        if work.prune:
            delete_tenant(cluster, work.live, work.live.jobs, changes, check_mode)
        elif work.plan is not None:
            write_tenant_objects(
                cluster, work.plan, work.live, changes, check_mode, work.steps, work.object_changes
            )
    except (kube.ApiException, kube.TransportError, OSError) as exc:
        exc.changes = changes  # what this tenant had written before it failed
        status = "failed"
        raise
    finally:
        progress.tenant_done(status)
    return changes


def run_present(
    params: Mapping[str, Any], catalog: Catalog, cluster: kube.Cluster, check_mode: bool
) -> dict[str, Any]:
    workers = params.get("workers", 8)
    progress = Progress(params.get("progress_file"), len(catalog.tenants))
    progress.say(f"reading the fleet for {len(catalog.tenants)} catalog tenants")
    fleet = read_fleet(cluster, workers)
    with reading_once():  # each live Queue is parsed once for the whole plan
        works, prunes = plan_all(params, catalog, fleet, cluster)
        oversell_check(params, catalog, fleet, [w.name for w in prunes if not w.refused])
    refused = [w for w in (*works, *prunes) if w.refused]
    if refused and params.get("on_refusal", "fail") == "fail":
        rows = [summary_row(w, tenant_status(w, False), []) for w in (*works, *prunes)]
        raise Refused(
            f"{len(refused)} tenant(s) of the catalog are refused, so nothing was written: "
            + "; ".join(f"{w.name}: {' / '.join(w.errors)}" for w in refused[:20])
            + ("; ..." if len(refused) > 20 else "")
            + " (on_refusal: skip writes the others)",
            summary=[r for r in rows if r["status"] == "refused"],
            counts=counts(rows),
        )
    todo = [w for w in (*works, *prunes) if not w.refused]
    progress.total = len(todo)
    # Rule catalog-sale: the run is one purchase; its reclaim comes before any write.
    sale = sale_of(params, fleet, works, prunes)
    reclaimed = reclaim_for_sale(params, cluster, check_mode, sale)
    run_changes = Changes()  # the shared parent-queues list
    parents: set[str] = set()
    owned: set[str] = set()
    for work in todo:
        if work.plan is not None:
            parents |= parent_queue_names(work.plan.queues)
            owned |= {q.name for q in work.plan.queues} | set(work.plan.queue_deletes)
        owned |= set(work.live.queues)
    with reported_part_way("writing the tenant catalog's parent-queues list", run_changes):
        parent_list = sync_parent_queues(
            cluster, fleet.parent_list, parents, parents, run_changes, check_mode
        )
    busy = [has_writes(w) for w in todo]
    progress.total = sum(busy)
    progress.say(
        f"writing {sum(busy)} tenants, {workers} at a time ({busy.count(False)} unchanged)"
    )
    written = iter(
        cluster.concurrently(
            [
                lambda w=w: write_one(cluster, w, check_mode, progress)
                for w, writes in zip(todo, busy, strict=True)
                if writes
            ],
            workers,
        )
    )
    results: list[Changes | BaseException] = [next(written) if b else Changes() for b in busy]
    failed = {w.name: r for w, r in zip(todo, results, strict=True) if isinstance(r, BaseException)}
    if not failed:
        with reported_part_way("writing the tenant catalog's parent-queues list", run_changes):
            sync_parent_queues(cluster, parent_list, parents, owned, run_changes, check_mode)
    sold = sold_report(params, cluster, check_mode, sale, reclaimed, failed)
    return report(works, prunes, todo, results, run_changes, failed, sold)


def sold_report(
    params: Mapping[str, Any],
    cluster: kube.Cluster,
    check_mode: bool,
    sale: CatalogSale,
    reclaimed: Mapping[str, Any] | None,
    failed: Mapping[str, BaseException],
) -> dict[str, Any]:
    """After the writes: the sale's spot recompute (also after a tenant failed: what was
    written is sold, and a second run would find no purchase changing), then what the
    run sold, reclaimed and left to spot (rule catalog-sale-summary)."""
    notes: list[str] = []
    try:
        recomputed = recompute_after_sale(params, cluster, check_mode, sale)
    except (kube.ApiException, kube.TransportError, PartialWrite, PlatformValidationError) as exc:
        if not failed:
            raise
        recomputed = None
        notes.append(f"the spot capacity was not recomputed: {exc}")
    spot = spot_after(sale, recomputed)
    # The reclaim's jobs and counts, as spot_reclaim shows them (check mode the same).
    # The recompute's queues are in spot.updated, not in the diff: check mode, which
    # does not recompute, shows the same diff as the run.
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
        "notes": notes,
    }


def report(
    works: Sequence[TenantWork],
    prunes: Sequence[TenantWork],
    todo: Sequence[TenantWork],
    results: Sequence[Any],
    run_changes: Changes,
    failed: Mapping[str, BaseException],
    sold: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The per-tenant table, the objects written and the diff, with the sale (``sold``:
    ``sold_report``); a failed tenant makes the run fail, naming what every tenant wrote
    (each write is idempotent: run again)."""
    sold = sold or {}
    by_name = {w.name: r for w, r in zip(todo, results, strict=True)}
    rows, objects, done = [], list(run_changes.objects), list(run_changes.done)
    before, after = dict(run_changes.before), dict(run_changes.after)
    for work in (*works, *prunes):
        result = by_name.get(work.name)
        changes = getattr(result, "changes", None) if isinstance(result, BaseException) else result
        written = changes.objects if changes is not None else []
        row = summary_row(work, tenant_status(work, bool(written)), written)
        if work.name in failed:
            row["status"], row["error"] = "failed", kube.api_error_message(failed[work.name])
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


# -- the module ------------------------------------------------------------------------------


def run_catalog(
    params: Mapping[str, Any], cluster: kube.Cluster, check_mode: bool = False
) -> dict[str, Any]:
    """The ``tenant_catalog`` module (``state: present`` or ``gathered``)."""
    state = params.get("state", "present")
    if state == "gathered":
        parse_options(params, None)
        fleet = read_fleet(cluster, params.get("workers", 8))
        networks = discovered_networks(fleet.nodes, fleet.service_cidrs)
        return {"changed": False, "tenants": gather_fleet(fleet.tenants, networks)}
    catalog = catalog_from(params)
    if catalog is None:
        raise AssertionError("present needs a catalog")
    return run_present(params, catalog, cluster, check_mode)
