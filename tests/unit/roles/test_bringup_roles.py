# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Static checks of the bring-up roles: argument specs cover the defaults, the
version table in docs/bring-up.md matches the pins, the stand-in charts carry
the pinned versions, the dashboards are valid JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
ROLES = [
    "platform_helm",
    "gpu_node",
    "nvidia_device_plugin",
    "rdma_device_plugin",
    "dcgm_exporter",
    "volcano",
    "kserve",
    "fluid",
    "storage",
    "object_store",
    "monitoring",
]
# chart variable prefix -> stand-in chart directory
CHARTS = {
    "nvidia_device_plugin": ("nvidia_device_plugin", "nvidia-device-plugin"),
    "dcgm_exporter": ("dcgm_exporter", "dcgm-exporter"),
    "volcano": ("volcano", "volcano"),
    "kserve_cert_manager": ("kserve", "cert-manager"),
    "kserve_crd": ("kserve", "kserve-crd"),
    "kserve_resources": ("kserve", "kserve-resources"),
    "storage_nfs": ("storage", "csi-driver-nfs"),
    "storage_cephfs": ("storage", "ceph-csi-cephfs"),
    "monitoring_prometheus_stack": ("monitoring", "kube-prometheus-stack"),
    "monitoring_loki": ("monitoring", "loki"),
    "monitoring_alloy": ("monitoring", "alloy"),
}


def load(path: Path):
    return yaml.safe_load(path.read_text())


def spec_options(role: str) -> dict[str, dict]:
    specs = load(ROOT / "roles" / role / "meta" / "argument_specs.yml")["argument_specs"]
    options: dict[str, dict] = {}
    for entry in specs.values():
        options.update(entry.get("options") or {})
    return options


@pytest.mark.parametrize("role", ROLES)
def test_argument_spec_names_every_default(role):
    defaults = load(ROOT / "roles" / role / "defaults" / "main.yml") or {}
    options = spec_options(role)
    missing = sorted(set(defaults) - set(options))
    assert missing == [], f"{role}: defaults without an argument spec: {missing}"
    for name, option in options.items():
        assert option.get("description"), f"{role}: {name} has no description"
        assert option.get("type"), f"{role}: {name} has no type"


@pytest.mark.parametrize("role", ROLES)
def test_literal_defaults_match_the_argument_spec(role):
    defaults = load(ROOT / "roles" / role / "defaults" / "main.yml") or {}
    for name, option in spec_options(role).items():
        if "default" not in option or name not in defaults:
            continue
        value = defaults[name]
        if isinstance(value, str) and "{{" in value:
            continue
        assert value == option["default"], (
            f"{role}: {name} is {value!r} in defaults, {option['default']!r} in the spec"
        )
        if option.get("choices"):
            assert value in option["choices"]


VERSION_COLUMNS = [
    "component",
    "chart",
    "variable",
    "pinned",
    "appVersion",
    "upstream source (repository and path of Chart.yaml)",
    "checked",
]


def version_rows() -> list[dict[str, str]]:
    """The rows of the Version table in docs/bring-up.md, by column name."""
    text = (ROOT / "docs" / "bring-up.md").read_text()
    section = text.split("### Version table", 1)[1].split("\n#", 1)[0]
    lines = [line.strip() for line in section.splitlines() if line.strip().startswith("|")]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    header, rows = cells[0], cells[2:]
    assert header == VERSION_COLUMNS, header
    assert all(len(row) == len(header) for row in rows), rows
    return [dict(zip(header, row, strict=True)) for row in rows]


def version_table() -> dict[str, str]:
    """variable -> pinned version, from the Version table."""
    table = {}
    for row in version_rows():
        match = re.fullmatch(r"`(\w+_(?:chart_version|image_tag))`", row["variable"])
        if match:
            table[match.group(1)] = row["pinned"]
    return table


def test_version_table_says_where_and_when_each_pin_was_checked():
    rows = version_rows()
    assert {f"{prefix}_chart_version" for prefix in CHARTS} <= set(version_table())
    for row in rows:
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", row["checked"]), row
        assert row["upstream source (repository and path of Chart.yaml)"].strip("- "), row


@pytest.mark.parametrize("prefix", sorted(CHARTS))
def test_version_table_and_standin_charts_match_the_pins(prefix):
    role, chart = CHARTS[prefix]
    defaults = load(ROOT / "roles" / role / "defaults" / "main.yml")
    pinned = str(defaults[f"{prefix}_chart_version"])
    assert version_table()[f"{prefix}_chart_version"] == pinned
    meta = load(ROOT / "tests" / "charts" / chart / "Chart.yaml")
    assert meta["name"] == chart
    assert str(meta["version"]) == pinned


@pytest.mark.parametrize(("role", "prefix"), [("fluid", "fluid"), ("object_store", "object_store")])
def test_version_table_matches_the_pins_of_charts_without_a_standin(role, prefix):
    defaults = load(ROOT / "roles" / role / "defaults" / "main.yml")
    assert version_table()[f"{prefix}_chart_version"] == str(defaults[f"{prefix}_chart_version"])


def test_version_table_lists_the_rdma_image():
    defaults = load(ROOT / "roles" / "rdma_device_plugin" / "defaults" / "main.yml")
    assert (
        version_table()["rdma_device_plugin_image_tag"] == defaults["rdma_device_plugin_image_tag"]
    )


@pytest.mark.parametrize("board", ["gpu", "queues", "spot", "inference"])
def test_dashboards_are_grafana_json(board):
    data = json.loads(
        (ROOT / "roles" / "monitoring" / "files" / "dashboards" / f"{board}.json").read_text()
    )
    assert data["uid"] == f"gpucloud-{board}"
    assert data["panels"], "a dashboard without panels"
    for panel in data["panels"]:
        assert panel["targets"] and all(t["expr"] for t in panel["targets"])


def test_volcano_discovery_sources_are_volcano_s():
    """Rule discovery-sources: only the sources Volcano 1.15.1 implements are accepted."""
    source_dir = Path(
        "/root/go/pkg/mod/volcano.sh/volcano@v1.15.1/pkg/controllers/hypernode/discovery"
    )
    if not source_dir.is_dir():
        pytest.skip("Volcano 1.15.1 source not present")
    upstream = {p.name for p in source_dir.iterdir() if p.is_dir()} - {"fake"}
    tasks = (ROOT / "roles" / "volcano" / "tasks" / "main.yml").read_text()
    accepted = set(
        re.search(r"reject\('in', \[([^\]]*)\]\)", tasks)
        .group(1)
        .replace("'", "")
        .replace(" ", "")
        .split(",")
    )
    assert accepted == upstream
