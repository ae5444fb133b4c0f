# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cloud pool's scaler (rules scale-signal, scale-signal-inputs), and the examples in
docs/examples/cloud-scaler/ that it renders."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid import scale
from ansible_collections.gpucloud.platform.plugins.module_utils.observability import (
    alert_rules,
    rules,
)

ROOT = Path(__file__).resolve().parents[5]
EXAMPLES = ROOT / "docs" / "examples" / "cloud-scaler"
PROMTOOL_TEST = ROOT / "tests" / "unit" / "promtool" / "hybrid.test.yml"

# The design's pool: the Virtual Kubelet Deployment, a pay-as-you-go queue that may burst.
DESIGN = {
    "name": "virtual-kubelet-cloud",
    "namespace": "virtual-kubelet",
    "target_deployment": "virtual-kubelet-cloud",
    "queue": "tenant-acme-payg",
    "prometheus_url": "http://kube-prometheus-stack-prometheus.monitoring.svc:9090",
}
HPA_DESIGN = {k: v for k, v in DESIGN.items() if k != "prometheus_url"}


def rendered() -> dict[str, object]:
    """Each example file and what the builders make of the design's parameters."""
    return {
        "keda-scaledobject.yml": scale.keda_scaled_object(**DESIGN),
        "hpa-external.yml": scale.external_hpa(**HPA_DESIGN),
        "prometheus-adapter-rules.yml": {"externalRules": [scale.prometheus_adapter_rule()]},
    }


def behavior(scaled_object: dict) -> dict:
    return scaled_object["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]


@pytest.mark.parametrize("filename", sorted(rendered()))
def test_the_examples_are_what_the_builders_render(filename):
    expected = rendered()[filename]
    text = (EXAMPLES / filename).read_text()
    assert text.startswith("---\n")
    assert yaml.safe_load(text) == expected, (
        f"docs/examples/cloud-scaler/{filename} drifted from the builder; it should read:\n"
        + yaml.safe_dump(expected, sort_keys=False)
    )


def test_the_keda_scaled_object_has_the_designs_numbers():
    obj = scale.keda_scaled_object(**DESIGN)
    assert (obj["apiVersion"], obj["kind"]) == ("keda.sh/v1alpha1", "ScaledObject")
    assert obj["metadata"]["labels"] == {"platform.io/managed-by": "gpucloud-platform"}
    spec = obj["spec"]
    assert spec["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "virtual-kubelet-cloud",
    }
    replicas = (spec["minReplicaCount"], spec["maxReplicaCount"], spec["cooldownPeriod"])
    assert replicas == (0, 20, 600)
    assert behavior(obj) == {
        "scaleDown": {
            "stabilizationWindowSeconds": 600,
            "policies": [{"type": "Percent", "value": 10, "periodSeconds": 60}],
        }
    }
    (trigger,) = spec["triggers"]
    assert trigger["type"] == "prometheus"
    assert trigger["metricType"] == "AverageValue"
    # KEDA reads every metadata value as a string.
    assert all(isinstance(v, str) for v in trigger["metadata"].values())
    assert trigger["metadata"] == {
        "serverAddress": "http://kube-prometheus-stack-prometheus.monitoring.svc:9090",
        "query": 'max(platform:queue_oldest_pending_job:age_seconds{queue="tenant-acme-payg"})',
        "threshold": "300",
        "activationThreshold": "300",
        "ignoreNullValues": "true",
    }


def test_the_query_reads_the_recording_rule_not_the_designs_metric():
    query = scale.oldest_pending_query("tenant-acme-payg")
    assert alert_rules.QUEUE_OLDEST_PENDING in query
    assert "volcano_queue_pending_jobs_duration_seconds" not in query
    recorded = [r.get("record") for g in rules.rule_groups() for r in g["rules"]]
    assert alert_rules.QUEUE_OLDEST_PENDING in recorded
    assert alert_rules.QUEUE_DEPTH in recorded  # prometheus-adapter discovers the metric through it


def test_the_promtool_test_asserts_the_scalers_own_query():
    """hybrid.test.yml evaluates the KEDA query, with the threshold, on Volcano's series."""
    exprs = [
        t["expr"]
        for case in yaml.safe_load(PROMTOOL_TEST.read_text())["tests"]
        for t in case["promql_expr_test"]
    ]
    query = scale.oldest_pending_query(DESIGN["queue"])
    assert query in exprs
    assert f"{query} > {scale.DEFAULT_THRESHOLD_SECONDS}" in exprs


def test_a_trailing_slash_of_the_url_is_dropped():
    obj = scale.keda_scaled_object(**{**DESIGN, "prometheus_url": "https://prom.example:9090/"})
    assert obj["spec"]["triggers"][0]["metadata"]["serverAddress"] == "https://prom.example:9090"


def test_the_hpa_has_the_designs_numbers():
    hpa = scale.external_hpa(**HPA_DESIGN)
    assert (hpa["apiVersion"], hpa["kind"]) == ("autoscaling/v2", "HorizontalPodAutoscaler")
    spec = hpa["spec"]
    assert (spec["minReplicas"], spec["maxReplicas"]) == (0, 20)
    assert spec["metrics"] == [
        {
            "type": "External",
            "external": {
                "metric": {
                    "name": "platform_queue_oldest_pending_job_age_seconds",
                    "selector": {"matchLabels": {"queue": "tenant-acme-payg"}},
                },
                "target": {"type": "AverageValue", "averageValue": "300"},
            },
        }
    ]
    assert spec["behavior"] == behavior(scale.keda_scaled_object(**DESIGN))


def test_the_adapter_rule_serves_the_metric_the_hpa_asks_for():
    rule = scale.prometheus_adapter_rule()
    assert set(rule) == {"seriesQuery", "resources", "name", "metricsQuery"}
    assert rule["resources"] == {"namespaced": False}
    (metric,) = scale.external_hpa(**HPA_DESIGN)["spec"]["metrics"]
    assert rule["name"]["as"] == metric["external"]["metric"]["name"]
    # Discovery: a series that exists for every queue; the name pattern matches it.
    assert rule["seriesQuery"] == alert_rules.QUEUE_DEPTH
    assert rule["name"]["matches"] == "^platform:queue_depth:jobs$"
    # The query: the recording rule itself, the HPA's selector, 0 when nothing waits.
    assert rule["metricsQuery"] == (
        "max(platform:queue_oldest_pending_job:age_seconds{<<.LabelMatchers>>}) or vector(0)"
    )
    assert "<<.Series>>" not in rule["metricsQuery"]


def test_other_numbers_reach_the_manifests():
    obj = scale.keda_scaled_object(
        **DESIGN, threshold_seconds=120, cooldown_seconds=900, min_replicas=1, max_replicas=5
    )
    spec = obj["spec"]
    assert (spec["minReplicaCount"], spec["maxReplicaCount"], spec["cooldownPeriod"]) == (1, 5, 900)
    assert spec["triggers"][0]["metadata"]["threshold"] == "120"
    assert behavior(obj)["scaleDown"]["stabilizationWindowSeconds"] == 900


def test_valid_parameters_break_no_rule():
    assert scale.scale_signal_errors(DESIGN, url_required=True) == []
    assert scale.scale_signal_errors(HPA_DESIGN) == []
    assert scale.scale_signal_errors({**HPA_DESIGN, "min_replicas": 3, "max_replicas": 3}) == []


def messages(params: object, **kw: bool) -> list[str]:
    return [str(e) for e in scale.scale_signal_errors(params, **kw)]


def test_each_broken_rule_names_the_field_the_value_and_the_rule():
    bad = {
        "name": "Virtual_Kubelet",
        "namespace": "vk.system",
        "target_deployment": "",
        "queue": 'payg"}',
        "prometheus_url": "prometheus:9090",
        "threshold_seconds": 0,
        "cooldown_seconds": 3601,
        "min_replicas": -1,
        "max_replicas": True,
    }
    assert messages(bad) == [
        "name: 'Virtual_Kubelet' is not a DNS-1123 subdomain (lower-case letters, digits, '-' and "
        "'.', each part starting and ending with a letter or digit) (rule scale-signal-inputs)",
        "target_deployment: '' must be a non-empty string (a DNS-1123 subdomain) "
        "(rule scale-signal-inputs)",
        "namespace: 'vk.system' is not a DNS-1123 label (lower-case letters, digits and '-', "
        "starting and ending with a letter or digit) (rule scale-signal-inputs)",
        "queue: 'payg\"}' is not a DNS-1123 label (lower-case letters, digits and '-', "
        "starting and ending with a letter or digit) (rule scale-signal-inputs)",
        "prometheus_url: 'prometheus:9090' is not an http(s) URL with a host; for example "
        "http://kube-prometheus-stack-prometheus.monitoring.svc:9090 (rule scale-signal-inputs)",
        "threshold_seconds: 0 must be a whole number of seconds, 1 or more "
        "(rule scale-signal-inputs)",
        "cooldown_seconds: 3601 must be a whole number of seconds, from 1 to 3600 "
        "(rule scale-signal-inputs)",
        "min_replicas: -1 must be a whole number of replicas, 0 or more (rule scale-signal-inputs)",
        "max_replicas: True must be a whole number of replicas, 1 or more "
        "(rule scale-signal-inputs)",
    ]


def test_min_above_max_is_refused():
    assert messages({**HPA_DESIGN, "min_replicas": 5, "max_replicas": 2}) == [
        "min_replicas: 5 exceeds max_replicas 2 (rule scale-signal-inputs)"
    ]
    # the default max (20) counts
    assert messages({**HPA_DESIGN, "min_replicas": 21}) == [
        "min_replicas: 21 exceeds max_replicas 20 (rule scale-signal-inputs)"
    ]


def test_missing_unknown_and_misspelt_parameters():
    assert messages({"name": "vk", "treshold_seconds": 300, "size": 3}, url_required=True) == [
        "treshold_seconds: is not a parameter of the scaler; did you mean threshold_seconds? "
        "(rule scale-signal-inputs)",
        "size: is not a parameter of the scaler; known: name, namespace, target_deployment, "
        "queue, prometheus_url, threshold_seconds, cooldown_seconds, min_replicas, max_replicas "
        "(rule scale-signal-inputs)",
        "namespace: is required (rule scale-signal-inputs)",
        "target_deployment: is required (rule scale-signal-inputs)",
        "queue: is required (rule scale-signal-inputs)",
        "prometheus_url: is required: KEDA queries Prometheus (rule scale-signal-inputs)",
    ]
    assert messages(["vk"]) == [
        "params: ['vk'] must be a mapping of name, namespace, target_deployment, queue, "
        "prometheus_url, threshold_seconds, cooldown_seconds, min_replicas, max_replicas "
        "(rule scale-signal-inputs)"
    ]


@pytest.mark.parametrize(
    "url",
    ["ftp://prom:9090", "http://", "http://prom:9090/?x=1", "http://prom:9090#top", 9090, None],
)
def test_a_url_that_keda_cannot_use_is_refused(url):
    (message,) = messages({**DESIGN, "prometheus_url": url})
    assert message.startswith(f"prometheus_url: {url!r} ")
    assert message.endswith("(rule scale-signal-inputs)")


def test_the_builders_refuse_bad_input_before_building():
    with pytest.raises(PlatformValidationError) as caught:
        scale.keda_scaled_object(**{**DESIGN, "threshold_seconds": "300"})
    assert caught.value.messages == [
        "threshold_seconds: '300' must be a whole number of seconds, 1 or more "
        "(rule scale-signal-inputs)"
    ]
    with pytest.raises(PlatformValidationError, match="max_replicas: 0 must be"):
        scale.external_hpa(**HPA_DESIGN, max_replicas=0)


@given(
    low=st.integers(min_value=-3, max_value=30),
    high=st.integers(min_value=-3, max_value=30),
    threshold=st.integers(min_value=-5, max_value=5000),
)
def test_replica_bounds_and_threshold_are_accepted_exactly_when_in_range(low, high, threshold):
    params = {**HPA_DESIGN, "min_replicas": low, "max_replicas": high}
    params["threshold_seconds"] = threshold
    valid = 0 <= low <= high and high >= 1 and threshold >= 1
    assert (scale.scale_signal_errors(params) == []) == valid
    if valid:
        spec = scale.external_hpa(**params)["spec"]
        assert (spec["minReplicas"], spec["maxReplicas"]) == (low, high)
        assert spec["metrics"][0]["external"]["target"]["averageValue"] == str(threshold)
