# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The queue arbiter's reads (I/O through a ``Cluster``): ``read_facts`` reads, one
request per kind, what the decision needs next (``arbiter/arbitrate.next_read``, pure)
until it needs nothing more.

In the tenant's namespace when ``tenant`` is given: PodGroups first, and only when one
waits and is settled (or ``job`` or ``queue`` is given) the Volcano Jobs, the managed
Queues, the unfinished Pods and the Nodes (Pods and Nodes cluster-wide: the free GPUs are
the pool's), then the PVCs of the job decided for when it mounts any; for a refusal, the
Lease and the arbiter's history (two GETs). A run with nothing waiting makes its one list
and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..common.names import JOB_API, MANAGED_SELECTOR, PODGROUP_API, QUEUE_API, QUEUE_ARBITER_HISTORY
from ..kube.cluster import Cluster
from ..kube.lease import QUEUE_ARBITER
from ..kube.lease_io import read_lease
from ..kube.run_record import read_run_history
from .arbitrate import ArbiterFacts, ArbiterRequest, next_read

_UNFINISHED_PODS = "status.phase!=Succeeded,status.phase!=Failed"

Read = Callable[[Cluster, ArbiterRequest, "str | None"], list[Any]]


def _lease(cluster: Cluster, request: ArbiterRequest, namespace: str | None) -> list[Any]:
    lease = read_lease(cluster, QUEUE_ARBITER)
    return [lease] if lease else []


_READS: dict[str, Read] = {
    "podgroups": lambda c, r, _ns: c.list(PODGROUP_API, "PodGroup", namespace=r.namespace),
    "queues": lambda c, _r, _ns: c.list(QUEUE_API, "Queue", label_selector=MANAGED_SELECTOR),
    "vcjobs": lambda c, r, _ns: c.list(JOB_API, "Job", namespace=r.namespace),
    "pods": lambda c, _r, _ns: c.list("v1", "Pod", field_selector=_UNFINISHED_PODS),
    "nodes": lambda c, _r, _ns: c.list("v1", "Node"),
    "pvcs": lambda c, _r, ns: c.list("v1", "PersistentVolumeClaim", namespace=ns),
    "leases": _lease,
    "history": lambda c, _r, _ns: read_run_history(c, QUEUE_ARBITER_HISTORY),
}


def read_facts(cluster: Cluster, request: ArbiterRequest, facts: ArbiterFacts) -> ArbiterFacts:
    """``facts`` with every kind the decision needs, read in the order it needs them."""
    while (needed := next_read(request, facts)) is not None:
        kind, namespace = needed
        facts = replace(facts, **{kind: tuple(_READS[kind](cluster, request, namespace))})
    return facts
