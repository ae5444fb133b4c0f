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
  - Runs through the module contract (parse, gather, plan, apply) with the host as what it gathers from;
    V(gathered) returns the observations and V(parsed) reports from saved ones. V(rendered) is not offered, a host
    with nothing on it is not a host to preflight.
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
  state:
    description:
      - V(present) looks at the host and reports.
      - V(gathered) looks at the host and returns, in RV(gathered), what it observed (as RV(observed)), without a
        report.
      - V(parsed) reports from O(facts) (what V(gathered) returned, from this or another host, or edited as a
        what-if) without looking at the host; the answer is the one a run on a host showing those facts gives.
    type: str
    choices: [present, gathered, parsed]
    default: present
  facts:
    description:
      - With O(state=parsed), the observations to report from, as RV(gathered) holds them.
    type: dict
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

- name: What the host shows, saved
  gpucloud.platform.gpu_node_probe:
    host: "{{ inventory_hostname }}"
    driver_min_version: "550.54.15"
    state: gathered
  register: seen

- name: The report with a newer minimum driver, from what was saved, without looking at the host again
  gpucloud.platform.gpu_node_probe:
    host: "{{ inventory_hostname }}"
    driver_min_version: "570.0"
    state: parsed
    facts: "{{ seen.gathered }}"
"""

RETURN = r"""
gathered:
  description: With O(state=gathered), what the host showed, as RV(observed) holds it.
  returned: when O(state=gathered)
  type: dict
state:
  description: The offline state answered (V(parsed)).
  returned: when O(state=parsed)
  type: str
observed:
  description:
    - What was seen, the input of rule node-preflight - C(smi) (C(rc), C(stdout), C(stderr), C(msg); C(rc) 127 when
      nvidia-smi is not installed), C(kmod_loaded), C(runtime_rc) (0 when the pattern was found) and
      C(rdma_devices) (names, or null when not looked for).
  returned: unless O(state=gathered)
  type: dict
report:
  description: Rule node-preflight - C(host), C(driver), C(gpus), C(checks) (C(check), C(ok), C(detail)), C(failed)
    (the names of the failed checks) and C(lines) (the report as printed).
  returned: unless O(state=gathered)
  type: dict
  sample:
    host: gpu-node-0
    driver: "570.86.15"
    gpus: 8
    failed: []
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.kube.flow import (
    READ_STATE_OPTIONS,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.host_runner import (
    run_host_flow,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.nodes.probe_io import PROBE_FLOW

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
    **READ_STATE_OPTIONS,
}


def main() -> None:
    run_host_flow(OPTIONS, PROBE_FLOW)


if __name__ == "__main__":
    main()
