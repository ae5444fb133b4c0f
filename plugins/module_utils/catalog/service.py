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

from ..capacity.purchase import CatalogSale
from ..common.errors import PartialWrite, PlatformValidationError
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
from ..tenants.changes import Changes
from ..tenants.live import active_jobs, active_pods
from ..tenants.read_io import TENANT_KINDS, read_parent_queues, read_storage_capacity
from ..tenants.write_io import (
    delete_tenant,
    reported_part_way,
    sync_parent_queues,
    write_tenant_objects,
)
from .plan import PRUNED, TenantWork
from .sale_io import reclaim_for_sale, recompute_after_sale
from .steps import (
    PARENT_LIST_WHAT,
    CatalogFacts,
    CatalogPlan,
    CatalogRequest,
    prune_names,
    run_result,
    sold_of,
)

# The kinds read for the fleet, each with one LIST selected by the tenant label: the
# kinds a tenant owns besides its queues.
FLEET_KINDS = TENANT_KINDS
# A progress line at most this often (seconds), and after the last tenant.
PROGRESS_INTERVAL = 2.0


class Progress:
    """Lines appended to ``progress_file`` while the run writes (``tail -f`` it):
    an Ansible module prints nothing until it ends."""

    def __init__(
        self,
        path: str | None,
        total: int,
        clock: Callable[[], float] = time.monotonic,
        start: float | None = None,
    ):
        self.path = Path(path) if path else None
        self.total = total
        self.done = 0
        self.by_status: dict[str, int] = {}
        self._clock = clock
        # The lines count from ``start``: when the run began to read, for a run's writes.
        self._start = clock() if start is None else start
        self._last = 0.0
        self._lock = threading.Lock()

    def say(self, text: str) -> None:
        if self.path is None:
            return
        with self.path.open("a", encoding="utf-8") as out:
            out.write(f"[{self._clock() - self._start:7.1f}s] {text}\n")

    @property
    def started(self) -> float:
        return self._start

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


def read_fleet(cluster: kube.Cluster, workers: int) -> CatalogFacts:
    """One LIST per kind, sent side by side: the tenants' objects by the tenant label,
    every Queue, PodGroup and Node, the ServiceCIDRs, the parent-queues list, and the
    storage classes' capacity (one GET)."""

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
        lambda: read_storage_capacity(cluster),
    ]
    results = cluster.concurrently(calls, workers)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    objects = {kind: results[i] for i, (_api, kind) in enumerate(FLEET_KINDS)}
    queues, podgroups, nodes, cidrs, parent_list, capacity = results[len(FLEET_KINDS) :]
    return CatalogFacts(
        objects=objects,
        queues=queues,
        podgroups=podgroups,
        nodes=nodes,
        service_cidrs=cidrs,
        parent_list=parent_list,
        storage_capacity=capacity,
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


# -- the flow -------------------------------------------------------------------------------


def gather_catalog(request: CatalogRequest, cluster: kube.Cluster) -> CatalogFacts:
    """The fleet (``read_fleet``), then, for a run that prunes no more than ``max_prune``
    tenants, what runs in each tenant to prune and the data it holds (``read_running``)."""
    progress = Progress(request.progress_file, catalog_size(request))
    if request.catalog is not None and request.state != "gathered":
        progress.say(f"reading the fleet for {len(request.catalog.tenants)} catalog tenants")
    facts = read_fleet(cluster, request.workers)
    facts.started = progress.started
    names = prune_names(request, facts)
    if names:
        facts.running = read_running(cluster, names, request.workers)
    return facts


def catalog_size(request: CatalogRequest) -> int:
    return len(request.catalog.tenants) if request.catalog is not None else 0


# -- writes ----------------------------------------------------------------------------------


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


def apply_catalog(
    request: CatalogRequest, planned: CatalogPlan, cluster: kube.Cluster, check_mode: bool
) -> dict[str, Any]:
    """The writes in the plan's order: the sale's reclaim (rule catalog-sale: before any
    write), the parent-queues list gaining its new parents, each tenant's writes
    (``workers`` tenants side by side), the list dropping the parents no tenant has any
    more, then the sale's spot recompute."""
    sale = planned.sale
    if sale is None:
        raise AssertionError("a plan of state present has a sale")
    workers = request.workers
    progress = Progress(request.progress_file, len(planned.todo), start=planned.started)
    reclaimed = reclaim_for_sale(request.options, cluster, check_mode, sale)
    run_changes = Changes()  # the shared parent-queues list
    parents = planned.parents
    with reported_part_way(PARENT_LIST_WHAT, run_changes):
        parent_list = sync_parent_queues(
            cluster, planned.parent_list, parents, parents, run_changes, check_mode
        )
    busy = planned.busy
    progress.total = sum(busy)
    progress.say(
        f"writing {sum(busy)} tenants, {workers} at a time ({busy.count(False)} unchanged)"
    )
    written = iter(
        cluster.concurrently(
            [
                lambda w=w: write_one(cluster, w, check_mode, progress)
                for w, writes in zip(planned.todo, busy, strict=True)
                if writes
            ],
            workers,
        )
    )
    results: list[Changes | BaseException] = [next(written) if b else Changes() for b in busy]
    failed = {
        w.name: r
        for w, r in zip(planned.todo, results, strict=True)
        if isinstance(r, BaseException)
    }
    if not failed:
        with reported_part_way(PARENT_LIST_WHAT, run_changes):
            sync_parent_queues(
                cluster, parent_list, parents, planned.owned, run_changes, check_mode
            )
    sold = sold_report(request.options, cluster, check_mode, sale, reclaimed, failed)
    return run_result(planned, results, run_changes, failed, sold, kube.api_error_message)


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
    run sold, reclaimed and left to spot (``steps.sold_of``)."""
    notes: list[str] = []
    try:
        recomputed = recompute_after_sale(params, cluster, check_mode, sale)
    except (kube.ApiException, kube.TransportError, PartialWrite, PlatformValidationError) as exc:
        if not failed:
            raise
        recomputed = None
        notes.append(f"the spot capacity was not recomputed: {exc}")
    return sold_of(sale, reclaimed, recomputed, check_mode, notes)


def run_catalog(
    params: Mapping[str, Any], cluster: kube.Cluster, check_mode: bool = False
) -> dict[str, Any]:
    """The ``tenant_catalog`` module run against a cluster (``present`` or ``gathered``)."""
    from .flow import CATALOG_FLOW

    return CATALOG_FLOW.run(params, cluster, check_mode)
