# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The large-job throttle's reads and writes: the tenant Namespaces, the throttle
ConfigMaps, the large jobs (PodGroups and their Volcano Jobs), and the ConfigMap writes
that reconciling a namespace decides (``throttle.plan_namespace``). ``gather_throttle``
and ``write_all`` are ``large_job_throttle``'s reads and writes over every tenant
namespace (its plan is ``reconcile.plan_throttle``); ``reconcile_namespace`` is
``vcjob``'s, for the one namespace it submits to. A ConfigMap apply in check mode is the
server's dry run; a delete is not made. Not pure: every function here but
``is_managed`` takes a Cluster; the decisions are ``throttle``'s, ``large_job``'s and
``reconcile``'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from ansible.module_utils.common.warnings import warn

from ..common.errors import PartialWrite, raise_if
from ..common.names import JOB_API, LABEL_MANAGED_BY, LABEL_TENANT, MANAGED_BY, PODGROUP_API
from ..kube.cluster import ApiException, Cluster, TransportError, api_error_message
from ..policy.platform_state import POLICY_PLATFORM_STATE
from .large_job import LargeJob, cannot_help, is_large_podgroup, large_jobs
from .reconcile import (
    ThrottleFacts,
    ThrottleRequest,
    has_large_podgroup,
    large_jobs_of,
    tenants_of,
)
from .supply_io import read_room, read_room_facts
from .throttle import (
    CONFIGMAP,
    Change,
    not_engaged,
    plan_namespace,
    read_entries,
    unknown_namespace_errors,
)


def is_managed(obj: Mapping[str, Any]) -> bool:
    """The object carries the platform's managed-by label."""
    return ((obj.get("metadata") or {}).get("labels") or {}).get(LABEL_MANAGED_BY) == MANAGED_BY


def read_large_jobs(
    cluster: Cluster, namespaces: Iterable[str], namespace: str | None = None
) -> tuple[list[LargeJob], list[dict[str, Any]]]:
    """The large jobs of ``namespaces`` and the Volcano Jobs read with them: one list of
    PodGroups (of ``namespace``, or of every namespace) and, only when a large-job PodGroup
    is among them, one list of Volcano Jobs (their owners, whose demand is the GPUs they
    wait for). PodGroups first: a Job is created before its PodGroup, so a PodGroup's Job
    missing from the later list is gone."""
    wanted = set(namespaces)
    podgroups = cluster.list(PODGROUP_API, "PodGroup", namespace=namespace)
    if not any(is_large_podgroup(pg, wanted) for pg in podgroups):
        return [], []
    vcjobs = cluster.list(JOB_API, "Job", namespace=namespace)
    return large_jobs(podgroups, wanted, vcjobs), vcjobs


def turned_away(
    cluster: Cluster,
    jobs: list[LargeJob],
    vcjobs: list[dict[str, Any]],
    now: datetime,
    skip: Iterable[str] = (),
) -> dict[str, str]:
    """Rule throttle-can-help for every waiting large job but those in ``skip`` (uids):
    uid -> why holding its queue cannot help. The GPUs (Nodes, Pods, HyperNodes), Queues
    and PVCs are read only when such a job waits."""
    skipped = set(skip)
    waiting = [j for j in jobs if j.waiting and j.uid not in skipped]
    # Read whenever a job waits: rule job-never-runs is judged first, so that the reason
    # is the one the arbiter and vcjob give.
    room = read_room(cluster, waiting, vcjobs) if waiting else None
    return {j.uid: why for j in waiting if (why := cannot_help(j, room, now))}


def write(cluster: Cluster, change: Change, check_mode: bool) -> None:
    """Apply (a server dry run in check mode) or delete (not in check mode) one ConfigMap."""
    if change.action == "apply" and change.manifest is not None:
        cluster.apply(change.manifest)
    elif change.action == "delete" and not check_mode:
        cluster.delete("v1", "ConfigMap", CONFIGMAP, change.namespace, propagation="Background")


def write_as_submitter(cluster: Cluster, change: Change) -> bool:
    """vcjob writes the throttle as whoever submits. A tenant's own identity may not write
    platform state (rule platform-state): then the platform's scheduled large_job_throttle
    run engages and releases it, and this says so. Returns whether it was written."""
    try:
        write(cluster, change, check_mode=False)
    except ApiException as exc:
        if POLICY_PLATFORM_STATE not in api_error_message(exc):
            raise
        warn(
            f"the throttle of {change.namespace} is platform state this identity may not write; "
            "the platform's scheduled large_job_throttle run keeps it"
        )
        return False
    return True


def write_all(cluster: Cluster, changes: list[Change], check_mode: bool) -> None:
    """Write each namespace's change in turn; a failure says which were written."""
    done: list[str] = []
    for change in changes:
        try:
            write(cluster, change, check_mode)
        except (ApiException, TransportError) as exc:
            raise PartialWrite("throttle reconcile", done, exc) from exc
        if change.action != "none":
            done.append(f"{change.action} {change.namespace}/{CONFIGMAP}")


def gather_throttle(cluster: Cluster, request: ThrottleRequest, read_at: datetime) -> ThrottleFacts:
    """One list of tenant Namespaces (a ``namespaces`` entry no tenant has is refused right
    after it, rule tenant-namespace-live), one of PodGroups and, only when a large-job
    PodGroup is among them, one of Volcano Jobs (PodGroups first: a Job is created before
    its PodGroup, so a PodGroup's Job missing from the later list is gone), one of throttle
    ConfigMaps and, when an admitted large job waits, what rule throttle-can-help judges it
    by (``supply_io.read_room_facts``)."""
    namespace_list = tuple(cluster.list("v1", "Namespace", label_selector=LABEL_TENANT))
    namespaces = tenants_of(namespace_list, request.namespaces)
    raise_if(unknown_namespace_errors(list(request.namespaces), namespaces))
    podgroups = tuple(cluster.list(PODGROUP_API, "PodGroup"))
    vcjobs: tuple[dict[str, Any], ...] = ()
    if has_large_podgroup(podgroups, namespaces):
        vcjobs = tuple(cluster.list(JOB_API, "Job"))
    configmaps = tuple(cluster.list("v1", "ConfigMap", field_selector=f"metadata.name={CONFIGMAP}"))
    waiting = [j for j in large_jobs_of(podgroups, namespaces, vcjobs) if j.waiting]
    room = read_room_facts(cluster, waiting) if waiting else None
    return ThrottleFacts(read_at, namespace_list, podgroups, vcjobs, configmaps, room)


def reconcile_namespace(
    cluster: Cluster, namespace: str, tenant: str, now: datetime, timeout: int
) -> tuple[Change, dict | None, list[dict[str, str]]]:
    """Reconcile one namespace (vcjob, while it holds a job or right after it submitted a
    large one: never in check mode); returns the change, the ConfigMap as it now is (None:
    none) and the waiting large jobs rule throttle-can-help turned away."""
    jobs, vcjobs = read_large_jobs(cluster, [namespace], namespace)
    cm = cluster.get("v1", "ConfigMap", CONFIGMAP, namespace)
    if cm is not None and not is_managed(cm):
        return Change(namespace, [], [], "none", None), cm, []
    # Jobs with an entry are left to the scheduled reconcile: vcjob calls this on every
    # poll while it holds, and judging reads the Nodes and Pods.
    blocked = turned_away(cluster, jobs, vcjobs, now, [e.uid for e in read_entries(cm)])
    change = plan_namespace(namespace, tenant, cm, jobs, now, timeout, blocked)
    away = not_engaged(jobs, blocked)
    if change.action != "none" and not write_as_submitter(cluster, change):
        return Change(namespace, change.before, change.before, "none", None), cm, away
    if change.action == "delete":
        return change, None, away
    return change, change.manifest if change.action == "apply" else cm, away
