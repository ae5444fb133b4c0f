# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_node_probe: one run per host, the same observations the role's four probes made."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ansible_collections.gpucloud.platform.plugins.module_utils.nodes import probe_io

ROOT = Path(__file__).resolve().parents[4]


def run(tmp_path: Path, check: bool = False, **args) -> dict:
    """The module as Ansible runs it: its arguments in a file, its answer on stdout."""
    module_args = {"driver_min_version": "550.54.15", "host": "h1", **args}
    if check:
        module_args["_ansible_check_mode"] = True
    argfile = tmp_path / "args.json"
    argfile.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": module_args}))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ansible_collections.gpucloud.platform.plugins.modules.gpu_node_probe",
            str(argfile),
        ],
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT / ".venv" / "collections"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    return json.loads(proc.stdout)


def fake_smi(tmp_path: Path, rows: str, rc: int = 0) -> Path:
    smi = tmp_path / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\nprintf '{rows}'\nexit {rc}\n")
    smi.chmod(0o755)
    return smi


def test_a_host_without_nvidia_smi_reports_the_missing_driver(tmp_path):
    out = run(
        tmp_path, nvidia_smi="no-such-nvidia-smi", runtime_config_paths=[str(tmp_path / "none")]
    )
    assert out["changed"] is False
    assert out["observed"]["smi"]["rc"] == 127
    assert out["report"]["failed"][:2] == ["driver", "nvidia-smi"]
    assert "no-such-nvidia-smi is not installed" in out["report"]["checks"][0]["detail"]
    assert out["observed"]["rdma_devices"] is None


def test_a_good_host_passes_every_check(tmp_path):
    rows = "570.86.15, NVIDIA H100 80GB HBM3, 00000000:18:00.0\\n570.86.15, NVIDIA H100 80GB HBM3, 00000000:2A:00.0\\n"
    smi = fake_smi(tmp_path, rows)
    conf = tmp_path / "containerd" / "conf.d"
    conf.mkdir(parents=True)
    (conf / "nvidia.toml").write_text('runtime = "/usr/bin/nvidia-container-runtime"\n')
    out = run(
        tmp_path,
        nvidia_smi=str(smi),
        expected_gpus=2,
        runtime_config_paths=[str(tmp_path / "containerd"), str(tmp_path / "missing.json")],
    )
    report = out["report"]
    assert report["driver"] == "570.86.15" and report["gpus"] == 2
    assert [c["check"] for c in report["checks"] if c["ok"]] == [
        "driver",
        "nvidia-smi",
        "container runtime",
    ]
    assert out["observed"]["runtime_rc"] == 0


def test_an_old_driver_and_a_missing_runtime_fail_with_the_numbers(tmp_path):
    smi = fake_smi(tmp_path, "535.104.05, NVIDIA A100-SXM4-80GB, 00000000:07:00.0\\n")
    out = run(
        tmp_path,
        nvidia_smi=str(smi),
        runtime_config_paths=[str(tmp_path / "etc")],
        runtime_pattern="not-there-xyz",
    )
    assert out["report"]["failed"] == ["driver", "container runtime"]
    assert "535.104.05 is older than 550.54.15" in out["report"]["checks"][0]["detail"]


def test_runtime_search_is_a_fixed_string_over_files_and_directories(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "b.toml").write_text("x = 'nvidia-container-runtime.*'")
    assert probe_io.runtime_configured("runtime.*", [str(tmp_path / "a")])
    assert not probe_io.runtime_configured("runtime.+", [str(tmp_path / "a")])
    assert probe_io.runtime_configured("x =", [str(tmp_path / "a" / "b.toml")])
    assert not probe_io.runtime_configured("x =", [str(tmp_path / "nothing")])
