# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the tenant modules do with a ``kube.Cluster``: read a tenant with one
list call per kind, and write planned changes in a safe order.

``run_tenant``, ``TEAM_QUEUE_FLOW`` and ``INFO_FLOW`` (both through ``kube.flow``, their
pure steps ``tenants/teams`` and ``tenants/info``) are the ``tenant``, ``team_queue`` and
``tenant_info`` modules. Everything here goes through
``Cluster``: the reads are ``tenants.read_io``, the writes ``tenants.write_io``; the
decisions (what is desired, what is allowed, in which order) come from the pure core:
``tenants.inputs``, ``tenants.spec``, ``tenants.tenant_queues``, ``tenants.plan``,
``tenants.live``, ``queues.rules`` and ``queues.plan``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..common.errors import Refused
from ..common.names import (
    GRAPH_API,
    JOB_API,
    LABEL_TENANT,
    PODGROUP_API,
    QUEUE_API,
    namespace_name,
)
from ..kube import cluster as kube
from ..kube.flow import Flow
from ..kube.waiting import resource_absent, wait_for
from .changes import Changes
from .info import TenantInfoFacts, TenantInfoRequest, parse_info, plan_info, report_info
from .info import facts_in as info_facts_in
from .info import facts_out as info_facts_out
from .read_io import (
    read_gateway_objects,
    read_network_objects,
    read_oversell_objects,
    read_parent_queues,
    read_storage_oversell_objects,
    read_tenant,
    tenant_selector,
)
from .teams import (
    TeamQueueFacts,
    TeamQueuePlan,
    TeamQueueRequest,
    access_objects,
    new_queue_names,
    parse_team,
)
from .teams import facts_in as team_facts_in
from .teams import facts_out as team_facts_out
from .teams import plan as plan_team
from .teams import refusal as team_refusal
from .teams import report as report_team
from .tenant_flow import (
    TenantFacts,
    TenantRequest,
    TenantRun,
    purchase_grows,
    storage_bounds_grow,
    tenant_flow,
    tenant_new_queues,
)
from .tenant_flow import refusal as tenant_refusal
from .write_io import (
    delete_tenant,
    reported_part_way,
    run_queue_steps,
    sync_parent_queues,
    write_queue_access,
    write_tenant_over,
)

# Seconds between two looks at what is left of a tenant with ``wait: true``.
WAIT_INTERVAL = 2.0


# -- tenant ----------------------------------------------------------------------------------


def gather_tenant(request: TenantRequest, cluster: kube.Cluster) -> TenantFacts:
    """``absent``: the tenant's kinds, Queues and PodGroups, its Volcano Jobs and pods (one
    list each) and its InferenceGraphs. Else: the tenant's kinds, Queues and PodGroups, the
    cluster networks (Nodes, ServiceCIDRs unless given), one GET per queue it is to get and
    lacks, the oversell guard's Nodes and Queues when the purchase grows, the storage
    classes' capacities and every tenant's bounds when a class bound grows, and the
    parent-queues ConfigMap, in that order; the reads stop where the plan refuses."""
    if request.absent:
        live = read_tenant(cluster, request.name, workloads=True)
        return TenantFacts(live=live, gateway=tuple(read_gateway_objects(cluster, request.name)))
    if request.spec is None:  # narrows the type: parse gives present a spec
        raise AssertionError("a present request has a spec")
    facts = TenantFacts(live=read_tenant(cluster, request.name))
    nodes, service_cidrs = read_network_objects(cluster, request.spec)
    facts = replace(facts, nodes=tuple(nodes), service_cidrs=tuple(service_cidrs))
    if tenant_refusal(request, facts) is not None:
        return facts
    taken = [cluster.get(QUEUE_API, "Queue", name) for name in tenant_new_queues(request, facts)]
    facts = replace(facts, taken=tuple(q for q in taken if q is not None))
    if tenant_refusal(request, facts) is not None:
        return facts
    if purchase_grows(request, facts):
        pool_nodes, committed = read_oversell_objects(cluster, request.node_selector)
        facts = replace(facts, pool_nodes=tuple(pool_nodes), committed=tuple(committed))
        if tenant_refusal(request, facts) is not None:
            return facts
    if storage_bounds_grow(request, facts):
        capacity, quotas = read_storage_oversell_objects(cluster)
        facts = replace(facts, storage_capacity=capacity, class_quotas=tuple(quotas))
        if tenant_refusal(request, facts) is not None:
            return facts
    return replace(facts, parent_list=read_parent_queues(cluster))


def apply_tenant(
    request: TenantRequest, planned: TenantRun, cluster: kube.Cluster, check_mode: bool
) -> dict[str, Any]:
    """The writes of the plan (``absent``: its deletes, then with ``wait`` the wait for the
    namespace and queues to go)."""
    if request.absent:
        return apply_absent(request, planned, cluster, check_mode)
    if planned.plan is None:  # narrows the type: a present plan has objects
        raise AssertionError("a present plan has objects")
    live, parent_list = planned.facts.live, planned.facts.parent_list
    changes = Changes()
    with reported_part_way(f"writing tenant {request.name!r}", changes):
        write_tenant_over(cluster, planned.plan, live, parent_list, changes, check_mode)
    return {
        "changed": changes.changed,
        "objects": changes.objects,
        "diff": changes.diff(),
        "added": planned.added,
    }


def apply_absent(
    request: TenantRequest, planned: TenantRun, cluster: kube.Cluster, check_mode: bool
) -> dict[str, Any]:
    """The deletes, children first (``write_io.delete_tenant``: it reads the parent-queues
    ConfigMap after the queues are gone, as it always has); with ``wait`` the wait."""
    name, running, gateway = request.name, planned.running, planned.facts.gateway
    changes = Changes()
    with reported_part_way(f"deleting tenant {name!r}", changes, running=running):
        delete_tenant(cluster, planned.facts.live, planned.jobs, changes, check_mode, gateway)
    if request.wait and not check_mode and changes.changed:
        left = wait_gone(cluster, name, request.wait_timeout, gateway=bool(gateway))
        if left:
            # Everything was deleted; the API server is still removing these.
            raise Refused(
                f"after {request.wait_timeout}s these objects of tenant {name!r} still exist: "
                f"{', '.join(left)}",
                changed=True,
                objects=changes.objects,
                running=running,
            )
    return {
        "changed": changes.changed,
        "objects": changes.objects,
        "diff": changes.diff(),
        "running": running,
    }


def wait_gone(cluster: kube.Cluster, name: str, timeout: float, gateway: bool = False) -> list[str]:
    """Wait up to ``timeout`` seconds for the tenant's namespace and queues (and with
    ``gateway`` its InferenceGraphs, which KServe finalizes) to go; returns what is still
    there (``Kind/name``), empty once they are gone.

    kubernetes.core's Waiter waits on one kind: the Namespaces first, then the Queues in
    the time left (what is gone stays gone), so a poll is one LIST where it was two; with
    no time left the Queues are still listed once, for what to report."""
    deadline = time.monotonic() + timeout
    selectors = [tenant_selector(name)]
    left: list[dict[str, Any]] = []
    kinds = [("v1", "Namespace"), (QUEUE_API, "Queue")]
    if gateway:
        kinds.append((GRAPH_API, "InferenceGraph"))
    for api_version, kind in kinds:
        _gone, found, _elapsed = wait_for(
            cluster,
            api_version,
            kind,
            resource_absent,
            max(deadline - time.monotonic(), 0.0),
            WAIT_INTERVAL,
            label_selectors=selectors,
        )
        left += found.get("items") or []
    return [f"{o.get('kind')}/{o['metadata']['name']}" for o in left]


# Module tenant: a tenant created, resized or retired (``tenants/tenant_flow`` its pure steps).
TENANT_FLOW: Flow[TenantRequest, TenantFacts, TenantRun] = tenant_flow(gather_tenant, apply_tenant)


def run_tenant(
    params: Mapping[str, Any], cluster: kube.Cluster, check_mode: bool = False
) -> dict[str, Any]:
    """The ``tenant`` module's run on a cluster (``TENANT_FLOW``): bad input raises
    PlatformValidationError before any request, what the cluster's state forbids raises
    Refused (a refused input PlatformValidationError), a write that fails part-way
    PartialWrite; other API errors go through as ApiException."""
    return TENANT_FLOW.run(params, cluster, check_mode)


# -- team_queue ------------------------------------------------------------------------------


def gather_team(request: TeamQueueRequest, cluster: kube.Cluster) -> TeamQueueFacts:
    """The tenant's Queues (one list) and, when it has any, its PodGroups (one list); one
    GET of each queue it is to get and lacks (a new team's); then one GET each of the
    parent-queues ConfigMap, the tenant's queue list and its queue-reader ClusterRole. The
    reads stop where the plan refuses."""
    tenant = request.tenant
    queues = cluster.list(QUEUE_API, "Queue", label_selector=tenant_selector(tenant))
    podgroups = (
        cluster.list(PODGROUP_API, "PodGroup", namespace=namespace_name(tenant)) if queues else []
    )
    facts = TeamQueueFacts(tuple(queues), tuple(podgroups))
    if team_refusal(request, facts) is not None:
        return facts
    taken = [cluster.get(QUEUE_API, "Queue", name) for name in new_queue_names(request, facts)]
    facts = replace(facts, taken=tuple(q for q in taken if q is not None))
    if team_refusal(request, facts) is not None:
        return facts
    parent_list = read_parent_queues(cluster)
    queue_list, reader = (cluster.get(*where) for where in access_objects(tenant))
    return replace(
        facts,
        parent_list=(parent_list,) if parent_list is not None else (),
        queue_list=(queue_list,) if queue_list is not None else (),
        reader=(reader,) if reader is not None else (),
    )


def apply_team(
    request: TeamQueueRequest, planned: TeamQueuePlan, cluster: kube.Cluster, check_mode: bool
) -> dict[str, Any]:
    """The parent-queues list, the queue steps, the list again, then the tenant's queue
    list and queue reader, in that order."""
    changes = Changes()
    parents = planned.parents
    with reported_part_way(f"writing team {request.name!r} of tenant {request.tenant!r}", changes):
        parent_list = sync_parent_queues(
            cluster, planned.parent_list, parents, parents, changes, check_mode
        )
        run_queue_steps(cluster, planned.steps, planned.live_queues, changes, check_mode)
        sync_parent_queues(cluster, parent_list, parents, planned.owned, changes, check_mode)
        write_queue_access(cluster, request.tenant, planned.access, changes, check_mode)
    return {"changed": changes.changed, "objects": changes.objects, "diff": changes.diff()}


# Module team_queue: one team queue of a tenant added, resized or removed, with the
# tenant's parent-queues entry, queue list and queue reader kept in step.
TEAM_QUEUE_FLOW: Flow[TeamQueueRequest, TeamQueueFacts, TeamQueuePlan] = Flow(
    parse=parse_team,
    gather=gather_team,
    plan=plan_team,
    apply=apply_team,
    report=report_team,
    facts_out=team_facts_out,
    facts_in=team_facts_in,
)


def run_team_queue(
    params: Mapping[str, Any], cluster: kube.Cluster, check_mode: bool = False
) -> dict[str, Any]:
    """The ``team_queue`` module's run on a cluster (``TEAM_QUEUE_FLOW``)."""
    return TEAM_QUEUE_FLOW.run(params, cluster, check_mode)


# -- tenant_info -----------------------------------------------------------------------------


def gather_info(request: TenantInfoRequest, cluster: kube.Cluster) -> TenantInfoFacts:
    """One list per kind (Namespaces, Queues, Volcano Jobs) however many tenants there
    are; for one tenant without a namespace, no Job list (no namespace, no jobs)."""
    name = request.name
    selector = tenant_selector(name) if name else LABEL_TENANT
    namespaces = cluster.list("v1", "Namespace", label_selector=selector)
    queues = cluster.list(QUEUE_API, "Queue", label_selector=selector)
    if not name:
        jobs = cluster.list(JOB_API, "Job")
    elif namespaces:
        jobs = cluster.list(JOB_API, "Job", namespace=namespace_name(name))
    else:
        jobs = []  # no namespace, no jobs: nothing to list
    return TenantInfoFacts(tuple(namespaces), tuple(queues), tuple(jobs))


def apply_info(
    request: TenantInfoRequest,
    tenants: list[dict[str, Any]],
    cluster: kube.Cluster,
    check_mode: bool,
) -> dict[str, Any]:
    """Nothing to write: the tenants."""
    return {"changed": False, **report_info(request, tenants)}


# Module tenant_info: the tenants, their queues and active jobs; it never writes.
INFO_FLOW: Flow[TenantInfoRequest, TenantInfoFacts, list[dict[str, Any]]] = Flow(
    parse=parse_info,
    gather=gather_info,
    plan=plan_info,
    apply=apply_info,
    report=report_info,
    facts_out=info_facts_out,
    facts_in=info_facts_in,
)
