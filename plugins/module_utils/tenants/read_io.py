# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tenant service's reads with a ``kube.Cluster``: a tenant with one list call per
kind, and the checks that need the cluster before anything is written (rules
oversell-guard, cluster-networks' input, queue-name-owned). Not pure: every function
but ``tenant_selector`` makes requests; the decisions are the pure core's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..capacity.oversell import tenant_oversell_errors
from ..capacity.purchase import purchase_growth
from ..common.errors import raise_if
from ..common.names import (
    COMMITTED_SELECTOR,
    GRAPH_API,
    JOB_API,
    LABEL_TENANT,
    MANAGED_SELECTOR,
    PLATFORM_NAMESPACE,
    PODGROUP_API,
    QUEUE_API,
    SERVICE_CIDR_API,
    STORAGE_CAPACITY_CONFIGMAP,
    namespace_name,
)
from ..common.objects import index_by_name
from ..common.quantity import Resources
from ..kube import cluster as kube
from ..kube.cluster import NotFoundError, ResourceNotFoundError
from ..policy.admission import PARENT_QUEUES_CONFIGMAP
from ..queues.model import Queue
from ..workload.pool import commitments_from_queues, label_selector, pool_from_nodes

# TENANT_KINDS and CLUSTER_SCOPED_KINDS: imported from here by the catalog too.
from .bounds import BOUNDS_NAME
from .live import CLUSTER_SCOPED_KINDS, TENANT_KINDS, TenantLive
from .network import ClusterNetworks, discovered_networks
from .spec import TenantSpec
from .tenant_queues import queue_name_collisions


def tenant_selector(tenant: str) -> str:
    return f"{LABEL_TENANT}={tenant}"


def read_tenant(
    cluster: kube.Cluster, tenant: str, workloads: bool = False, podgroups: bool = True
) -> TenantLive:
    """One list per kind, selected by ``platform.io/tenant=<tenant>``. Pod
    groups (unless ``podgroups`` is false: nothing runs where the run reads, as in
    Karmada) and with ``workloads`` Volcano Jobs and pods are listed in the
    tenant namespace; nothing namespaced is listed when the namespace is absent."""
    selector = tenant_selector(tenant)
    ns = namespace_name(tenant)
    live = TenantLive(name=tenant)
    for api_version, kind in TENANT_KINDS:
        cluster_scoped = kind in CLUSTER_SCOPED_KINDS
        if not cluster_scoped and not live.namespace_exists:
            live.objects[kind] = {}
            continue
        items = cluster.list(
            api_version,
            kind,
            namespace=None if cluster_scoped else ns,
            label_selector=selector,
        )
        live.objects[kind] = index_by_name(items)
    live.queues = index_by_name(cluster.list(QUEUE_API, "Queue", label_selector=selector))
    if live.namespace_exists:
        if podgroups:
            live.podgroups = cluster.list(PODGROUP_API, "PodGroup", namespace=ns)
        if workloads:
            live.jobs = cluster.list(JOB_API, "Job", namespace=ns)
            live.pods = cluster.list("v1", "Pod", namespace=ns)
    return live


def read_gateway_objects(cluster: kube.Cluster, tenant: str) -> list[dict[str, Any]]:
    """The tenant's objects outside its namespace that route to it: its InferenceGraphs
    (A/B tests and canary routers) in the serving gateway's namespace, one LIST across
    namespaces. None where KServe is not installed."""
    try:
        return cluster.list(GRAPH_API, "InferenceGraph", label_selector=tenant_selector(tenant))
    except ResourceNotFoundError:
        return []


def check_purchase_fits(
    cluster: kube.Cluster,
    tenant: str,
    live_queues: Mapping[str, Mapping[str, Any]],
    subscription: Resources,
    payg: Resources | None,
    node_selector: Mapping[str, str] | None,
) -> None:
    """Rule oversell-guard for a tenant's purchase, before any write: raises
    PlatformValidationError with the numbers when the new subscription (or
    PAYG grant) does not fit in the pool.

    Nothing is read when the purchase does not grow (judged from the tenant's
    own live queues); otherwise one Node list (by the node selector) and one
    list of the subscription and pay-as-you-go Queues."""
    current = commitments_from_queues(live_queues.values()).get(tenant)
    grown_sub, grown_payg = purchase_growth(current, subscription, payg)
    if not grown_sub and not grown_payg:
        return
    nodes = cluster.list("v1", "Node", label_selector=label_selector(node_selector))
    pool, _members = pool_from_nodes(nodes, node_selector)
    queues = cluster.list(QUEUE_API, "Queue", label_selector=COMMITTED_SELECTOR)
    commitments = commitments_from_queues(queues)
    raise_if(tenant_oversell_errors(tenant, pool, commitments, subscription, payg))


def read_oversell_objects(
    cluster: kube.Cluster, node_selector: Mapping[str, str] | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Rule oversell-guard's input: one Node list (by the node selector) and one list of the
    subscription and pay-as-you-go Queues."""
    nodes = cluster.list("v1", "Node", label_selector=label_selector(node_selector))
    queues = cluster.list(QUEUE_API, "Queue", label_selector=COMMITTED_SELECTOR)
    return nodes, queues


def read_storage_oversell_objects(
    cluster: kube.Cluster,
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """Rule storage-class-oversell's input: the storage role's capacity ConfigMap (one GET)
    and every tenant's bounds (one list of the platform's ResourceQuotas)."""
    capacity = read_storage_capacity(cluster)
    quotas = cluster.list(
        "v1",
        "ResourceQuota",
        label_selector=MANAGED_SELECTOR,
        field_selector=f"metadata.name={BOUNDS_NAME}",
    )
    return capacity, quotas


def read_storage_capacity(cluster: kube.Cluster) -> dict[str, Any] | None:
    """The storage role's capacity per class: ConfigMap ``platform-storage-capacity`` (one
    GET; None where the role recorded none)."""
    return cluster.get("v1", "ConfigMap", STORAGE_CAPACITY_CONFIGMAP, namespace=PLATFORM_NAMESPACE)


def read_cluster_networks(cluster: kube.Cluster, spec: TenantSpec) -> ClusterNetworks:
    """Rule cluster-networks' input: one Node list (pod CIDRs, node addresses) and, unless
    the service CIDR is given, one ServiceCIDR list."""
    return discovered_networks(*read_network_objects(cluster, spec))


def read_network_objects(
    cluster: kube.Cluster, spec: TenantSpec
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The Nodes (one list) and, unless the service CIDR is given, the ServiceCIDRs (one
    list) that rule cluster-networks reads."""
    nodes = cluster.list("v1", "Node")
    service_cidrs: list[dict[str, Any]] = []
    if spec.service_cidr is None:
        try:
            service_cidrs = cluster.list(SERVICE_CIDR_API, "ServiceCIDR")
        except (ResourceNotFoundError, NotFoundError):
            # An API server that does not serve ServiceCIDRs: service_cidr is required. Any
            # other error (a forbidden list, say) goes through as it is.
            service_cidrs = []
    return nodes, service_cidrs


def check_queue_names_free(
    cluster: kube.Cluster,
    tenant: str,
    queues: Sequence[Queue],
    live_queues: Mapping[str, Mapping[str, Any]],
) -> None:
    """Rule queue-name-owned: a queue the tenant does not have yet must not exist for someone
    else (tenant ``pa``'s team ``b-x`` and tenant ``pa-b``'s team ``x`` are both
    ``tenant-pa-b-x``). One GET per new queue; none on a re-run."""
    found = {}
    for queue in queues:
        if queue.name not in live_queues:
            other = cluster.get(QUEUE_API, "Queue", queue.name)
            if other is not None:
                found[queue.name] = other
    raise_if(queue_name_collisions(tenant, queues, found))


def read_parent_queues(cluster: kube.Cluster) -> dict[str, Any] | None:
    """The parent-queues ConfigMap (None when it does not exist yet)."""
    return cluster.get("v1", "ConfigMap", PARENT_QUEUES_CONFIGMAP, PLATFORM_NAMESPACE)
