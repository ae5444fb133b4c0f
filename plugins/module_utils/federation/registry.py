# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of ``federation``, one home each, by id: docs/rule-index.md is written from
this table by ``tools/rule_index.py``. Only this file imports the rule files it names:
they never import it."""

from __future__ import annotations

from ..common.rule_index import RuleRef
from . import interpreter, joining, ledger, members, platform_federation, propagation

RULES: tuple[RuleRef, ...] = (
    RuleRef("federation-job-replicas", interpreter.volcano_job_customization),
    RuleRef("federation-ledger", ledger.merge_member_usage),
    RuleRef("federation-admission", platform_federation.federation_admission),
    RuleRef("federation-member", members.read_member),
    RuleRef("federation-member-join", joining.plan),
    RuleRef("federation-platform-propagation", platform_federation.platform_propagation),
    RuleRef("federation-tenant-propagation", propagation.tenant_propagation),
    RuleRef("member-identity-kept", joining.identity_refusals),
)
