# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node groups and burst quotas against the cluster: the ``node_groups`` and
``burst_quota`` modules.

Reads one list of Nodes, one list of Queues and the scheduler ConfigMap; plans
with ``hybrid/plan``; writes each node, then the queues, with a merge patch
carrying the object's resourceVersion (a node's taints are an atomic list,
which a server-side apply would own whole and drop on the next run). A node's
patch refused because the node changed meanwhile is planned again from a fresh
read of that node. In check mode every write is the API server's dry run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.module_utils.common.warnings import warn

from ..common.errors import FieldError, PartialWrite, PlatformValidationError, Refused, raise_if
from ..common.names import (
    BURST_FIELD_MANAGER,
    BURST_QUEUE,
    FIELD_MANAGER,
    JOB_API,
    JOB_FINISHED_PHASES,
    LABEL_TENANT,
    MANAGED_SELECTOR,
    QUEUE_API,
    TENANT_QUEUES_CONFIGMAP,
    VOLCANO_NAMESPACE,
    namespace_name,
)
from ..common.objects import differs
from ..kube.cluster import ApiException, Cluster, ConflictError, TransportError, written_or_raise
from ..policy import volcano_catalog as vc
from ..policy.scheduler_conf_reader import parse_conf
from ..policy.scheduler_conf_tier_rules import node_group_plugin_errors
from .burst import (
    BURST_BILLING,
    allocated_gpus,
    burst_leaf,
    burst_leaf_name,
    burst_quota_errors,
    burst_removal_refusal,
    burst_shrink_refusal,
    capability_gpus,
)
from .nodegroups import NodeGroup, membership, parse_groups
from .plan import NodeGroupPlan, Write, node_write, plan_node_groups
from .queues import burst_target_errors


def _scheduler_conf_errors(cluster: Cluster) -> list[FieldError]:
    cm = cluster.get("v1", "ConfigMap", vc.SCHEDULER_CONFIGMAP, namespace=VOLCANO_NAMESPACE)
    text = ((cm or {}).get("data") or {}).get(vc.SCHEDULER_CONF_KEY)
    where = f"{VOLCANO_NAMESPACE}/{vc.SCHEDULER_CONFIGMAP}"
    if cm is None:
        return [FieldError(where, "does not exist; apply the scheduling_policy role first")]
    conf, errors = parse_conf(text)
    if errors:
        return [FieldError(f"{where}.{e.field}", e.message) for e in errors]
    return [
        FieldError(
            f"{where}.{e.field}",
            e.message + " (the scheduling_policy role's default configuration has it)",
        )
        for e in node_group_plugin_errors(conf)
    ]


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


def _burst_target(cluster: Cluster, name: str) -> dict[str, Any] | None:
    """The live queue ``burst_queue`` names, refused unless it is the platform's burst
    queue (rule burst-queue-platform-owned); checked before anything else is read."""
    raise_if(burst_target_errors(name, None))
    live = cluster.get(QUEUE_API, "Queue", name)
    raise_if(burst_target_errors(name, live))
    return live


def run(params: dict[str, Any], cluster: Cluster, check_mode: bool) -> dict[str, Any]:
    """Label and taint the node groups, bind the queues to them."""
    _burst_target(cluster, params.get("burst_queue") or BURST_QUEUE)
    conf_errors = _scheduler_conf_errors(cluster)
    if conf_errors:
        raise Refused(
            "node groups need Volcano's nodegroup plugin with enableHierarchy: "
            + "; ".join(str(e) for e in conf_errors),
            errors=[str(e) for e in conf_errors],
        )
    groups = parse_groups(params["groups"])
    nodes = cluster.list("v1", "Node")
    members, errors = membership(groups, nodes)
    if errors:
        raise PlatformValidationError(errors)
    queues = cluster.list(QUEUE_API, "Queue")
    plan = plan_node_groups(
        groups, members, nodes, queues, params["elastic_queue_types"], params.get("burst_queue")
    )
    for message in plan.warnings:
        warn(message)
    done = _write_all(cluster, plan, members)
    return {
        "changed": bool(done),
        "writes": done,
        "nodes": plan.nodes,
        "groups": {
            g.name: sorted(n for n, m in members.items() if m.name == g.name) for g in groups
        },
        "diff": {"before": plan.before, "after": plan.after},
    }


# -- burst_quota ------------------------------------------------------------------------


def _leaf_jobs(cluster: Cluster, namespace: str, leaf: str) -> list[str]:
    """The Volcano Jobs of the tenant that name the leaf and have not finished."""
    return sorted(
        j["metadata"]["name"]
        for j in cluster.list(JOB_API, "Job", namespace=namespace)
        if (j.get("spec") or {}).get("queue") == leaf
        and ((j.get("status") or {}).get("state") or {}).get("phase") not in JOB_FINISHED_PHASES
    )


def _queue_list_entry(tenant: str, leaf: str, value: str | None) -> dict[str, Any]:
    """The tenant's queue list with the leaf's key alone, under the burst manager: the
    tenant module's own apply of the ConfigMap keeps it (another manager owns it)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": TENANT_QUEUES_CONFIGMAP, "namespace": namespace_name(tenant)},
        "data": {leaf: value} if value else {},
    }


def run_burst(params: dict[str, Any], cluster: Cluster, check_mode: bool) -> dict[str, Any]:
    """The ``burst_quota`` module: the tenant's cloud quota as a leaf of the burst queue."""
    tenant, parent = params["tenant"], params["burst_queue"]
    leaf = burst_leaf_name(tenant)
    ns = namespace_name(tenant)
    owned = cluster.list(
        QUEUE_API, "Queue", label_selector=f"{LABEL_TENANT}={tenant},{MANAGED_SELECTOR}"
    )
    if not owned:
        raise PlatformValidationError(
            [FieldError("tenant", f"{tenant!r} is not a tenant (no managed Queue of it)")]
        )
    live = next((q for q in owned if q["metadata"]["name"] == leaf), None)
    before = {
        "capability": capability_gpus(live),
        "parent": ((live or {}).get("spec") or {}).get("parent"),
    }
    if params["state"] == "absent":
        if live is None:
            return {"changed": False, "queue": leaf, "diff": {"before": before, "after": before}}
        jobs = _leaf_jobs(cluster, ns, leaf)
        refusal = burst_removal_refusal(leaf, jobs, params["force"])
        if refusal:
            raise Refused(refusal, jobs=jobs)
        done: list[str] = []
        try:
            cluster.apply(_queue_list_entry(tenant, leaf, None), field_manager=BURST_FIELD_MANAGER)
            done.append(f"ConfigMap/{ns}/{TENANT_QUEUES_CONFIGMAP}")
            cluster.delete(QUEUE_API, "Queue", leaf)
            done.append(f"Queue/{leaf}")
        except (ApiException, TransportError) as exc:
            raise PartialWrite(f"removing {leaf}", done, exc) from exc
        after = {"capability": None, "parent": None}
        return {
            "changed": True,
            "queue": leaf,
            "writes": done,
            "diff": {"before": before, "after": after},
        }
    parent_queue = _burst_target(cluster, parent)
    if parent_queue is None:
        raise Refused(
            f"burst_queue: {parent} does not exist; gpucloud.platform.node_groups makes it from "
            "the cloud groups"
        )
    gpus = params["gpus"]
    raise_if(burst_quota_errors(gpus, capability_gpus(parent_queue), parent))
    refusal = burst_shrink_refusal(leaf, gpus, allocated_gpus(live), params["force"])
    if live is not None and refusal:
        raise Refused(refusal)
    desired = burst_leaf(tenant, gpus, parent)
    entry = _queue_list_entry(tenant, leaf, BURST_BILLING)
    cm = cluster.get("v1", "ConfigMap", TENANT_QUEUES_CONFIGMAP, namespace=ns)
    writes: list[dict[str, Any]] = []
    if live is None or differs(desired, live):
        writes.append(desired)
    if differs(entry, cm):
        writes.append(entry)
    done = []
    try:
        for manifest in writes:
            manager = BURST_FIELD_MANAGER if manifest["kind"] == "ConfigMap" else FIELD_MANAGER
            cluster.apply(manifest, field_manager=manager)
            done.append(f"{manifest['kind']}/{manifest['metadata']['name']}")
    except (ApiException, TransportError) as exc:
        raise PartialWrite(f"writing {leaf}", done, exc) from exc
    after = {"capability": gpus, "parent": parent}
    return {
        "changed": bool(done),
        "queue": leaf,
        "writes": done,
        "diff": {"before": before, "after": after},
    }
