# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the tenant modules do with a ``kube.Cluster``: read a tenant with one
list call per kind, and write planned changes in a safe order.

``run_tenant``, ``run_team_queue`` and ``INFO_FLOW`` (through ``kube.flow``, its pure
steps ``tenants/info``) are the ``tenant``,
``team_queue`` and ``tenant_info`` modules. Everything here goes through
``Cluster``: the reads are ``tenants.read_io``, the writes ``tenants.write_io``; the
decisions (what is desired, what is allowed, in which order) come from the pure core:
``tenants.inputs``, ``tenants.spec``, ``tenants.tenant_queues``, ``tenants.plan``,
``tenants.live``, ``queues.rules`` and ``queues.plan``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ansible.module_utils.common.warnings import warn

from ..capacity.purchase import purchase_added
from ..common.errors import Refused
from ..common.names import (
    GRAPH_API,
    JOB_API,
    LABEL_TENANT,
    PODGROUP_API,
    QUEUE_API,
    QUEUE_TYPE_TEAM,
    namespace_name,
    queue_name,
)
from ..common.objects import index_by_name
from ..kube import cluster as kube
from ..kube.flow import Flow
from ..kube.waiting import resource_absent, wait_for
from ..queues.parent_list import parent_queue_names
from ..queues.plan import queue_steps
from .changes import Changes
from .info import TenantInfoFacts, TenantInfoRequest, parse_info, plan_info, report_info
from .info import facts_in as info_facts_in
from .info import facts_out as info_facts_out
from .inputs import (
    DEFAULT_WAIT_TIMEOUT,
    parse_absent,
    parse_present,
    parse_team_queue,
)
from .live import active_jobs, active_pods, busy_queues
from .plan import plan_tenant
from .read_io import (
    check_purchase_fits,
    check_queue_names_free,
    read_cluster_networks,
    read_gateway_objects,
    read_parent_queues,
    read_tenant,
    tenant_selector,
)
from .spec import kept_guarantee
from .tenant_queues import plan_team_change
from .write_io import (
    delete_tenant,
    reported_part_way,
    run_queue_steps,
    sync_parent_queues,
    sync_queue_access,
    write_tenant,
)

# Seconds between two looks at what is left of a tenant with ``wait: true``.
WAIT_INTERVAL = 2.0


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
