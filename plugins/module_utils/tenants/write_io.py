# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tenant service's writes with a ``kube.Cluster``, in a safe order: the queue steps,
the parent-queues list (rule parent-queues-list), the tenant's objects, a tenant's
deletion children first, and the queue access a team change keeps in step. Not pure:
every function writes (or in check mode dry-runs) what the pure core planned.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ..capacity.grace import grant_grows, stamp_for_write
from ..common.errors import PartialWrite
from ..common.names import (
    CAPACITY_FIELD_MANAGER,
    GRAPH_API,
    JOB_API,
    PLATFORM_NAMESPACE,
    QUEUE_API,
    QUEUE_TYPE_PAYG,
    namespace_name,
)
from ..kube import cluster as kube
from ..kube.cluster import TransportError
from ..policy.admission import (
    PARAM_KEY_QUEUES,
    PARENT_QUEUES_CONFIGMAP,
)
from ..queues.model import Queue
from ..queues.parent_list import parent_queue_names
from ..queues.plan import CAPACITY, CREATE, DELETE, UPDATE, QueueStep, queue_steps
from .changes import (
    Changes,
    ObjectChange,
    dry_run_possible,
    step_action,
    step_manifest,
    tenant_object_changes,
)
from .live import TenantLive, queues_in_delete_order
from .plan import TenantPlan
from .read_io import CLUSTER_SCOPED_KINDS, TENANT_KINDS, read_parent_queues
from .teams import access_changes, access_objects, parent_list_after, parent_list_manifest

# How long a queue write waits for Volcano's webhook cache to catch up.
QUEUE_WRITE_TIMEOUT = 30.0
# How long a queue delete of ``state: absent`` waits for it (the webhook refuses
# to delete a subscription queue until its deleted teams are out of its cache).
QUEUE_DELETE_TIMEOUT = 60.0
# The ``queues`` key of the parent-queues ConfigMap is applied under its own
# field manager: the scheduling_policy role applies the ConfigMap without the
# key under FIELD_MANAGER, which would otherwise remove it.
PARENT_QUEUES_FIELD_MANAGER = "gpucloud-platform-parent-queues"
# Attempts when another run changes the ConfigMap between read and write.
PARENT_QUEUES_ATTEMPTS = 5


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
        manifest = parent_list_manifest(live, parents, owned)
        if manifest is None:
            return live
        value = manifest["data"][PARAM_KEY_QUEUES]
        action = CREATE if live is None else UPDATE
        changes.record(manifest, action, live)
        if check_mode and not cluster.dry_run:
            return parent_list_after(live, manifest)
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
            return parent_list_after(live, manifest)
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


def write_tenant(
    cluster: kube.Cluster, plan: TenantPlan, live: TenantLive, changes: Changes, check_mode: bool
) -> None:
    """The parent-queues list, the Namespace, RBAC and NetworkPolicy, then the queues."""
    # A subscription queue is listed as a parent before it gets its first team
    # and unlisted only after its last team is gone.
    write_tenant_over(cluster, plan, live, read_parent_queues(cluster), changes, check_mode)


def write_tenant_over(
    cluster: kube.Cluster,
    plan: TenantPlan,
    live: TenantLive,
    parent_list: Mapping[str, Any] | None,
    changes: Changes,
    check_mode: bool,
) -> None:
    """``write_tenant`` over the parent-queues ConfigMap already read (``parent_list``,
    None when it does not exist): the list, the tenant's objects and queues, the list
    again."""
    parents = parent_queue_names(plan.queues)
    owned = {q.name for q in plan.queues} | set(live.queues) | set(plan.queue_deletes)
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


def sync_queue_access(
    cluster: kube.Cluster,
    tenant: str,
    queues: Sequence[Queue],
    changes: Changes,
    check_mode: bool,
) -> None:
    """After a team change: the tenant's queue list (the queue policies' parameter) and the
    ClusterRole that lets it read its queues name the queues it has now (one GET each)."""
    live_list, live_reader = (cluster.get(*where) for where in access_objects(tenant))
    access = access_changes(tenant, queues, live_list, live_reader)
    write_queue_access(cluster, tenant, access, changes, check_mode)


def write_queue_access(
    cluster: kube.Cluster,
    tenant: str,
    access: Sequence[ObjectChange],
    changes: Changes,
    check_mode: bool,
) -> None:
    """The queue list and queue-reader writes planned (``teams.access_changes``), recorded;
    in check mode the queue list of a namespace that does not exist yet is only reported."""
    ns = namespace_name(tenant)
    for manifest, action, live in access:
        changes.record(manifest, action, live)
        if check_mode and manifest["metadata"].get("namespace") == ns and live is None:
            continue  # reported; the namespace is the tenant module's to make, not this run's
        cluster.apply(manifest)
        if not check_mode:
            changes.wrote(manifest, action)
