# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pay-as-you-go resizing against the cluster: the ``payg_capacity`` module
(``PAYG_FLOW``, through ``kube.flow``; its pure steps are ``capacity/payg_flow``, the
sale's shortfall ``capacity/sale``).

gather: one list of managed Queues and one of Volcano Jobs; the pool's Nodes and Pods and
the Running Volcano pods only when a queue grows; the burst queues only when the IDC
cannot give one tenant's growth in full (rule payg-idc-first). The plan refuses what the
oversell guard, the cloud's headroom or ``reclaim: false`` forbid. apply: when spot holds
more than stays unsold after the growth (rule unsold-reclaim-need), the spot reclaim
(``spot.reclaim_io.reclaim``: it reads and decides again under the ``spot-reclaim`` Lease,
with the same Events and history as ``spot_reclaim``); then a server-side apply of just
the capability and deserved of each queue whose value changes, under the capacity field
manager; then (``wait``) the poll until the growth's GPUs are free.

In check mode nothing is deleted (the reclaim reports its victims) and the
applies are the cluster's server-side dry runs.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..common.errors import PartialWrite, Refused
from ..common.names import (
    CAPACITY_FIELD_MANAGER,
    JOB_API,
    LABEL_QUEUE_TYPE,
    MANAGED_SELECTOR,
    QUEUE_API,
    QUEUE_TYPE_BURST,
)
from ..kube.cluster import ApiException, Cluster, TransportError
from ..kube.flow import Flow
from ..kube.lease_io import default_holder, run_id
from ..spot.read_io import RUNNING_VOLCANO_PODS, list_pool, read_queues, wait_until_free
from ..spot.reclaim import ReclaimError, victim_names
from ..spot.reclaim_io import reclaim, utc_now
from .payg import PaygResize
from .payg_flow import (
    PaygFacts,
    PaygPlan,
    PaygRequest,
    facts_in,
    facts_out,
    grows,
    needs_burst,
    parse_payg,
    payg_result,
    plan_payg_run,
    report_payg,
    sale_reclaim,
    warnings_of,
)

WHAT = "updating pay-as-you-go queues"


def gather(request: PaygRequest, cluster: Cluster) -> PaygFacts:
    """One list of the billing Queues and one of the Volcano Jobs; when a queue grows
    (``payg_flow.grows``), one of the pool's Nodes, one of its unfinished Pods and one of
    the Running Volcano pods; when the IDC cannot give one tenant's growth in full
    (``payg_flow.needs_burst``), one of the burst Queues."""
    queues = read_queues(cluster)
    jobs = cluster.list(JOB_API, "Job")
    facts = PaygFacts(utc_now().timestamp(), tuple(queues), tuple(jobs))
    if not grows(request, facts):
        return facts
    nodes, pods = list_pool(cluster, request.node_selector)
    running = cluster.list("v1", "Pod", field_selector=RUNNING_VOLCANO_PODS)
    facts = replace(facts, nodes=tuple(nodes), pods=tuple(pods), running_pods=tuple(running))
    if not needs_burst(request, facts):
        return facts
    burst = cluster.list(
        QUEUE_API,
        "Queue",
        label_selector=f"{MANAGED_SELECTOR},{LABEL_QUEUE_TYPE}={QUEUE_TYPE_BURST}",
    )
    return replace(facts, burst=tuple(burst))


def apply(
    request: PaygRequest, planned: PaygPlan, cluster: Cluster, check_mode: bool
) -> dict[str, Any]:
    """The sale's reclaim (``spot/reclaim_io.reclaim``: under the ``spot-reclaim`` Lease it
    reads and decides again), then each changed queue's capability and deserved."""
    resize = planned.resize
    reclaimed = make_room(request, planned, cluster, check_mode)
    write_grants(request, cluster, check_mode, resize, reclaimed)
    return payg_result(resize, reclaimed)


# Module payg_capacity: resize pay-as-you-go queues, a growth sold as a sale.
PAYG_FLOW: Flow[PaygRequest, PaygFacts, PaygPlan] = Flow(
    parse=parse_payg,
    gather=gather,
    plan=plan_payg_run,
    apply=apply,
    report=report_payg,
    facts_out=facts_out,
    facts_in=facts_in,
    warnings_of=warnings_of,
)


def run(params: dict[str, Any], cluster: Cluster, check_mode: bool) -> dict[str, Any]:
    """The ``payg_capacity`` module's run (``PAYG_FLOW``)."""
    return PAYG_FLOW.run(params, cluster, check_mode)


def make_room(
    request: PaygRequest, planned: PaygPlan, cluster: Cluster, check_mode: bool
) -> dict[str, Any] | None:
    """The sale's reclaim of its shortfall, or None when it has none."""
    reclaim_request = sale_reclaim(request, planned, default_holder(), run_id())
    if reclaim_request is None:
        return None
    try:
        return reclaim(cluster, reclaim_request, check_mode)
    except ReclaimError as exc:
        raise Refused(str(exc), queues=planned.resize.table, reclaim=exc.result) from None
    except PartialWrite as exc:
        raise PartialWrite(
            exc.what,
            exc.done,
            exc.cause,
            queues=planned.resize.table,
            reclaim=exc.report,
            updated=[],
        ) from exc


def write_grants(
    request: PaygRequest,
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
        if victims and request.wait and not check_mode:
            _wait_for_growth(request, cluster, resize, reclaimed, updated, done)
    except (ApiException, TransportError) as exc:
        raise PartialWrite(
            WHAT, done, exc, queues=resize.table, reclaim=reclaimed, updated=updated
        ) from exc


def _wait_for_growth(
    request: PaygRequest,
    cluster: Cluster,
    resize: PaygResize,
    reclaimed: dict[str, Any],
    updated: list[str],
    done: list[str],
) -> None:
    growth, timeout = resize.idc_growth, request.wait_timeout
    reached, free_after = wait_until_free(cluster, request.node_selector, growth, timeout)
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
