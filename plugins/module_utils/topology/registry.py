# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of ``topology``, one home each, by id: docs/rule-index.md is written from
this table by ``tools/rule_index.py``. Only this file imports the rule files it names:
they never import it."""

from __future__ import annotations

from ..common.rule_index import RuleRef
from . import discovery, plan, rules

RULES: tuple[RuleRef, ...] = (
    RuleRef("hypernode-exact-match", rules.rule_hypernode_members_exact),
    RuleRef("leaf-or-branch", rules.rule_leaf_or_branch),
    RuleRef("member-type", rules.rule_member_type),
    RuleRef("members-exist", rules.rule_members_exist),
    RuleRef("members-present", rules.rule_members_present),
    RuleRef("never-touch-unmanaged", plan.unmanaged_conflict),
    RuleRef("no-cycles", rules.rule_no_cycles),
    RuleRef("no-skipped-tier", discovery.skipped_tier_errors),
    RuleRef("node-in-one-leaf", rules.rule_node_in_one_leaf),
    RuleRef("one-parent", rules.rule_one_parent),
    RuleRef("one-parent-by-labels", discovery.LabelledTree.link),
    RuleRef("one-selector", rules.rule_one_selector),
    RuleRef("only-what-it-introduces", plan.introduced_errors),
    RuleRef("selector-values", rules.rule_selector_values),
    RuleRef("tier-labels", discovery.tier_label_errors),
    RuleRef("tier-positive", rules.rule_tier_positive),
    RuleRef("tiers-increase-upward", rules.rule_tiers_increase_upward),
)
