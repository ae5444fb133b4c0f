# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The platform's Prometheus recording and alerting rules, as code: the groups of the rule
file. Pure and stdlib only (the local cluster loads the observability package by path).

One builder, ``rule_groups``, makes the ``groups`` of a Prometheus rule file: the
metering group (``metering_rules``), the GPU, queue and spot groups (``alert_rules``),
the reconcile heartbeats (``heartbeats``) and the inference group (``inference_rules``).
The monitoring role wraps them in the PrometheusRule ``gpucloud-platform``
(filter ``prometheus_rule_groups``), the local cluster's Prometheus loads the
same groups from a file, and ``tests/unit/promtool/`` tests every rule with
``promtool test rules`` on series named as the exporters name them.

Where the series come from (the names are the exporters' own):

* kube-state-metrics: ``kube_pod_container_resource_requests`` (resource
  ``nvidia_com_gpu``), ``kube_pod_status_phase``, ``kube_pod_labels`` and
  ``kube_pod_annotations`` (the platform's labels and the spot price must be
  allow-listed: ``kube_state_metrics.KSM_LABELS_ALLOWLIST`` and
  ``KSM_ANNOTATIONS_ALLOWLIST``),
  ``kube_node_status_allocatable``;
* vc-scheduler: ``volcano_queue_*_scalar_resources`` (rule gpu-milli-units),
  ``volcano_e2e_job_scheduling_*``, ``volcano_e2e_scheduling_latency_milliseconds``;
* vc-controller-manager: ``volcano_queue_pod_group_*_count``,
  ``volcano_job_{completed,failed}_phase_count``;
* dcgm-exporter (4.x labels: ``hostname``, ``gpu``, ``namespace``, ``pod``):
  ``DCGM_FI_DEV_*``;
* KServe's model servers and vLLM (``inference_rules``): ``request_predict_seconds``,
  ``vllm:e2e_request_latency_seconds``, ``vllm:request_success_total``;
* kube-state-metrics' custom resource state
  (``kube_state_metrics.ksm_custom_resource_state``):
  ``platform_queue_spot_reclaimed_jobs``, each spot Queue's count of reclaimed
  jobs (the annotation rule spot-reclaim-count keeps), and each Queue's counts of jobs
  the arbiter evicted and a GPU quarantine stopped (``disruptions``); kube-state-metrics'
  ``kube_node_spec_taint`` (a quarantined GPU node).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .alert_rules import Thresholds, gpu_rules, queue_rules, spot_rules
from .disruptions import DISRUPTIONS_GROUP, disruption_rules
from .heartbeats import heartbeat_rules
from .inference_rules import INFERENCE_GROUP, inference_rules
from .metering_rules import DEFAULT_VGPU_GPU_MEMORY_MIB, METERING_GROUP, metering_rules


def rule_groups(
    t: Thresholds | None = None,
    metering_interval: str | None = None,
    vgpu_gpu_memory_mib: int = DEFAULT_VGPU_GPU_MEMORY_MIB,
    reconcile_periods: Mapping[str, int] | None = None,
) -> list[dict[str, Any]]:
    """The ``groups`` of the platform's rule file. ``metering_interval`` is the metering
    group's evaluation interval, the ledger's resolution (Prometheus's global evaluation
    interval when None); usage_report reads it back from Prometheus.
    ``vgpu_gpu_memory_mib`` is one shared GPU's memory (rule vgpu-metered-by-memory).
    ``reconcile_periods``: scheduled playbooks' periods in minutes over the defaults (rule
    reconcile-heartbeat)."""
    t = t or Thresholds()
    metering: dict[str, Any] = {"name": METERING_GROUP}
    if metering_interval:
        metering["interval"] = metering_interval
    metering["rules"] = metering_rules(vgpu_gpu_memory_mib)
    return [
        {"name": "platform-gpu", "rules": gpu_rules(t)},
        metering,
        {"name": "platform-queues", "rules": queue_rules(t)},
        {"name": "platform-spot", "rules": spot_rules(t)},
        {"name": "platform-reconcile", "rules": heartbeat_rules(reconcile_periods)},
        {"name": DISRUPTIONS_GROUP, "rules": disruption_rules()},
        {"name": INFERENCE_GROUP, "rules": inference_rules(t)},
    ]


def rule_names(groups: list[dict[str, Any]]) -> list[str]:
    """Every record and alert name, in order."""
    return [rule.get("record") or rule["alert"] for group in groups for rule in group["rules"]]
