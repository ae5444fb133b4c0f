#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: burst_quota
short_description: Give a tenant a quota of cloud GPUs, a leaf of the platform's cloud-only burst queue
version_added: 0.1.0
description:
  - "A tenant's cloud quota (docs/hybrid-cloud.md) is the Volcano Queue C(tenant-<tenant>-burst), a child of the
    platform's burst queue O(burst_queue) (made by gpucloud.platform.node_groups from the cloud groups). It has no
    affinity of its own and inherits the burst queue's, so its jobs run only on cloud nodes; its capability is
    O(gpus)."
  - "The leaf is listed in the tenant's queue list (ConfigMap C(platform-queues) in C(tenant-<tenant>)) as
    C(payg) (rule burst-billing): the admission policies and gpucloud.platform.vcjob then accept jobs there and
    bill them pay-as-you-go. The key is written under its own field manager, so the tenant module's updates of that
    ConfigMap keep it."
  - "Refused before any write: a tenant without a managed Queue, a burst queue that does not exist, O(gpus) above the
    burst queue's capability (rule burst-quota: Volcano's webhook refuses a child above its parent), O(gpus) below
    what the leaf holds now, and removing a leaf that holds unfinished jobs (both unless O(force))."
  - "Writes only what differs; in check mode the writes are the API server's dry runs."
options:
  tenant:
    description: The tenant.
    type: str
    required: true
  gpus:
    description: The tenant's cloud GPUs (0 or more). Required unless O(state=absent).
    type: int
  state:
    description:
      - C(present) makes or resizes the leaf; C(absent) removes it and its entry in the queue list.
      - V(gathered) reads what V(present) reads (the tenant's managed Queues, the burst queue and the tenant's queue
        list, each as far as a run reads before it refuses) and returns it in RV(gathered); nothing is written.
      - V(parsed) plans V(present) from O(facts) (what V(gathered) returned) without connecting, and returns what a
        check-mode run returns, with C(changed=false).
    type: str
    choices: [present, absent, gathered, parsed]
    default: present
  facts:
    description:
      - With O(state=parsed), the facts to plan from, as RV(gathered) holds them (C(queues), C(burst_queue),
        C(queue_list)).
    type: dict
  burst_queue:
    description: The platform's burst queue, the leaf's parent.
    type: str
    default: cloud-burst
  force:
    description: Lower the quota below what the leaf holds, or remove a leaf with unfinished jobs (they are not
      evicted; Volcano places no new pod there).
    type: bool
    default: false
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
seealso:
  - module: gpucloud.platform.node_groups
  - module: gpucloud.platform.tenant
"""

EXAMPLES = r"""
- name: Tenant alpha may burst to 16 cloud GPUs
  gpucloud.platform.burst_quota:
    tenant: alpha
    gpus: 16

- name: Tenant alpha no longer bursts
  gpucloud.platform.burst_quota:
    tenant: alpha
    state: absent

- name: What a quota of 16 cloud GPUs for tenant alpha reads (nothing written)
  gpucloud.platform.burst_quota:
    tenant: alpha
    gpus: 16
    state: gathered
  register: burst_facts

- name: The same quota planned offline from those facts
  gpucloud.platform.burst_quota:
    tenant: alpha
    gpus: 16
    state: parsed
    facts: "{{ burst_facts.gathered }}"
"""

RETURN = r"""
queue:
  description: The leaf queue.
  returned: unless O(state=gathered)
  type: str
  sample: tenant-alpha-burst
writes:
  description: The objects written (C(Queue/<name>), C(ConfigMap/<name>)), in order.
  returned: when something was written
  type: list
  elements: str
diff:
  description: The leaf's capability and parent before and after.
  returned: in diff mode
  type: dict
changed:
  description: Whether anything was written (in check mode, would be).
  returned: always
  type: bool
gathered:
  description: The tenant's managed Queues, the burst queue and the tenant's queue list, as far as a run with
    O(state=present) reads before it refuses.
  returned: when O(state=gathered)
  type: dict
state:
  description: V(parsed) when the answer is a plan from O(facts); nothing was written.
  returned: when O(state=parsed)
  type: str
requests:
  description: How many API requests the run made.
  returned: always
  type: int
done:
  description: The writes made before a failed one (every write is idempotent, so running again finishes the change).
  returned: on a failure part-way
  type: list
  elements: str
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid import service
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.inputs import (
    BURST_OPTIONS,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow

OPTIONS = BURST_OPTIONS


def main() -> None:
    run_flow(OPTIONS, service.BURST_FLOW, required_if=[("state", "parsed", ["facts"])])


if __name__ == "__main__":
    main()
