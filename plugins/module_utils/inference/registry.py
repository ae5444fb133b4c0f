# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of ``inference``, one home each, by id: docs/rule-index.md is written from
this table by ``tools/rule_index.py``. Only this file imports the rule files it names:
they never import it."""

from __future__ import annotations

from ..common.rule_index import RuleRef
from . import inputs, live, manifests, rules, spec

RULES: tuple[RuleRef, ...] = (
    RuleRef("canary-traffic-routed", manifests.rollout_graph),
    RuleRef("graph-in-gateway-namespace", rules.graph_namespace_errors),
    RuleRef("graph-of-own-tenant", rules.graph_owner_errors),
    RuleRef("inference-ab-test", manifests.ab_graph),
    RuleRef("inference-canary-min-replicas", rules.canary_replica_errors),
    RuleRef("inference-canary-unique", rules.canary_name_errors),
    RuleRef("inference-class-fits-queue", rules.class_errors),
    RuleRef("inference-critical-allowed", rules.critical_errors),
    RuleRef("inference-default-class", rules.default_class),
    RuleRef("inference-gpus-within-capability", rules.capability_errors),
    RuleRef("inference-placement", manifests._predictor),
    RuleRef("inference-pod-identity", inputs.identity_errors),
    RuleRef("inference-ports", inputs.port_errors),
    RuleRef("inference-reachable", manifests.serving_network_policy),
    RuleRef("inference-replicas-bounded", rules.replica_bound_errors),
    RuleRef("inference-replicas-reported", live.replica_counts),
    RuleRef("inference-routes-follow-versions", manifests.rerouted_graphs),
    RuleRef("inference-spot-priced", rules.spot_priced_errors),
    RuleRef("inference-traffic", rules.traffic_errors),
    RuleRef("inference-version-immutable", rules.version_errors),
    RuleRef("knative-one-canary", rules.knative_errors),
    RuleRef("model-spec", spec.parse_model),
    RuleRef("model-store-account", rules.store_account),
    RuleRef("serving-peer-namespace", rules.peer_namespace_errors),
    RuleRef("traffic-split", rules.traffic_split),
)
