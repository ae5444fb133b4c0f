# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of ``bringup``, one home each, by id: docs/rule-index.md is written from
this table by ``tools/rule_index.py``. Only this file imports the rule files it names:
they never import it."""

from __future__ import annotations

from ..common.rule_index import RuleRef
from . import rollout

RULES: tuple[RuleRef, ...] = (
    RuleRef("go-duration", rollout.go_duration_seconds),
    RuleRef("release-workloads", rollout.release_workloads),
    RuleRef("workload-ready", rollout.workload_waiting),
)
