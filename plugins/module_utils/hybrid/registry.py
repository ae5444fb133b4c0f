# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of ``hybrid``, one home each, by id: docs/rule-index.md is written from
this table by ``tools/rule_index.py``. Only this file imports the rule files it names:
they never import it."""

from __future__ import annotations

from ..common.rule_index import RuleRef
from . import (
    burst,
    federation_moves,
    federation_placement,
    nodegroups,
    placement,
    plan,
    queues,
    scale,
    vgpu,
)

RULES: tuple[RuleRef, ...] = (
    RuleRef("burst-cloud-only", queues.burst_queue),
    RuleRef("burst-queue-platform-owned", queues.burst_target_errors),
    RuleRef("burst-quota", burst.burst_quota_errors),
    RuleRef("burst-running-work", burst.burst_shrink_refusal),
    RuleRef("cloud-patterns", placement.cloud_patterns),
    RuleRef("cloud-taint", nodegroups.node_taints),
    RuleRef("elastic-local-first", queues.elastic_affinity),
    RuleRef("federation-failover-once", federation_placement.federation_failover),
    RuleRef("federation-moves-counted", federation_moves.moves_seen),
    RuleRef("federation-member-failover", federation_placement.member_failover_taint_policy),
    RuleRef("federation-placement", federation_placement.federation_placement),
    RuleRef("idc-by-default", queues.root_affinity),
    RuleRef("node-group-labels", nodegroups.node_labels),
    RuleRef("node-group-spec", nodegroups.group_errors),
    RuleRef("node-groups-order", plan.plan_node_groups),
    RuleRef("placement-pod-spec", placement.placement_pod_spec),
    RuleRef("prefetch-volume", placement.prefetch_volume),
    RuleRef("scale-signal", scale.scale_down_behavior),
    RuleRef("scale-signal-inputs", scale.scale_signal_errors),
    RuleRef("vgpu-or-whole-gpu", vgpu.vgpu_conflict_errors),
    RuleRef("vgpu-purchase", vgpu.vgpu_purchase),
    RuleRef("vgpu-queue-capability", vgpu.vgpu_queue_capability),
    RuleRef("vgpu-request", vgpu.vgpu_request_errors),
)
