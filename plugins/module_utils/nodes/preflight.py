# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A GPU node's preflight report from what the gpu_node role observed (pure).

The role runs the probes (nvidia-smi, the kernel driver's file, the container runtime's
configuration, /sys/class/infiniband) and hands their results here; this decides.

Rules held here:

* Rule smi-gpus (``smi_gpus``): nvidia-smi's ``--format=csv,noheader`` output, read with
  the csv module, one (driver, model, PCI bus id) per GPU.
* Rule node-preflight (``preflight_report``): the checks driver (installed, at least
  ``driver_min_version``), nvidia-smi (it ran and saw ``expected_gpus``, 0: any),
  container runtime (the pattern found in a runtime configuration) and, with ``rdma``,
  rdma (a device under /sys/class/infiniband); each ``{check, ok, detail}``; ``failed``
  names the failed ones.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any

from ansible.module_utils.compat.version import LooseVersion

SMI_NOT_FOUND = 127
DETAIL_MAX = 200


def smi_gpus(stdout: str) -> list[tuple[str, str, str]]:
    """Rule smi-gpus (see the module docstring); rows that are not three fields are left out."""
    rows = csv.reader(io.StringIO(stdout or ""), skipinitialspace=True)
    return [tuple(field.strip() for field in row) for row in rows if len(row) == 3]


def _driver_checks(smi: Mapping[str, Any], kmod_loaded: bool, settings: Mapping[str, Any]):
    rc = smi.get("rc", 1)
    gpus = smi_gpus(smi.get("stdout", "")) if rc == 0 else []
    minimum = str(settings["driver_min_version"])
    if rc == SMI_NOT_FOUND:
        detail = f"NVIDIA driver not found: {settings['nvidia_smi']} is not installed"
        if not kmod_loaded:
            detail += " and the kernel driver is not loaded (no /proc/driver/nvidia/version)"
        return (
            "",
            gpus,
            [
                {
                    "check": "driver",
                    "ok": False,
                    "detail": f"{detail}; install driver >= {minimum}",
                },
                {"check": "nvidia-smi", "ok": False, "detail": "not run: no NVIDIA driver"},
            ],
        )
    if rc != 0 or not gpus:
        out = str(smi.get("stderr") or smi.get("stdout") or smi.get("msg") or "").strip()
        return (
            "",
            gpus,
            [
                {
                    "check": "driver",
                    "ok": False,
                    "detail": "driver version unknown: nvidia-smi failed",
                },
                {"check": "nvidia-smi", "ok": False, "detail": f"rc {rc}: {out[:DETAIL_MAX]}"},
            ],
        )
    driver = gpus[0][0]
    driver_ok = LooseVersion(driver) >= LooseVersion(minimum)
    expected = int(settings.get("expected_gpus") or 0)
    count_ok = expected == 0 or len(gpus) == expected
    models = ", ".join(dict.fromkeys(model for _d, model, _bus in gpus))
    return (
        driver,
        gpus,
        [
            {
                "check": "driver",
                "ok": driver_ok,
                "detail": f"driver {driver}{' >= ' if driver_ok else ' is older than '}{minimum}",
            },
            {
                "check": "nvidia-smi",
                "ok": count_ok,
                "detail": f"{len(gpus)} GPU(s): {models}"
                + ("" if count_ok else f"; expected {expected}"),
            },
        ],
    )


def preflight_report(
    host: str,
    observed: Mapping[str, Any],
    settings: Mapping[str, Any],
) -> dict[str, Any]:
    """Rule node-preflight (see the module docstring). ``observed``: ``smi`` (the command's
    rc, stdout, stderr, msg), ``kmod_loaded``, ``runtime_rc``, ``rdma_devices`` (names, or
    None when not looked for)."""
    driver, gpus, checks = _driver_checks(
        observed.get("smi") or {}, bool(observed.get("kmod_loaded")), settings
    )
    runtime_ok = observed.get("runtime_rc", 1) == 0
    paths: Sequence[str] = settings.get("runtime_config_paths") or []
    checks.append(
        {
            "check": "container runtime",
            "ok": runtime_ok,
            "detail": "NVIDIA runtime configured"
            if runtime_ok
            else f"no {settings['runtime_pattern']} in {', '.join(paths)}",
        }
    )
    if settings.get("rdma"):
        devices = list(observed.get("rdma_devices") or [])
        checks.append(
            {
                "check": "rdma",
                "ok": bool(devices),
                "detail": f"RDMA devices: {', '.join(devices)}"
                if devices
                else "no RDMA device in /sys/class/infiniband",
            }
        )
    report = {
        "host": host,
        "driver": driver,
        "gpus": len(gpus),
        "checks": checks,
        "failed": [c["check"] for c in checks if not c["ok"]],
    }
    return {**report, "lines": report_lines(report)}


def report_lines(report: Mapping[str, Any]) -> list[str]:
    """The report as the role prints it: a verdict line, then one line per check."""
    failed = report["failed"]
    head = f"gpu_node preflight {report['host']}: " + (
        "ok" if not failed else f"FAILED {', '.join(failed)}"
    )
    return [head] + [
        f"{'  ok    ' if c['ok'] else '  FAIL  '}{c['check']}: {c['detail']}"
        for c in report["checks"]
    ]
