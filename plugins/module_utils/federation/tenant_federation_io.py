# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``federation_tenant``'s reads and writes with a ``kube.Cluster`` connected to the
Karmada API server (its pure steps: ``federation.tenant_federation``).

* gather: one LIST per kind, selected by ``platform.io/tenant=<tenant>`` (the tenant's
  kinds and Queues as ``tenants.read_io.read_tenant`` lists them, without PodGroups, then
  its three policy kinds), one GET of the federation's parent-queues ConfigMap, and one
  GET per queue the tenant is to get and lacks;
* apply: the tenant's parent queues listed in the parent-queues ConfigMap, the plan's
  batches in order, each batch's server-side applies (or deletes) concurrently, then the
  rest of its queues unlisted (rule parent-queues-list, as module ``tenant`` keeps a
  cluster's); in check mode the API server's dry runs. Not pure.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..common.names import QUEUE_API, namespace_name
from ..common.objects import index_by_name
from ..kube import cluster as kube
from ..tenants.changes import Changes
from ..tenants.read_io import read_parent_queues, read_tenant, tenant_selector
from ..tenants.write_io import reported_part_way, sync_parent_queues
from .batches_io import delete_batches, write_batches
from .run_report import result
from .tenant_federation import (
    API_OF,
    POLICY_KINDS,
    FederationTenantFacts,
    FederationTenantRequest,
    FederationTenantRun,
    new_queue_names,
    record_plan,
    refusal,
)


def gather_federation_tenant(
    request: FederationTenantRequest, cluster: kube.Cluster
) -> FederationTenantFacts:
    """The tenant's objects in Karmada, one LIST per kind (nothing namespaced when its
    namespace is not there); for ``present``, one GET per queue it is to get and lacks,
    unless the plan already refuses."""
    live = read_tenant(cluster, request.name, podgroups=False)
    objects: dict[str, Any] = {**live.objects, "Queue": live.queues}
    selector = tenant_selector(request.name)
    for api_version, kind in POLICY_KINDS:
        if kind == "PropagationPolicy":
            found = (
                cluster.list(
                    api_version,
                    kind,
                    namespace=namespace_name(request.name),
                    label_selector=selector,
                )
                if live.namespace_exists
                else []
            )
        else:
            found = cluster.list(api_version, kind, label_selector=selector)
        objects[kind] = index_by_name(found)
    # the federation's admission parameter (rule parent-queues-list), one GET
    facts = FederationTenantFacts(objects=objects, parent_list=read_parent_queues(cluster))
    if request.absent or refusal(request, facts) is not None:
        return facts
    taken = [cluster.get(QUEUE_API, "Queue", name) for name in new_queue_names(request, facts)]
    return replace(facts, taken=tuple(q for q in taken if q is not None))


def apply_federation_tenant(
    request: FederationTenantRequest,
    planned: FederationTenantRun,
    cluster: kube.Cluster,
    check_mode: bool,
) -> dict[str, Any]:
    """The writes, batch after batch, then the deletes; a failure after a write reports
    what was written (``PartialWrite``). In check mode every write and delete is the API
    server's dry run, except the namespaced objects of a namespace Karmada does not hold
    yet, which are only reported (there is nothing to dry-run them in)."""
    changes = Changes()
    record_plan(planned, changes)
    what = f"writing tenant {request.name!r} in the federation"
    parent_list = planned.facts.parent_list
    with reported_part_way(what, changes):
        if parent_list is not None:
            parents = planned.parents
            parent_list = sync_parent_queues(
                cluster, parent_list, parents, parents, changes, check_mode
            )
        write_batches(cluster, planned.writes, changes, check_mode, planned.facts.namespace_exists)
        delete_batches(cluster, planned.deletes, API_OF, changes, check_mode)
        if parent_list is not None:
            sync_parent_queues(
                cluster, parent_list, planned.parents, planned.owned, changes, check_mode
            )
    return result(changes)
