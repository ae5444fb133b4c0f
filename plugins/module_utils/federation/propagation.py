# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A tenant in every member: the resource templates the platform writes in Karmada for a
tenant, and the policies that send each one to the members it belongs in.

Rule held here:

* Rule federation-tenant-propagation (``tenant_propagation``).

The templates are the single-cluster builders' objects (``tenants/plan.plan_tenant``'s
plan, ``hybrid/burst.burst_leaf``): a tenant is the same objects wherever it runs; only
which member holds which queue, and the pay-as-you-go queue's GPUs, differ per member.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..common import quantity
from ..common.errors import FieldError, raise_if
from ..common.names import (
    BURST_QUEUE,
    LABEL_NODE_LOCATION,
    LABEL_TENANT,
    QUEUE_TYPE_PAYG,
    namespace_name,
    tenant_labels,
)
from ..hybrid.burst import BURST_BILLING, burst_leaf, burst_leaf_name
from ..hybrid.federation_placement import HELD, POLICY_API
from ..policy.admission import tenant_queues_configmap
from ..queues.model import Queue
from ..tenants.plan import TenantPlan
from ..tenants.tenant_queues import leaf_queue_types
from .members import CLOUD, IDC

# Karmada's namespace sync controller copies every Namespace made in Karmada to every
# member, with no policy (pkg/controllers/namespace/namespace_sync_controller.go
# Reconcile; unless labelled namespace.karmada.io/skip-auto-propagation). A policy that
# selected it too would make a second binding write the same Work.
AUTO_PROPAGATED_KINDS = ("Namespace",)
# JSON pointer of a queue's GPUs (RFC 6901: "/" in a key is written "~1").
GPU_POINTER = quantity.GPU.replace("~", "~0").replace("/", "~1")


@dataclass(frozen=True)
class TenantFederation:
    """What the platform writes in Karmada for one tenant: ``templates`` (the objects, as
    in one cluster) and ``policies`` (where each goes, and what differs per member)."""

    templates: list[dict[str, Any]]
    policies: list[dict[str, Any]]


def resource_selector(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A policy's ``resourceSelectors`` entry naming exactly ``obj``."""
    meta = obj["metadata"]
    out = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": meta["name"]}
    if meta.get("namespace"):
        out["namespace"] = meta["namespace"]
    return out


def member_affinity(*locations: str) -> dict[str, Any]:
    """The members labelled ``platform.io/node-location`` with one of ``locations``."""
    return {
        "labelSelector": {
            "matchExpressions": [
                {"key": LABEL_NODE_LOCATION, "operator": "In", "values": list(locations)}
            ]
        }
    }


def propagation_policy(
    kind: str, meta: Mapping[str, Any], objects: Sequence[Mapping[str, Any]], *where: str
) -> dict[str, Any]:
    """A (Cluster)PropagationPolicy sending exactly ``objects`` to the members at ``where``,
    and keeping them there when a member is lost.

    Every such policy tolerates the lost-member taint (rule federation-member-failover):
    Karmada's taint manager evicts **every** binding that does not
    (``pkg/controllers/cluster/taint_manager.go`` ``syncCluster`` lists them all), and
    an evicted template is deleted from the member as soon as it answers again
    (``handleWorkDelete``), under whatever runs there: a tenant's queues, its RBAC, the
    platform's ``cloud-burst``. Only a job's own policy may leave the member (rule
    federation-failover-once)."""
    return {
        "apiVersion": POLICY_API,
        "kind": kind,
        "metadata": dict(meta),
        "spec": {
            "resourceSelectors": [resource_selector(o) for o in objects],
            "placement": {
                "clusterAffinity": member_affinity(*where),
                "clusterTolerations": [dict(t) for t in HELD],
            },
        },
    }


def _policy(
    kind: str, name: str, tenant: str, objects: Sequence[Mapping[str, Any]], *where: str
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": tenant_labels(tenant)}
    if kind == "PropagationPolicy":
        meta["namespace"] = namespace_name(tenant)
    return propagation_policy(kind, meta, objects, *where)


def _whole(queue: Queue) -> dict[str, Any]:
    """The queue with its capacity, as the template Karmada copies to members."""
    return dataclasses.replace(queue, write_capacity=True).whole_manifest()


def _gpu_override(value: Decimal, *where: str) -> dict[str, Any]:
    text = quantity.render({quantity.GPU: value})[quantity.GPU]
    return {
        "targetCluster": member_affinity(*where),
        "overriders": {
            "plaintext": [
                {"path": f"/spec/{field}/{GPU_POINTER}", "operator": "replace", "value": text}
                for field in ("capability", "deserved")
            ]
        },
    }


def tenant_propagation_errors(plan: TenantPlan, payg_cloud_gpus: int) -> list[FieldError]:
    """What rule federation-tenant-propagation refuses: a cloud part of the pay-as-you-go
    grant that is negative or larger than the grant."""
    payg = next((q for q in plan.queues if q.queue_type == QUEUE_TYPE_PAYG), None)
    grant = (payg.capability.get(quantity.GPU) if payg else None) or Decimal(0)
    if isinstance(payg_cloud_gpus, bool) or not isinstance(payg_cloud_gpus, int):
        return [FieldError("payg_cloud_gpus", f"{payg_cloud_gpus!r} must be a whole number")]
    if payg_cloud_gpus < 0 or payg_cloud_gpus > grant:
        return [
            FieldError(
                "payg_cloud_gpus",
                f"{payg_cloud_gpus} is not within the pay-as-you-go grant (0 to {grant} GPUs)",
            )
        ]
    return []


def tenant_propagation(
    plan: TenantPlan, burst_gpus: int | None = None, payg_cloud_gpus: int = 0
) -> TenantFederation:
    """Rule federation-tenant-propagation: a tenant's objects go to every member, its
    subscription, teams and spot queues to the IDC members, its pay-as-you-go queue where
    its GPUs were bought and its burst leaf to the cloud members; the templates in
    Karmada and the policies that say so.

    * every member (IDC and cloud): its Role, RoleBinding, NetworkPolicy, queue list,
      ResourceQuota and LimitRange (a PropagationPolicy in its namespace) and its queue
      reader ClusterRole and binding (a ClusterPropagationPolicy); its Namespace needs
      no policy (Karmada's namespace sync controller copies every Namespace);
    * IDC members only: the subscription queue and its teams (capability = what was
      bought) and the spot queue (spot is sold from the IDC's idle GPUs);
    * the pay-as-you-go queue: in the IDC members with the grant's IDC GPUs, and, when
      part of the grant is cloud GPUs (``payg_cloud_gpus``, the queue's
      ``platform.io/payg-cloud-gpus`` in one cluster), in the cloud members with that part:
      a ClusterOverridePolicy sets ``capability`` and ``deserved`` GPUs per location
      (Queue is cluster-scoped, and a namespaced OverridePolicy only overrides objects of
      its own namespace);
    * cloud members only: the tenant's burst leaf ``tenant-<tenant>-burst`` of
      ``burst_gpus`` under ``cloud-burst`` (None: the tenant has no cloud quota), listed
      in the queue list as pay-as-you-go (rule burst-billing).

    Each member's Volcano enforces its own copy: a queue's capability is per member, so a
    tenant with N IDC members may hold N times its subscription there (see
    docs/federation.md, "Not done")."""
    raise_if(tenant_propagation_errors(plan, payg_cloud_gpus))
    tenant = plan.namespace["metadata"]["labels"][LABEL_TENANT]
    base = namespace_name(tenant)
    leaves = leaf_queue_types(plan.queues)
    burst = burst_leaf(tenant, burst_gpus, BURST_QUEUE) if burst_gpus is not None else None
    if burst is not None:
        leaves[burst_leaf_name(tenant)] = BURST_BILLING
    queue_list = tenant_queues_configmap(tenant, leaves)
    objects = [
        queue_list
        if o["kind"] == "ConfigMap" and o["metadata"]["name"] == queue_list["metadata"]["name"]
        else o
        for o in plan.objects
    ]
    namespaced = [o for o in objects if o["metadata"].get("namespace")]
    cluster_wide = [
        o
        for o in objects
        if not o["metadata"].get("namespace") and o["kind"] not in AUTO_PROPAGATED_KINDS
    ]
    payg = [q for q in plan.queues if q.queue_type == QUEUE_TYPE_PAYG]
    idc_queues = [_whole(q) for q in plan.queues if q.queue_type != QUEUE_TYPE_PAYG]
    payg_queues = [_whole(q) for q in payg]
    policies = [
        _policy("PropagationPolicy", base, tenant, namespaced, IDC, CLOUD),
        _policy("ClusterPropagationPolicy", base, tenant, cluster_wide, IDC, CLOUD),
        _policy("ClusterPropagationPolicy", f"{base}-idc-queues", tenant, idc_queues, IDC),
    ]
    if payg:
        grant = payg[0].capability.get(quantity.GPU) or Decimal(0)
        cloud = Decimal(payg_cloud_gpus)
        where = (IDC, CLOUD) if cloud > 0 else (IDC,)
        policies.append(
            _policy("ClusterPropagationPolicy", f"{base}-payg", tenant, payg_queues, *where)
        )
        rules = [_gpu_override(grant - cloud, IDC)]
        if cloud > 0:
            rules.append(_gpu_override(cloud, CLOUD))
        policies.append(
            {
                "apiVersion": POLICY_API,
                "kind": "ClusterOverridePolicy",
                "metadata": {"name": f"{base}-payg", "labels": tenant_labels(tenant)},
                "spec": {
                    "resourceSelectors": [resource_selector(q) for q in payg_queues],
                    "overrideRules": rules,
                },
            }
        )
    burst_templates = []
    if burst is not None:
        burst_templates = [burst]
        policies.append(
            _policy("ClusterPropagationPolicy", f"{base}-burst", tenant, burst_templates, CLOUD)
        )
    templates = [*objects, *idc_queues, *payg_queues, *burst_templates]
    return TenantFederation(templates=templates, policies=policies)
