# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules smi-gpus and node-preflight."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.nodes.preflight import (
    preflight_report,
    smi_gpus,
)

SETTINGS = {
    "nvidia_smi": "nvidia-smi",
    "driver_min_version": "550.54.15",
    "expected_gpus": 2,
    "runtime_pattern": "nvidia-container-runtime",
    "runtime_config_paths": ["/etc/containerd/config.toml"],
    "rdma": False,
}
TWO_H100 = (
    "570.86.15, NVIDIA H100 80GB HBM3, 00000000:18:00.0\n"
    "570.86.15, NVIDIA H100 80GB HBM3, 00000000:2A:00.0\n"
)


def observed(rc=0, stdout=TWO_H100, runtime_rc=0, **extra):
    return {"smi": {"rc": rc, "stdout": stdout, "stderr": ""}, "runtime_rc": runtime_rc, **extra}


def test_smi_output_is_read_as_csv():
    assert smi_gpus(TWO_H100) == [
        ("570.86.15", "NVIDIA H100 80GB HBM3", "00000000:18:00.0"),
        ("570.86.15", "NVIDIA H100 80GB HBM3", "00000000:2A:00.0"),
    ]
    # A model name with a comma is quoted by nvidia-smi's CSV; a broken line is left out.
    assert smi_gpus('570.86.15, "NVIDIA A100, PCIe", 00000000:01:00.0\nnot a row\n') == [
        ("570.86.15", "NVIDIA A100, PCIe", "00000000:01:00.0")
    ]


def test_a_good_node_passes_every_check():
    report = preflight_report("gpu-0", observed(), SETTINGS)
    assert report["failed"] == [] and report["driver"] == "570.86.15" and report["gpus"] == 2
    assert report["lines"][0] == "gpu_node preflight gpu-0: ok"
    assert "  ok    nvidia-smi: 2 GPU(s): NVIDIA H100 80GB HBM3" in report["lines"]


@pytest.mark.parametrize(
    ("driver", "ok"), [("535.104.05", False), ("550.54.15", True), ("550.127.05", True)]
)
def test_the_driver_version_is_compared_as_a_version(driver, ok):
    stdout = TWO_H100.replace("570.86.15", driver)
    report = preflight_report("gpu-0", observed(stdout=stdout), SETTINGS)
    assert (report["failed"] == []) is ok
    if not ok:
        assert report["checks"][0]["detail"] == f"driver {driver} is older than 550.54.15"


def test_a_missing_driver_names_what_is_missing():
    report = preflight_report("gpu-0", observed(rc=127, stdout=""), SETTINGS)
    assert report["failed"] == ["driver", "nvidia-smi"]
    assert report["checks"][0]["detail"] == (
        "NVIDIA driver not found: nvidia-smi is not installed and the kernel driver is not "
        "loaded (no /proc/driver/nvidia/version); install driver >= 550.54.15"
    )
    loaded = preflight_report("gpu-0", observed(rc=127, stdout="", kmod_loaded=True), SETTINGS)
    assert "kernel driver" not in loaded["checks"][0]["detail"]


def test_a_failing_smi_a_wrong_count_no_runtime_and_no_rdma():
    failing = {"smi": {"rc": 9, "stdout": "", "stderr": "NVML: driver/library mismatch"}}
    report = preflight_report("gpu-0", {**failing, "runtime_rc": 1}, {**SETTINGS, "rdma": True})
    assert report["failed"] == ["driver", "nvidia-smi", "container runtime", "rdma"]
    assert report["checks"][1]["detail"] == "rc 9: NVML: driver/library mismatch"
    assert report["checks"][2]["detail"] == (
        "no nvidia-container-runtime in /etc/containerd/config.toml"
    )
    one = preflight_report("gpu-0", observed(stdout=TWO_H100.splitlines()[0]), SETTINGS)
    assert one["failed"] == ["nvidia-smi"]
    assert one["checks"][1]["detail"].endswith("; expected 2")
    ib = preflight_report("gpu-0", observed(rdma_devices=["mlx5_0"]), {**SETTINGS, "rdma": True})
    assert ib["checks"][-1] == {"check": "rdma", "ok": True, "detail": "RDMA devices: mlx5_0"}
