# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node groups: which nodes are IDC, which are cloud, and what each carries.

A node group is a named set of nodes from the inventory: an IDC pool, a cloud
pool of one provider and region, or an IDC compliance zone. Each node of a
group gets Volcano's ``volcano.sh/nodegroup-name`` (the ``nodegroup`` plugin
binds queues to groups by it) and the platform's location labels; a cloud node
also gets the Virtual Kubelet taint, so nothing lands there by accident.

Rules held here:

* Rule node-group-spec (``group_errors``): each group is named, located and
  selects its nodes one way.
* Rule one-group-per-node (``membership``): a node is in at most one group.
* Rule every-gpu-node-grouped (``membership``): once queues are bound to groups,
  Volcano schedules nothing onto a node outside every group, so a GPU node
  that no group selects is refused by name rather than silently lost.
* Rule node-group-labels (``node_labels``) and rule cloud-taint (``node_taints``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..common.errors import FieldError
from ..common.names import (
    ANNOTATION_IDC_LATENCY,
    CLOUD_TAINT_KEY,
    LABEL_CLOUD_PROVIDER,
    LABEL_COMPLIANCE_ZONE,
    LABEL_NODE_LOCATION,
    NODE_LOCATIONS,
    NODEGROUP_LABEL,
    REGION_LABEL,
    dns_label_errors,
    label_map_errors,
)

GROUP_KEYS = ("name", "location", "provider", "region", "compliance_zone", "nodes", "selector")
# Extended resources that make a node a GPU node (whole GPUs, HAMi's vGPUs).
GPU_RESOURCES = ("nvidia.com/gpu", "volcano.sh/vgpu-number")
# The labels this module owns on a node; a node that leaves every group loses them.
OWNED_LABELS = (NODEGROUP_LABEL, LABEL_NODE_LOCATION, LABEL_CLOUD_PROVIDER, LABEL_COMPLIANCE_ZONE)


@dataclass(frozen=True)
class NodeGroup:
    name: str
    location: str
    provider: str | None = None
    region: str | None = None
    compliance_zone: str | None = None
    nodes: tuple[str, ...] = ()
    selector: Mapping[str, str] = field(default_factory=dict)

    @property
    def cloud(self) -> bool:
        return self.location == "cloud"

    def selects(self, node: Mapping[str, Any]) -> bool:
        meta = node.get("metadata") or {}
        if self.nodes:
            return meta.get("name") in self.nodes
        labels = meta.get("labels") or {}
        return all(labels.get(k) == v for k, v in self.selector.items())


def _one_group_errors(where: str, raw: Mapping[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    unknown = sorted(set(raw) - set(GROUP_KEYS))
    if unknown:
        errors.append(
            FieldError(where, f"unknown keys {unknown}; a group has {', '.join(GROUP_KEYS)}")
        )
    errors += dns_label_errors(f"{where}.name", raw.get("name"))
    location = raw.get("location")
    if location not in NODE_LOCATIONS:
        errors.append(
            FieldError(
                f"{where}.location", f"{location!r} is not one of {', '.join(NODE_LOCATIONS)}"
            )
        )
    for key in ("provider", "region"):
        if location == "cloud":
            errors += dns_label_errors(f"{where}.{key}", raw.get(key))
        elif raw.get(key) is not None:
            errors.append(
                FieldError(f"{where}.{key}", f"{raw[key]!r}: only a cloud group has a {key}")
            )
    zone = raw.get("compliance_zone")
    if zone is not None:
        if location != "idc":
            errors.append(
                FieldError(
                    f"{where}.compliance_zone",
                    f"{zone!r}: a compliance zone is in the IDC (rule node-group-spec); "
                    "restricted data never goes to a cloud node",
                )
            )
        errors += dns_label_errors(f"{where}.compliance_zone", zone)
    nodes, selector = raw.get("nodes"), raw.get("selector")
    if bool(nodes) == bool(selector):
        errors.append(
            FieldError(
                where,
                "select the group's nodes with exactly one of 'nodes' (names) or 'selector' (labels)",
            )
        )
    if nodes and (not isinstance(nodes, list) or not all(isinstance(n, str) and n for n in nodes)):
        errors.append(FieldError(f"{where}.nodes", f"{nodes!r} must be a list of node names"))
    if selector:
        errors += label_map_errors(f"{where}.selector", selector)
    return errors


def group_errors(raw_groups: Any, field_name: str = "groups") -> list[FieldError]:
    """Rule node-group-spec: a non-empty list of groups with unique names; each has a
    location (``idc`` or ``cloud``), a cloud group a provider and a region, a compliance
    zone only in the IDC, and selects its nodes by ``nodes`` or by ``selector``."""
    if not isinstance(raw_groups, list) or not raw_groups:
        return [FieldError(field_name, f"{raw_groups!r} must be a non-empty list of node groups")]
    errors: list[FieldError] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(raw_groups):
        where = f"{field_name}[{i}]"
        if not isinstance(raw, Mapping):
            errors.append(FieldError(where, f"{raw!r} must be a mapping"))
            continue
        errors += _one_group_errors(where, raw)
        name = raw.get("name")
        if isinstance(name, str) and name in seen:
            errors.append(
                FieldError(
                    f"{where}.name", f"{name!r} is already the name of {field_name}[{seen[name]}]"
                )
            )
        elif isinstance(name, str):
            seen[name] = i
    if not errors and not any(r.get("location") == "idc" for r in raw_groups):
        errors.append(
            FieldError(
                field_name,
                "has no IDC group; root's affinity names the IDC groups, and with none every "
                "queue that names no group of its own could schedule nowhere",
            )
        )
    return errors


def parse_groups(raw_groups: Sequence[Mapping[str, Any]]) -> list[NodeGroup]:
    """The groups of an input that passed rule node-group-spec."""
    return [
        NodeGroup(
            name=raw["name"],
            location=raw["location"],
            provider=raw.get("provider"),
            region=raw.get("region"),
            compliance_zone=raw.get("compliance_zone"),
            nodes=tuple(raw.get("nodes") or ()),
            selector=dict(raw.get("selector") or {}),
        )
        for raw in raw_groups
    ]


def is_gpu_node(node: Mapping[str, Any]) -> bool:
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return any(str(allocatable.get(r, "0")) not in ("0", "") for r in GPU_RESOURCES)


def membership(
    groups: Sequence[NodeGroup], nodes: Iterable[Mapping[str, Any]]
) -> tuple[dict[str, NodeGroup], list[FieldError]]:
    """Rules one-group-per-node and every-gpu-node-grouped: node name -> its group."""
    out: dict[str, NodeGroup] = {}
    errors: list[FieldError] = []
    ungrouped: list[str] = []
    names: set[str] = set()
    for node in nodes:
        name = node["metadata"]["name"]
        names.add(name)
        mine = [g for g in groups if g.selects(node)]
        if len(mine) > 1:
            errors.append(
                FieldError(
                    "groups",
                    f"node {name!r} is selected by {', '.join(repr(g.name) for g in mine)}; "
                    "a node is in one group (rule one-group-per-node)",
                )
            )
        elif mine:
            out[name] = mine[0]
        elif is_gpu_node(node):
            ungrouped.append(name)
    if ungrouped:
        errors.append(
            FieldError(
                "groups",
                f"GPU nodes {', '.join(sorted(ungrouped))} are in no group; Volcano schedules no queue's "
                "jobs onto a node outside every group once queues are bound to groups "
                "(rule every-gpu-node-grouped): add them to a group",
            )
        )
    missing = sorted({n for g in groups for n in g.nodes} - names)
    if missing:
        errors.append(
            FieldError("groups", f"nodes {', '.join(missing)} are listed but do not exist")
        )
    return out, errors


def node_labels(group: NodeGroup | None) -> dict[str, str]:
    """Rule node-group-labels: the labels a node of the group carries (none outside
    every group)."""
    if group is None:
        return {}
    labels = {NODEGROUP_LABEL: group.name, LABEL_NODE_LOCATION: group.location}
    if group.cloud:
        labels[LABEL_CLOUD_PROVIDER] = str(group.provider)
        labels[REGION_LABEL] = str(group.region)
    if group.compliance_zone:
        labels[LABEL_COMPLIANCE_ZONE] = group.compliance_zone
    return labels


def cloud_taint(group: NodeGroup) -> dict[str, str]:
    """The taint Virtual Kubelet puts on the nodes it registers, with the provider as value."""
    return {"key": CLOUD_TAINT_KEY, "value": str(group.provider), "effect": "NoSchedule"}


def node_taints(node: Mapping[str, Any], group: NodeGroup | None) -> list[dict[str, Any]] | None:
    """Rule cloud-taint: a cloud node carries the Virtual Kubelet taint (any value: the
    provider may have written its own). The node's full taint list when it must change,
    else None. An IDC node's taints are left as they are."""
    if group is None or not group.cloud:
        return None
    taints = list((node.get("spec") or {}).get("taints") or [])
    if any(t.get("key") == CLOUD_TAINT_KEY and t.get("effect") == "NoSchedule" for t in taints):
        return None
    return [*taints, cloud_taint(group)]


def latency_ms(node: Mapping[str, Any]) -> str | None:
    """The cloud node's round trip to the IDC, as its provider registered it (annotation)."""
    return ((node.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_IDC_LATENCY)
