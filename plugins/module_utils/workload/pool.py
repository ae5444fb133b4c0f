# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU pool, what is committed out of it, and what is left idle for spot: read by
spot, pay-as-you-go and catalog sales (``capacity``), jobs, the arbiter and tenants, so
it sits below them all with rule job-demand (``workload/demand``).

Rules held here:

* Rule pool (``pool_from_nodes``): the allocatable ``nvidia.com/gpu``, ``cpu``
  and ``memory`` of the Ready, schedulable nodes that match a node selector.
* Rule committed (``commitments_from_queues``): per tenant, the subscription
  queue's deserved and the pay-as-you-go queue's granted capacity, less the GPUs
  of that grant that are cloud GPUs (rule payg-cloud-part, ``capacity/cloud``).
* Rule idle-for-spot (``idle_for_spot``): pool - subscriptions - PAYG, never
  below 0.
* Rule allocated (``allocated_from_pods``): what the pods on pool nodes hold now.
* Rule node-selector (``selector_errors``): which nodes a pool is made of.

The oversell guard is in ``capacity/oversell``, what a purchase sells in
``capacity/purchase``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..common.errors import FieldError, raise_if
from ..common.names import (
    ANNOTATION_PAYG_CLOUD_GPUS,
    LABEL_NODE_LOCATION,
    LABEL_QUEUE_TYPE,
    LABEL_TENANT,
    POD_TERMINAL_PHASES,
    QUEUE_TYPE_PAYG,
    QUEUE_TYPE_SPOT,
    QUEUE_TYPE_SUBSCRIPTION,
    label_map_errors,
)
from ..common.quantity import GPU, Resources, parse
from .demand import DEMAND_RESOURCES, pod_demand

POOL_RESOURCES = DEMAND_RESOURCES

# The argument spec of a module that counts the pool (documented by the doc
# fragment gpucloud.platform.pool).
POOL_OPTIONS: dict[str, dict[str, Any]] = {
    "node_selector": {"type": "dict", "default": {}},
}


def _zero() -> Resources:
    return {name: Decimal(0) for name in POOL_RESOURCES}


def _quantity(value: Any, field_path: str) -> Decimal:
    """A quantity read from a live object. A malformed one is refused with the
    object's path: counting it as 0 would make the pool look larger or smaller
    than it is."""
    return parse(value, field_path)


def selector_errors(node_selector: object, field_name: str = "node_selector") -> list[FieldError]:
    """Rule node-selector: a mapping of label key to label value whose every key passes rule
    label-key and every value rule label-value (``common.names``), so that the API label
    selector ``label_selector`` joins is exactly the mapping (a value with a comma would
    otherwise splice a second requirement into it). Each error names
    ``node_selector.<key>``."""
    if node_selector is None:
        return []
    return label_map_errors(field_name, node_selector)


def validate_node_selector(params: Mapping[str, Any]) -> None:
    """Rule node-selector for a module's ``node_selector`` option, raising
    PlatformValidationError."""
    raise_if(selector_errors(params.get("node_selector") or {}))


def label_selector(node_selector: Mapping[str, str] | None) -> str | None:
    """The node selector as an API label selector (``a=b,c=d``), or None. Only for a
    selector rule node-selector accepts: its keys and values hold no ',', '=' or '!'."""
    if not node_selector:
        return None
    return ",".join(f"{k}={node_selector[k]}" for k in sorted(node_selector))


def node_matches(node: Mapping[str, Any], node_selector: Mapping[str, str] | None = None) -> bool:
    """The node carries every label of the node selector (what the API's label selector
    returns)."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    return all(labels.get(key) == value for key, value in (node_selector or {}).items())


def is_cloud_node(node: Mapping[str, Any]) -> bool:
    """A node of a cloud pool: grouped as cloud (``hybrid/nodegroups``), or registered by
    Virtual Kubelet (its default label ``type: virtual-kubelet``) before it was grouped."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    return labels.get(LABEL_NODE_LOCATION) == "cloud" or labels.get("type") == "virtual-kubelet"


def node_in_pool(node: Mapping[str, Any], node_selector: Mapping[str, str] | None = None) -> bool:
    """Rule pool, membership: Ready, not ``spec.unschedulable`` and matching
    every label of the node selector.

    Rule pool-excludes-cloud: a cloud node is in a pool only when the selector asks
    for cloud nodes (``platform.io/node-location: cloud``). Its GPUs are a quota the
    provider declares, not hardware the platform owns: subscriptions, pay-as-you-go
    and spot are sold out of the IDC, and the cloud is the burst queue's
    (``hybrid/queues``)."""
    if not node_matches(node, node_selector):
        return False
    if is_cloud_node(node) and (node_selector or {}).get(LABEL_NODE_LOCATION) != "cloud":
        return False
    if (node.get("spec") or {}).get("unschedulable"):
        return False
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def pool_from_nodes(
    nodes: Iterable[Mapping[str, Any]], node_selector: Mapping[str, str] | None = None
) -> tuple[Resources, list[str]]:
    """Rule pool: the sum of allocatable GPUs, cpu and memory over the nodes
    in the pool. Returns the pool and the names of the nodes counted."""
    pool = _zero()
    members: list[str] = []
    for node in nodes:
        if not node_in_pool(node, node_selector):
            continue
        name = (node.get("metadata") or {}).get("name", "")
        members.append(name)
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        for resource in POOL_RESOURCES:
            if resource in allocatable:
                pool[resource] += _quantity(
                    allocatable[resource], f"nodes[{name}].status.allocatable.{resource}"
                )
    return pool, members


def pool_node_resources(
    nodes: Iterable[Mapping[str, Any]], node_selector: Mapping[str, str] | None = None
) -> dict[str, Resources]:
    """Rule pool, per node: each pool node's allocatable GPUs, cpu and memory."""
    out: dict[str, Resources] = {}
    for node in nodes:
        if node_in_pool(node, node_selector):
            name = (node.get("metadata") or {}).get("name", "")
            allocatable = (node.get("status") or {}).get("allocatable") or {}
            out[name] = _pool_part(allocatable, f"nodes[{name}].status.allocatable")
    return out


@dataclass
class TenantCommitment:
    """What one tenant holds out of the pool, read from its queues. ``payg`` is the
    IDC part of the pay-as-you-go grant; ``payg_cloud`` the GPUs of the grant that are
    cloud GPUs (rule payg-cloud-part), which no IDC pool counts."""

    tenant: str
    subscription: Resources = field(default_factory=_zero)
    payg: Resources = field(default_factory=_zero)
    payg_cloud: Decimal = Decimal(0)
    payg_allocated: Resources = field(default_factory=_zero)
    # The pool resources the PAYG queue's capability limits (others unlimited).
    payg_limited: tuple[str, ...] = ()
    subscription_queue: str | None = None
    payg_queue: str | None = None
    spot_queue: str | None = None
    spot_capability: Resources = field(default_factory=dict)

    @property
    def payg_granted(self) -> Resources:
        """The whole pay-as-you-go grant: the IDC part and the cloud GPUs."""
        return {r: v + (self.payg_cloud if r == GPU else 0) for r, v in self.payg.items()}


def _pool_part(resources: Mapping[str, Any] | None, field_path: str) -> Resources:
    out = _zero()
    for resource in POOL_RESOURCES:
        if resources and resource in resources:
            out[resource] = _quantity(resources[resource], f"{field_path}.{resource}")
    return out


def commitments_from_queues(queues: Iterable[Mapping[str, Any]]) -> dict[str, TenantCommitment]:
    """Rule committed: per tenant, from the managed queues.

    * subscription: the subscription (parent) queue's ``spec.deserved``; team
      queues under it are not counted again;
    * payg: the PAYG queue's granted capacity, the larger of ``deserved`` and
      ``capability`` per resource (the platform keeps them equal; while a
      resize is half done the larger one is what may be in use), less its cloud
      GPUs (annotation ``platform.io/payg-cloud-gpus``, at most the grant's GPUs),
      which are ``payg_cloud``;
    * the spot queue's name and current capability (for the spot modules).
    """
    tenants: dict[str, TenantCommitment] = {}
    for queue in queues:
        meta = queue.get("metadata") or {}
        labels = meta.get("labels") or {}
        tenant = labels.get(LABEL_TENANT)
        queue_type = labels.get(LABEL_QUEUE_TYPE)
        if not tenant or queue_type not in (
            QUEUE_TYPE_SUBSCRIPTION,
            QUEUE_TYPE_PAYG,
            QUEUE_TYPE_SPOT,
        ):
            continue
        name = meta.get("name", "")
        spec = queue.get("spec") or {}
        entry = tenants.setdefault(tenant, TenantCommitment(tenant))
        if queue_type == QUEUE_TYPE_SUBSCRIPTION:
            entry.subscription_queue = name
            entry.subscription = _pool_part(spec.get("deserved"), f"queues[{name}].spec.deserved")
        elif queue_type == QUEUE_TYPE_PAYG:
            entry.payg_queue = name
            deserved = _pool_part(spec.get("deserved"), f"queues[{name}].spec.deserved")
            capability = _pool_part(spec.get("capability"), f"queues[{name}].spec.capability")
            granted = {r: max(deserved[r], capability[r]) for r in POOL_RESOURCES}
            entry.payg_cloud = min(granted[GPU], _cloud_gpus(meta, name))
            entry.payg = {**granted, GPU: granted[GPU] - entry.payg_cloud}
            entry.payg_limited = tuple(
                r for r in POOL_RESOURCES if r in (spec.get("capability") or {})
            )
            status = queue.get("status") or {}
            entry.payg_allocated = _pool_part(
                status.get("allocated"), f"queues[{name}].status.allocated"
            )
        else:
            entry.spot_queue = name
            capability = spec.get("capability") or {}
            entry.spot_capability = {
                r: _quantity(capability[r], f"queues[{name}].spec.capability.{r}")
                for r in POOL_RESOURCES
                if r in capability
            }
    return tenants


def _cloud_gpus(meta: Mapping[str, Any], name: str) -> Decimal:
    """Rule payg-cloud-part, read: the cloud GPUs a PAYG queue's annotation records (0
    without one); a value that is not a whole number of GPUs, 0 or more, is refused
    with its path, as a malformed quantity is."""
    raw = (meta.get("annotations") or {}).get(ANNOTATION_PAYG_CLOUD_GPUS)
    if raw is None:
        return Decimal(0)
    where = f"queues[{name}].metadata.annotations.{ANNOTATION_PAYG_CLOUD_GPUS}"
    value = _quantity(raw, where)
    if value < 0 or value != value.to_integral_value():
        raise_if([FieldError(where, f"{raw!r} must be a whole number of GPUs, 0 or more")])
    return value


def committed_total(
    commitments: Iterable[TenantCommitment], skip_payg_of: str | None = None
) -> Resources:
    """Sum of subscriptions and PAYG grants (leaving out one tenant's PAYG
    grant when that grant is the one being changed)."""
    out = _zero()
    for c in commitments:
        for r in POOL_RESOURCES:
            out[r] += c.subscription[r]
            if c.tenant != skip_payg_of:
                out[r] += c.payg[r]
    return out


def idle_for_spot(
    pool: Mapping[str, Decimal],
    subscriptions: Iterable[Mapping[str, Decimal]],
    payg: Iterable[Mapping[str, Decimal]],
) -> Resources:
    """Rule idle-for-spot: pool - sum of subscription deserved - sum of PAYG
    granted capacity, per resource, never below 0."""
    idle = {r: Decimal(pool.get(r, 0)) for r in POOL_RESOURCES}
    for item in list(subscriptions) + list(payg):
        for r in POOL_RESOURCES:
            idle[r] -= Decimal(item.get(r, 0))
    return {r: max(Decimal(0), v) for r, v in idle.items()}


def allocated_from_pods(
    pods: Iterable[Mapping[str, Any]], pool_nodes: Iterable[str]
) -> tuple[Resources, Resources]:
    """Rule allocated: what the pods bound to pool nodes hold now, split into
    (held, being released): pods that are Succeeded or Failed hold nothing;
    pods with a deletion timestamp are still on the node but on their way out."""
    members = set(pool_nodes)
    held = _zero()
    leaving = _zero()
    for pod in pods:
        spec = pod.get("spec") or {}
        if spec.get("nodeName") not in members:
            continue
        if (pod.get("status") or {}).get("phase") in POD_TERMINAL_PHASES:
            continue
        target = leaving if (pod.get("metadata") or {}).get("deletionTimestamp") else held
        name = (pod.get("metadata") or {}).get("name", "")
        part = pod_demand(spec, f"pods[{name}].spec")
        for r in POOL_RESOURCES:
            target[r] += part[r]
    return held, leaving
