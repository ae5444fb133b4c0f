# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of ``catalog``, one home each, by id: docs/rule-index.md is written from
this table by ``tools/rule_index.py``. Only this file imports the rule files it names:
they never import it."""

from __future__ import annotations

from ..common.rule_index import RuleRef
from . import gather, inputs, plan, sale, source_io, spec

RULES: tuple[RuleRef, ...] = (
    RuleRef("catalog-options", inputs.option_errors),
    RuleRef("catalog-path", source_io.resolved),
    RuleRef("catalog-plan", plan.plan_tenant_work),
    RuleRef("catalog-prune", plan.prune_candidates),
    RuleRef("catalog-prune-data", plan.prune_data_refusal),
    RuleRef("catalog-prune-empty", plan.prune_empty_errors),
    RuleRef("catalog-prune-max", plan.prune_max_errors),
    RuleRef("catalog-queue-name-owned", plan.foreign_queue_errors),
    RuleRef("catalog-queue-names-unique", spec.queue_collision_errors),
    RuleRef("catalog-sale-reclaim", sale.sale_reclaim_errors),
    RuleRef("catalog-sale-summary", sale.sale_line),
    RuleRef("catalog-status", plan.tenant_status),
    RuleRef("catalog-unique-names", spec.duplicate_name_errors),
    RuleRef("gathered-entry", gather.gather_tenant),
)
