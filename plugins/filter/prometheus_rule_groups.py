# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The prometheus_rule_groups filter: the platform's Prometheus rule groups; and
kube_state_metrics_values: what kube-state-metrics must export for them."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.module_utils.observability.alert_rules import (
    threshold_errors,
    thresholds_of,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.observability.heartbeats import (
    period_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.observability.kube_state_metrics import (
    ksm_chart_values,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.observability.metering_rules import (
    DEFAULT_VGPU_GPU_MEMORY_MIB,
    interval_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.observability.rules import (
    rule_groups,
)


def prometheus_rule_groups(
    thresholds: Any = None,
    metering_interval: Any = None,
    vgpu_gpu_memory_mib: Any = None,
    reconcile_periods: Any = None,
) -> list[dict[str, Any]]:
    """The ``groups`` of the platform's rules with these alert thresholds, the metering
    group evaluated every ``metering_interval`` (the ledger's resolution), a vGPU counted by
    its share of ``vgpu_gpu_memory_mib`` (one shared GPU's memory), the scheduled playbooks'
    heartbeats late after a few of ``reconcile_periods`` (minutes, over the defaults)."""
    values = {} if thresholds is None else thresholds
    periods = {} if reconcile_periods is None else reconcile_periods
    errors = (
        threshold_errors(values)
        + interval_errors(metering_interval or None)
        + period_errors(periods)
    )
    memory = (
        DEFAULT_VGPU_GPU_MEMORY_MIB if vgpu_gpu_memory_mib in (None, "") else vgpu_gpu_memory_mib
    )
    if isinstance(memory, bool) or not isinstance(memory, int) or memory < 1:
        errors.append(f"vgpu_gpu_memory_mib: {memory!r} is not a whole number of MiB, 1 or more")
    if errors:
        raise AnsibleFilterError("prometheus_rule_groups: " + "; ".join(errors))
    return rule_groups(thresholds_of(values), metering_interval or None, memory, periods)


def kube_state_metrics_values(_unused: Any = None) -> dict[str, Any]:
    """The kube-state-metrics chart values the rules need (allow-lists, the Queues'
    reclaim counts, their RBAC)."""
    return ksm_chart_values()


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "prometheus_rule_groups": prometheus_rule_groups,
            "kube_state_metrics_values": kube_state_metrics_values,
        }
