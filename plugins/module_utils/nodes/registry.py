# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of ``nodes``, one home each, by id: docs/rule-index.md is written from
this table by ``tools/rule_index.py``. Only this file imports the rule files it names:
they never import it."""

from __future__ import annotations

from ..common.rule_index import RuleRef
from . import node_changes, preflight

RULES: tuple[RuleRef, ...] = (
    RuleRef("node-labels-apply", node_changes.labels_apply),
    RuleRef("node-preflight", preflight.preflight_report),
    RuleRef("node-taints-patch", node_changes.taints_patch),
    RuleRef("smi-gpus", preflight.smi_gpus),
)
