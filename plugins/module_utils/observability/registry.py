# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of ``observability``, one home each, by id: docs/rule-index.md is written from
this table by ``tools/rule_index.py``. Only this file imports the rule files it names:
they never import it."""

from __future__ import annotations

from ..common.rule_index import RuleRef
from . import alert_routes, alert_rules, disruptions, heartbeats, inference_rules, metering_rules

RULES: tuple[RuleRef, ...] = (
    RuleRef("alert-routing", alert_routes.alertmanager_config),
    RuleRef("alert-routing-input", alert_routes.alerting_errors),
    RuleRef("alert-thresholds", alert_rules.threshold_errors),
    RuleRef("billing-follows-queue", metering_rules.metering_rules),
    RuleRef("billing-type-of-queue", metering_rules._billing_type_of_queue),
    RuleRef("disruption-count", disruptions.grown),
    RuleRef("gpu-milli-units", alert_rules._queue_gpus),
    RuleRef("inference-error-ratio", inference_rules.error_ratio),
    RuleRef("inference-latency-quantiles", inference_rules.latency_quantile),
    RuleRef("inference-request-rate", inference_rules.request_rate),
    RuleRef("inference-slo-alerts", inference_rules.slo_alerts),
    RuleRef("metering-interval", metering_rules.interval_errors),
    RuleRef("reconcile-heartbeat", heartbeats.heartbeat_lease),
    RuleRef("vgpu-metered-by-memory", metering_rules._running_gpu_equivalents),
)
