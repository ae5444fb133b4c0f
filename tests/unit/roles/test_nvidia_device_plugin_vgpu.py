# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nvidia_device_plugin role keeps the NVIDIA device plugin off nodes labelled for
HAMi's vGPU device plugin: its values exclude them in every node affinity term, and a
node selector that selects them stops the role before the chart is probed. Runs the
role's own task files with ansible-playbook on localhost (no cluster, no chart)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
ROLE = "gpucloud.platform.nvidia_device_plugin"
VGPU_EXCLUDED = {"key": "platform.io/gpu-sharing", "operator": "NotIn", "values": ["vgpu"]}


def run_role(tmp_path: Path, variables: dict) -> tuple[subprocess.CompletedProcess, dict | None]:
    """The guard and the values tasks, as tasks/main.yml runs them; the values as JSON."""
    out = tmp_path / "values.json"
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "Render the nvidia-device-plugin values",
                    "hosts": "localhost",
                    "connection": "local",
                    "gather_facts": False,
                    "tasks": [
                        {
                            "name": "Guard",
                            "ansible.builtin.include_role": {
                                "name": ROLE,
                                "tasks_from": "vgpu_guard.yml",
                            },
                        },
                        {
                            "name": "Values",
                            "ansible.builtin.include_role": {
                                "name": ROLE,
                                "tasks_from": "values.yml",
                            },
                        },
                        {
                            "name": "Write",
                            "ansible.builtin.copy": {
                                "content": "{{ nvidia_device_plugin_values | to_json }}",
                                "dest": str(out),
                                "mode": "0600",
                            },
                        },
                    ],
                }
            ]
        )
    )
    extra = tmp_path / "vars.json"
    extra.write_text(json.dumps({"ansible_python_interpreter": sys.executable, **variables}))
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    run = subprocess.run(
        [BIN / "ansible-playbook", "-i", "localhost,", str(playbook), "-e", f"@{extra}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    values = json.loads(out.read_text()) if run.returncode == 0 else None
    return run, values


def terms(values: dict) -> list[dict]:
    return values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]


def test_every_affinity_term_excludes_vgpu_nodes(tmp_path):
    run, values = run_role(tmp_path, {})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    found = terms(values)
    # The chart's own three terms (NVIDIA PCI vendor, Tegra CPU vendor, gpu.present), kept.
    assert [t["matchExpressions"][0]["key"] for t in found] == [
        "feature.node.kubernetes.io/pci-10de.present",
        "feature.node.kubernetes.io/cpu-model.vendor_id",
        "nvidia.com/gpu.present",
    ]
    assert all(VGPU_EXCLUDED in t["matchExpressions"] for t in found)
    assert "nodeSelector" not in values


def test_the_label_and_value_are_variables(tmp_path):
    run, values = run_role(
        tmp_path,
        {
            "nvidia_device_plugin_vgpu_node_label": "example.com/sharing",
            "nvidia_device_plugin_vgpu_node_label_value": "hami",
            "nvidia_device_plugin_node_selector": {"platform.io/node-location": "idc"},
        },
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    excluded = {"key": "example.com/sharing", "operator": "NotIn", "values": ["hami"]}
    assert all(excluded in t["matchExpressions"] for t in terms(values))
    assert values["nodeSelector"] == {"platform.io/node-location": "idc"}


@pytest.mark.parametrize(
    "variables",
    [
        {"nvidia_device_plugin_node_selector": {"platform.io/gpu-sharing": "vgpu"}},
        {
            "nvidia_device_plugin_extra_values": {
                "nodeSelector": {"platform.io/gpu-sharing": "vgpu"}
            }
        },
    ],
    ids=["node_selector", "extra_values"],
)
def test_a_node_selector_on_vgpu_nodes_stops_the_role(tmp_path, variables):
    run, values = run_role(tmp_path, variables)
    assert run.returncode != 0 and values is None
    assert "selects the nodes labelled platform.io/gpu-sharing=vgpu" in run.stdout
    assert "HAMi's vGPU device plugin" in run.stdout


def test_a_node_selector_on_other_sharing_values_is_fine(tmp_path):
    run, values = run_role(
        tmp_path, {"nvidia_device_plugin_node_selector": {"platform.io/gpu-sharing": "none"}}
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert values["nodeSelector"] == {"platform.io/gpu-sharing": "none"}


def test_an_extra_affinity_without_the_exclusion_stops_the_role(tmp_path):
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [VGPU_EXCLUDED]},
                    {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]},
                ]
            }
        }
    }
    run, values = run_role(tmp_path, {"nvidia_device_plugin_extra_values": {"affinity": affinity}})
    assert run.returncode != 0 and values is None
    assert "every term of" in run.stdout


def test_an_extra_affinity_that_keeps_the_exclusion_is_used(tmp_path):
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "gpu", "operator": "Exists"}, VGPU_EXCLUDED]}
                ]
            }
        }
    }
    run, values = run_role(tmp_path, {"nvidia_device_plugin_extra_values": {"affinity": affinity}})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert (
        terms(values)
        == affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ]
    )
