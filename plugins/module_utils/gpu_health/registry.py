# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of ``gpu_health``, one home each, by id: docs/rule-index.md is written from
this table by ``tools/rule_index.py``. Only this file imports the rule files it names:
they never import it."""

from __future__ import annotations

from ..common.rule_index import RuleRef
from . import disruption, quarantine, signals

RULES: tuple[RuleRef, ...] = (
    RuleRef("gpu-unhealthy", signals.unhealthy_nodes),
    RuleRef("quarantine", quarantine.quarantine_patch),
    RuleRef("quarantine-count", disruption.disrupted_jobs),
    RuleRef("quarantine-guard", quarantine.guard_refusal),
    RuleRef("quarantine-jobs", disruption.quarantine_action),
    RuleRef("quarantine-release", quarantine.release_step),
)
