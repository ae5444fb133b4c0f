# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module gpu_node_probe's reads, on the GPU host (not the cluster), and its flow.

``gather`` runs nvidia-smi, looks for the kernel driver's file, searches the container
runtime's configuration and, with ``rdma``, lists the InfiniBand devices; its ``host`` is
the running module (``kube.flow.Host``: ``get_bin_path``, ``run_command``). ``apply``
writes nothing. The decisions are ``nodes/probe``'s and ``nodes/preflight``'s.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from ..kube.flow import Flow, Host
from .preflight import SMI_NOT_FOUND
from .probe import (
    ProbePlan,
    ProbeRequest,
    facts_in,
    facts_out,
    parse_probe,
    plan_probe,
    report_probe,
)

SMI_QUERY = ["--query-gpu=driver_version,name,pci.bus_id", "--format=csv,noheader"]
KMOD_FILE = "/proc/driver/nvidia/version"
INFINIBAND = "/sys/class/infiniband"


def run_smi(host: Host, binary: str) -> dict[str, Any]:
    """nvidia-smi's answer; rc 127 (as a shell's) when it is not installed."""
    path = binary if os.path.isabs(binary) else host.get_bin_path(binary)
    if not path or not os.access(path, os.X_OK):
        return {"rc": SMI_NOT_FOUND, "stdout": "", "stderr": "", "msg": f"{binary}: not found"}
    rc, out, err = host.run_command([path, *SMI_QUERY])
    return {"rc": rc, "stdout": out, "stderr": err, "msg": ""}


def _files(path: str) -> Iterator[str]:
    if os.path.isfile(path):
        yield path
        return
    for root, _dirs, names in os.walk(path):
        for name in names:
            yield os.path.join(root, name)


def runtime_configured(pattern: str, paths: list[str]) -> bool:
    """``grep -rqsF pattern paths``: the fixed string in any readable file under the paths."""
    needle = pattern.encode()
    for path in paths:
        for name in _files(path):
            try:
                with open(name, "rb") as handle:
                    if needle in handle.read():
                        return True
            except OSError:
                continue  # as grep -s: unreadable files are skipped
    return False


def rdma_devices() -> list[str]:
    try:
        return sorted(os.listdir(INFINIBAND))
    except OSError:
        return []


def gather_probe(request: ProbeRequest, host: Host) -> dict[str, Any]:
    """What the host shows: rule node-preflight's input (RV(observed))."""
    paths = list(request.setting("runtime_config_paths"))
    return {
        "smi": run_smi(host, request.setting("nvidia_smi")),
        "kmod_loaded": os.path.exists(KMOD_FILE),
        "runtime_rc": 0 if runtime_configured(request.setting("runtime_pattern"), paths) else 1,
        "rdma_devices": rdma_devices() if request.setting("rdma") else None,
    }


def apply_probe(
    request: ProbeRequest, planned: ProbePlan, _host: Host, _check_mode: bool
) -> dict[str, Any]:
    """Nothing to write: the report, in check mode or not."""
    return report_probe(request, planned)


PROBE_FLOW: Flow[ProbeRequest, dict[str, Any], ProbePlan] = Flow(
    parse=parse_probe,
    gather=gather_probe,
    plan=plan_probe,
    apply=apply_probe,
    report=report_probe,
    facts_out=facts_out,
    facts_in=facts_in,
)
