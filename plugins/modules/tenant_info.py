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
attributes:
  diff_mode:
    support: N/A
    details: The module never writes.
"""

EXAMPLES = r"""
- name: Every tenant
  gpucloud.platform.tenant_info:
  register: tenants

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
changed:
  description: Always false; the module only reads.
  returned: always
  type: bool
requests:
  description: How many API requests the run made.
  returned: always
  type: int
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_module
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants import service
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.inputs import parse_info

OPTIONS = {"name": {"type": "str"}}


def main() -> None:
    run_module(OPTIONS, service.run_info, validate=parse_info)


if __name__ == "__main__":
    main()
