# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The large-job throttle against the cluster: read, ask ``throttle``, write.

Used by ``large_job_throttle`` (every tenant namespace: one list of tenant
Namespaces, one of PodGroups, one of throttle ConfigMaps) and by ``vcjob``
(its own namespace: engage right after a large job fails to start, and
release while it holds a small job). The decisions are ``throttle``'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from ..common.names import LABEL_MANAGED_BY, LABEL_TENANT, MANAGED_BY, PODGROUP_API
from ..kube.cluster import Cluster
from .throttle import (
    CONFIGMAP,
    Change,
    LargeJob,
    configmap_manifest,
    engage,
    large_jobs,
    plan_namespace,
    read_entries,
)


def _is_managed(obj: dict[str, Any]) -> bool:
    return ((obj.get("metadata") or {}).get("labels") or {}).get(LABEL_MANAGED_BY) == MANAGED_BY


def tenant_namespaces(cluster: Cluster, only: Iterable[str] | None = None) -> dict[str, str]:
    """Namespace -> tenant for every namespace labelled platform.io/tenant (one list)."""
    wanted = set(only or [])
    out = {}
    for ns in cluster.list("v1", "Namespace", label_selector=LABEL_TENANT):
        meta = ns.get("metadata") or {}
        if wanted and meta.get("name") not in wanted:
            continue
        out[meta["name"]] = (meta.get("labels") or {})[LABEL_TENANT]
    return out


def throttle_configmaps(
    cluster: Cluster, namespace: str | None = None
) -> tuple[dict[str, dict], list[str]]:
    """(namespace -> managed throttle ConfigMap, namespaces whose ConfigMap is not managed)."""
    managed: dict[str, dict] = {}
    foreign: list[str] = []
    for cm in cluster.list(
        "v1", "ConfigMap", namespace=namespace, field_selector=f"metadata.name={CONFIGMAP}"
    ):
        ns = cm["metadata"]["namespace"]
        if cm["metadata"]["name"] != CONFIGMAP:
            continue
        if _is_managed(cm):
            managed[ns] = cm
        else:
            foreign.append(ns)
    return managed, sorted(foreign)


def write(cluster: Cluster, change: Change) -> None:
    if change.action == "apply" and change.manifest is not None:
        cluster.apply(change.manifest)
    elif change.action == "delete":
        cluster.delete("v1", "ConfigMap", CONFIGMAP, change.namespace, propagation="Background")


def reconcile_all(
    cluster: Cluster, now: datetime, timeout: int, only: Iterable[str] | None = None
) -> tuple[list[Change], list[str]]:
    """Reconcile every tenant namespace (or ``only`` these); returns the changes (written unless
    the client dry-runs) and the namespaces skipped because their ConfigMap is not managed."""
    namespaces = tenant_namespaces(cluster, only)
    podgroups = cluster.list(PODGROUP_API, "PodGroup")
    configmaps, foreign = throttle_configmaps(cluster)
    jobs = large_jobs(podgroups, namespaces)
    changes = []
    for ns, tenant in sorted(namespaces.items()):
        if ns in foreign:
            continue
        change = plan_namespace(ns, tenant, configmaps.get(ns), jobs, now, timeout)
        write(cluster, change)
        changes.append(change)
    return changes, [ns for ns in foreign if ns in namespaces]


def reconcile_namespace(
    cluster: Cluster, namespace: str, tenant: str, now: datetime, timeout: int
) -> tuple[Change, dict | None]:
    """Reconcile one namespace; returns the change and the ConfigMap as it now is (None: none)."""
    podgroups = cluster.list(PODGROUP_API, "PodGroup", namespace=namespace)
    cm = cluster.get("v1", "ConfigMap", CONFIGMAP, namespace)
    if cm is not None and not _is_managed(cm):
        return Change(namespace, [], [], "none", None), cm
    change = plan_namespace(namespace, tenant, cm, large_jobs(podgroups, [namespace]), now, timeout)
    write(cluster, change)
    if change.action == "delete":
        return change, None
    return change, change.manifest if change.action == "apply" else cm


def engage_job(cluster: Cluster, tenant: str, job: LargeJob, now: datetime, timeout: int) -> Change:
    """Add one large job's entry to its namespace's throttle (vcjob, right after submitting)."""
    cm = cluster.get("v1", "ConfigMap", CONFIGMAP, job.namespace)
    if cm is not None and not _is_managed(cm):
        return Change(job.namespace, [], [], "none", None)
    before = read_entries(cm)
    after = engage(before, job, now, timeout)
    if after == before:
        return Change(job.namespace, before, after, "none", None)
    change = Change(
        job.namespace, before, after, "apply", configmap_manifest(job.namespace, tenant, after)
    )
    write(cluster, change)
    return change
