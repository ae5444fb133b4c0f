# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule disruption-count: the counts the platform keeps on the Queues are the ones
kube-state-metrics exports and the platform-disruptions alerts read; each alert carries the
tenant (its alert route) and the cause. promtool tests the expressions themselves
(tests/unit/promtool/disruptions.test.yml)."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common import names
from ansible_collections.gpucloud.platform.plugins.module_utils.observability import (
    disruptions,
    kube_state_metrics,
    rules,
)


def queue_metrics():
    config = kube_state_metrics.ksm_custom_resource_state()
    (queue,) = (r for r in config["spec"]["resources"] if r["groupVersionKind"]["kind"] == "Queue")
    return {queue["metricNamePrefix"] + "_" + m["name"]: m for m in queue["metrics"]}


@pytest.mark.parametrize(
    ("metric", "annotation"),
    [
        (kube_state_metrics.SPOT_RECLAIMED_JOBS, names.ANNOTATION_SPOT_RECLAIMED),
        (kube_state_metrics.ARBITER_EVICTED_JOBS, names.ANNOTATION_ARBITER_EVICTED),
        (
            kube_state_metrics.GPU_QUARANTINE_DISRUPTED_JOBS,
            names.ANNOTATION_GPU_QUARANTINE_DISRUPTED,
        ),
    ],
)
def test_each_count_is_exported_from_the_annotation_the_platform_writes(metric, annotation):
    exported = queue_metrics()[metric]
    assert exported["each"] == {
        "type": "Gauge",
        "gauge": {"path": ["metadata", "annotations", annotation], "nilIsZero": True},
    }


def test_the_stdlib_copies_are_the_shared_names():
    assert kube_state_metrics.ANNOTATION_ARBITER_EVICTED == names.ANNOTATION_ARBITER_EVICTED
    assert (
        kube_state_metrics.ANNOTATION_GPU_QUARANTINE_DISRUPTED
        == names.ANNOTATION_GPU_QUARANTINE_DISRUPTED
    )
    assert disruptions.TAINT_GPU_UNHEALTHY == names.TAINT_GPU_UNHEALTHY


def test_every_alert_is_a_warning_and_each_cause_names_its_tenant():
    (group,) = (g for g in rules.rule_groups() if g["name"] == disruptions.DISRUPTIONS_GROUP)
    alerts = {r["alert"]: r for r in group["rules"]}
    assert set(alerts) == {*disruptions.CAUSES, "GpuNodeQuarantined"}
    assert all(r["labels"]["severity"] == "warning" for r in alerts.values())
    for name, (cause, metric, _selector, _what) in disruptions.CAUSES.items():
        assert alerts[name]["labels"]["cause"] == cause
        assert metric in alerts[name]["expr"]
        assert alerts[name]["expr"].startswith("sum by (tenant, queue) (")
        assert "{{ $labels.tenant }}" in alerts[name]["annotations"]["summary"]
    assert 'queue_type="spot"' in alerts["SpotJobsReclaimed"]["expr"]
    assert names.TAINT_GPU_UNHEALTHY in alerts["GpuNodeQuarantined"]["expr"]
