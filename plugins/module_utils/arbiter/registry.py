# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of ``arbiter``, one home each, by id: docs/rule-index.md is written from
this table by ``tools/rule_index.py``. Only this file imports the rule files it names:
they never import it."""

from __future__ import annotations

from ..common.rule_index import RuleRef
from . import aftermath, candidates, count, hold, inputs, model, plan, record, rules

RULES: tuple[RuleRef, ...] = (
    RuleRef("arbiter-candidates", candidates.arbiter_candidates),
    RuleRef("arbiter-eviction-count", count.evicted_jobs),
    RuleRef("arbiter-input", inputs.arbiter_input_errors),
    RuleRef("arbiter-job-scope", inputs.job_scope_refusal),
    RuleRef("arbiter-need", rules.arbiter_need),
    RuleRef("arbiter-plan", plan.plan_for),
    RuleRef("arbiter-preemptable", model.job_preemptable),
    RuleRef("arbiter-queue-scope", inputs.queue_scope_refusal),
    RuleRef("arbiter-settle", candidates.settled_waiting),
    RuleRef("arbiter-victim-order", rules.victim_order_key),
    RuleRef("blocked-by-capacity", rules.blocked_by_capacity),
    RuleRef("parent-allocation", model.with_children_allocation),
    RuleRef("placed-is-not-waiting", model.placed),
    RuleRef("preempt-victims", rules.preempt_victims),
    RuleRef("reclaim-hold", hold.held_capability),
    RuleRef("refusal-while-settling", record.settled),
    RuleRef("releasing-is-free", model.without_releasing),
    RuleRef("restart-may-preempt", aftermath.restart_may_preempt),
    RuleRef("team-reclaim-victims", rules.team_reclaim_victims),
    RuleRef("victim-returns", aftermath.returns_after_eviction),
    RuleRef("volcano-can-preempt", plan.volcano_preempt_text),
    RuleRef("volcano-preempts", plan.volcano_preempts),
)
