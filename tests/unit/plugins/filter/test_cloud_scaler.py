# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cloud scaler filters: one parameter mapping renders either path; bad input names the
field, the value and the rule."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.filter import cloud_scaler
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid import scale

ROOT = Path(__file__).resolve().parents[4]
PARAMS = {
    "name": "virtual-kubelet-cloud",
    "namespace": "virtual-kubelet",
    "target_deployment": "virtual-kubelet-cloud",
    "queue": "tenant-acme-payg",
    "prometheus_url": "http://kube-prometheus-stack-prometheus.monitoring.svc:9090",
}


def test_the_filters_are_registered_and_documented():
    filters = cloud_scaler.FilterModule().filters()
    assert filters == {
        "keda_scaled_object": cloud_scaler.keda_scaled_object,
        "external_hpa": cloud_scaler.external_hpa,
        "prometheus_adapter_rule": cloud_scaler.prometheus_adapter_rule,
        "scale_signal_errors": cloud_scaler.scale_signal_errors,
    }
    for name in filters:
        doc = yaml.safe_load((ROOT / "plugins" / "filter" / f"{name}.yml").read_text())
        assert doc["DOCUMENTATION"]["name"] == name


def test_one_mapping_renders_each_path():
    assert cloud_scaler.keda_scaled_object(PARAMS) == scale.keda_scaled_object(**PARAMS)
    hpa_params = {k: v for k, v in PARAMS.items() if k != "prometheus_url"}
    assert cloud_scaler.external_hpa(PARAMS) == scale.external_hpa(**hpa_params)
    assert cloud_scaler.external_hpa(hpa_params) == scale.external_hpa(**hpa_params)
    assert cloud_scaler.prometheus_adapter_rule(PARAMS) == scale.prometheus_adapter_rule()


def test_numbers_pass_through():
    params = {**PARAMS, "threshold_seconds": 600, "max_replicas": 8}
    spec = cloud_scaler.external_hpa(params)["spec"]
    assert spec["maxReplicas"] == 8
    assert spec["metrics"][0]["external"]["target"]["averageValue"] == "600"


def test_bad_input_fails_naming_the_filter_field_value_and_rule():
    with pytest.raises(AnsibleFilterError) as caught:
        cloud_scaler.keda_scaled_object({**PARAMS, "prometheus_url": "prom", "min_replicas": 30})
    assert str(caught.value) == (
        "keda_scaled_object: prometheus_url: 'prom' is not an http(s) URL with a host; for example "
        "http://kube-prometheus-stack-prometheus.monitoring.svc:9090 (rule scale-signal-inputs); "
        "min_replicas: 30 exceeds max_replicas 20 (rule scale-signal-inputs)"
    )
    with pytest.raises(
        AnsibleFilterError, match=r"^keda_scaled_object: prometheus_url: is required"
    ):
        cloud_scaler.keda_scaled_object({k: v for k, v in PARAMS.items() if k != "prometheus_url"})
    with pytest.raises(AnsibleFilterError, match=r"^external_hpa: params: 'x' must be a mapping"):
        cloud_scaler.external_hpa("x")
    with pytest.raises(AnsibleFilterError, match=r"^prometheus_adapter_rule: queue: is required"):
        cloud_scaler.prometheus_adapter_rule({k: v for k, v in PARAMS.items() if k != "queue"})


def test_scale_signal_errors_lists_messages():
    assert cloud_scaler.scale_signal_errors(PARAMS, url_required=True) == []
    assert cloud_scaler.scale_signal_errors({**PARAMS, "cooldown_seconds": 0}) == [
        "cooldown_seconds: 0 must be a whole number of seconds, from 1 to 3600 "
        "(rule scale-signal-inputs)"
    ]
    hpa_params = {k: v for k, v in PARAMS.items() if k != "prometheus_url"}
    assert cloud_scaler.scale_signal_errors(hpa_params) == []
    assert cloud_scaler.scale_signal_errors(hpa_params, url_required=True) == [
        "prometheus_url: is required: KEDA queries Prometheus (rule scale-signal-inputs)"
    ]
    with pytest.raises(AnsibleFilterError, match="url_required: 'yes' must be true or false"):
        cloud_scaler.scale_signal_errors(PARAMS, url_required="yes")
