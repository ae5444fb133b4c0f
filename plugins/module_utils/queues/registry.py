# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of ``queues``, one home each, by id: docs/rule-index.md is written from
this table by ``tools/rule_index.py``. Only this file imports the rule files it names:
they never import it."""

from __future__ import annotations

from ..common.rule_index import RuleRef
from . import capability, kinds, model, ownership, parent_list, rules

RULES: tuple[RuleRef, ...] = (
    RuleRef("capability-above-allocated", rules.rule_capability_above_allocated),
    RuleRef("child-capability", rules.rule_child_capability_within_parent),
    RuleRef("children-deserved", rules.rule_children_deserved_within_parent),
    RuleRef("children-guarantee", rules.rule_children_guarantee_within_parent),
    RuleRef("effective-capability", capability.effective_capability),
    RuleRef("explicit-parent", rules.rule_explicit_parent),
    RuleRef("guarantee-deserved-capability", rules.rule_guarantee_deserved_capability),
    RuleRef("jobs-only-in-leaves", rules.rule_jobs_only_in_leaves),
    RuleRef("leaf-queue-of-tenant", kinds.leaf_queue_errors),
    RuleRef("parent-queues-list", parent_list.updated_queue_list),
    RuleRef("payg-deserved-equals-capability", rules.rule_payg_deserved_equals_capability),
    RuleRef("platform-parent", rules.rule_platform_parent),
    RuleRef("queue-adopted", model.needs_adoption),
    RuleRef("queue-depth", rules.rule_queue_depth),
    RuleRef("queue-name-owned", model.foreign_owner),
    RuleRef("queue-ownership", ownership.leaf_types),
    RuleRef("spot-deserved-zero", rules.rule_spot_deserves_nothing),
    RuleRef(
        "subscription-deserved-equals-capability",
        rules.rule_subscription_deserved_equals_capability,
    ),
    RuleRef("unique-names", rules.rule_unique_names),
)
