# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of ``jobs``, one home each, by id: docs/rule-index.md is written from
this table by ``tools/rule_index.py``. Only this file imports the rule files it names:
they never import it."""

from __future__ import annotations

from ..common.rule_index import RuleRef
from . import (
    checkpoints,
    classes,
    feasibility,
    kinds,
    large_job,
    request_rules,
    sla,
    submit,
    throttle,
)

RULES: tuple[RuleRef, ...] = (
    RuleRef("billing-type", classes.JobClass.billing_for),
    RuleRef("checkpoint-convention", checkpoints.checkpoint_pod),
    RuleRef("checkpoint-options", checkpoints.checkpoint_errors),
    RuleRef("class-fits-queue", request_rules.rule_class_fits_queue),
    RuleRef("class-size", request_rules.rule_class_size),
    RuleRef("dataset-version", request_rules.rule_dataset_version),
    RuleRef("job-class-table", classes.job_class_table),
    RuleRef("job-immutable", submit.changed_fields),
    RuleRef("job-kinds", request_rules.rule_job_kinds),
    RuleRef("job-never-runs", feasibility.never_runs),
    RuleRef("job-nodes", feasibility.usable_nodes),
    RuleRef("job-plugins", kinds.plugins),
    RuleRef("job-waits-for", feasibility.waits_for),
    RuleRef("network-topology", classes.topology_errors),
    RuleRef("placement", request_rules.rule_placement),
    RuleRef("pod-identity", request_rules.rule_pod_identity),
    RuleRef("sla-wait-by-class", classes.sla_setting_errors),
    RuleRef("sla-waiting-time", sla.waiting_seconds),
    RuleRef("spot-price", request_rules.rule_spot_price),
    RuleRef("tenant-namespace-live", throttle.unknown_namespace_errors),
    RuleRef("throttle-can-help", large_job.cannot_help),
    RuleRef("throttle-engage", throttle.engage),
    RuleRef("throttle-large-job", large_job.large_jobs),
    RuleRef("throttle-reconcile", throttle.reconcile),
    RuleRef("throttle-state", throttle.plan_namespace),
    RuleRef("throttle-trigger", large_job.podgroup_waits),
)
