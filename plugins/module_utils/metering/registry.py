# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of ``metering``, one home each, by id: docs/rule-index.md is written from
this table by ``tools/rule_index.py``. Only this file imports the rule files it names:
they never import it."""

from __future__ import annotations

from ..common.rule_index import RuleRef
from . import answer, inputs, ledger, period, prices, tenants, usage

RULES: tuple[RuleRef, ...] = (
    RuleRef("cloud-amount", ledger.cloud_row),
    RuleRef("exact-integral", usage.series_gpu_seconds),
    RuleRef("ledger-line", usage.line_of),
    RuleRef("ledger-rounding", ledger.cents),
    RuleRef("metering-known-tenant", tenants.unknown_tenant_errors),
    RuleRef("metering-resolution", answer.interval_of),
    RuleRef("payg-amount", ledger.payg_row),
    RuleRef("period-default-step", period.default_step),
    RuleRef("period-max", period.length_errors),
    RuleRef("period-order", period.order_errors),
    RuleRef("period-step", period.step_errors),
    RuleRef("period-time", period.read_time),
    RuleRef("period-windows", period.windows),
    RuleRef("price", prices.price_errors),
    RuleRef("price-table", prices.price_table_errors),
    RuleRef("prometheus-answer", answer.matrix_of),
    RuleRef("reconciliation", ledger.reconciliation),
    RuleRef("spot-amount", ledger.spot_row),
    RuleRef("spot-bid", usage.read_bid),
    RuleRef("spot-job-usage", usage.spot_job_usage),
    RuleRef("subscription-amount", ledger.subscription_row),
    RuleRef("subscription-included", ledger.included_gpu_hours),
    RuleRef("subscription-over-time", usage.subscription_seconds),
    RuleRef("subscription-overage", ledger.overage_gpu_hours),
    RuleRef("tenant-usage", usage.tenant_usage),
    RuleRef("unclaimed-gpus", usage.unclaimed_usage),
    RuleRef("usage-report-input", inputs.report_input_errors),
)
