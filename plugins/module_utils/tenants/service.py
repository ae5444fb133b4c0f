# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the tenant modules do with a ``kube.Cluster``: read a tenant with one
list call per kind, and write planned changes in a safe order.

``run_tenant``, ``run_team_queue`` and ``run_info`` are the ``tenant``,
``team_queue`` and ``tenant_info`` modules. Everything here goes through
``Cluster``; the decisions (what is desired, what is allowed, in which order)
come from the pure core: ``tenants.inputs``, ``tenants.spec``,
``tenants.live``, ``queues.rules`` and ``queues.plan``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ansible.module_utils.common.warnings import warn

from ..capacity.grace import grant_grows, stamp_for_write
from ..capacity.oversell import tenant_oversell_errors
from ..capacity.pool import commitments_from_queues, label_selector, pool_from_nodes
from ..capacity.purchase import purchase_demand, purchase_growth
from ..common.errors import PartialWrite, Refused, raise_if
from ..common.names import (
    CAPACITY_FIELD_MANAGER,
    COMMITTED_SELECTOR,
    GRAPH_API,
    JOB_API,
    LABEL_TENANT,
    PLATFORM_NAMESPACE,
    PODGROUP_API,
    QUEUE_API,
    QUEUE_TYPE_PAYG,
    QUEUE_TYPE_TEAM,
    SERVICE_CIDR_API,
    namespace_name,
    queue_name,
)
from ..common.objects import differs, index_by_name
from ..common.quantity import Resources, render
from ..kube import cluster as kube
from ..kube.cluster import NotFoundError, ResourceNotFoundError, TransportError
from ..kube.waiting import resource_absent, wait_for
from ..policy.admission import (
    PARAM_KEY_QUEUES,
    PARENT_QUEUES_CONFIGMAP,
    parent_queues_configmap,
    tenant_queues_configmap,
)
from ..queues.model import Queue
from ..queues.parent_list import parent_queue_names, updated_queue_list
from ..queues.plan import CAPACITY, CREATE, DELETE, UPDATE, QueueStep, queue_steps
from .changes import (
    Changes,
    ObjectChange,
    dry_run_possible,
    queue_list_stale,
    step_action,
    step_manifest,
    tenant_object_changes,
)
from .inputs import (
    DEFAULT_WAIT_TIMEOUT,
    parse_absent,
    parse_info,
    parse_present,
    parse_team_queue,
)
from .live import TenantLive, active_jobs, active_pods, busy_queues, queues_in_delete_order
from .network import ClusterNetworks, discovered_networks
from .rbac import queue_reader
from .report import summarize
from .spec import (
    TenantPlan,
    TenantSpec,
    kept_guarantee,
    leaf_queue_types,
    plan_team_change,
    plan_tenant,
    queue_name_collisions,
)

# How long a queue write waits for Volcano's webhook cache to catch up.
QUEUE_WRITE_TIMEOUT = 30.0
# How long a queue delete of ``state: absent`` waits for it (the webhook refuses
# to delete a subscription queue until its deleted teams are out of its cache).
QUEUE_DELETE_TIMEOUT = 60.0
# Seconds between two looks at what is left of a tenant with ``wait: true``.
WAIT_INTERVAL = 2.0
# The ``queues`` key of the parent-queues ConfigMap is applied under its own
# field manager: the scheduling_policy role applies the ConfigMap without the
# key under FIELD_MANAGER, which would otherwise remove it.
PARENT_QUEUES_FIELD_MANAGER = "gpucloud-platform-parent-queues"
# Attempts when another run changes the ConfigMap between read and write.
PARENT_QUEUES_ATTEMPTS = 5

# Kinds a tenant owns besides its queues, in write order.
TENANT_KINDS = (
    ("v1", "Namespace"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("networking.k8s.io/v1", "NetworkPolicy"),
    ("v1", "ConfigMap"),
    ("v1", "ResourceQuota"),
    ("v1", "LimitRange"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
)
CLUSTER_SCOPED_KINDS = ("Namespace", "ClusterRole", "ClusterRoleBinding")


def tenant_selector(tenant: str) -> str:
    return f"{LABEL_TENANT}={tenant}"


def read_tenant(cluster: kube.Cluster, tenant: str, workloads: bool = False) -> TenantLive:
    """One list per kind, selected by ``platform.io/tenant=<tenant>``. Pod
    groups (and with ``workloads`` Volcano Jobs and pods) are listed in the
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


def read_cluster_networks(cluster: kube.Cluster, spec: TenantSpec) -> ClusterNetworks:
    """Rule cluster-networks' input: one Node list (pod CIDRs, node addresses) and, unless
    the service CIDR is given, one ServiceCIDR list."""
    nodes = cluster.list("v1", "Node")
    service_cidrs: list[dict[str, Any]] = []
    if spec.service_cidr is None:
        try:
            service_cidrs = cluster.list(SERVICE_CIDR_API, "ServiceCIDR")
        except (ResourceNotFoundError, NotFoundError):
            # An API server that does not serve ServiceCIDRs: service_cidr is required. Any
            # other error (a forbidden list, say) goes through as it is.
            service_cidrs = []
    return discovered_networks(nodes, service_cidrs)


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


def purchase_added(
    tenant: str,
    live_queues: Mapping[str, Mapping[str, Any]],
    subscription: Resources,
    payg: Resources | None,
) -> dict[str, int | str]:
    """Rule purchase-demand for the tenant's own live queues, as manifests write
    quantities: what the purchase newly sells, which the purchase flows free
    from spot jobs first. No request: the tenant's queues are already read."""
    current = commitments_from_queues(live_queues.values()).get(tenant)
    return render(purchase_demand(current, subscription, payg))


def write_queue_step(
    cluster: kube.Cluster,
    step: QueueStep,
    timeout: float,
    live: Mapping[str, Any] | None = None,
) -> None:
    if step.action == DELETE:
        kube.retry_while_denied(
            lambda: cluster.delete(QUEUE_API, "Queue", step.name), timeout=timeout
        )
        return
    if not (step.queue is not None):  # narrows the type; cannot happen
        raise AssertionError("step.queue is not None")
    queue: Queue = step.queue
    if step.action == CAPACITY:
        manifest = step.manifest()
        if queue.queue_type == QUEUE_TYPE_PAYG:
            # Rule payg-grant-stamped; the clock is read only for a growing grant.
            now = time.time() if grant_grows(manifest, live) else 0.0
            stamp_for_write(manifest, live, now)
        kube.retry_while_denied(
            lambda: cluster.apply(manifest, field_manager=CAPACITY_FIELD_MANAGER), timeout=timeout
        )
    else:
        manifest = queue.to_manifest()
        kube.retry_while_denied(lambda: cluster.apply(manifest), timeout=timeout)


def run_queue_steps(
    cluster: kube.Cluster,
    steps: Sequence[QueueStep],
    live_queues: Mapping[str, Mapping[str, Any]],
    changes: Changes,
    check_mode: bool,
) -> None:
    """Write (or in check mode, dry-run where possible) every step, recording it."""
    for step in steps:
        live = live_queues.get(step.name)
        action = step_action(step, live)
        if step.final or step.action == DELETE:
            changes.record(step_manifest(step), action, live)
        if check_mode:
            if step.action != DELETE and dry_run_possible(step, steps, live_queues):
                write_queue_step(cluster, step, timeout=0)
            continue
        write_queue_step(cluster, step, timeout=QUEUE_WRITE_TIMEOUT, live=live)
        changes.wrote(step_manifest(step), action)


def read_parent_queues(cluster: kube.Cluster) -> dict[str, Any] | None:
    """The parent-queues ConfigMap (None when it does not exist yet)."""
    return cluster.get("v1", "ConfigMap", PARENT_QUEUES_CONFIGMAP, PLATFORM_NAMESPACE)


def sync_parent_queues(
    cluster: kube.Cluster,
    live: Mapping[str, Any] | None,
    parents: Iterable[str],
    owned: Iterable[str],
    changes: Changes,
    check_mode: bool,
) -> Mapping[str, Any] | None:
    """List ``parents`` and unlist the rest of ``owned`` in the parent-queues
    ConfigMap (rule parent-queues-list); write only when the value changes.
    Returns the ConfigMap as it is afterwards (in check mode: would be).

    The write carries the resourceVersion that was read, so a concurrent run
    makes it fail with a conflict; then the ConfigMap is read again."""
    parents, owned = sorted(set(parents)), sorted(set(owned))
    for attempt in range(PARENT_QUEUES_ATTEMPTS):
        if attempt:
            live = read_parent_queues(cluster)
        data = (live or {}).get("data") or {}
        value = updated_queue_list(data.get(PARAM_KEY_QUEUES), parents, owned)
        if value is None:
            return live
        manifest = parent_queues_configmap()
        manifest["data"] = {PARAM_KEY_QUEUES: value}
        action = CREATE if live is None else UPDATE
        changes.record(manifest, action, live)
        if check_mode and not cluster.dry_run:
            return {**(live or manifest), "data": {**data, PARAM_KEY_QUEUES: value}}
        try:
            if live is None:
                written = cluster.create(manifest)
            else:
                # Only the key, with the resourceVersion read: a stale read conflicts.
                partial = {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": PARENT_QUEUES_CONFIGMAP,
                        "namespace": PLATFORM_NAMESPACE,
                        "resourceVersion": live["metadata"]["resourceVersion"],
                    },
                    "data": {PARAM_KEY_QUEUES: value},
                }
                written = cluster.apply(partial, field_manager=PARENT_QUEUES_FIELD_MANAGER)
        except kube.ConflictError:
            if attempt == PARENT_QUEUES_ATTEMPTS - 1:
                raise
            continue
        if check_mode:  # a server-side dry run: the live object is unchanged
            return {**(live or manifest), "data": {**data, PARAM_KEY_QUEUES: value}}
        changes.wrote(manifest, action)
        return written
    return live


@contextmanager
def reported_part_way(what: str, changes: Changes, **report: Any) -> Iterator[None]:
    """An API or transport error in the block after a real write raises
    ``PartialWrite``, so the failure names what was written and says
    ``changed: true``; before the first write the error goes through as it is."""
    try:
        yield
    except (kube.ApiException, TransportError, OSError) as exc:
        if not changes.done:
            raise
        raise PartialWrite(what, changes.done, exc, **report) from exc


# -- tenant, state: present ----------------------------------------------------------------


def ensure_present(
    params: Mapping[str, Any], cluster: kube.Cluster, check_mode: bool
) -> dict[str, Any]:
    spec = parse_present(params)  # raises before any request
    live = read_tenant(cluster, spec.name)
    spec = kept_guarantee(spec, params.get("subscription_guarantee"), live.queues)
    busy = busy_queues(live.podgroups, live.queues)
    plan = plan_tenant(
        spec,
        live.queues,
        busy,
        force=params.get("force", False),
        discovered=read_cluster_networks(cluster, spec),
    )
    check_queue_names_free(cluster, spec.name, plan.queues, live.queues)
    if params.get("oversell_check", True):
        check_purchase_fits(
            cluster,
            spec.name,
            live.queues,
            spec.subscription,
            spec.payg,
            params.get("node_selector") or {},
        )
    changes = Changes()
    with reported_part_way(f"writing tenant {spec.name!r}", changes):
        write_tenant(cluster, plan, live, changes, check_mode)
    return {
        "changed": changes.changed,
        "objects": changes.objects,
        "diff": changes.diff(),
        "added": purchase_added(spec.name, live.queues, spec.subscription, spec.payg),
    }


def write_tenant(
    cluster: kube.Cluster, plan: TenantPlan, live: TenantLive, changes: Changes, check_mode: bool
) -> None:
    """The parent-queues list, the Namespace, RBAC and NetworkPolicy, then the queues."""
    # A subscription queue is listed as a parent before it gets its first team
    # and unlisted only after its last team is gone.
    parents = parent_queue_names(plan.queues)
    owned = {q.name for q in plan.queues} | set(live.queues) | set(plan.queue_deletes)
    parent_list = read_parent_queues(cluster)
    parent_list = sync_parent_queues(cluster, parent_list, parents, parents, changes, check_mode)
    write_tenant_objects(cluster, plan, live, changes, check_mode)
    sync_parent_queues(cluster, parent_list, parents, owned, changes, check_mode)


def write_tenant_objects(
    cluster: kube.Cluster,
    plan: TenantPlan,
    live: TenantLive,
    changes: Changes,
    check_mode: bool,
    steps: Sequence[QueueStep] | None = None,
    object_changes: Sequence[ObjectChange] | None = None,
) -> None:
    """The Namespace, RBAC and NetworkPolicy that differ, then the queue steps. The
    parent-queues list is the caller's: it must list a subscription queue before its
    first team is written. A caller that has already compared the objects or planned
    the steps (the catalog, to know which tenants to write at all) hands them in."""
    if object_changes is None:
        object_changes = tenant_object_changes(plan.objects, live)
    for manifest, action, current in object_changes:
        changes.record(manifest, action, current)
        namespaced = manifest["kind"] not in CLUSTER_SCOPED_KINDS
        if check_mode and namespaced and not live.namespace_exists:
            continue  # its namespace does not exist yet: nothing to dry-run against
        cluster.apply(manifest)
        if not check_mode:
            changes.wrote(manifest, action)
    if steps is None:
        steps = queue_steps(plan.queues, live.queues, plan.queue_deletes)
    run_queue_steps(cluster, steps, live.queues, changes, check_mode)


# -- tenant, state: absent -----------------------------------------------------------------


def ensure_absent(
    params: Mapping[str, Any], cluster: kube.Cluster, check_mode: bool
) -> dict[str, Any]:
    name = parse_absent(params)  # raises before any request
    live = read_tenant(cluster, name, workloads=True)
    gateway = read_gateway_objects(cluster, name)
    if not live.queues and not any(live.objects.values()) and not gateway:
        # Nothing to delete is no failure (the run is idempotent), but a typo'd name must
        # not pass silently either.
        warn(
            f"tenant {name!r} does not exist: no namespace, queue or other object carries "
            f"platform.io/tenant={name}, so nothing was deleted"
        )
    jobs, pods = active_jobs(live.jobs), active_pods(live.pods)
    running = {"jobs": len(jobs), "pods": len(pods)}
    if (jobs or pods) and not params.get("force"):
        raise Refused(
            f"tenant {name!r} still has {len(jobs)} active Volcano Job(s) and {len(pods)} active pod(s) in "
            f"namespace {namespace_name(name)}; wait for them, or force: true to delete the tenant anyway",
            running=running,
        )
    changes = Changes()
    with reported_part_way(f"deleting tenant {name!r}", changes, running=running):
        delete_tenant(cluster, live, jobs, changes, check_mode, gateway)
    if params.get("wait") and not check_mode and changes.changed:
        timeout = params.get("wait_timeout", DEFAULT_WAIT_TIMEOUT)
        left = wait_gone(cluster, name, timeout, gateway=bool(gateway))
        if left:
            # Everything was deleted; the API server is still removing these.
            raise Refused(
                f"after {timeout}s these objects of tenant {name!r} still exist: {', '.join(left)}",
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


def delete_tenant(
    cluster: kube.Cluster,
    live: TenantLive,
    jobs: Sequence[Mapping[str, Any]],
    changes: Changes,
    check_mode: bool,
    gateway: Sequence[Mapping[str, Any]] = (),
) -> None:
    """Children before parents: the Volcano Jobs, the tenant's routers in the gateway,
    the team queues, the tenant-level queues, the parent-queues list, RBAC and policy,
    and the namespace last."""
    for job in jobs:
        delete_live(cluster, JOB_API, "Job", job, changes, check_mode)
    for graph in gateway:
        # In the background: the router goes at once and its Deployment after it, rather
        # than the graph waiting on the garbage collector's foreground pass over its pods.
        delete_live(
            cluster, GRAPH_API, "InferenceGraph", graph, changes, check_mode, background=True
        )
    for queue in queues_in_delete_order(live.queues):
        delete_live(
            cluster, QUEUE_API, "Queue", queue, changes, check_mode, timeout=QUEUE_DELETE_TIMEOUT
        )
    parent_list = read_parent_queues(cluster)
    sync_parent_queues(cluster, parent_list, [], list(live.queues), changes, check_mode)
    for api_version, kind in reversed(TENANT_KINDS):
        for obj in live.objects.get(kind, {}).values():
            delete_live(cluster, api_version, kind, obj, changes, check_mode)


def delete_live(
    cluster: kube.Cluster,
    api_version: str,
    kind: str,
    obj: Mapping[str, Any],
    changes: Changes,
    check_mode: bool,
    timeout: float | None = None,
    background: bool = False,
) -> None:
    """Record one live object as deleted and, outside check mode, delete it;
    with a ``timeout`` the delete is retried while Volcano's webhook denies it."""
    changes.record(obj, DELETE, obj)
    if check_mode:
        return
    meta = obj["metadata"]

    def delete() -> bool:
        return cluster.delete(
            api_version,
            kind,
            meta["name"],
            namespace=meta.get("namespace"),
            **({"propagation": "Background"} if background else {}),
        )

    deleted = delete() if timeout is None else kube.retry_while_denied(delete, timeout=timeout)
    if deleted:
        changes.wrote({**obj, "kind": kind}, DELETE)


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


def run_tenant(
    params: Mapping[str, Any], cluster: kube.Cluster, check_mode: bool = False
) -> dict[str, Any]:
    """The ``tenant`` module: bad input raises PlatformValidationError before any
    request, what the cluster's state forbids raises Refused, a write that fails
    part-way PartialWrite; other API errors go through as ApiException."""
    if params.get("state", "present") == "absent":
        return ensure_absent(params, cluster, check_mode)
    return ensure_present(params, cluster, check_mode)


# -- team_queue ------------------------------------------------------------------------------


def run_team_queue(
    params: Mapping[str, Any], cluster: kube.Cluster, check_mode: bool = False
) -> dict[str, Any]:
    """The ``team_queue`` module: one team queue of a tenant added, resized or
    removed, with the tenant's parent-queues entry kept in step."""
    team = parse_team_queue(params)  # raises before any request
    tenant = params["tenant"]
    live = index_by_name(cluster.list(QUEUE_API, "Queue", label_selector=tenant_selector(tenant)))
    podgroups = (
        cluster.list(PODGROUP_API, "PodGroup", namespace=namespace_name(tenant)) if live else []
    )
    busy = busy_queues(podgroups, live)
    remove = params["name"] if team is None else None
    queues = plan_team_change(tenant, team, remove, live, busy, force=params.get("force", False))
    check_queue_names_free(cluster, tenant, queues, live)  # a new team: one GET
    deletes = [queue_name(tenant, QUEUE_TYPE_TEAM, remove)] if remove else []
    changes = Changes()
    # The subscription queue is listed as a parent before its first team is
    # created and unlisted after its last team is removed.
    parents = parent_queue_names(queues)
    owned = set(live) | {q.name for q in queues}
    with reported_part_way(f"writing team {params['name']!r} of tenant {tenant!r}", changes):
        parent_list = sync_parent_queues(
            cluster, read_parent_queues(cluster), parents, parents, changes, check_mode
        )
        run_queue_steps(cluster, queue_steps(queues, live, deletes), live, changes, check_mode)
        sync_parent_queues(cluster, parent_list, parents, owned, changes, check_mode)
        sync_queue_access(cluster, tenant, queues, changes, check_mode)
    return {"changed": changes.changed, "objects": changes.objects, "diff": changes.diff()}


def sync_queue_access(
    cluster: kube.Cluster,
    tenant: str,
    queues: Sequence[Queue],
    changes: Changes,
    check_mode: bool,
) -> None:
    """After a team change: the tenant's queue list (the queue policies' parameter) and the
    ClusterRole that lets it read its queues name the queues it has now."""
    ns = namespace_name(tenant)
    desired = [
        tenant_queues_configmap(tenant, leaf_queue_types(queues)),
        queue_reader(tenant, [], sorted(q.name for q in queues))[0],
    ]
    for manifest in desired:
        meta = manifest["metadata"]
        live = cluster.get(
            manifest["apiVersion"], manifest["kind"], meta["name"], meta.get("namespace")
        )
        if (
            live is not None
            and not differs(manifest, live)
            and not queue_list_stale(manifest, live)
        ):
            continue
        action = CREATE if live is None else UPDATE
        changes.record(manifest, action, live)
        if check_mode and meta.get("namespace") == ns and live is None:
            continue  # reported; the namespace is the tenant module's to make, not this run's
        cluster.apply(manifest)
        if not check_mode:
            changes.wrote(manifest, action)


# -- tenant_info -----------------------------------------------------------------------------


def run_info(
    params: Mapping[str, Any], cluster: kube.Cluster, check_mode: bool = False
) -> dict[str, Any]:
    """The ``tenant_info`` module: one list per kind (Namespaces, Queues, Volcano
    Jobs) however many tenants there are; it never writes."""
    name = parse_info(params)
    selector = tenant_selector(name) if name else LABEL_TENANT
    namespaces = cluster.list("v1", "Namespace", label_selector=selector)
    queues = cluster.list(QUEUE_API, "Queue", label_selector=selector)
    if not name:
        jobs = cluster.list(JOB_API, "Job")
    elif namespaces:
        jobs = cluster.list(JOB_API, "Job", namespace=namespace_name(name))
    else:
        jobs = []  # no namespace, no jobs: nothing to list
    return {"changed": False, "tenants": summarize(namespaces, queues, jobs)}
