#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: team_queue
short_description: Add, resize or remove one team sub-queue of a tenant's subscription queue
version_added: 0.1.0
description:
  - Manages the Volcano queue C(tenant-<tenant>-<name>) under C(tenant-<tenant>-subscription), leaving the
    tenant's other queues as they are.
  - The same rules as M(gpucloud.platform.tenant) apply - guarantee <= deserved <= capability per resource,
    a team's capability at most the subscription's, the teams' deserved (and guarantee) adding up to at most the
    subscription's.
  - Refuses to give a subscription queue its first team while jobs or pod groups run in it (Volcano runs jobs only
    in leaf queues), to put a capability below what the queue has allocated right now, and to remove a team queue
    that runs jobs; O(force=true) overrides the last two.
  - Keeps the subscription queue listed in the key C(queues) of ConfigMap C(platform-system/platform-parent-queues)
    while it has teams (added before its first team is created, removed after its last team is gone), so that the
    admission policy C(gpucloud-queue-leaf) refuses jobs in it; the ConfigMap is written only when the list changes.
  - Keeps the tenant's ConfigMap C(platform-queues) (in C(tenant-<tenant>); each leaf queue of the tenant mapped to
    its queue type, which the queue admission policies read) and the C(resourceNames) of its queue-reader ClusterRole
    C(gpucloud-tenant-<tenant>-queues) in step with the queues the tenant has after the change, both written after
    the queue and only when they differ.
  - Refuses a team whose queue name already exists for another tenant (tenant C(pa) with team C(b-x) and tenant
    C(pa-b) with team C(x) are both C(tenant-pa-b-x)), before any write.
  - Every input is checked before the first write; a bad input writes nothing.
options:
  tenant:
    description:
      - The tenant whose subscription queue gets the team.
    type: str
    required: true
  name:
    description:
      - Team name; it may not end in C(subscription), C(payg), C(spot) or C(burst).
    type: str
    required: true
  state:
    description:
      - V(present) adds or resizes the team queue, V(absent) removes it.
      - V(gathered) reads what V(present) reads (see the notes; as far as a run reads before it refuses) and returns
        it in RV(gathered); nothing is written.
      - V(parsed) plans V(present) from O(facts) (what V(gathered) returned) without connecting, and returns what a
        check-mode run returns, with C(changed=false).
    type: str
    choices: [present, absent, gathered, parsed]
    default: present
  facts:
    description:
      - With O(state=parsed), the facts to plan from, as RV(gathered) holds them (C(queues), C(podgroups), C(taken),
        C(parent_queues), C(queue_list), C(queue_reader)).
    type: dict
  deserved:
    description:
      - "Deserved per resource, for example C({nvidia.com/gpu: 10})."
    type: dict
  capability:
    description:
      - Capability per resource; a resource left out is bounded by the subscription.
    type: dict
  guarantee:
    description:
      - Guarantee per resource.
    type: dict
  force:
    description:
      - Accept a capability below what the queue has allocated, or remove a team queue that runs jobs.
    type: bool
    default: false
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
notes:
  - Reads the tenant's Queues (one list, by label C(platform.io/tenant)) and, when it has any, its PodGroups (one
    list); one GET of the new team's queue when the tenant does not have it yet; one GET each of the parent-queues
    ConfigMap, the C(platform-queues) ConfigMap and the queue-reader ClusterRole, all before the first write. The
    last two are applied after the queue write, each only when it differs.
  - The ClusterRoleBinding of the queue reader and the rest of the tenant are M(gpucloud.platform.tenant)'s.
"""

EXAMPLES = r"""
- name: Give tenant alpha a research team
  gpucloud.platform.team_queue:
    tenant: alpha
    name: research
    deserved: {nvidia.com/gpu: 8}
    capability: {nvidia.com/gpu: 16}

- name: Remove it again
  gpucloud.platform.team_queue:
    tenant: alpha
    name: research
    state: absent

- name: What giving tenant alpha a research team reads (nothing written)
  gpucloud.platform.team_queue:
    tenant: alpha
    name: research
    deserved: {nvidia.com/gpu: 8}
    state: gathered
  register: team_facts

- name: The same team planned offline from those facts
  gpucloud.platform.team_queue:
    tenant: alpha
    name: research
    deserved: {nvidia.com/gpu: 8}
    state: parsed
    facts: "{{ team_facts.gathered }}"
"""

RETURN = r"""
changed:
  description: Whether an object was (in check mode, would be) written or deleted.
  returned: always
  type: bool
objects:
  description: The objects written or deleted (in check mode, that would be), in order.
  returned: unless O(state=gathered)
  type: list
  elements: dict
  sample: [{kind: Queue, name: tenant-alpha-research, action: create}]
gathered:
  description: What the run reads, as far as it reads before it refuses (see the notes).
  returned: when O(state=gathered)
  type: dict
state:
  description: V(parsed) when the answer is a plan from O(facts); nothing was written.
  returned: when O(state=parsed)
  type: str
diff:
  description:
    - One diff per changed object, sorted by C(before_header), which is C(Kind/namespace/name); each holds the before
      and after of each changed object, only the fields the module owns. Ansible shows each under its own header (rule
      diff-per-object).
  returned: when diff mode is on
  type: list
  elements: dict
done:
  description:
    - When the run fails part-way, the writes it had made (C(changed) is true when there are any); running again
      finishes the change.
  returned: when the run fails part-way
  type: list
  elements: str
summary:
  description:
    - The team queue, what was written (in check mode, would be) and its size.
    - In a few lines a person reads (rule run-summary); a playbook's last task prints them.
  returned: on success
  type: list
  elements: str
requests:
  description: How many API requests the run made.
  returned: always
  type: int
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants import service
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.summary import (
    team_queue_summary,
)

OPTIONS = {
    "tenant": {"type": "str", "required": True},
    "name": {"type": "str", "required": True},
    "state": {
        "type": "str",
        "choices": ["present", "absent", "gathered", "parsed"],
        "default": "present",
    },
    "facts": {"type": "dict"},
    "deserved": {"type": "dict"},
    "capability": {"type": "dict"},
    "guarantee": {"type": "dict"},
    "force": {"type": "bool", "default": False},
}


def main() -> None:
    # Every input is checked before the module connects.
    run_flow(
        OPTIONS,
        service.TEAM_QUEUE_FLOW,
        required_if=[("state", "parsed", ["facts"])],
        diff_by_object=True,
        summary=team_queue_summary,
    )


if __name__ == "__main__":
    main()
