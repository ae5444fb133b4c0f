#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: federation_tenant
short_description: Put a GPU cloud tenant in every member of a Karmada federation
version_added: 0.2.0
description:
  - Connects to the B(Karmada API server) (the connection options below are Karmada's, not a member's) and
    makes tenant O(name)'s objects there - the resource templates Karmada copies to its member clusters and the
    policies that say which member gets which (rule federation-tenant-propagation).
  - The templates are the objects module M(gpucloud.platform.tenant) makes in one cluster - Namespace
    C(tenant-<name>), Role, RoleBinding, NetworkPolicy, the queue list C(platform-queues), ResourceQuota,
    LimitRange, the queue reader ClusterRole and ClusterRoleBinding, and the Volcano Queues - plus, with
    O(burst_gpus), the burst leaf C(tenant-<name>-burst) under C(cloud-burst).
  - "Where each goes: the Namespace to every member (Karmada's namespace sync controller copies every
    Namespace, no policy); the namespaced objects (PropagationPolicy C(tenant-<name>)) and the queue reader
    (ClusterPropagationPolicy C(tenant-<name>)) to every member; the subscription, team and spot queues to the
    members labelled C(platform.io/node-location=idc) only (ClusterPropagationPolicy C(tenant-<name>-idc-queues));
    the pay-as-you-go queue to the IDC members and, when O(payg_cloud_gpus) is above 0, to the cloud members too,
    its GPUs (C(capability) and C(deserved)) set per location by ClusterOverridePolicy C(tenant-<name>-payg);
    the burst leaf to the cloud members only (ClusterPropagationPolicy C(tenant-<name>-burst))."
  - Reads with one list call per kind in Karmada, selected by C(platform.io/tenant=<name>), compares what it
    wants with what Karmada holds and writes only what differs (server-side apply, field manager
    C(gpucloud-platform)) - the Namespace first, then the other templates, then the policies, each batch
    concurrently. A second run with the same options writes nothing.
  - The tenant's objects in Karmada that the platform made and no longer wants (a removed team's queue, the burst
    leaf once O(burst_gpus) is left out, the cloud part's policy) are deleted; Karmada then removes them from the
    members.
  - Every input is checked before the first request; a bad one fails naming its option, and nothing is written.
  - What runs in a member (its jobs, its queues' allocations) is not read - Karmada holds templates only. A change
    a member's Volcano refuses (a capability below what a queue holds there) is refused by that member, and
    Karmada retries it; see C(docs/federation.md).
  - The cloud members need the platform's parent queue C(cloud-burst) for the burst leaf; this module does not
    make it (it is the platform's, not the tenant's).
  - "The federation's admission (rule federation-admission): the tenant's subscription queue, while it has team
    queues, is listed in Karmada's C(platform-system/platform-parent-queues) (key C(queues), rule
    parent-queues-list) before its teams are written, and unlisted once it has none or the tenant is absent, so the
    federation's leaf admission policy refuses a job submitted to it in Karmada, as in one cluster. Other tenants' entries stay.
    While Karmada has no such ConfigMap (M(gpucloud.platform.federation_platform) has not run), nothing is listed."
options:
  name:
    description:
      - The tenant's name, a DNS-1123 label.
    type: str
    required: true
  state:
    description:
      - V(present) writes the tenant's templates and policies; V(absent) deletes every one of them that the platform
        made (templates children first, then the policies, the Namespace last), and Karmada removes them from the
        members.
    type: str
    choices: [present, absent]
    default: present
  subscription:
    description:
      - The purchase, as module M(gpucloud.platform.tenant) takes it - C(nvidia.com/gpu), C(cpu), C(memory).
      - Required with O(state=present).
    type: dict
  subscription_guarantee:
    description:
      - As module M(gpucloud.platform.tenant) takes it; left out, the guarantee of the subscription queue template
        in Karmada is kept.
    type: dict
  payg:
    description:
      - The pay-as-you-go grant, as module M(gpucloud.platform.tenant) takes it. Left out, the grant of the
        template in Karmada is kept (0 GPUs at creation).
      - Its GPUs are split by location - O(payg_cloud_gpus) in the cloud members, the rest in the IDC members.
    type: dict
  payg_cloud_gpus:
    description:
      - How many of the pay-as-you-go GPUs are cloud GPUs, from 0 to the grant's C(nvidia.com/gpu).
      - Above 0, the pay-as-you-go queue also goes to the cloud members, with these GPUs; the IDC members get the
        rest.
    type: int
    default: 0
  burst_gpus:
    description:
      - The tenant's cloud quota - its burst leaf C(tenant-<name>-burst) under C(cloud-burst), in the cloud members
        only, with this many GPUs (rule burst-quota; a whole number, 0 or more).
      - Left out, the tenant has no burst leaf (one made before is deleted).
    type: int
  teams:
    description:
      - The tenant's teams, as module M(gpucloud.platform.tenant) takes them; their queues go to the IDC members.
      - Left out, the team queue templates in Karmada are kept.
    type: list
    elements: dict
    suboptions:
      name:
        description: The team's name.
        type: str
        required: true
      deserved:
        description: What the team deserves.
        type: dict
      capability:
        description: The most the team may hold.
        type: dict
      guarantee:
        description: What the team is guaranteed.
        type: dict
  subjects:
    description:
      - Who is bound to the tenant's Role and queue reader, as module M(gpucloud.platform.tenant) takes them.
      - Default is the group C(tenant:<name>).
    type: list
    elements: dict
  egress_cidrs:
    description:
      - External networks the tenant's pods may reach, as module M(gpucloud.platform.tenant) takes them.
    type: list
    elements: str
    default: [0.0.0.0/0]
  pod_cidr:
    description:
      - The members' pod network, cut out of every egress CIDR. Required with O(state=present) - the Karmada API
        server has no Nodes to tell it. The NetworkPolicy is the same in every member, so give a network that holds
        every member's pod network.
    type: str
  service_cidr:
    description:
      - The members' service network, cut out of every egress CIDR. Required with O(state=present) - Karmada has no
        ServiceCIDR objects of its members. Give a network that holds every member's.
    type: str
  node_cidrs:
    description:
      - The members' node addresses (or networks), cut out of every egress CIDR unless O(egress_to_nodes=true).
        Module M(gpucloud.platform.tenant) reads them from its cluster's Nodes; Karmada has none, so they are given.
    type: list
    elements: str
    default: []
  egress_to_nodes:
    description:
      - Let the tenant's pods reach O(node_cidrs).
    type: bool
    default: false
  egress_to_metadata:
    description:
      - Let the tenant's pods reach the cloud metadata address C(169.254.169.254/32).
    type: bool
    default: false
  allow_critical:
    description:
      - Sets the namespace label C(platform.io/allow-critical), as module M(gpucloud.platform.tenant) does.
    type: bool
    default: false
  bounds:
    description:
      - The tenant's ResourceQuota and LimitRange, as module M(gpucloud.platform.tenant) takes them; each member gets
        the same.
    type: dict
  vgpu:
    description:
      - The tenant's vGPU purchase, as module M(gpucloud.platform.tenant) takes it.
    type: dict
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
notes:
  - Reads one list per kind in Karmada - the tenant's nine kinds, Queues, PropagationPolicies (in its namespace,
    when it exists), ClusterPropagationPolicies and ClusterOverridePolicies - one GET of the parent-queues ConfigMap,
    and one GET per queue the tenant does not have yet, to refuse a name another tenant already has (none on a
    re-run).
  - In check mode every write and delete is the Karmada API server's dry run, so nothing reaches Karmada or a member;
    the namespaced objects of a tenant whose namespace Karmada does not hold yet are only reported.
  - A queue's capability is per member - with several IDC members, each copy of the subscription holds the whole
    purchase.
"""

EXAMPLES = r"""
- name: Tenant alpha in every member; 4 of its 12 pay-as-you-go GPUs are cloud GPUs; a cloud quota of 8
  gpucloud.platform.federation_tenant:
    kubeconfig: /etc/karmada/karmada-apiserver.config
    name: alpha
    subscription: {nvidia.com/gpu: 16, cpu: 64, memory: 256Gi}
    payg: {nvidia.com/gpu: 12}
    payg_cloud_gpus: 4
    burst_gpus: 8
    teams:
      - name: algo
        deserved: {nvidia.com/gpu: 8}
    pod_cidr: 10.0.0.0/8
    service_cidr: 172.16.0.0/12
    node_cidrs: [192.168.0.0/16]

- name: Take tenant alpha out of every member
  gpucloud.platform.federation_tenant:
    kubeconfig: /etc/karmada/karmada-apiserver.config
    name: alpha
    state: absent
"""

RETURN = r"""
changed:
  description: Whether an object was (in check mode, would be) written or deleted in Karmada.
  returned: always
  type: bool
objects:
  description: The objects written or deleted in Karmada (in check mode, that would be), in order.
  returned: always
  type: list
  elements: dict
  sample: [{kind: Queue, name: tenant-alpha-burst, action: create}]
diff:
  description:
    - One diff per changed object, sorted by C(before_header), which is C(Kind/namespace/name); the before and
      after of the fields the module owns (rule diff-per-object).
  returned: when diff mode is on
  type: list
  elements: dict
done:
  description:
    - When the run fails part-way, the writes it had made; running again finishes the change.
  returned: when the run fails part-way
  type: list
  elements: str
summary:
  description:
    - One line a person reads - the tenant and what was written (in check mode, would be) in Karmada (rule
      run-summary).
  returned: on success
  type: list
  elements: str
requests:
  description: How many API requests the run made.
  returned: always
  type: int
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.federation.tenant_federation import (
    STATES,
    federation_tenant_flow,
    federation_tenant_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.inputs import SPEC_OPTIONS

OPTIONS = {
    "name": {"type": "str", "required": True},
    "state": {"type": "str", "choices": list(STATES), "default": "present"},
    **SPEC_OPTIONS,
    "payg_cloud_gpus": {"type": "int", "default": 0},
    "burst_gpus": {"type": "int"},
    "node_cidrs": {"type": "list", "elements": "str", "default": []},
}


# The I/O, and with it the Kubernetes client, is imported once the module connects: a
# refused input answers without either.
def gather(request, cluster):
    from ansible_collections.gpucloud.platform.plugins.module_utils.federation import (
        tenant_federation_io,
    )

    return tenant_federation_io.gather_federation_tenant(request, cluster)


def apply(request, planned, cluster, check_mode):
    from ansible_collections.gpucloud.platform.plugins.module_utils.federation import (
        tenant_federation_io,
    )

    return tenant_federation_io.apply_federation_tenant(request, planned, cluster, check_mode)


def main() -> None:
    # Every input is checked before the module connects.
    run_flow(
        OPTIONS,
        federation_tenant_flow(gather, apply),
        diff_by_object=True,
        summary=federation_tenant_summary,
    )


if __name__ == "__main__":
    main()
