#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: tenant_info
short_description: Report tenants with their queues, quotas, allocation and running jobs
version_added: 0.1.0
description:
  - Lists every tenant, or the one named by O(name), with each of its Volcano queues - type, team, parent,
    guarantee, deserved, capability and allocated per resource, queue state, and active Volcano Jobs.
  - Reads with one list call per kind (Namespaces, Queues, Volcano Jobs), however many tenants there are.
options:
  name:
    description:
      - Only this tenant. Default is every tenant (every object labelled C(platform.io/tenant)).
    type: str
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
  - gpucloud.platform.read_states
attributes:
  diff_mode:
    support: N/A
    details: The module never writes.
"""

EXAMPLES = r"""
- name: Every tenant
  gpucloud.platform.tenant_info:
  register: tenants

- name: Show them as a table
  ansible.builtin.debug:
    msg: "{{ tenants.summary }}"

- name: One tenant's GPUs in use
  gpucloud.platform.tenant_info:
    name: alpha
  register: alpha

- name: Show them
  ansible.builtin.debug:
    msg: "{{ alpha.tenants[0].queues | map(attribute='allocated') | list }}"
"""

RETURN = r"""
tenants:
  description: One entry per tenant, sorted by name.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Tenant name.
      type: str
    namespace:
      description: The tenant namespace, or null when it does not exist.
      type: str
    active_jobs:
      description: Volcano Jobs in the tenant namespace that have not finished.
      type: int
    queues:
      description: The tenant's queues, parents first.
      type: list
      elements: dict
      sample:
        - name: tenant-alpha-subscription
          type: subscription
          team: null
          parent: root
          state: Open
          guarantee: {}
          deserved: {nvidia.com/gpu: 40, cpu: "160", memory: 640Gi}
          capability: {nvidia.com/gpu: 40, cpu: "160", memory: 640Gi}
          allocated: {nvidia.com/gpu: 8, cpu: "32", memory: 128Gi, pods: 2}
          active_jobs: 0
summary:
  description:
    - The tenants as a small table a person reads (rule run-summary) - a headline, then one row per queue with its
      state, GPUs, CPU cores and memory in Gi as allocated/deserved/capability (C(-) not set) and its active jobs.
    - Quantities for people (rule quantity-for-people) - C(204800m) CPU is C(204.8) cores, C(1677722Mi) is
      C(1638.4Gi), GPUs are whole numbers.
  returned: always
  type: list
  elements: str
  sample:
    - "1 tenant(s), 3 queue(s), 2 active Volcano Job(s); GPUS, CORES, MEMORY as allocated/deserved/capability (- not set)"
    - "TENANT  QUEUE         STATE  GPUS     CORES       MEMORY               JOBS"
    - "alpha   subscription  Open   8/16/16  32/256/256  128Gi/2048Gi/2048Gi     2"
    - "alpha   payg          Open   0/0/0    0/0/0       0/0/0                   0"
    - "alpha   spot          Open   0/0/5    0/0/160     0/0/1493.3Gi            0"
changed:
  description: Always false; the module only reads.
  returned: always
  type: bool
gathered:
  description: With O(state=gathered), the tenants' Namespaces, Queues and Volcano Jobs the report reads.
  returned: when O(state=gathered)
  type: dict
  sample:
    namespaces: [{metadata: {name: tenant-alpha, labels: {platform.io/tenant: alpha}}}]
    queues: []
    jobs:
      - metadata: {name: train, namespace: tenant-alpha}
        spec: {queue: tenant-alpha-ml}
        status: {state: {phase: Running}}
state:
  description: The offline state answered (V(parsed)); nothing was read.
  returned: when O(state=parsed)
  type: str
requests:
  description: How many API requests the run made (0 with V(parsed)).
  returned: always
  type: int
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.kube.flow import READ_STATE_OPTIONS
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants import service
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.info_summary import (
    info_summary,
)

OPTIONS = {
    "name": {"type": "str"},
    **READ_STATE_OPTIONS,
}


def main() -> None:
    run_flow(
        OPTIONS,
        service.INFO_FLOW,
        required_if=[("state", "parsed", ["facts"])],
        summary=info_summary,
    )


if __name__ == "__main__":
    main()
