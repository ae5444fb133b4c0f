# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The monitoring role's side of inference: the PodMonitor that scrapes KServe's predictors
and gives their series the labels the inference rules keep, and the inference dashboard,
which reads only those rules' records and the exporters' own series."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jinja2
import pytest
import yaml

from ansible_collections.gpucloud.platform.plugins.module_utils.common import names
from ansible_collections.gpucloud.platform.plugins.module_utils.inference import manifests
from ansible_collections.gpucloud.platform.plugins.module_utils.observability import (
    inference_rules,
    rules,
)

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "monitoring"
BOARD = ROLE / "files" / "dashboards" / "inference.json"


def render_monitors(inference: bool) -> list[dict]:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters["bool"] = bool
    text = env.from_string((ROLE / "templates" / "servicemonitors.yml.j2").read_text()).render(
        monitoring_namespace="monitoring",
        monitoring_volcano_namespace="volcano-system",
        monitoring_dcgm_namespace="gpu-monitoring",
        monitoring_scrape_interval="30s",
        monitoring_inference=inference,
    )
    return yaml.safe_load(text)


def pod_monitor() -> dict:
    (found,) = (m for m in render_monitors(True) if m["kind"] == "PodMonitor")
    return found


def relabel(labels: dict[str, str], relabelings: list[dict]) -> dict[str, str] | None:
    """Prometheus's relabelling (replace and keep, anchored regexes) of one target."""
    out = dict(labels)
    for step in relabelings:
        value = ";".join(out.get(s, "") for s in step["sourceLabels"])
        match = re.fullmatch(step.get("regex", "(.*)"), value)
        if step.get("action", "replace") == "keep":
            if not match:
                return None
            continue
        if match:
            replacement = step.get("replacement", "$1")
            out[step["targetLabel"]] = match.expand(re.sub(r"\$(\d)", r"\\\1", replacement))
    return out


def predictor_target(namespace: str, annotations: dict[str, str]) -> dict[str, str]:
    labels = {
        "__meta_kubernetes_namespace": namespace,
        "__meta_kubernetes_pod_ip": "10.0.3.7",
        "__meta_kubernetes_pod_label_serving_kserve_io_inferenceservice": "chat",
        "__meta_kubernetes_pod_label_platform_io_model_version": "v2",
        "__address__": "10.0.3.7",
        "__metrics_path__": "/metrics",
    }
    for key, value in annotations.items():
        labels["__meta_kubernetes_pod_annotation_" + re.sub(r"[^a-zA-Z0-9_]", "_", key)] = value
    return labels


def test_the_pod_monitor_is_rendered_only_with_kserve():
    assert [m["kind"] for m in render_monitors(False)] == ["ServiceMonitor"] * 3
    assert [m["kind"] for m in render_monitors(True)] == ["ServiceMonitor"] * 3 + ["PodMonitor"]
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    assert defaults["monitoring_inference"] == "{{ kserve_enabled | default(false) }}"


def test_the_pod_monitor_selects_kserves_predictors_in_every_namespace():
    spec = pod_monitor()["spec"]
    assert spec["namespaceSelector"] == {"any": True}
    assert spec["selector"]["matchLabels"] == {manifests.KSERVE_COMPONENT_LABEL: "predictor"}
    assert spec["selector"]["matchExpressions"] == [
        {"key": manifests.KSERVE_ISVC_LABEL, "operator": "Exists"}
    ]


def test_a_predictor_gets_its_service_tenant_and_version():
    (endpoint,) = pod_monitor()["spec"]["podMetricsEndpoints"]
    namespace = names.namespace_name("acme-labs")
    target = relabel(
        predictor_target(namespace, {"prometheus.kserve.io/port": "8080"}), endpoint["relabelings"]
    )
    assert target["inferenceservice"] == "chat"
    assert target["tenant"] == "acme-labs"
    assert target["model_version"] == "v2"
    # the port the service's NetworkPolicy admits the monitoring namespace on
    assert target["__address__"] == f"10.0.3.7:{manifests.SERVING_PORT}"


def test_the_runtimes_port_and_path_are_scraped_and_8080_without_them():
    (endpoint,) = pod_monitor()["spec"]["podMetricsEndpoints"]
    annotated = relabel(
        predictor_target(
            "tenant-acme", {"prometheus.kserve.io/port": "9090", "prometheus.kserve.io/path": "/m"}
        ),
        endpoint["relabelings"],
    )
    assert (annotated["__address__"], annotated["__metrics_path__"]) == ("10.0.3.7:9090", "/m")
    bare = relabel(predictor_target("tenant-acme", {}), endpoint["relabelings"])
    assert (bare["__address__"], bare["__metrics_path__"]) == ("10.0.3.7:8080", "/metrics")


@pytest.mark.parametrize("namespace", ["platform-serving", "kserve", "default"])
def test_predictors_outside_the_tenant_namespaces_are_not_scraped(namespace):
    (endpoint,) = pod_monitor()["spec"]["podMetricsEndpoints"]
    assert relabel(predictor_target(namespace, {}), endpoint["relabelings"]) is None


def board() -> dict:
    return json.loads(BOARD.read_text())


def test_the_dashboard_reads_only_inference_records_and_exporter_series():
    recorded = {
        r["record"]
        for g in rules.rule_groups()
        if g["name"] == inference_rules.INFERENCE_GROUP
        for r in g["rules"]
        if "record" in r
    }
    exprs = [t["expr"] for p in board()["panels"] for t in p["targets"]]
    read = {m for e in exprs for m in re.findall(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{", e)}
    assert read <= recorded | set(inference_rules.EXPORTER_SERIES), read
    assert recorded <= read  # every record has a panel


def test_every_dashboard_query_filters_by_the_variables():
    variables = [v["name"] for v in board()["templating"]["list"]]
    assert variables == ["datasource", "tenant", "namespace", "service"]
    for panel in board()["panels"]:
        for target in panel["targets"]:
            for matcher in (
                'tenant=~"$tenant"',
                'namespace=~"$namespace"',
                'inferenceservice=~"$service"',
            ):
                assert matcher in target["expr"], (panel["title"], matcher)


def test_the_dashboard_is_shipped_with_the_pod_monitor():
    tasks = (ROLE / "tasks" / "objects.yml").read_text()
    assert "(['inference'] if monitoring_inference | bool else [])" in tasks
