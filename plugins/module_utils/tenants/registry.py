# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of ``tenants``, one home each, by id: docs/rule-index.md is written from
this table by ``tools/rule_index.py``. Only this file imports the rule files it names:
they never import it."""

from __future__ import annotations

from ..common.rule_index import RuleRef
from . import bounds, inputs, network, rbac, render, spec, tenant_queues

RULES: tuple[RuleRef, ...] = (
    RuleRef("busy-queue-removal", tenant_queues.removal_errors),
    RuleRef("cidr", network.parse_cidr),
    RuleRef("cluster-networks", network.discovered_networks),
    RuleRef("egress-outside-cluster", network.rule_egress_outside_cluster),
    RuleRef("guarantee-kept", spec.kept_guarantee),
    RuleRef("rendered-networks", inputs.rendered_network_errors),
    RuleRef("rendered-order", render.sorted_manifests),
    RuleRef("storage-class-bounds", bounds.class_bounds),
    RuleRef("subjects", rbac.subject_errors),
    RuleRef("tenant-bounds", bounds.bounds_from),
    RuleRef("tenant-reads-own-queues", rbac.queue_reader),
    RuleRef("wait-timeout-positive", inputs.rule_wait_timeout_positive),
)
