# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the tenant modules do with a ``kube.Cluster``: read a tenant with one
list call per kind, and write planned changes in a safe order.

Everything here goes through ``Cluster``; the decisions (what is desired,
what is allowed, in which order) come from the pure core: ``tenant_spec``,
``queue_tree`` and ``queue_plan``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..capacity.pool import (
    commitments_from_queues,
    label_selector,
    pool_from_nodes,
    purchase_demand,
    purchase_growth,
    tenant_oversell_errors,
)
from ..common.errors import raise_if
from ..common.names import (
    CAPACITY_FIELD_MANAGER,
    JOB_API,
    JOB_FINISHED_PHASES,
    LABEL_TENANT,
    MANAGED_SELECTOR,
    PLATFORM_NAMESPACE,
    POD_ACTIVE_PHASES,
    PODGROUP_API,
    QUEUE_API,
    ROOT_QUEUE,
    namespace_name,
)
from ..common.objects import differs, index_by_name, strip_server_fields
from ..common.quantity import Resources, render
from ..kube import cluster as kube
from ..policy.admission import PARAM_KEY_QUEUES, PARENT_QUEUES_CONFIGMAP, parent_queues_configmap
from ..queues.model import Queue, allocated
from ..queues.parent_list import updated_queue_list
from ..queues.plan import CAPACITY, CREATE, DELETE, QueueStep

# Volcano Job phases after which a job holds nothing and will not run again.
# How long a queue write waits for Volcano's webhook cache to catch up.
QUEUE_WRITE_TIMEOUT = 30.0
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
)


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
        if kind != "Namespace" and not live.namespace_exists:
            live.objects[kind] = {}
            continue
        items = cluster.list(
            api_version,
            kind,
            namespace=None if kind == "Namespace" else ns,
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
    list of every managed Queue."""
    current = commitments_from_queues(live_queues.values()).get(tenant)
    grown_sub, grown_payg = purchase_growth(current, subscription, payg)
    if not grown_sub and not grown_payg:
        return
    nodes = cluster.list("v1", "Node", label_selector=label_selector(node_selector))
    pool, _members = pool_from_nodes(nodes, node_selector)
    queues = cluster.list(QUEUE_API, "Queue", label_selector=MANAGED_SELECTOR)
    commitments = commitments_from_queues(queues)
    raise_if(tenant_oversell_errors(tenant, pool, commitments, subscription, payg))


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


def active_jobs(jobs: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [
        j
        for j in jobs
        if ((j.get("status") or {}).get("state") or {}).get("phase") not in JOB_FINISHED_PHASES
    ]


def active_pods(pods: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
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


def project(live: Any, desired: Any) -> Any:
    """``live`` cut down to the keys ``desired`` has, for a readable diff."""
    if isinstance(desired, Mapping) and isinstance(live, Mapping):
        return {k: project(live.get(k), v) for k, v in desired.items() if k in live}
    return live


def object_ref(manifest: Mapping[str, Any], action: str) -> dict[str, Any]:
    meta = manifest.get("metadata") or {}
    ref = {"kind": manifest.get("kind"), "name": meta.get("name"), "action": action}
    if meta.get("namespace"):
        ref["namespace"] = meta["namespace"]
    return ref


def diff_key(manifest: Mapping[str, Any]) -> str:
    meta = manifest.get("metadata") or {}
    parts = [manifest.get("kind") or "", meta.get("namespace") or "", meta.get("name") or ""]
    return "/".join(p for p in parts if p)


class Changes:
    """The objects a run changed, and the before/after of each for ``diff``."""

    def __init__(self) -> None:
        self.objects: list[dict[str, Any]] = []
        self.before: dict[str, Any] = {}
        self.after: dict[str, Any] = {}

    def record(
        self, manifest: Mapping[str, Any], action: str, live: Mapping[str, Any] | None
    ) -> None:
        ref = object_ref(manifest, action)
        if ref not in self.objects:
            self.objects.append(ref)
        key = diff_key(manifest)
        if action == DELETE:
            self.before[key] = strip_server_fields(live)
            return
        if live is not None and key not in self.before:
            self.before[key] = project(strip_server_fields(live), manifest)
        merged = dict(self.after.get(key) or {})
        _merge(merged, manifest)
        self.after[key] = merged

    @property
    def changed(self) -> bool:
        return bool(self.objects)

    def diff(self) -> dict[str, Any]:
        return {"before": self.before, "after": self.after}


def _merge(into: dict[str, Any], extra: Mapping[str, Any]) -> None:
    for k, v in extra.items():
        if isinstance(v, Mapping) and isinstance(into.get(k), dict):
            _merge(into[k], v)
        else:
            into[k] = v


def object_changes(
    desired: Sequence[Mapping[str, Any]], live: TenantLive
) -> list[tuple[Mapping[str, Any], str, Mapping[str, Any] | None]]:
    """(manifest, create|update, live) for each non-queue object that differs."""
    out = []
    for manifest in desired:
        current = live.objects.get(manifest["kind"], {}).get(manifest["metadata"]["name"])
        if current is None:
            out.append((manifest, CREATE, None))
        elif differs(manifest, current):
            out.append((manifest, "update", current))
    return out


def dry_run_possible(
    step: QueueStep, steps: Sequence[QueueStep], live_queues: Mapping[str, Any]
) -> bool:
    """In check mode the API server can judge a queue write alone only when no
    other write in the same run (its parent's or a child's) changes what the
    webhook compares it with."""
    names = {s.name for s in steps}
    queue = step.queue
    if queue is None:
        return False
    if queue.parent not in (ROOT_QUEUE, "") and (
        queue.parent in names or queue.parent not in live_queues
    ):
        return False
    children = [s for s in steps if s.queue is not None and s.queue.parent == step.name]
    return not children and not (step.action == CAPACITY and step.name not in live_queues)


def write_queue_step(cluster: kube.Cluster, step: QueueStep, timeout: float) -> None:
    if step.action == DELETE:
        kube.retry_while_denied(
            lambda: cluster.delete(QUEUE_API, "Queue", step.name), timeout=timeout
        )
        return
    if not (step.queue is not None):  # narrows the type; cannot happen
        raise AssertionError("step.queue is not None")
    queue: Queue = step.queue
    if step.action == CAPACITY:
        manifest = queue.capacity_manifest()
        kube.retry_while_denied(
            lambda: cluster.apply(manifest, field_manager=CAPACITY_FIELD_MANAGER), timeout=timeout
        )
    else:
        manifest = queue.to_manifest()
        kube.retry_while_denied(lambda: cluster.apply(manifest), timeout=timeout)


def step_manifest(step: QueueStep, live_queues: Mapping[str, Any]) -> dict[str, Any]:
    if step.action == DELETE:
        return {"apiVersion": QUEUE_API, "kind": "Queue", "metadata": {"name": step.name}}
    if not (step.queue is not None):  # narrows the type; cannot happen
        raise AssertionError("step.queue is not None")
    return step.queue.capacity_manifest() if step.action == CAPACITY else step.queue.to_manifest()


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
        action = step.action
        if action == CAPACITY:
            action = CREATE if live is None else "update"
        elif action != DELETE and live is None:
            action = CREATE
        if step.final or step.action == DELETE:
            changes.record(step_manifest(step, live_queues), action, live)
        if check_mode:
            if step.action != DELETE and dry_run_possible(step, steps, live_queues):
                write_queue_step(cluster, step, timeout=0)
            continue
        write_queue_step(cluster, step, timeout=QUEUE_WRITE_TIMEOUT)


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
        changes.record(manifest, CREATE if live is None else "update", live)
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
        return written
    return live
