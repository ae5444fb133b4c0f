# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the spot modules read through a ``Cluster`` (I/O, reads only), shared by the
reclaim (``spot/reclaim_io``), the spot modules (``spot/service``) and pay-as-you-go
(``capacity/service``):

* the pool: one list of Nodes (label selector = node selector) and one of unfinished
  Pods (``read_pool``), and the poll until GPUs are free (``wait_until_free``);
* the billing Queues (``read_queues``);
* the spot candidates: the spot Volcano Jobs (label ``platform.io/billing-type=spot``)
  and the Running pods Volcano schedules (``read_spot_candidates``, rules
  spot-candidate and spot-candidate-pod of ``spot/candidates``);
* the reclaim history (``read_live_history``, one GET through ``kube/run_record``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ansible.module_utils.common.warnings import warn

from ..common.names import (
    BILLING_SELECTOR,
    JOB_API,
    LABEL_BILLING_TYPE,
    MANAGED_SELECTOR,
    PODGROUP_API,
    QUEUE_API,
    SPOT_RECLAIM_HISTORY,
)
from ..kube.cluster import Cluster
from ..kube.run_record import read_run_history
from ..workload.pool import (
    allocated_from_pods,
    commitments_from_queues,
    label_selector,
    pool_from_nodes,
)
from .candidates import candidates_from_pods, candidates_from_vcjobs
from .reclaim import PoolState
from .victims import SpotJob

_UNFINISHED_PODS = "status.phase!=Succeeded,status.phase!=Failed"
# One LIST of the pods that can hold a spot queue's GPUs (the API server filters).
RUNNING_VOLCANO_PODS = "spec.schedulerName=volcano,status.phase=Running"


def warn_all(warnings: Iterable[str]) -> None:
    """Report each warning with the module's result (as ``module.warn`` does)."""
    for warning in warnings:
        warn(warning)


def list_unfinished_pods(cluster: Cluster) -> list[dict[str, Any]]:
    """One list of the Pods that are neither Succeeded nor Failed (the API server filters)."""
    return cluster.list("v1", "Pod", field_selector=_UNFINISHED_PODS)


def list_podgroups(cluster: Cluster) -> list[dict[str, Any]]:
    """One list of every PodGroup (rule paying-use reads the waiting ones)."""
    return cluster.list(PODGROUP_API, "PodGroup")


def list_pool(
    cluster: Cluster, node_selector: Mapping[str, str] | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One list of Nodes (label selector = node selector) and one of unfinished Pods."""
    nodes = cluster.list("v1", "Node", label_selector=label_selector(node_selector))
    return nodes, list_unfinished_pods(cluster)


def list_spot(
    cluster: Cluster, team_queues: bool = False
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The spot candidates as listed: the billing Queues (``team_queues``: every managed
    Queue), the spot Volcano Jobs and the Running pods Volcano schedules (one list each,
    in that order)."""
    queues = read_managed_queues(cluster) if team_queues else read_queues(cluster)
    jobs = cluster.list(JOB_API, "Job", label_selector=f"{LABEL_BILLING_TYPE}=spot")
    return queues, jobs, cluster.list("v1", "Pod", field_selector=RUNNING_VOLCANO_PODS)


def read_pool(cluster: Cluster, node_selector: Mapping[str, str] | None) -> PoolState:
    """One list of Nodes and one of unfinished Pods."""
    nodes, pods = list_pool(cluster, node_selector)
    pool, members = pool_from_nodes(nodes, node_selector)
    held, leaving = allocated_from_pods(pods, members)
    return PoolState(pool, members, held, leaving)


def read_queues(cluster: Cluster) -> list[dict[str, Any]]:
    """Every tenant's billing queues (``BILLING_SELECTOR``): rule committed, the spot
    apportionment and the reclaim read nothing of the team queues."""
    return cluster.list(QUEUE_API, "Queue", label_selector=BILLING_SELECTOR)


def read_managed_queues(cluster: Cluster) -> list[dict[str, Any]]:
    """Every Queue the platform manages, team queues too: rule paying-use (``spot/offer``)
    counts a team queue's pods in its tenant's subscription."""
    return cluster.list(QUEUE_API, "Queue", label_selector=MANAGED_SELECTOR)


def read_spot_candidates(
    cluster: Cluster,
    queues: Iterable[Mapping[str, Any]] | None = None,
    jobs: Iterable[Mapping[str, Any]] | None = None,
) -> list[SpotJob]:
    """The running spot jobs in spot queues (``queues``: the managed Queues, and
    ``jobs``: Volcano Jobs, each listed here when the caller has not listed them); a
    price that is not a number is warned about."""
    queues = read_queues(cluster) if queues is None else queues
    spot_queues = [c.spot_queue for c in commitments_from_queues(queues).values() if c.spot_queue]
    if jobs is None:
        jobs = cluster.list(JOB_API, "Job", label_selector=f"{LABEL_BILLING_TYPE}=spot")
    candidates, warnings = candidates_from_vcjobs(jobs, spot_queues)
    # Rule spot-candidate-pod: every other workload in a spot queue, by its pods.
    pods = cluster.list("v1", "Pod", field_selector=RUNNING_VOLCANO_PODS)
    pod_candidates, pod_warnings = candidates_from_pods(pods, spot_queues)
    warn_all(warnings + pod_warnings)
    return candidates + pod_candidates


def read_live_history(cluster: Cluster) -> list[Any]:
    """The entries of ConfigMap ``spot-reclaim-history`` (rule reclaim-history)."""
    return read_run_history(cluster, SPOT_RECLAIM_HISTORY)


def wait_until_free(
    cluster: Cluster,
    node_selector: Mapping[str, str] | None,
    demand: int,
    timeout: float,
    sleep: float = 2.0,
    clock: Callable[[], float] = time.monotonic,
    pause: Callable[[float], None] = time.sleep,
) -> tuple[bool, int]:
    """Poll until ``demand`` GPUs are free with nothing left on its way out
    (the deleted jobs' pods are gone). Returns (reached, free GPUs)."""
    deadline = clock() + timeout
    while True:
        state = read_pool(cluster, node_selector)
        free = state.free_gpus_settled
        if free >= demand:
            return True, free
        if clock() >= deadline:
            return False, free
        pause(sleep)
