# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``node_groups`` through the flow contract (``kube.flow``), its pure steps: the
request, the facts as data and back, the plan and what it says (no I/O).

The reads (``gather``) and the writes (``apply``) are ``hybrid/service``'s. The reads stop
where the plan refuses (``refusal``), so a refused run reads what it read before. Offline:

* ``gathered``: the burst queue, the scheduler ConfigMap, the Nodes and the Queues;
* ``parsed``: the labels, taints and affinities planned from what ``gathered`` returned.

No ``rendered``: the groups are made of the cluster's nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..common.errors import FieldError, PlatformValidationError, Refused
from ..common.names import BURST_QUEUE, VOLCANO_NAMESPACE
from ..kube.flow import fact_lists
from ..policy import volcano_catalog as vc
from ..policy.scheduler_conf_reader import parse_conf
from ..policy.scheduler_conf_tier_rules import node_group_plugin_errors
from .inputs import validate
from .nodegroups import NodeGroup, membership, parse_groups
from .plan import NodeGroupPlan, plan_node_groups
from .queues import burst_target_errors


@dataclass(frozen=True)
class GroupsRequest:
    """The groups, the queue types that burst, and the burst queue ("": none)."""

    groups: tuple[NodeGroup, ...]
    elastic_queue_types: tuple[str, ...]
    burst_queue: str

    @property
    def burst_target(self) -> str:
        """The queue checked as the platform's burst queue (its default when there is none)."""
        return self.burst_queue or BURST_QUEUE


@dataclass(frozen=True)
class GroupsFacts:
    """The burst queue and the scheduler ConfigMap (each a list of at most one), the Nodes
    and the Queues, in the order they are read. None: not read."""

    burst: tuple[Mapping[str, Any], ...] | None = None
    scheduler: tuple[Mapping[str, Any], ...] | None = None
    nodes: tuple[Mapping[str, Any], ...] | None = None
    queues: tuple[Mapping[str, Any], ...] | None = None


@dataclass(frozen=True)
class GroupsPlan:
    """The writes (``plan``) and the groups' nodes."""

    plan: NodeGroupPlan
    members: Mapping[str, NodeGroup]
    groups: Mapping[str, list[str]]


def parse_groups_request(params: Mapping[str, Any]) -> GroupsRequest:
    """The options as a request; raises for a group that breaks rule node-group-spec."""
    validate(dict(params))
    return GroupsRequest(
        groups=tuple(parse_groups(params["groups"])),
        elastic_queue_types=tuple(params.get("elastic_queue_types") or ()),
        burst_queue=params.get("burst_queue") or "",
    )


def scheduler_conf_errors(configmap: Mapping[str, Any] | None) -> list[FieldError]:
    """The scheduler configuration's errors for node groups, each naming the ConfigMap."""
    text = ((configmap or {}).get("data") or {}).get(vc.SCHEDULER_CONF_KEY)
    where = f"{VOLCANO_NAMESPACE}/{vc.SCHEDULER_CONFIGMAP}"
    if configmap is None:
        return [FieldError(where, "does not exist; apply the scheduling_policy role first")]
    conf, errors = parse_conf(text)
    if errors:
        return [FieldError(f"{where}.{e.field}", e.message) for e in errors]
    return [
        FieldError(
            f"{where}.{e.field}",
            e.message + " (the scheduling_policy role's default configuration has it)",
        )
        for e in node_group_plugin_errors(conf)
    ]


def _one(objects: tuple[Mapping[str, Any], ...]) -> Mapping[str, Any] | None:
    return next(iter(objects), None)


def refusal(request: GroupsRequest, facts: GroupsFacts) -> Exception | None:
    """What the run refuses from the facts read so far, in the order it reads them (None:
    nothing yet); the reads stop at it, and the plan raises it."""
    errors = burst_target_errors(request.burst_target, None)
    if errors or facts.burst is None:
        return PlatformValidationError(errors) if errors else None
    errors = burst_target_errors(request.burst_target, _one(facts.burst))
    if errors:
        return PlatformValidationError(errors)
    if facts.scheduler is None:
        return None
    conf_errors = scheduler_conf_errors(_one(facts.scheduler))
    if conf_errors:
        return Refused(
            "node groups need Volcano's nodegroup plugin with enableHierarchy: "
            + "; ".join(str(e) for e in conf_errors),
            errors=[str(e) for e in conf_errors],
        )
    if facts.nodes is None:
        return None
    _members, errors = membership(request.groups, facts.nodes)
    return PlatformValidationError(errors) if errors else None


def plan(request: GroupsRequest, facts: GroupsFacts) -> GroupsPlan:
    """Rule node-groups-order over the facts; raises what the run refuses (``refusal``)."""
    refused = refusal(request, facts)
    if refused is not None:
        raise refused
    nodes = facts.nodes or ()
    members, _errors = membership(request.groups, nodes)
    planned = plan_node_groups(
        request.groups,
        members,
        nodes,
        facts.queues or (),
        request.elastic_queue_types,
        request.burst_queue,
    )
    groups = {
        g.name: sorted(n for n, m in members.items() if m.name == g.name) for g in request.groups
    }
    return GroupsPlan(planned, members, groups)


def warnings_of(planned: GroupsPlan) -> list[str]:
    return list(planned.plan.warnings)


def report(
    request: GroupsRequest,
    planned: GroupsPlan,
    done: list[str] | None = None,
    diff: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What the plan does (``done`` and ``diff``: what the writes did, by default the
    plan's)."""
    writes = [w.key() for w in planned.plan.writes] if done is None else done
    return {
        "changed": bool(writes),
        "writes": writes,
        "nodes": dict(planned.plan.nodes),
        "groups": dict(planned.groups),
        "diff": dict(diff)
        if diff is not None
        else {"before": dict(planned.plan.before), "after": dict(planned.plan.after)},
    }


def facts_out(facts: GroupsFacts) -> dict[str, Any]:
    fields = (
        ("burst_queue", facts.burst),
        ("scheduler_configmap", facts.scheduler),
        ("nodes", facts.nodes),
        ("queues", facts.queues),
    )
    return {key: [dict(o) for o in objects] for key, objects in fields if objects is not None}


def facts_in(request: GroupsRequest, data: Mapping[str, Any]) -> GroupsFacts:
    """Facts given as ``gathered`` returned them (a key left out: not read)."""
    keys = ("burst_queue", "scheduler_configmap", "nodes", "queues")
    read = [fact_lists(data, key)[0] if data.get(key) is not None else None for key in keys]
    return GroupsFacts(*read)
