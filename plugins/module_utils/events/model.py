# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the cluster event source has seen: the watched kinds and their ``Snapshot``.

The source (``events/service.py``, the plugin ``gpucloud.platform.cluster_events``)
watches four kinds and keeps, for each object, only what the event rules
(``events/rules.py`` and the files it runs) read (``slim``):

* Queue (Volcano): its labels (tenant, queue type, managed), ``spec.parent`` and the
  GPUs of ``spec.deserved``, ``spec.capability`` and ``status.allocated``;
* PodGroup (Volcano): ``spec.queue``, ``spec.priorityClassName``, ``status.phase`` and
  its ``Unschedulable`` conditions;
* Node: ``spec.unschedulable``, the allocatable GPUs, the ``Ready`` condition and the
  conditions of the GPU-fault types (the source's ``gpu_unhealthy_conditions``), each as
  its type and status, and of its taints only ``platform.io/gpu-unhealthy``'s key;
* ConfigMap (the platform's, ``platform.io/managed-by``): its ``data``.

Two versions of an object that slim to the same thing are the same to every rule, so a
status heartbeat or a change to a field no rule reads is no change at all.

The ``Snapshot`` answers what the rules ask of everything else: the ``QueueFacts`` of a
queue by name (``queues/kinds.facts_from_manifests``: labels, managed, parent), the
GPUs the spot queues hold (``status.allocated`` of the managed spot queues) and the Node
condition types that mean failed GPUs (``gpu_unhealthy_conditions``, which its ``slim``
keeps).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from ..common.errors import PlatformValidationError
from ..common.names import (
    GPU_UNHEALTHY_CONDITIONS,
    LABEL_MANAGED_BY,
    MANAGED_BY,
    PODGROUP_UNSCHEDULABLE,
    QUEUE_TYPE_PAYG,
    QUEUE_TYPE_SPOT,
    QUEUE_TYPE_SUBSCRIPTION,
    QUEUE_TYPE_TEAM,
    ROOT_QUEUE,
    TAINT_GPU_UNHEALTHY,
    namespace_name,
    tenant_namespace_errors,
)
from ..common.quantity import GPU, parse
from ..jobs.large_job import podgroup_phase
from ..queues.kinds import QueueFacts, queue_facts

KIND_QUEUE = "Queue"
KIND_PODGROUP = "PodGroup"
KIND_NODE = "Node"
KIND_CONFIGMAP = "ConfigMap"
# The watched kinds, in the order a start lists them: the queues first, so the first
# PodGroups are judged with their queues known.
KINDS = (KIND_QUEUE, KIND_NODE, KIND_CONFIGMAP, KIND_PODGROUP)
# What a tenant pays for (rule event-paying-job-blocked, rule event-subscription-changed).
PAYING_QUEUE_TYPES = (QUEUE_TYPE_SUBSCRIPTION, QUEUE_TYPE_TEAM, QUEUE_TYPE_PAYG)
READY = "Ready"
# More GPUs than any cluster has: what an absurd quantity counts as.
GPUS_MAX = Decimal(10**9)

# (namespace, name); namespace "" for a cluster-scoped object.
Key = tuple[str, str]
Object = dict[str, Any]


def mapping(value: object) -> Mapping[str, Any]:
    """``value`` when it is a mapping, else an empty one: a live object read field by field
    never raises on a field of the wrong shape."""
    return value if isinstance(value, Mapping) else {}


def text(value: object) -> str:
    return value if isinstance(value, str) else ""


def metadata(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return mapping(mapping(obj).get("metadata"))


def key_of(obj: Mapping[str, Any]) -> Key:
    meta = metadata(obj)
    return (text(meta.get("namespace")), text(meta.get("name")))


def uid_of(obj: Mapping[str, Any] | None) -> str:
    return text(metadata(obj).get("uid"))


def labels_of(obj: Mapping[str, Any] | None) -> dict[str, str]:
    return {k: v for k, v in mapping(metadata(obj).get("labels")).items() if isinstance(v, str)}


def managed(obj: Mapping[str, Any] | None) -> bool:
    """The platform made it: label ``platform.io/managed-by`` is the platform's."""
    return labels_of(obj).get(LABEL_MANAGED_BY) == MANAGED_BY


def gpu_quantity(resources: object) -> Decimal | None:
    """The ``nvidia.com/gpu`` of a resource list; None when it names none or names one no
    quantity parser reads (a live object's field, judged as unset rather than refused)."""
    value = mapping(resources).get(GPU)
    if value is None:
        return None
    try:
        return parse(value, GPU)
    except PlatformValidationError:
        return None


def whole(value: Decimal | None) -> int | None:
    """A GPU quantity as whole GPUs for an event (None stays None; no count is taken past
    ``GPUS_MAX``, so an absurd quantity such as ``9e999999`` is never made an int)."""
    if value is None:
        return None
    if not value.is_finite():
        return 0
    return int(min(value, GPUS_MAX))


def whole_gpus(resources: object) -> int:
    """The whole GPUs of a resource list (0 when it names none)."""
    return whole(gpu_quantity(resources)) or 0


def _gpu_only(resources: object) -> dict[str, Any]:
    value = mapping(resources).get(GPU)
    return (
        {GPU: value} if isinstance(value, str | int | float) and not isinstance(value, bool) else {}
    )


def _conditions(status: Mapping[str, Any], *wanted: str) -> list[dict[str, str]]:
    """The conditions of the types ``wanted``, with only their type and status, in the
    object's order."""
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        return []
    return [
        {"type": text(c.get("type")), "status": text(c.get("status"))}
        for c in conditions
        if isinstance(c, Mapping) and c.get("type") in wanted
    ]


def _gpu_taint_keys(spec: Mapping[str, Any]) -> list[dict[str, str]]:
    """Of a node's taints, only ``platform.io/gpu-unhealthy``, as its key (rule
    event-standing reads whether the node carries it)."""
    taints = spec.get("taints")
    if not isinstance(taints, list):
        return []
    found = any(isinstance(t, Mapping) and t.get("key") == TAINT_GPU_UNHEALTHY for t in taints)
    return [{"key": TAINT_GPU_UNHEALTHY}] if found else []


def _slim_meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = metadata(obj)
    out: dict[str, Any] = {"name": text(meta.get("name"))}
    if text(meta.get("namespace")):
        out["namespace"] = text(meta.get("namespace"))
    if uid_of(obj):
        out["uid"] = uid_of(obj)
    labels = labels_of(obj)
    if labels:
        out["labels"] = labels
    return out


def slim(
    kind: str, obj: Mapping[str, Any], unhealthy: Sequence[str] = GPU_UNHEALTHY_CONDITIONS
) -> Object:
    """What the rules read of an object of a watched kind, in the object's own shape (so a
    rule reads a whole object and its slim form alike); ``slim`` of a slim object is
    itself. No ``resourceVersion``: two versions that differ only in what no rule reads
    slim to the same object. ``unhealthy``: the Node condition types that mean failed
    GPUs (a Node keeps those and ``Ready``)."""
    obj = mapping(obj)
    spec, status = mapping(obj.get("spec")), mapping(obj.get("status"))
    out: Object = {"kind": kind, "metadata": _slim_meta(obj)}
    if kind == KIND_QUEUE:
        out["spec"] = {
            "parent": text(spec.get("parent")),
            "deserved": _gpu_only(spec.get("deserved")),
            "capability": _gpu_only(spec.get("capability")),
        }
        out["status"] = {"allocated": _gpu_only(status.get("allocated"))}
    elif kind == KIND_PODGROUP:
        out["spec"] = {
            "queue": text(spec.get("queue")),
            "priorityClassName": text(spec.get("priorityClassName")),
        }
        out["status"] = {
            "phase": text(status.get("phase")),
            "conditions": _conditions(status, PODGROUP_UNSCHEDULABLE),
        }
    elif kind == KIND_NODE:
        out["spec"] = {
            "unschedulable": spec.get("unschedulable") is True,
            "taints": _gpu_taint_keys(spec),
        }
        out["status"] = {
            "allocatable": _gpu_only(status.get("allocatable")),
            "conditions": _conditions(status, READY, *unhealthy),
        }
    elif kind == KIND_CONFIGMAP:
        data = mapping(obj.get("data"))
        out["data"] = {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}
    return out


def queue_name_of(podgroup: Mapping[str, Any] | None) -> str:
    return text(mapping(mapping(podgroup).get("spec")).get("queue"))


def phase_of(podgroup: Mapping[str, Any]) -> str:
    """The PodGroup's phase, Pending until the scheduler gives it one (``jobs/large_job``)."""
    return podgroup_phase({"status": mapping(podgroup.get("status"))})


def queue_parent(queue: Mapping[str, Any]) -> str:
    """``spec.parent``, Volcano's root when unset (as ``facts_from_manifests`` reads it)."""
    return text(mapping(queue.get("spec")).get("parent")) or ROOT_QUEUE


def facts_of_queue(queue: Mapping[str, Any] | None, parent: bool = False) -> QueueFacts | None:
    """A queue's ``QueueFacts`` from its own labels (``queues/kinds.queue_facts``); whether it
    is a parent is the caller's (only the other queues say so)."""
    if queue is None:
        return None
    name = key_of(queue)[1]
    facts = queue_facts([(name, queue_parent(queue), labels_of(queue))])[name]
    return QueueFacts(facts.tenant, facts.queue_type, facts.managed, parent)


def spot_held(queue: Mapping[str, Any] | None) -> int:
    """The GPUs a managed spot queue holds now (``status.allocated``); 0 for any other queue."""
    facts = facts_of_queue(queue)
    if facts is None or not facts.managed or facts.queue_type != QUEUE_TYPE_SPOT:
        return 0
    return whole_gpus(mapping(mapping(queue).get("status")).get("allocated"))


def paying(facts: QueueFacts | None) -> bool:
    """A queue a tenant pays for: managed by the platform, of type subscription, team or
    pay-as-you-go (from the Queue's own labels, which only the platform writes)."""
    return facts is not None and facts.managed and facts.queue_type in PAYING_QUEUE_TYPES


def tenant_of_namespace(namespace: str) -> str:
    """``a`` for ``tenant-a``; "" for a namespace of no tenant's form."""
    if tenant_namespace_errors(namespace):
        return ""
    return namespace[len(namespace_name("")) :]


def tenant_of(namespace: str, facts: QueueFacts | None = None) -> str:
    """Whose an event is: the ``platform.io/tenant`` label of a managed queue, else the
    tenant whose namespace it is, else ""."""
    if facts is not None and facts.managed and facts.tenant:
        return facts.tenant
    return tenant_of_namespace(namespace)


class Snapshot:
    """The slim objects the source has seen, by kind and key, with the queue facts and the
    spot GPUs kept up to date as objects are applied, and the Node condition types that
    mean failed GPUs (what its ``slim`` keeps of a Node and rule event-gpu-health-changed
    reads). Not thread-safe: the service holds one lock around every change and every
    read."""

    def __init__(self, gpu_unhealthy_conditions: Sequence[str] = GPU_UNHEALTHY_CONDITIONS) -> None:
        self.gpu_unhealthy_conditions = tuple(gpu_unhealthy_conditions)
        self.objects: dict[str, dict[Key, Object]] = {kind: {} for kind in KINDS}
        self._children: Counter[str] = Counter()  # queue name -> queues naming it parent
        self._spot: dict[str, int] = {}  # spot queue name -> GPUs it holds
        self.spot_gpus = 0

    def slim(self, kind: str, obj: Mapping[str, Any]) -> Object:
        """``slim`` with this snapshot's GPU-fault condition types."""
        return slim(kind, obj, self.gpu_unhealthy_conditions)

    def get(self, kind: str, key: Key) -> Object | None:
        return self.objects.setdefault(kind, {}).get(key)

    def all(self, kind: str) -> list[Object]:
        """The objects of a kind, in key order."""
        held = self.objects.setdefault(kind, {})
        return [held[key] for key in sorted(held)]

    def queue_facts(self, name: str) -> QueueFacts | None:
        """``QueueFacts`` of a queue by name, as ``facts_from_manifests`` of every queue
        seen gives it; None for a queue not seen."""
        return facts_of_queue(self.get(KIND_QUEUE, ("", name)), self._children[name] > 0)

    @property
    def facts(self) -> dict[str, QueueFacts]:
        """Every seen queue's facts."""
        out = {}
        for namespace, name in self.objects[KIND_QUEUE]:
            found = self.queue_facts(name) if not namespace else None
            if found is not None:
                out[name] = found
        return out

    def spot_after(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> int:
        """The spot GPUs once a Queue goes from ``old`` to ``new``."""
        return self.spot_gpus - spot_held(old) + spot_held(new)

    def apply(
        self, kind: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None
    ) -> None:
        """Record that an object went from ``old`` (None: added) to ``new`` (None: gone)."""
        held = self.objects.setdefault(kind, {})
        if old is not None:
            gone = held.pop(key_of(old), None)
            if kind == KIND_QUEUE and gone is not None:
                self._forget_queue(gone)
        if new is not None:
            kept = self.slim(kind, new)
            key = key_of(kept)
            if kind == KIND_QUEUE and key in held:
                self._forget_queue(held[key])
            held[key] = kept
            if kind == KIND_QUEUE:
                self._children[queue_parent(kept)] += 1
                held_gpus = spot_held(kept)
                if held_gpus:
                    self._spot[key[1]] = held_gpus
                    self.spot_gpus += held_gpus

    def _forget_queue(self, queue: Object) -> None:
        parent = queue_parent(queue)
        self._children[parent] -= 1
        if self._children[parent] <= 0:
            del self._children[parent]
        self.spot_gpus -= self._spot.pop(key_of(queue)[1], 0)
