#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_node_probe
short_description: Preflight a GPU host in one run - driver, nvidia-smi, container runtime, RDMA
description:
  - Runs on the GPU host and looks at what a GPU node needs, in one module run (one Python process per host, where
    a command, a stat and a grep took three).
  - The NVIDIA kernel driver (C(/proc/driver/nvidia/version)); C(nvidia-smi --query-gpu=driver_version,name,pci.bus_id
    --format=csv,noheader) (rule smi-gpus reads its output with Python's csv module); the container runtime's
    configuration (O(runtime_pattern) as a fixed string in any file under O(runtime_config_paths), as C(grep -rqsF));
    with O(rdma), the devices under C(/sys/class/infiniband).
  - Returns what it observed and the report of rule node-preflight, the same the
    P(gpucloud.platform.gpu_node_preflight#filter) filter builds. It changes nothing.
version_added: 0.2.0
options:
  nvidia_smi:
    description: The nvidia-smi binary, a name on PATH or an absolute path.
    type: str
    default: nvidia-smi
  driver_min_version:
    description: The oldest driver version that passes.
    type: str
    required: true
  expected_gpus:
    description: GPUs nvidia-smi must see; V(0) accepts any number.
    type: int
    default: 0
  runtime_pattern:
    description: The text that shows the NVIDIA container runtime is configured.
    type: str
    default: nvidia-container-runtime
  runtime_config_paths:
    description: Files and directories (searched recursively) of the container runtime's configuration.
    type: list
    elements: str
    default: [/etc/containerd, /etc/crio, /etc/docker/daemon.json]
  rdma:
    description: Also look for RDMA devices.
    type: bool
    default: false
  host:
    description: The name the report is for (the inventory host name).
    type: str
    required: true
attributes:
  check_mode:
    description: Can run in check mode and return changed status prediction without modifying target.
    support: full
    details: The module only reads; it runs the same in check mode.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: N/A
    details: The module changes nothing.
author:
  - gpucloud platform team (@gpucloud)
"""

EXAMPLES = r"""
- name: Preflight the GPU host
  gpucloud.platform.gpu_node_probe:
    host: "{{ inventory_hostname }}"
    driver_min_version: "550.54.15"
    expected_gpus: 8
    rdma: true
  register: probe

- name: Report it
  ansible.builtin.debug:
    msg: "{{ probe.report.lines }}"
"""

RETURN = r"""
observed:
  description:
    - What was seen, the input of rule node-preflight - C(smi) (C(rc), C(stdout), C(stderr), C(msg); C(rc) 127 when
      nvidia-smi is not installed), C(kmod_loaded), C(runtime_rc) (0 when the pattern was found) and
      C(rdma_devices) (names, or null when not looked for).
  returned: always
  type: dict
report:
  description: Rule node-preflight - C(host), C(driver), C(gpus), C(checks) (C(check), C(ok), C(detail)), C(failed)
    (the names of the failed checks) and C(lines) (the report as printed).
  returned: always
  type: dict
  sample:
    host: gpu-node-0
    driver: "570.86.15"
    gpus: 8
    failed: []
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucloud.platform.plugins.module_utils.nodes.preflight import (
    SMI_NOT_FOUND,
    preflight_report,
)

# Runs on the GPU host, not against the cluster: no kubernetes.core connection options,
# so it is not in the "platform" action group (module_defaults would hand it those).
OPTIONS = {
    "nvidia_smi": {"type": "str", "default": "nvidia-smi"},
    "driver_min_version": {"type": "str", "required": True},
    "expected_gpus": {"type": "int", "default": 0},
    "runtime_pattern": {"type": "str", "default": "nvidia-container-runtime"},
    "runtime_config_paths": {
        "type": "list",
        "elements": "str",
        "default": ["/etc/containerd", "/etc/crio", "/etc/docker/daemon.json"],
    },
    "rdma": {"type": "bool", "default": False},
    "host": {"type": "str", "required": True},
}
SMI_QUERY = ["--query-gpu=driver_version,name,pci.bus_id", "--format=csv,noheader"]
KMOD_FILE = "/proc/driver/nvidia/version"
INFINIBAND = "/sys/class/infiniband"


def run_smi(module: AnsibleModule, binary: str) -> dict:
    """nvidia-smi's answer; rc 127 (as a shell's) when it is not installed."""
    path = binary if os.path.isabs(binary) else module.get_bin_path(binary)
    if not path or not os.access(path, os.X_OK):
        return {"rc": SMI_NOT_FOUND, "stdout": "", "stderr": "", "msg": f"{binary}: not found"}
    rc, out, err = module.run_command([path, *SMI_QUERY])
    return {"rc": rc, "stdout": out, "stderr": err, "msg": ""}


def _files(path: str):
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


def main() -> None:
    module = AnsibleModule(
        argument_spec=OPTIONS,
        supports_check_mode=True,
    )
    p = module.params
    observed = {
        "smi": run_smi(module, p["nvidia_smi"]),
        "kmod_loaded": os.path.exists(KMOD_FILE),
        "runtime_rc": 0
        if runtime_configured(p["runtime_pattern"], p["runtime_config_paths"])
        else 1,
        "rdma_devices": rdma_devices() if p["rdma"] else None,
    }
    settings = {
        k: p[k]
        for k in (
            "nvidia_smi",
            "driver_min_version",
            "expected_gpus",
            "runtime_pattern",
            "runtime_config_paths",
            "rdma",
        )
    }
    module.exit_json(
        changed=False, observed=observed, report=preflight_report(p["host"], observed, settings)
    )


if __name__ == "__main__":
    main()
