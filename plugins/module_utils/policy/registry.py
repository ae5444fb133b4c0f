# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of ``policy``, one home each, by id: docs/rule-index.md is written from
this table by ``tools/rule_index.py``. Only this file imports the rule files it names:
they never import it."""

from __future__ import annotations

from ..common.rule_index import RuleRef
from . import (
    admission,
    compliance,
    deviceshare,
    image_registries,
    platform_state,
    pod_placement,
    priority_classes,
    scheduler_conf_reader,
    scheduler_conf_rules,
    scheduler_conf_tier_rules,
    tenant_services,
    workload_queue,
)

RULES: tuple[RuleRef, ...] = (
    RuleRef("billing-fits-queue", admission.queue_billing_policy),
    RuleRef("capacity-in-deciding-tier", scheduler_conf_tier_rules.capacity_tier_errors),
    RuleRef("capacity-not-proportion", scheduler_conf_tier_rules.capacity_proportion_errors),
    RuleRef("compliance-pinned", compliance.compliance_placement_policy),
    RuleRef("conf-parses", scheduler_conf_reader.parse_conf),
    RuleRef("deviceshare-arguments", deviceshare.deviceshare_errors),
    RuleRef("deviceshare-exclusive-rules", deviceshare.exclusive_rules_errors),
    RuleRef("deviceshare-needs-predicates", deviceshare.predicates_errors),
    RuleRef("deviceshare-one-sharing-mode", deviceshare.sharing_mode_errors),
    RuleRef("deviceshare-policy-weight", deviceshare.policy_weight_errors),
    RuleRef("deviceshare-schedule-policy", deviceshare.schedule_policy_errors),
    RuleRef("hierarchy-only-capacity", scheduler_conf_tier_rules.hierarchy_errors),
    RuleRef("images-from-allowed-registries", image_registries.image_registries_policy),
    RuleRef("known-action-arguments", scheduler_conf_rules.configuration_errors),
    RuleRef("known-actions", scheduler_conf_rules.action_errors),
    RuleRef("known-arguments", scheduler_conf_rules.argument_errors),
    RuleRef("known-option-keys", scheduler_conf_rules.option_key_errors),
    RuleRef("known-plugins", scheduler_conf_rules.plugin_name_errors),
    RuleRef("known-top-level-keys", scheduler_conf_rules.top_level_errors),
    RuleRef("large-job-throttle", admission.large_job_throttle_policy),
    RuleRef("last-parameterised-binding", admission.parameterised_policies),
    RuleRef("leaf-queue-only", admission.queue_leaf_policy),
    RuleRef("no-victim-fallthrough", scheduler_conf_tier_rules.victim_fallthrough_errors),
    RuleRef("node-groups-need-nodegroup", scheduler_conf_tier_rules.node_group_plugin_errors),
    RuleRef("numeric-weights", scheduler_conf_rules.numeric_weight_errors),
    RuleRef("platform-policy", scheduler_conf_tier_rules.platform_policy_errors),
    RuleRef("platform-state", platform_state.platform_state_policy),
    RuleRef("pods-through-volcano", pod_placement.pod_placement_policy),
    RuleRef("priority-classes", priority_classes.priority_class_manifest),
    RuleRef("priority-fits-queue", admission.queue_priority_policy),
    RuleRef("registry-prefix-shape", image_registries.registry_prefix_errors),
    RuleRef("sla-before-capacity", scheduler_conf_tier_rules.sla_before_capacity_errors),
    RuleRef("sla-enqueue-only", scheduler_conf_tier_rules.sla_enqueue_only_errors),
    RuleRef("tenant-ancestor-reclaim", scheduler_conf_tier_rules.ancestor_reclaim_errors),
    RuleRef("tenant-services-in-cluster", tenant_services.tenant_services_policy),
    RuleRef("tiers-shape", scheduler_conf_rules.tier_shape_errors),
    RuleRef("weight-bounds", scheduler_conf_rules.weight_bound_errors),
    RuleRef("workload-queue-of-own-tenant", workload_queue.workload_queue_policy),
)
