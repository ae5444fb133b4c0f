#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: node_groups
short_description: Group the nodes into IDC pools, cloud pools and compliance zones, and bind the queues to them
version_added: 0.1.0
description:
  - "The hybrid cloud of the second design document: IDC GPU nodes and public-cloud GPU nodes behind Virtual Kubelet in
    one cluster, local first, compliance pinned (docs/hybrid-cloud.md)."
  - "Each node of a group gets C(volcano.sh/nodegroup-name: <group>) (read by Volcano's C(nodegroup) plugin),
    C(platform.io/node-location: idc|cloud), on a cloud node C(platform.io/cloud-provider) and
    C(topology.kubernetes.io/region), on a node of a compliance zone C(platform.io/compliance-zone). A cloud node also
    gets Virtual Kubelet's taint C(virtual-kubelet.io/provider=<provider>:NoSchedule) if it lacks it. A node that was
    grouped and is in no group any more loses these labels; its taints are left alone."
  - "Then the queues (rule node-groups-order: nodes first). Root's C(spec.affinity) requires the IDC groups, so every
    queue without an affinity of its own (subscription, team, spot) inherits IDC only (rule idc-by-default). The queues
    of O(elastic_queue_types) prefer the IDC groups first and the cloud groups after (rule elastic-local-first). The
    platform queue O(burst_queue) requires the cloud groups and is capped at the GPUs the cloud nodes declare (rule
    burst-cloud-only)."
  - "Refused before any write: a group that fails rule node-group-spec (field named); a node selected by two groups
    (rule one-group-per-node); a GPU node in no group, which Volcano would stop using once root names the IDC groups
    (rule every-gpu-node-grouped); listed nodes that do not exist; a scheduler configuration without the nodegroup
    plugin with C(enableHierarchy: true) (rule node-groups-need-nodegroup; the scheduling_policy role's default has
    it)."
  - "Reads one list of Nodes, one list of Queues and the scheduler ConfigMap. Writes only what differs, each with a
    JSON merge patch carrying the object's resourceVersion. A node that changed after it was read (its kubelet writes
    its status every few seconds) is read again and its patch planned again from what it carries now, up to five
    times; RV(diff) and RV(writes) say what that fresh plan wrote. In check mode the writes are the API server's dry
    runs."
options:
  groups:
    description:
      - The node groups. Each is a mapping.
      - "C(name): the group (a DNS-1123 label), the value of C(volcano.sh/nodegroup-name)."
      - "C(location): C(idc) or C(cloud)."
      - "C(provider), C(region): a cloud group's provider and region (DNS-1123 labels); only on a cloud group."
      - "C(compliance_zone): an IDC group's compliance zone; compliance-restricted jobs of that zone run only there."
      - "C(nodes) (node names) or C(selector) (labels, all must match): exactly one of them."
    type: list
    elements: dict
    required: true
  elastic_queue_types:
    description:
      - "Queue types (label C(platform.io/queue-type)) that may burst to the cloud, IDC first."
    type: list
    elements: str
    choices: [payg, team]
    default: [payg]
  burst_queue:
    description:
      - The platform queue (parent C(root)) that uses only the cloud groups; a tenant's cloud quota is a leaf under it.
      - An empty string makes none.
    type: str
    default: cloud-burst
  state:
    description:
      - V(present) labels and taints the nodes and binds the queues.
      - V(gathered) reads what V(present) reads (the burst queue, the scheduler ConfigMap, the Nodes and the Queues,
        as far as a run reads before it refuses) and returns it in RV(gathered); nothing is written.
      - V(parsed) plans from O(facts) (what V(gathered) returned) without connecting, and returns what a check-mode
        run returns, with C(changed=false).
    type: str
    choices: [present, gathered, parsed]
    default: present
  facts:
    description:
      - With O(state=parsed), the facts to plan from, as RV(gathered) holds them (C(burst_queue),
        C(scheduler_configmap), C(nodes), C(queues)).
    type: dict
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
seealso:
  - module: gpucloud.platform.vcjob
  - module: gpucloud.platform.spot_capacity
"""

EXAMPLES = r"""
- name: Two IDC pools, one of them a compliance zone, and one cloud pool
  gpucloud.platform.node_groups:
    groups:
      - name: idc-h100
        location: idc
        selector:
          nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
      - name: idc-finance
        location: idc
        compliance_zone: finance
        nodes: [gpu-node-6, gpu-node-7]
      - name: cloud-aliyun-hangzhou
        location: cloud
        provider: aliyun
        region: cn-hangzhou
        selector:
          type: virtual-kubelet

- name: The nodes and queues the groups are planned from (nothing written)
  gpucloud.platform.node_groups:
    groups: "{{ platform_node_groups }}"
    state: gathered
  register: node_group_facts

- name: The labels, taints and affinities planned offline from those facts
  gpucloud.platform.node_groups:
    groups: "{{ platform_node_groups }}"
    state: parsed
    facts: "{{ node_group_facts.gathered }}"
"""

RETURN = r"""
nodes:
  description: Each grouped node (and each node that left every group, as null) with its group.
  returned: unless O(state=gathered)
  type: dict
  sample: {"gpu-node-0": "idc-h100", "vk-aliyun-0": "cloud-aliyun-hangzhou"}
groups:
  description: Each group's nodes.
  returned: unless O(state=gathered)
  type: dict
writes:
  description: The objects written (C(Node/<name>), C(Queue/<name>)), in order.
  returned: unless O(state=gathered)
  type: list
  elements: str
diff:
  description: The owned labels and taints of each node and the affinity (and the burst queue's capability) of each
    queue, before and after.
  returned: in diff mode
  type: dict
changed:
  description: Whether anything was written (in check mode, would be).
  returned: always
  type: bool
summary:
  description:
    - Each group with its number of nodes, and how many objects were written (in check mode, would be).
    - In a few lines a person reads (rule run-summary); a playbook's last task prints them.
  returned: on success
  type: list
  elements: str
gathered:
  description: The burst queue, the scheduler ConfigMap, the Nodes and the Queues, as far as a run reads before it
    refuses.
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
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.inputs import OPTIONS
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.summary import (
    node_groups_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow


def main() -> None:
    run_flow(
        OPTIONS,
        service.GROUPS_FLOW,
        required_if=[("state", "parsed", ["facts"])],
        summary=node_groups_summary,
    )


if __name__ == "__main__":
    main()
