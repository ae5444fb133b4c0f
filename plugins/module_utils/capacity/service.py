# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pay-as-you-go resizing against the cluster: the ``payg_capacity`` module.

One list of managed Queues and one of Volcano Jobs; Nodes and Pods only when
a queue grows. A growth meets the oversell guard first, then, when spot holds
more than stays unsold after it (rule unsold-reclaim-need), the spot reclaim (``spot.reclaim_io.reclaim``: the same
Lease, Events and history as ``spot_reclaim``). A growth beyond the IDC's
unsold GPUs, with node groups and a burst quota, takes the rest from the cloud
(rule payg-idc-first, ``capacity.cloud``: one more list, of the burst queues,
only then). Then a server-side apply of
just the capability and deserved of each queue whose value changes, under the
capacity field manager. The decisions are the pure rules of ``capacity.payg``,
``workload.pool`` and ``capacity.oversell``.

In check mode nothing is deleted (the reclaim reports its victims) and the
applies are the cluster's server-side dry runs.
"""

from __future__ import annotations

from typing import Any

from ..common.errors import PartialWrite, PlatformValidationError, Refused
from ..common.names import (
    CAPACITY_FIELD_MANAGER,
    JOB_API,
    LABEL_QUEUE_TYPE,
    MANAGED_SELECTOR,
    QUEUE_API,
    QUEUE_TYPE_BURST,
)
from ..common.quantity import GPU
from ..kube.cluster import ApiException, Cluster, TransportError
from ..kube.lease_io import default_holder, run_id
from ..spot.read_io import read_pool, read_queues, read_spot_candidates, wait_until_free
from ..spot.reclaim import NEED_FROM_UNSOLD, ReclaimError, reclaim_request, victim_names
from ..spot.reclaim_io import reclaim, utc_now
from ..spot.victims import unsold_reclaim_need
from ..workload.pool import TenantCommitment, commitments_from_queues, committed_total
from .cloud import idc_available
from .grace import grants_by_queue, hold_recent_grants, stamp_growth
from .payg import (
    PaygResize,
    cloud_split,
    growth_reason,
    no_reclaim_error,
    parse_target,
    payg_oversell_errors,
    plan_payg,
    resize_table,
)

WHAT = "updating pay-as-you-go queues"


def run(params: dict[str, Any], cluster: Cluster, check_mode: bool) -> dict[str, Any]:
    """The ``payg_capacity`` module: resize one tenant's pay-as-you-go queue to
    ``capability`` or shrink the queues to what they use (``fit_to_use``)."""
    requested = None if params["capability"] is None else parse_target(params["capability"])
    queues = read_queues(cluster)
    jobs = cluster.list(JOB_API, "Job")
    commitments = commitments_from_queues(queues)
    rows = plan_payg(commitments, jobs, params["tenant"], requested)
    now = utc_now().timestamp()
    grace = params["grace_minutes"] * 60
    if requested is None:
        rows = hold_recent_grants(rows, grants_by_queue(queues), now, grace)
    resize = resize_table(rows, queues)
    stamp_growth(resize, now, grace)
    reclaimed = make_room(params, cluster, check_mode, resize, commitments, queues, jobs)
    write_grants(params, cluster, check_mode, resize, reclaimed)
    return {
        "changed": bool(resize.changes) or bool(reclaimed and reclaimed.get("changed")),
        "queues": resize.table,
        "updated": resize.updated,
        "reclaim": reclaimed,
        "diff": {"before": resize.before, "after": resize.after},
    }


def make_room(
    params: dict[str, Any],
    cluster: Cluster,
    check_mode: bool,
    resize: PaygResize,
    commitments: dict[str, TenantCommitment],
    queues: list[dict[str, Any]],
    jobs: list[dict[str, Any]],
) -> dict[str, Any] | None:
    """Before a queue grows: the split between the IDC and the cloud, the oversell
    guard, then the reclaim of as many spot GPUs as the IDC part finds short of free
    ones. Returns the reclaim's result, or None when nothing grows or enough is free."""
    growing = resize.growing
    if not growing:
        return None
    state = read_pool(cluster, params["node_selector"] or {})
    # A growth is a sale: it comes out of unsold GPUs, not out of what other
    # tenants bought and do not use yet (rule unsold-reclaim-need).
    sold = int(committed_total(commitments.values())[GPU])
    # Every reclaimable spot GPU: Volcano Jobs' and other workloads' pods (rule
    # spot-candidate-pod), as the reclaim itself counts them.
    spot = sum(c.gpus for c in read_spot_candidates(cluster, queues, jobs))
    available = idc_available(
        state.pool_gpus, sold, spot, state.allocated_gpus, bool(params["reclaim"])
    )
    if params["tenant"] is not None and resize.growth > available:
        _split_into_cloud(params, cluster, resize, commitments, queues, jobs, available)
    _refuse_if(payg_oversell_errors(resize.growing, state.pool, commitments), resize)
    growth = resize.idc_growth
    if resize.growth and not growth:
        return None  # all of it from the cloud: no IDC GPU to free
    shortfall = unsold_reclaim_need(state.pool_gpus, sold, spot, state.allocated_gpus, growth)
    if not shortfall:
        return None
    if not params["reclaim"]:
        unsold = max(0, state.pool_gpus - sold)
        _refuse_if([no_reclaim_error(growth, shortfall, unsold, spot)], resize)
    request = reclaim_request(
        params,
        growth,
        growth_reason(params, growing, growth),
        default_holder(),
        run_id=run_id(),
        need_from=NEED_FROM_UNSOLD,
    )
    try:
        return reclaim(cluster, request, check_mode)
    except ReclaimError as exc:
        raise Refused(str(exc), queues=resize.table, reclaim=exc.result) from None
    except PartialWrite as exc:
        raise PartialWrite(
            exc.what, exc.done, exc.cause, queues=resize.table, reclaim=exc.report, updated=[]
        ) from exc


def _split_into_cloud(
    params: dict[str, Any],
    cluster: Cluster,
    resize: PaygResize,
    commitments: dict[str, TenantCommitment],
    queues: list[dict[str, Any]],
    jobs: list[dict[str, Any]],
    available: int,
) -> None:
    """The one tenant's growth that the IDC cannot give in full: read the burst queues
    (one list) for rule payg-idc-first (``payg.cloud_split``) and split the growth."""
    burst = cluster.list(
        QUEUE_API,
        "Queue",
        label_selector=f"{MANAGED_SELECTOR},{LABEL_QUEUE_TYPE}={QUEUE_TYPE_BURST}",
    )
    queue, from_idc, from_cloud, errors = cloud_split(
        resize, params["tenant"], queues, burst, jobs, commitments, available, params["reclaim"]
    )
    _refuse_if(errors, resize)
    resize.split(queue, from_idc, from_cloud)


def _refuse_if(errors: list, resize: PaygResize) -> None:
    """Valid input the pool cannot take: the errors and the table, nothing written."""
    if errors:
        err = PlatformValidationError(errors)
        raise Refused(str(err), errors=err.messages, queues=resize.table)


def write_grants(
    params: dict[str, Any],
    cluster: Cluster,
    check_mode: bool,
    resize: PaygResize,
    reclaimed: dict[str, Any] | None,
) -> None:
    """Apply each changed queue's capability and deserved; after a reclaim with
    ``wait``, wait until the growth's GPUs are free. A write or read refused
    part-way raises PartialWrite naming the jobs deleted and the queues written."""
    victims = (reclaimed or {}).get("victims") or []
    done = [] if check_mode else victim_names(victims)
    updated: list[str] = []
    try:
        for _row, manifest in resize.changes:
            cluster.apply(manifest, field_manager=CAPACITY_FIELD_MANAGER)
            updated.append(manifest["metadata"]["name"])
            done.append(manifest["metadata"]["name"])
        if victims and params["wait"] and not check_mode:
            _wait_for_growth(params, cluster, resize, reclaimed, updated, done)
    except (ApiException, TransportError) as exc:
        raise PartialWrite(
            WHAT, done, exc, queues=resize.table, reclaim=reclaimed, updated=updated
        ) from exc


def _wait_for_growth(
    params: dict[str, Any],
    cluster: Cluster,
    resize: PaygResize,
    reclaimed: dict[str, Any],
    updated: list[str],
    done: list[str],
) -> None:
    growth, timeout = resize.idc_growth, params["wait_timeout"]
    reached, free_after = wait_until_free(cluster, params["node_selector"] or {}, growth, timeout)
    reclaimed["waited"] = True
    reclaimed["free_after"] = free_after
    if not reached:
        # The jobs are deleted and the queues written: the failure says so.
        raise Refused(
            f"{growth} GPUs were not free within {timeout} s after the reclaim: {free_after} free",
            changed=bool(done),
            queues=resize.table,
            reclaim=reclaimed,
            updated=updated,
        )
