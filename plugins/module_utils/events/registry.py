# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of ``events``, one home each, by id: docs/rule-index.md is written from
this table by ``tools/rule_index.py``. Only this file imports the rule files it names:
they never import it."""

from __future__ import annotations

from ..common.rule_index import RuleRef
from . import (
    coalesce,
    gpu_health_changed,
    inputs,
    large_job,
    paying_job_blocked,
    pool_changed,
    rules,
    subscription_changed,
)

RULES: tuple[RuleRef, ...] = (
    RuleRef("event-coalesce", coalesce.Coalescer),
    RuleRef("event-gpu-health-changed", gpu_health_changed.gpu_health_changed),
    RuleRef("event-large-job", large_job.large_job),
    RuleRef("event-paying-job-blocked", paying_job_blocked.paying_job_blocked),
    RuleRef("event-pool-changed", pool_changed.pool_changed),
    RuleRef("event-relist", rules.relist),
    RuleRef("event-source-args", inputs.source_args),
    RuleRef("event-standing", rules.standing),
    RuleRef("event-subscription-changed", subscription_changed.subscription_changed),
)
