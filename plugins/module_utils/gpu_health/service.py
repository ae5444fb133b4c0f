# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU health against the cluster and Prometheus: the ``gpu_health`` module
(``HEALTH_FLOW``, through ``kube.flow``; its pure steps are ``gpu_health/health``).

Reads (``gather_health``): one list of Nodes (of the node selector); with
``prometheus_url``, the XID and row-remap queries (``signals``), each one
``query_range`` at the moment read through the metering domain's Prometheus client; and
only when a GPU node is or becomes quarantined, one list of unfinished Pods, one of
Volcano Jobs and one of Queues. Writes: ``write_io``, in the plan's order.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ..common.names import GPU_HEALTH_HISTORY, JOB_API, QUEUE_API
from ..kube.cluster import ApiException, Cluster, TransportError
from ..kube.flow import Flow
from ..kube.run_record import record_event, record_history
from ..metering.service import query_range
from ..workload.pool import label_selector
from .disruption import JobAction, stopped_per_queue
from .health import (
    HealthFacts,
    HealthPlan,
    HealthRequest,
    facts_in,
    facts_out,
    needs_workload,
    parse_health,
    plan_health,
    report_health,
    warnings_of,
)
from .quarantine import QUARANTINE, RELEASE, replan
from .record import history_entry, job_event, node_event
from .signals import ROW_REMAP_QUERY, xid_query
from .write_io import failed, patch_node, raise_counts, stop_job

UNFINISHED_PODS = "status.phase!=Succeeded,status.phase!=Failed"
# The step of the one-point range query (start = end): any value works.
POINT_STEP = 60


def gather_health(request: HealthRequest, cluster: Cluster) -> HealthFacts:
    """The Nodes, the Prometheus series, and the workload when a node needs it."""
    read_at = datetime.now(UTC)
    nodes = tuple(cluster.list("v1", "Node", label_selector=label_selector(request.node_selector)))
    xids: tuple[Any, ...] = ()
    remaps: tuple[Any, ...] = ()
    if request.prometheus_url:
        url, timeout = request.prometheus_url, request.timeout
        xid = xid_query(request.xid_window)
        xids = tuple(query_range(url, xid, read_at, read_at, POINT_STEP, timeout))
        remaps = tuple(query_range(url, ROW_REMAP_QUERY, read_at, read_at, POINT_STEP, timeout))
    facts = HealthFacts(read_at, nodes, xids, remaps)
    if not needs_workload(request, facts):
        return facts
    pods = tuple(cluster.list("v1", "Pod", field_selector=UNFINISHED_PODS))
    vcjobs = tuple(cluster.list(JOB_API, "Job"))
    queues = tuple(cluster.list(QUEUE_API, "Queue"))
    return HealthFacts(read_at, nodes, xids, remaps, pods, vcjobs, queues)


def _write_nodes(
    request: HealthRequest, planned: HealthPlan, cluster: Cluster, result: dict[str, Any]
) -> list[str]:
    done: list[str] = []
    now = planned.read_at
    for action in planned.nodes:
        if action.patch is None:
            continue

        def again(node: Any, a: Any = action) -> Any:
            return replan(node, a, now, request.healthy_period)

        try:
            written = patch_node(cluster, action, again)
        except (ApiException, TransportError) as exc:
            raise failed(done, exc, result) from exc
        if written.patch is not None:
            done.append(f"{written.action} Node/{written.name}")
    return done


def apply_health(
    request: HealthRequest, planned: HealthPlan, cluster: Cluster, check_mode: bool
) -> dict[str, Any]:
    """Nodes first (a node is cordoned before its jobs are stopped, so they restart
    elsewhere), then the jobs, the Queues' counts, and (not in check mode) the Events
    and the history."""
    result = report_health(request, planned)
    done = _write_nodes(request, planned, cluster, result)
    stopped: list[JobAction] = []
    for job in planned.jobs:
        if not job.stopped:
            continue
        try:
            took = stop_job(cluster, job)
        except (ApiException, TransportError) as exc:
            raise failed(done, exc, result) from exc
        if took:
            stopped.append(job)
            done.append(f"{job.action} Job/{job.namespace}/{job.name}")
    queues = {str(q["metadata"]["name"]): q for q in planned.queues}
    result["disrupted"] = raise_counts(cluster, queues, stopped_per_queue(stopped))
    # Marking a node healthy again is bookkeeping: only a quarantine, a release or a
    # stopped job is recorded.
    if check_mode or not (result["quarantined"] or result["released"] or stopped):
        return result
    _record(cluster, request, planned, stopped, result)
    return result


def _record(
    cluster: Cluster,
    request: HealthRequest,
    planned: HealthPlan,
    stopped: list[JobAction],
    result: dict[str, Any],
) -> None:
    now = planned.read_at
    order = 0
    for action in planned.nodes:
        if action.action in (QUARANTINE, RELEASE):
            order += 1
            record_event(cluster, node_event(action, now, order), f"node {action.name}'s")
    for job in stopped:
        order += 1
        record_event(
            cluster, job_event(job, now, order), f"{job.namespace}/{job.name} was stopped but its"
        )
    record_history(
        cluster, GPU_HEALTH_HISTORY, history_entry(result, now), request.history_size, "the run"
    )


# Module gpu_health: quarantine the nodes whose GPUs fail, release them once healthy.
HEALTH_FLOW: Flow[HealthRequest, HealthFacts, HealthPlan] = Flow(
    parse=parse_health,
    gather=gather_health,
    plan=plan_health,
    apply=apply_health,
    report=report_health,
    facts_out=facts_out,
    facts_in=facts_in,
    warnings_of=warnings_of,
)
