# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules as code: their thresholds, names and the filter that exposes them."""

from __future__ import annotations

import re
from dataclasses import asdict
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.filter.prometheus_rule_groups import (
    prometheus_rule_groups,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common import names
from ansible_collections.gpucloud.platform.plugins.module_utils.observability import (
    alert_rules,
    inference_rules,
    kube_state_metrics,
    metering_rules,
    rules,
)

ROOT = Path(__file__).resolve().parents[5]
ROLE_DEFAULTS = ROOT / "roles" / "monitoring" / "defaults" / "main.yml"


def record(name):
    (found,) = (r for g in rules.rule_groups() for r in g["rules"] if r.get("record") == name)
    return found


def test_the_builders_defaults_are_the_roles_defaults():
    defaults = yaml.safe_load(ROLE_DEFAULTS.read_text())
    for name, value in asdict(alert_rules.Thresholds()).items():
        assert defaults[f"monitoring_alert_{name}"] == value, name
        assert defaults["monitoring_alert_thresholds"][name] == "{{ monitoring_alert_%s }}" % name


def test_every_rule_name_is_unique_and_namespaced():
    names = rules.rule_names(rules.rule_groups())
    assert len(names) == len(set(names))
    for name in names:
        assert name.startswith("platform:") or name[0].isupper(), name


def test_thresholds_reach_the_alerts():
    groups = rules.rule_groups(
        alert_rules.thresholds_of({"gpu_temperature_celsius": 83, "queue_starving_minutes": 4})
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
    assert raw and all(e.endswith(f"/ {alert_rules.VOLCANO_MILLI}") for e in raw)


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
    assert message in alert_rules.threshold_errors(values)
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
        "platform-reconcile",
        "platform-disruptions",
        "platform-inference",
    ]


def resource(kind):
    (found,) = (
        r
        for r in kube_state_metrics.ksm_custom_resource_state()["spec"]["resources"]
        if r["groupVersionKind"]["kind"] == kind
    )
    return found


def metric(res, name):
    (found,) = (m for m in res["metrics"] if m["name"] == name)
    return found


def test_the_reclaim_count_is_read_from_the_annotation_the_spot_reclaim_writes():
    # rules.py is stdlib only (the local cluster loads it by path), so it names the
    # annotation itself; it must be the one rule spot-reclaim-count writes.
    assert kube_state_metrics.ANNOTATION_SPOT_RECLAIMED == names.ANNOTATION_SPOT_RECLAIMED
    queue = resource("Queue")
    reclaimed = metric(queue, "spot_reclaimed_jobs")
    assert (
        queue["metricNamePrefix"] + "_" + reclaimed["name"]
        == kube_state_metrics.SPOT_RECLAIMED_JOBS
    )
    assert reclaimed["each"]["gauge"]["path"][-1] == names.ANNOTATION_SPOT_RECLAIMED
    spot = record(alert_rules.SPOT_RECLAIMS_1H)
    assert kube_state_metrics.SPOT_RECLAIMED_JOBS in spot["expr"]


def test_a_queues_tenant_type_and_size_come_from_the_queue():
    """Rule billing-follows-queue: platform_queue_info is the Queue's own labels, and
    platform_queue_capability_gpus its GPU capability, the size of a subscription over
    time (0 without one)."""
    queue = resource("Queue")
    assert queue["groupVersionKind"] == {
        "group": "scheduling.volcano.sh",
        "version": "v1beta1",
        "kind": "Queue",
    }
    assert queue["labelsFromPath"] == {
        "queue": ["metadata", "name"],
        "tenant": ["metadata", "labels", names.LABEL_TENANT],
        "queue_type": ["metadata", "labels", names.LABEL_QUEUE_TYPE],
    }
    info = metric(queue, "info")
    assert queue["metricNamePrefix"] + "_" + info["name"] == kube_state_metrics.QUEUE_INFO
    # an Info metric's own label paths are ones every Queue has, or it is left out
    assert info["each"] == {
        "type": "Info",
        "info": {"labelsFromPath": {"name": ["metadata", "name"]}},
    }
    capability = metric(queue, "capability_gpus")
    assert (
        queue["metricNamePrefix"] + "_" + capability["name"]
        == kube_state_metrics.QUEUE_CAPABILITY_GPUS
    )
    assert capability["each"] == {
        "type": "Gauge",
        "gauge": {
            "path": ["spec", "capability", alert_rules.GPU_RESOURCE_VOLCANO],
            "nilIsZero": True,
        },
    }
    assert (
        kube_state_metrics.QUEUE_CAPABILITY_GPUS
        in record(metering_rules.TENANT_SUBSCRIPTION)["expr"]
    )
    assert kube_state_metrics.QUEUE_INFO in record(metering_rules.QUEUE_BILLING)["expr"]


def test_a_jobs_bid_comes_from_the_volcano_job():
    job = resource("Job")
    assert job["groupVersionKind"]["group"] == "batch.volcano.sh"
    assert job["labelsFromPath"] == {
        "namespace": ["metadata", "namespace"],
        "job_name": ["metadata", "name"],
        "queue": ["spec", "queue"],
    }
    info = metric(job, "info")
    assert job["metricNamePrefix"] + "_" + info["name"] == kube_state_metrics.VCJOB_INFO
    assert kube_state_metrics.ANNOTATION_SPOT_PRICE == names.ANNOTATION_SPOT_PRICE
    assert info["each"]["info"]["labelsFromPath"] == {
        "spot_price": ["metadata", "annotations", names.ANNOTATION_SPOT_PRICE]
    }


def test_the_allow_lists_as_kube_state_metrics_flags():
    assert kube_state_metrics.ksm_labels_allowlist() == (
        "pods=[platform.io/tenant,platform.io/billing-type,platform.io/job-class,"
        "volcano.sh/job-name,volcano.sh/queue-name],"
        "namespaces=[platform.io/tenant],nodes=[platform.io/node-location]"
    )
    assert kube_state_metrics.ksm_labels_allowlist() == ",".join(
        kube_state_metrics.ksm_labels_allowlist_entries()
    )
    assert kube_state_metrics.ksm_annotations_allowlist() == (
        "pods=[platform.io/spot-price,scheduling.volcano.sh/queue-name]"
    )


def allow_listed(entries):
    """kube-state-metrics' series labels for ``kind=[key,...]`` entries: kind -> names."""
    out = {}
    for entry in entries:
        kind, keys = entry.split("=", 1)
        out[kind] = {re.sub(r"[^a-zA-Z0-9_]", "_", k) for k in keys.strip("[]").split(",")}
    return out


def metering_exprs():
    (group,) = (g for g in rules.rule_groups() if g["name"] == metering_rules.METERING_GROUP)
    return [r["expr"] for r in group["rules"]]


@pytest.mark.parametrize(
    ("series", "kind", "prefix"),
    [
        ("kube_pod_labels", "pods", "label_"),
        ("kube_namespace_labels", "namespaces", "label_"),
        ("kube_node_labels", "nodes", "label_"),
        ("kube_pod_annotations", "pods", "annotation_"),
    ],
)
def test_every_label_the_metering_rules_read_is_allow_listed(series, kind, prefix):
    """A label kube-state-metrics does not export would silently bill nothing."""
    entries = (
        [kube_state_metrics.ksm_annotations_allowlist()]
        if prefix == "annotation_"
        else kube_state_metrics.ksm_labels_allowlist_entries()
    )
    exported = allow_listed(entries)[kind]
    # a label belongs to the kube-state-metrics series named last before it
    read = set()
    for expr in metering_exprs():
        for label in re.finditer(rf"\b{prefix}(?!replace\b)\w+", expr):
            named = re.findall(r"kube_\w+_(?:labels|annotations)\b", expr[: label.start()])
            if named and named[-1] == series:
                read.add(label.group().removeprefix(prefix))
    assert read and read <= exported, read - exported


def test_no_metering_rule_reads_what_a_tenant_writes_on_its_pods():
    """Rule billing-follows-queue: tenant and billing type are the Queue's."""
    exprs = metering_exprs()
    assert not any("label_platform_io_billing_type" in e for e in exprs)
    tenant_label = [e for e in exprs if "label_platform_io_tenant" in e]
    assert tenant_label == [record(metering_rules.NAMESPACE_TENANT)["expr"]]
    assert "kube_pod_labels" not in tenant_label[0]


def test_the_chart_values_allow_list_what_the_rules_read():
    values = kube_state_metrics.ksm_chart_values()
    assert values["metricLabelsAllowlist"] == kube_state_metrics.ksm_labels_allowlist_entries()
    assert values["metricAnnotationsAllowList"] == [kube_state_metrics.ksm_annotations_allowlist()]
    assert values["customResourceState"] == {
        "enabled": True,
        "config": kube_state_metrics.ksm_custom_resource_state(),
    }
    grants = {
        (group, res): rule["verbs"]
        for rule in values["rbac"]["extraRules"]
        for group in rule["apiGroups"]
        for res in rule["resources"]
    }
    assert grants[("scheduling.volcano.sh", "queues")] == ["list", "watch"]
    assert grants[("batch.volcano.sh", "jobs")] == ["list", "watch"]
    assert ("apiextensions.k8s.io", "customresourcedefinitions") in grants


def test_every_queue_type_bills_as_a_billing_type():
    """Rule billing-type-of-queue: a team queue is a part of the subscription, burst is
    pay-as-you-go cloud quota."""
    # rules.py keeps a stdlib-only copy of the one map (common/names.py)
    assert metering_rules.BILLING_TYPE_OF_QUEUE_TYPE == names.BILLING_TYPE_OF_QUEUE_TYPE
    assert set(metering_rules.BILLING_TYPE_OF_QUEUE_TYPE) == {
        *names.QUEUE_TYPES,
        names.QUEUE_TYPE_BURST,
    }
    assert set(metering_rules.BILLING_TYPE_OF_QUEUE_TYPE.values()) <= set(names.BILLING_TYPES)
    assert metering_rules.BILLING_TYPE_OF_QUEUE_TYPE["team"] == "subscription"
    assert metering_rules.BILLING_TYPE_OF_QUEUE_TYPE["burst"] == "payg"
    assert metering_rules.CLOUD_LOCATION in names.NODE_LOCATIONS


def test_a_metering_rule_reads_only_the_rules_recorded_before_it():
    """The group is evaluated in order: a rule reading a later one would read the value of
    the evaluation before, a resolution late."""
    (group,) = (g for g in rules.rule_groups() if g["name"] == metering_rules.METERING_GROUP)
    recorded = [r["record"] for r in group["rules"]]
    for index, rule in enumerate(group["rules"]):
        read = set(re.findall(r"platform:\w+:\w+", rule["expr"])) & set(recorded)
        assert read <= set(recorded[:index]), (rule["record"], read - set(recorded[:index]))


def test_usage_report_reads_rules_of_the_group_whose_interval_it_reads():
    """Rule metering-resolution: the interval usage_report reads is the group's that records
    TENANT_BILLING_GPUS; the other rules it reads must be evaluated at it too."""
    (group,) = (g for g in rules.rule_groups() if g["name"] == metering_rules.METERING_GROUP)
    recorded = {r["record"] for r in group["rules"]}
    read = {
        metering_rules.TENANT_BILLING_GPUS,
        metering_rules.JOB_GPUS,
        metering_rules.TENANT_SUBSCRIPTION,
        metering_rules.UNCLAIMED_POD_GPUS,
    }
    assert read <= recorded


def test_the_metering_interval_is_the_metering_groups_alone():
    groups = rules.rule_groups(None, "15s")
    assert list(groups[1]) == ["name", "interval", "rules"]
    assert groups[1]["name"] == metering_rules.METERING_GROUP and groups[1]["interval"] == "15s"
    assert [g for g in groups if "interval" in g] == [groups[1]]
    assert all("interval" not in g for g in rules.rule_groups())  # Prometheus's global one
    assert groups[1]["rules"] == metering_rules.metering_rules()


@pytest.mark.parametrize("interval", [None, "30s", "1m", "500ms", "2h", "15s"])
def test_a_metering_interval_of_one_unit_is_accepted(interval):
    assert metering_rules.interval_errors(interval) == []


@pytest.mark.parametrize("interval", ["30", "0s", "1m30s", "-1m", "1d", " 30s", "30S", 30, 1.5])
def test_a_metering_interval_that_is_not_a_duration_is_named(interval):
    assert metering_rules.interval_errors(interval) == [
        f"metering_interval: {interval!r} is not a duration such as 30s or 1m"
    ]
    with pytest.raises(AnsibleFilterError, match="prometheus_rule_groups: metering_interval: "):
        prometheus_rule_groups(None, interval)


def test_the_filter_passes_the_metering_interval():
    assert prometheus_rule_groups({}, "1m") == rules.rule_groups(None, "1m")
    # an unset role variable arrives as an empty string: Prometheus's global interval
    assert prometheus_rule_groups({}, "") == rules.rule_groups()


def test_the_roles_default_metering_interval_is_one():
    defaults = yaml.safe_load(ROLE_DEFAULTS.read_text())
    assert defaults["monitoring_metering_interval"] == "{{ monitoring_scrape_interval }}"
    assert metering_rules.interval_errors(defaults["monitoring_scrape_interval"]) == []
    template = (ROOT / "roles/monitoring/templates/prometheusrule.yml.j2").read_text()
    assert (
        "prometheus_rule_groups(monitoring_metering_interval, monitoring_vgpu_gpu_memory_mib | int, "
        "monitoring_reconcile_periods_minutes)" in template
    )
    assert defaults["monitoring_vgpu_gpu_memory_mib"] == metering_rules.DEFAULT_VGPU_GPU_MEMORY_MIB


def inference_group():
    (group,) = (g for g in rules.rule_groups() if g["name"] == inference_rules.INFERENCE_GROUP)
    return group["rules"]


def test_inference_thresholds_reach_the_slo_alerts():
    groups = rules.rule_groups(
        alert_rules.thresholds_of({"inference_p99_seconds": "0.75", "inference_error_ratio": 0.01})
    )
    by_name = {r.get("alert") or r["record"]: r for g in groups for r in g["rules"]}
    assert by_name["InferenceLatencyHigh"]["expr"] == f"{inference_rules.LATENCY_P99} > 0.75"
    assert by_name["InferenceErrorsHigh"]["expr"] == f"{inference_rules.ERRORS_RATIO} > 0.01"
    defaults = {r["alert"]: r["expr"] for r in inference_group() if "alert" in r}
    assert defaults["InferenceLatencyHigh"].endswith("> 5")
    assert defaults["InferenceErrorsHigh"].endswith("> 0.05")


def test_every_inference_record_is_per_service_and_tenant():
    """The alerts carry ``tenant`` (routing) only if every record keeps it."""
    for rule in inference_group():
        if "record" not in rule:
            continue
        for by in re.findall(r"sum by \(([^)]*)\)", rule["expr"]):
            assert set(by.split(", ")) - {"le"} == {"namespace", "inferenceservice", "tenant"}, rule
    alerts = [r for r in inference_group() if "alert" in r]
    assert {a["alert"] for a in alerts} == {"InferenceLatencyHigh", "InferenceErrorsHigh"}
    assert all(a["labels"]["severity"] and a["expr"].startswith("platform:") for a in alerts)


def test_inference_records_come_before_the_alerts_that_read_them():
    order = [r.get("record") or r["alert"] for r in inference_group()]
    for index, rule in enumerate(inference_group()):
        read = set(re.findall(r"platform:\w+:\w+", rule["expr"]))
        assert read <= set(order[:index]), rule


def test_inference_rules_read_the_exporters_series_by_their_names():
    exprs = "\n".join(r["expr"] for r in inference_group())
    for series in inference_rules.EXPORTER_SERIES:
        assert series in exprs
    # KServe v0.20.0's kserve.metrics: the predict histogram, in seconds
    assert "request_predict_seconds_bucket" in exprs
    assert 'finished_reason="error"' in exprs
