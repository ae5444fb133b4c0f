# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of ``awx``, one home each, by id: docs/rule-index.md is written from
this table by ``tools/rule_index.py``. Only this file imports the rule files it names:
they never import it."""

from __future__ import annotations

from ..common.rule_index import RuleRef
from . import activations, objects, surveys

RULES: tuple[RuleRef, ...] = (
    RuleRef("awx-activation-settings", activations.activation_errors),
    RuleRef("awx-activations", activations.eda_objects),
    RuleRef("awx-objects", objects.awx_objects),
    RuleRef("awx-safety-net", activations.schedule_minutes),
    RuleRef("awx-secret-preview", objects.preview),
    RuleRef("awx-settings", objects.awx_settings_errors),
    RuleRef("survey-variables", surveys.survey_errors),
)
