# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules as code: their thresholds, names and the filter that exposes them."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.filter.prometheus_rule_groups import (
    prometheus_rule_groups,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.observability import rules

ROOT = Path(__file__).resolve().parents[5]
ROLE_DEFAULTS = ROOT / "roles" / "monitoring" / "defaults" / "main.yml"


def test_the_builders_defaults_are_the_roles_defaults():
    defaults = yaml.safe_load(ROLE_DEFAULTS.read_text())
    for name, value in asdict(rules.Thresholds()).items():
        assert defaults[f"monitoring_alert_{name}"] == value, name
        assert defaults["monitoring_alert_thresholds"][name] == "{{ monitoring_alert_%s }}" % name


def test_every_rule_name_is_unique_and_namespaced():
    names = rules.rule_names(rules.rule_groups())
    assert len(names) == len(set(names))
    for name in names:
        assert name.startswith("platform:") or name[0].isupper(), name


def test_thresholds_reach_the_alerts():
    groups = rules.rule_groups(
        rules.thresholds_of({"gpu_temperature_celsius": 83, "queue_starving_minutes": 4})
    )
    by_name = {r.get("alert") or r["record"]: r for g in groups for r in g["rules"]}
    assert by_name["GpuTemperatureHigh"]["expr"] == "DCGM_FI_DEV_GPU_TEMP > 83"
    assert by_name["QueueStarving"]["for"] == "4m"
    assert by_name["QueueWaitLong"]["expr"].endswith("> 1800")


def test_gpu_panels_and_rules_read_whole_gpus_from_volcano():
    """Rule gpu-milli-units: every read of Volcano's queue GPUs goes through the /1000 records."""
    dashboards = "".join(
        p.read_text() for p in (ROOT / "roles/monitoring/files/dashboards").glob("*.json")
    )
    assert "_scalar_resources" not in dashboards
    exprs = [r["expr"] for g in rules.rule_groups() for r in g["rules"]]
    raw = [e for e in exprs if "_scalar_resources" in e]
    assert raw and all(e.endswith(f"/ {rules.VOLCANO_MILLI}") for e in raw)


def test_dcgm_labels_are_the_4x_ones():
    texts = [ROOT / "roles/monitoring/files/dashboards/gpu.json"]
    assert all("Hostname" not in p.read_text() for p in texts)
    assert "Hostname" not in yaml.safe_dump(rules.rule_groups())


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"gpu_temprature_celsius": 80},
            "thresholds.gpu_temprature_celsius: not a threshold; did you mean gpu_temperature_celsius?",
        ),
        (
            {"gpu_memory_ratio": -0.1},
            "thresholds.gpu_memory_ratio: -0.1 must be a number, 0 or more",
        ),
        (
            {"queue_pending_jobs": True},
            "thresholds.queue_pending_jobs: True must be a number, 0 or more",
        ),
        (
            {"queue_pending_jobs": "ten"},
            "thresholds.queue_pending_jobs: 'ten' must be a number, 0 or more",
        ),
        (
            {"queue_pending_jobs": float("inf")},
            "thresholds.queue_pending_jobs: inf must be a number, 0 or more",
        ),
        (["x"], "thresholds: ['x'] must be a mapping of threshold name to number"),
    ],
)
def test_bad_thresholds_are_named(values, message):
    assert message in rules.threshold_errors(values)
    with pytest.raises(AnsibleFilterError, match="prometheus_rule_groups: "):
        prometheus_rule_groups(values)


def test_text_thresholds_are_numbers():
    """``-e monitoring_alert_gpu_temperature_celsius=80`` arrives as text."""
    groups = prometheus_rule_groups({"gpu_temperature_celsius": "80", "gpu_memory_ratio": "0.9"})
    exprs = [r["expr"] for r in groups[0]["rules"]]
    assert "DCGM_FI_DEV_GPU_TEMP > 80" in exprs
    assert any(e.endswith("> 0.9") for e in exprs)


def test_the_filter_gives_the_groups():
    assert prometheus_rule_groups() == rules.rule_groups()
    assert [g["name"] for g in prometheus_rule_groups({"gpu_watermark_ratio": 0.8})] == [
        "platform-gpu",
        "platform-metering",
        "platform-queues",
        "platform-spot",
    ]


def test_the_reclaim_count_is_read_from_the_annotation_the_spot_reclaim_writes():
    from ansible_collections.gpucloud.platform.plugins.module_utils.common import names

    # rules.py is stdlib only (the local cluster loads it by path), so it names the
    # annotation itself; it must be the one rule spot-reclaim-count writes.
    assert rules.ANNOTATION_SPOT_RECLAIMED == names.ANNOTATION_SPOT_RECLAIMED
    (queue,) = rules.ksm_custom_resource_state()["spec"]["resources"]
    (metric,) = queue["metrics"]
    assert queue["metricNamePrefix"] + "_" + metric["name"] == rules.SPOT_RECLAIMED_JOBS
    assert metric["each"]["gauge"]["path"][-1] == names.ANNOTATION_SPOT_RECLAIMED
    spot = next(
        r
        for g in rules.rule_groups()
        for r in g["rules"]
        if r.get("record") == rules.SPOT_RECLAIMS_1H
    )
    assert rules.SPOT_RECLAIMED_JOBS in spot["expr"]


def test_the_chart_values_allow_list_what_the_rules_read():
    values = rules.ksm_chart_values()
    assert values["metricLabelsAllowlist"] == [f"pods=[{','.join(rules.KSM_LABELS_ALLOWLIST)}]"]
    assert values["customResourceState"]["config"] == rules.ksm_custom_resource_state()
