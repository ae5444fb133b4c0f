# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The files the local Prometheus and kube-state-metrics read: the scrape
configuration, the platform's rule groups and kube-state-metrics' custom
resource state, all from the collection's rules builder, so the local cluster
evaluates exactly what the monitoring role applies; and Prometheus's reload."""

from __future__ import annotations

import importlib.util
import sys
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from settings import ALERTMANAGER, HERE, HOST, PORTS, PROMETHEUS, SCRAPE_INTERVAL_SECONDS

OBSERVABILITY = HERE.parents[1] / "plugins" / "module_utils" / "observability"
# The name the collection's observability package is loaded under here.
_PACKAGE = "gpucloud_platform_observability"


def load_observability(module: str) -> Any:
    """A module of the collection's observability package (stdlib only), so the
    local Prometheus evaluates exactly the groups the monitoring role applies.
    It is loaded by path as a package of its own: its modules import each
    other relatively, and the collection need not be on sys.path."""
    if _PACKAGE not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            _PACKAGE, OBSERVABILITY / "__init__.py", submodule_search_locations=[str(OBSERVABILITY)]
        )
        package = importlib.util.module_from_spec(spec)
        sys.modules[_PACKAGE] = package  # relative imports and dataclasses look it up by name
        spec.loader.exec_module(package)
    return importlib.import_module(f"{_PACKAGE}.{module}")


RULES = load_observability("rules")
# kube-state-metrics' allow-lists and custom resource state.
KSM = load_observability("kube_state_metrics")
# In the state directory; kube-state-metrics' --custom-resource-state-config-file.
KSM_CUSTOM_RESOURCE_STATE = "ksm-custom-resource-state.yml"
# In the state directory: the DCGM exporters Prometheus scrapes, as a file_sd target list.
# The local cluster has no GPUs and so none; a test that serves DCGM's series over HTTP
# writes its address here (GPU health reads them back from Prometheus).
DCGM_TARGETS = "dcgm-targets.json"


def prometheus_config(state: Path) -> dict[str, Any]:
    """Scrapes kube-state-metrics, the API server, Volcano's two metrics servers and any
    DCGM exporter listed in DCGM_TARGETS; sends alerts to the local Alertmanager."""
    p = state / "pki"
    every = f"{SCRAPE_INTERVAL_SECONDS}s"

    def static(job: str, port: str) -> dict[str, Any]:
        return {"job_name": job, "static_configs": [{"targets": [f"{HOST}:{PORTS[port]}"]}]}

    return {
        "global": {"scrape_interval": every, "evaluation_interval": every},
        "rule_files": [str(state / "prometheus-rules.yml")],
        "alerting": {
            "alertmanagers": [{"static_configs": [{"targets": [ALERTMANAGER.split("//", 1)[1]]}]}]
        },
        "scrape_configs": [
            # honor_labels: the pods' namespace and pod, not the exporter's
            {**static("kube-state-metrics", "kube-state-metrics"), "honor_labels": True},
            static("volcano-scheduler", "vc-scheduler"),
            static("volcano-controllers", "vc-controller-manager"),
            {
                "job_name": "dcgm-exporter",
                # the exporter's own labels (Hostname, gpu), as the role's ServiceMonitor keeps them
                "honor_labels": True,
                "file_sd_configs": [
                    {"files": [str(state / DCGM_TARGETS)], "refresh_interval": every}
                ],
            },
            {
                **static("kube-apiserver", "kube-apiserver"),
                "scheme": "https",
                "tls_config": {
                    "ca_file": str(p / "ca.crt"),
                    "cert_file": str(p / "prometheus.crt"),
                    "key_file": str(p / "prometheus.key"),
                },
            },
        ],
    }


def write_ksm_files(state: Path) -> bool:
    """kube-state-metrics' custom resource state configuration; True when it changed."""
    path = state / KSM_CUSTOM_RESOURCE_STATE
    text = yaml.safe_dump(KSM.ksm_custom_resource_state(), sort_keys=False)
    if path.exists() and path.read_text() == text:
        return False
    path.write_text(text)
    return True


def write_prometheus_files(state: Path) -> bool:
    """prometheus.yml and the platform's rules; True when either changed."""
    targets = state / DCGM_TARGETS
    if not targets.exists():
        targets.write_text("[]\n")
    files = {
        state / "prometheus.yml": yaml.safe_dump(prometheus_config(state), sort_keys=False),
        state / "prometheus-rules.yml": yaml.safe_dump(
            {"groups": RULES.rule_groups(metering_interval=f"{SCRAPE_INTERVAL_SECONDS}s")},
            sort_keys=False,
        ),
        # where tests and tools find this cluster's Prometheus (ports shift per cluster)
        state / "prometheus-url": PROMETHEUS + "\n",
    }
    return write_changed(files)


def write_changed(files: dict[Path, str]) -> bool:
    """Write each file whose text differs; True when any did (the component then reloads)."""
    changed = False
    for path, text in files.items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            changed = True
    return changed


def reload_prometheus() -> None:
    # Prometheus's lifecycle API, not Kubernetes: the kubernetes client would add nothing.
    req = urllib.request.Request(f"{PROMETHEUS}/-/reload", method="POST")
    with urllib.request.urlopen(req, timeout=10):
        pass
