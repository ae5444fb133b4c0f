# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the ``node_groups`` module writes, in order, from what it read.

Rule node-groups-order (``plan_node_groups``): nodes are labelled and tainted
first, then the burst queue, the elastic queues and root's affinity. Root's
IDC-only affinity makes every ungrouped node unusable for Volcano jobs, so it
is written only after every node it names carries its group.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..common.names import (
    LABEL_NODE_LOCATION,
    LABEL_QUEUE_TYPE,
    QUEUE_API,
    REGION_LABEL,
    ROOT_QUEUE,
)
from .inputs import ELASTIC_TYPES
from .nodegroups import OWNED_LABELS, NodeGroup, node_labels, node_taints
from .queues import (
    affinity_merge_patch,
    affinity_of,
    burst_queue,
    cloud_gpus,
    elastic_affinity,
    root_affinity,
)


@dataclass(frozen=True)
class Write:
    """One write: a merge patch of an existing object, or the creation of one."""

    api_version: str
    kind: str
    name: str
    body: dict[str, Any]
    create: bool = False

    def key(self) -> str:
        return f"{self.kind}/{self.name}"


@dataclass
class NodeGroupPlan:
    writes: list[Write] = field(default_factory=list)
    nodes: dict[str, str | None] = field(default_factory=dict)  # node -> group
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def node_write(node: Mapping[str, Any], group: NodeGroup | None) -> tuple[Write | None, dict, dict]:
    """Rule node-group-labels and rule cloud-taint for one node: the merge patch (or None),
    and the node's owned labels and taints before and after."""
    meta = node["metadata"]
    labels = meta.get("labels") or {}
    want = node_labels(group)
    owned_now = {k: labels[k] for k in OWNED_LABELS if k in labels}
    if labels.get(LABEL_NODE_LOCATION) == "cloud" and REGION_LABEL in labels:
        # The region is the platform's on a node it grouped as cloud (and goes with it).
        owned_now[REGION_LABEL] = labels[REGION_LABEL]
    label_patch: dict[str, Any] = {k: v for k, v in want.items() if labels.get(k) != v}
    label_patch.update({k: None for k in owned_now if k not in want})
    taints = node_taints(node, group)
    body: dict[str, Any] = {}
    if label_patch:
        body["metadata"] = {"labels": label_patch, "resourceVersion": meta.get("resourceVersion")}
    if taints is not None:
        body["spec"] = {"taints": taints}
        body.setdefault("metadata", {})["resourceVersion"] = meta.get("resourceVersion")
    before = {"labels": owned_now, "taints": (node.get("spec") or {}).get("taints") or []}
    after = {"labels": want, "taints": taints if taints is not None else before["taints"]}
    write = Write("v1", "Node", meta["name"], body) if body else None
    return write, before, after


def _queue_write(
    queue: Mapping[str, Any] | None, name: str, affinity: Mapping[str, Any]
) -> Write | None:
    live = affinity_of(queue or {})
    if queue is None or live == dict(affinity):
        return None
    return Write(
        QUEUE_API, "Queue", name, {"spec": {"affinity": affinity_merge_patch(live, affinity)}}
    )


def plan_node_groups(
    groups: Sequence[NodeGroup],
    members: Mapping[str, NodeGroup],
    nodes: Sequence[Mapping[str, Any]],
    queues: Sequence[Mapping[str, Any]],
    elastic_types: Sequence[str],
    burst_name: str | None,
) -> NodeGroupPlan:
    """Rule node-groups-order over everything the module owns."""
    plan = NodeGroupPlan()
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        name = node["metadata"]["name"]
        group = members.get(name)
        write, before, after = node_write(node, group)
        if group is not None or before["labels"]:
            plan.nodes[name] = group.name if group else None
            plan.before[f"Node/{name}"] = before
            plan.after[f"Node/{name}"] = after
        if write:
            plan.writes.append(write)
    by_name = {q["metadata"]["name"]: q for q in queues}
    if burst_name:
        wanted = burst_queue(groups, cloud_gpus(members, nodes), burst_name)
        live = by_name.get(burst_name)
        if live is None:
            plan.writes.append(Write(QUEUE_API, "Queue", burst_name, wanted, create=True))
        else:
            spec = live.get("spec") or {}
            patch = {
                k: wanted["spec"][k]
                for k in ("capability", "affinity")
                if spec.get(k) != wanted["spec"][k]
            }
            if patch:
                plan.writes.append(Write(QUEUE_API, "Queue", burst_name, {"spec": patch}))
        plan.before[f"Queue/{burst_name}"] = {
            k: (live or {}).get("spec", {}).get(k) for k in ("capability", "affinity")
        }
        plan.after[f"Queue/{burst_name}"] = {
            k: wanted["spec"][k] for k in ("capability", "affinity")
        }
    elastic = elastic_affinity(groups)
    for queue in sorted(queues, key=lambda q: q["metadata"]["name"]):
        qtype = (queue["metadata"].get("labels") or {}).get(LABEL_QUEUE_TYPE)
        name = queue["metadata"]["name"]
        if qtype in elastic_types:
            write = _queue_write(queue, name, elastic)
            plan.before[f"Queue/{name}"] = {"affinity": affinity_of(queue) or None}
            plan.after[f"Queue/{name}"] = {"affinity": elastic}
            if write:
                plan.writes.append(write)
        elif qtype in ELASTIC_TYPES and affinity_of(queue) == elastic:
            # Its type no longer bursts: back to root's IDC-only affinity (inherited).
            plan.writes.append(Write(QUEUE_API, "Queue", name, {"spec": {"affinity": None}}))
            plan.before[f"Queue/{name}"] = {"affinity": elastic}
            plan.after[f"Queue/{name}"] = {"affinity": None}
    root = by_name.get(ROOT_QUEUE)
    wanted_root = root_affinity(groups)
    write = _queue_write(root, ROOT_QUEUE, wanted_root)
    plan.before[f"Queue/{ROOT_QUEUE}"] = {"affinity": affinity_of(root or {}) or None}
    plan.after[f"Queue/{ROOT_QUEUE}"] = {"affinity": wanted_root}
    if write:
        plan.writes.append(write)
    ungrouped = sorted(n["metadata"]["name"] for n in nodes if n["metadata"]["name"] not in members)
    if ungrouped:
        plan.warnings.append(
            f"nodes {', '.join(ungrouped)} are in no group: Volcano jobs do not run on them "
            "once root's affinity names the IDC groups"
        )
    return plan
