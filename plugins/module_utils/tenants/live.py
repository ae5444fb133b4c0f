# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A tenant's live objects as ``tenants.read_io`` reads them, and what they say:
which jobs and pods are still active, which queues are busy, and in which
order the queues go when the tenant is deleted. Pure: nothing here reads."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..common.names import JOB_FINISHED_PHASES, POD_ACTIVE_PHASES, ROOT_QUEUE
from ..queues.model import allocated

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


@dataclass
class TenantLive:
    """A tenant's live objects, each kind read with one list call."""

    name: str
    objects: dict[str, dict[str, dict[str, Any]]] = field(
        default_factory=dict
    )  # kind -> name -> object
    queues: dict[str, dict[str, Any]] = field(default_factory=dict)
    podgroups: list[dict[str, Any]] = field(default_factory=list)
    jobs: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)

    @property
    def namespace_exists(self) -> bool:
        return bool(self.objects.get("Namespace"))


def active_jobs(jobs: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The Volcano Jobs that have not reached a phase after which they hold nothing."""
    return [
        j
        for j in jobs
        if ((j.get("status") or {}).get("state") or {}).get("phase") not in JOB_FINISHED_PHASES
    ]


def active_pods(pods: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The pods still pending or running (a pod without a phase is pending)."""
    return [p for p in pods if (p.get("status") or {}).get("phase", "Pending") in POD_ACTIVE_PHASES]


def busy_queues(
    podgroups: Iterable[Mapping[str, Any]], queues: Mapping[str, Mapping[str, Any]]
) -> dict[str, int]:
    """Per queue: unfinished pod groups naming it, or pods it has allocated,
    whichever is larger.

    Volcano reports a parent queue's ``status.allocated`` as the sum of its
    children's, so only leaf queues are judged by their allocation: a parent
    is busy only through pod groups that name it."""
    busy: dict[str, int] = {}
    for pg in podgroups:
        queue = (pg.get("spec") or {}).get("queue")
        if queue and (pg.get("status") or {}).get("phase") != "Completed":
            busy[queue] = busy.get(queue, 0) + 1
    parents = {(m.get("spec") or {}).get("parent") for m in queues.values()}
    for name, manifest in queues.items():
        if name in parents:
            continue
        pods = int(allocated(manifest).get("pods", 0))
        if pods > busy.get(name, 0):
            busy[name] = pods
    return busy


def queues_in_delete_order(queues: Mapping[str, Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The tenant's queues children first: the team queues, then the queues under
    ``root`` (Volcano refuses to delete a queue that still has children)."""
    teams = [
        q
        for q in queues.values()
        if (q.get("spec") or {}).get("parent") not in (ROOT_QUEUE, "", None)
    ]
    return [*teams, *(q for q in queues.values() if q not in teams)]
