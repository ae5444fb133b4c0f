# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node groups and burst quotas against the cluster: the ``node_groups`` and
``burst_quota`` modules, through ``kube.flow`` (``GROUPS_FLOW`` and ``BURST_FLOW``; their
pure steps are ``hybrid/grouping`` and ``hybrid/quota``): the reads and the writes.

Reads one list of Nodes, one list of Queues and the scheduler ConfigMap; plans
with ``hybrid/plan``; writes each node, then the queues, with a merge patch
carrying the object's resourceVersion (a node's taints are an atomic list,
which a server-side apply would own whole and drop on the next run). A node's
patch refused because the node changed meanwhile is planned again from a fresh
read of that node. In check mode every write is the API server's dry run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..common.errors import PartialWrite
from ..common.names import (
    BURST_FIELD_MANAGER,
    FIELD_MANAGER,
    JOB_API,
    LABEL_TENANT,
    MANAGED_SELECTOR,
    QUEUE_API,
    TENANT_QUEUES_CONFIGMAP,
    VOLCANO_NAMESPACE,
)
from ..kube.cluster import ApiException, Cluster, ConflictError, TransportError, written_or_raise
from ..kube.flow import Flow
from ..policy import volcano_catalog as vc
from .grouping import GroupsFacts, GroupsPlan, GroupsRequest, parse_groups_request
from .grouping import facts_in as groups_facts_in
from .grouping import facts_out as groups_facts_out
from .grouping import plan as plan_groups
from .grouping import refusal as groups_refusal
from .grouping import report as report_groups
from .grouping import warnings_of as groups_warnings
from .nodegroups import NodeGroup
from .plan import NodeGroupPlan, Write, node_write
from .quota import BurstFacts, BurstPlan, BurstRequest, leaf_of, parse_burst
from .quota import facts_in as burst_facts_in
from .quota import facts_out as burst_facts_out
from .quota import plan as plan_burst
from .quota import refusal as burst_refusal
from .quota import report as report_burst

# A node's patch refused because the node changed since it was read (its kubelet, or
# kwok, writes its status every few seconds) is planned again from a fresh read, this
# many times in all.
NODE_WRITE_ATTEMPTS = 5


def _send(cluster: Cluster, write: Write) -> Any:
    if write.create:
        return cluster.create(write.body)
    return cluster.merge_patch(write.api_version, write.kind, write.name, write.body)


def _write_node(
    cluster: Cluster, write: Write, group: NodeGroup | None, plan: NodeGroupPlan
) -> bool:
    """One node's patch; False when, read again, the node needed none. On a conflict the
    node is read again and its patch planned again from what it carries now (rule
    node-group-labels, rule cloud-taint), so a taint someone added meanwhile is kept, not
    overwritten; the plan's before and after for the node become the fresh ones, so the
    diff says what was written."""
    for attempt in range(NODE_WRITE_ATTEMPTS):
        try:
            _send(cluster, write)
            return True
        except ConflictError:
            node = cluster.get("v1", "Node", write.name)
            if attempt == NODE_WRITE_ATTEMPTS - 1 or node is None:
                raise
            fresh, before, after = node_write(node, group)
            plan.before[write.key()], plan.after[write.key()] = before, after
            if fresh is None:
                return False
            write = fresh
    raise AssertionError("unreachable: the last attempt returns or raises")


def _write_all(
    cluster: Cluster, plan: NodeGroupPlan, members: Mapping[str, NodeGroup]
) -> list[str]:
    """Every node's labels and taints, several nodes at a time (each patch carries its
    node's resourceVersion, so none depends on another); then the queues, one at a time
    in the plan's order, and only once every node is written: root's IDC-only affinity
    must not come before the queues ahead of it, nor before the nodes carry the labels."""
    nodes = [w for w in plan.writes if w.kind == "Node"]
    results = cluster.concurrently(
        [lambda w=w: _write_node(cluster, w, members.get(w.name), plan) for w in nodes]
    )
    # A node that, read again after a conflict, needed no patch was not written.
    sent = [(w.key(), r) for w, r in zip(nodes, results, strict=True) if r is not False]
    done = written_or_raise(
        [key for key, _r in sent], [r for _key, r in sent], "grouping nodes", nodes=plan.nodes
    )
    for write in plan.writes:
        if write.kind == "Node":
            continue
        try:
            _send(cluster, write)
        except (ApiException, TransportError) as exc:
            raise PartialWrite("grouping nodes", done, exc, nodes=plan.nodes) from exc
        done.append(write.key())
    return done


def gather_groups(request: GroupsRequest, cluster: Cluster) -> GroupsFacts:
    """The burst queue, the scheduler ConfigMap, one list of Nodes and one of Queues, in
    that order; the reads stop where the plan refuses (the burst queue is checked before
    anything else is read)."""
    facts = GroupsFacts()
    if groups_refusal(request, facts) is not None:
        return facts
    burst = cluster.get(QUEUE_API, "Queue", request.burst_target)
    facts = replace(facts, burst=(burst,) if burst is not None else ())
    if groups_refusal(request, facts) is not None:
        return facts
    cm = cluster.get("v1", "ConfigMap", vc.SCHEDULER_CONFIGMAP, namespace=VOLCANO_NAMESPACE)
    facts = replace(facts, scheduler=(cm,) if cm is not None else ())
    if groups_refusal(request, facts) is not None:
        return facts
    facts = replace(facts, nodes=tuple(cluster.list("v1", "Node")))
    if groups_refusal(request, facts) is not None:
        return facts
    return replace(facts, queues=tuple(cluster.list(QUEUE_API, "Queue")))


def apply_groups(
    request: GroupsRequest, planned: GroupsPlan, cluster: Cluster, check_mode: bool
) -> dict[str, Any]:
    """Label and taint the node groups, bind the queues to them, in the plan's order. A
    node planned again after a conflict changes the diff this run returns, not the plan."""
    plan = replace(planned.plan, before=dict(planned.plan.before), after=dict(planned.plan.after))
    done = _write_all(cluster, plan, planned.members)
    return report_groups(request, planned, done, {"before": plan.before, "after": plan.after})


# Module node_groups: the nodes grouped, the queues bound to the groups.
GROUPS_FLOW: Flow[GroupsRequest, GroupsFacts, GroupsPlan] = Flow(
    parse=parse_groups_request,
    gather=gather_groups,
    plan=plan_groups,
    apply=apply_groups,
    report=report_groups,
    facts_out=groups_facts_out,
    facts_in=groups_facts_in,
    warnings_of=groups_warnings,
)


def run(params: dict[str, Any], cluster: Cluster, check_mode: bool) -> dict[str, Any]:
    """The ``node_groups`` module's run on a cluster (``GROUPS_FLOW``)."""
    return GROUPS_FLOW.run(params, cluster, check_mode)


# -- burst_quota ------------------------------------------------------------------------


def gather_burst(request: BurstRequest, cluster: Cluster) -> BurstFacts:
    """The tenant's managed Queues; removing, the leaf's namespace's Volcano Jobs; resizing,
    the burst queue and the tenant's queue list. The reads stop where the plan refuses."""
    queues = cluster.list(
        QUEUE_API, "Queue", label_selector=f"{LABEL_TENANT}={request.tenant},{MANAGED_SELECTOR}"
    )
    facts = BurstFacts(tuple(queues))
    if burst_refusal(request, facts) is not None:
        return facts
    if request.gpus is None:
        if leaf_of(request, facts) is None:
            return facts
        jobs = cluster.list(JOB_API, "Job", namespace=request.namespace)
        return replace(facts, jobs=tuple(jobs))
    parent = cluster.get(QUEUE_API, "Queue", request.burst_queue)
    facts = replace(facts, parent=(parent,) if parent is not None else ())
    if burst_refusal(request, facts) is not None:
        return facts
    cm = cluster.get("v1", "ConfigMap", TENANT_QUEUES_CONFIGMAP, namespace=request.namespace)
    return replace(facts, queue_list=(cm,) if cm is not None else ())


def apply_burst(
    request: BurstRequest, planned: BurstPlan, cluster: Cluster, check_mode: bool
) -> dict[str, Any]:
    """The plan's writes in order: the list entry, then the leaf (removing: the entry
    dropped, then the leaf deleted)."""
    done: list[str] = []
    what = f"{'removing' if planned.remove else 'writing'} {planned.leaf}"
    try:
        for manifest, key in zip(planned.writes, planned.written, strict=False):
            manager = BURST_FIELD_MANAGER if manifest["kind"] == "ConfigMap" else FIELD_MANAGER
            cluster.apply(manifest, field_manager=manager)
            done.append(key)
        if planned.remove and planned.written:
            cluster.delete(QUEUE_API, "Queue", planned.leaf)
            done.append(planned.written[-1])
    except (ApiException, TransportError) as exc:
        raise PartialWrite(what, done, exc) from exc
    return report_burst(request, planned, done)


# Module burst_quota: a tenant's cloud quota as a leaf of the burst queue.
BURST_FLOW: Flow[BurstRequest, BurstFacts, BurstPlan] = Flow(
    parse=parse_burst,
    gather=gather_burst,
    plan=plan_burst,
    apply=apply_burst,
    report=report_burst,
    facts_out=burst_facts_out,
    facts_in=burst_facts_in,
)


def run_burst(params: dict[str, Any], cluster: Cluster, check_mode: bool) -> dict[str, Any]:
    """The ``burst_quota`` module's run on a cluster (``BURST_FLOW``)."""
    return BURST_FLOW.run(params, cluster, check_mode)
