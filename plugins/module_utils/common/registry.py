# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of ``common``, one home each, by id: docs/rule-index.md is written from
this table by ``tools/rule_index.py``. Only this file imports the rule files it names:
they never import it."""

from __future__ import annotations

from . import history, names, quantity, stop_counts, variables
from .rule_index import RuleRef

RULES: tuple[RuleRef, ...] = (
    RuleRef("dns-label", names.dns_label_errors),
    RuleRef("dns-subdomain", names.dns_subdomain_errors),
    RuleRef("label-key", names.label_key_errors),
    RuleRef("label-selector", names.label_selector_errors),
    RuleRef("label-value", names.label_value_errors),
    RuleRef("playbook-variables", variables.unknown_variables),
    RuleRef("pod-queue", names.pod_queue),
    RuleRef("quantity", quantity.parse),
    RuleRef("reclaim-history", history.push_history),
    RuleRef("stop-count", stop_counts.stopped_jobs),
    RuleRef("team-name", names.team_name_errors),
    RuleRef("tenant-name", names.tenant_name_errors),
    RuleRef("tenant-namespace", names.tenant_namespace_errors),
)
