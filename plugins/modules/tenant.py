#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: tenant
short_description: Create, resize or retire a GPU cloud tenant with its namespace, RBAC, network policy and Volcano queues
version_added: 0.1.0
description:
  - With O(state=present), makes sure tenant O(name) has everything it is entitled to, in one idempotent run
    that writes only what differs (server-side apply, field manager C(gpucloud-platform)).
  - Namespace C(tenant-<name>) labelled C(platform.io/tenant=<name>), with Pod Security C(baseline) enforced and
    C(restricted) audited and warned about (labels C(pod-security.kubernetes.io/*), version C(v1.35)), and
    C(platform.io/allow-critical) set from O(allow_critical).
  - Role C(tenant-user) (Volcano Jobs, pod groups read-only, KServe inference services, pods and their logs and
    events read-only, config maps, secrets, services and persistent volume claims) bound to O(subjects).
  - ClusterRole and ClusterRoleBinding C(gpucloud-tenant-<name>-queues), granting O(subjects) C(get) and C(watch) on
    exactly the tenant's own Volcano Queues (by C(resourceNames)); Queues are cluster-scoped, so the namespaced Role
    cannot grant them, and no tenant may list them all.
  - ConfigMap C(platform-queues) in the tenant namespace, each of the tenant's leaf queues (the queues that take
    jobs) mapped to its queue type. The queue admission policies read it, so a job names one of its own tenant's
    queues only.
  - NetworkPolicy C(deny-cross-tenant) allowing all traffic inside the namespace, DNS to C(kube-system) on port 53,
    and egress to O(egress_cidrs) with the cluster's pod and service networks, the nodes' addresses (unless
    O(egress_to_nodes=true)) and the cloud metadata address C(169.254.169.254/32) (unless
    O(egress_to_metadata=true)) cut out.
  - The pod and service networks are O(pod_cidr) and O(service_cidr) when given, else the cluster's own - the
    C(spec.podCIDRs) of its Nodes and the C(spec.cidrs) of its C(networking.k8s.io/v1) ServiceCIDR objects. Nothing
    is guessed - when the cluster does not tell a network and it is not given, the run fails naming the option to
    set, before any write.
  - A queue the tenant is to get that already exists for another tenant (tenant C(pa) with team C(b-x) and tenant
    C(pa-b) with team C(x) are both C(tenant-pa-b-x)) is refused, naming the field, before any write.
  - Queues under C(root), labelled C(platform.io/tenant) and C(platform.io/queue-type) -
    C(tenant-<name>-subscription) (deserved = capability = O(subscription)),
    one C(tenant-<name>-<team>) per entry of O(teams) under the subscription queue,
    C(tenant-<name>-payg) (deserved = capability; 0 at creation unless O(payg) is given),
    C(tenant-<name>-spot) (deserved 0; capability 0 GPUs at creation, afterwards left to the spot recompute).
  - "Every queue's capability names the vGPU resources C(volcano.sh/vgpu-number), C(volcano.sh/vgpu-memory) and
    C(volcano.sh/vgpu-cores) (rule vgpu-queue-capability): the subscription queue (deserved too) and every team
    queue the O(vgpu) purchase; the pay-as-you-go and spot queues, and every queue of a tenant without O(vgpu),
    what their pods hold right now, 0 when they hold none. Volcano reads a capability that does not name a
    resource as unlimited, and a 0 for these resources as 0."
  - Keeps C(tenant-<name>-subscription) listed in the key C(queues) (comma-separated) of ConfigMap
    C(platform-system/platform-parent-queues) while it has team queues, and unlisted otherwise, so that the admission
    policy C(gpucloud-queue-leaf) refuses jobs in it. The ConfigMap is read once and written only when the list
    changes; other tenants' names are left as they are.
  - Every input is checked before the first write; a bad input fails with every problem found, each naming
    its field (for example C(teams[1].deserved.nvidia.com/gpu)), and nothing is written.
  - A change that puts a queue's capability below what it has allocated right now is refused with the numbers
    unless O(force=true).
  - "Oversell guard (O(oversell_check=true)): a O(subscription) or O(payg) that grows is refused, before any write,
    when every other tenant's subscription and pay-as-you-go grant plus this tenant's new values would exceed the
    pool - the allocatable C(nvidia.com/gpu), C(cpu) and C(memory) of the Ready, schedulable nodes matching
    O(node_selector). The error names the field and the numbers, for example C(subscription.nvidia.com/gpu: 40 for
    the subscription of tenant 'gamma' exceeds what the pool has left for it (64 in the pool - 32 in other tenants'
    subscriptions - 4 in other tenants' pay-as-you-go - 0 in this tenant's pay-as-you-go = 28); at most 28 can be
    granted (rule oversell-guard))."
  - With O(state=absent), refuses while any Volcano Job or pod is still active in the tenant namespace unless
    O(force=true); then deletes the Volcano Jobs, team queues, the tenant-level queues, the queue-reader
    ClusterRoleBinding and ClusterRole, the C(platform-queues) ConfigMap, the NetworkPolicy, RoleBinding and Role,
    and the Namespace last.
  - In check mode nothing is written; objects the API server can judge alone are sent as a server-side dry run.
options:
  name:
    description:
      - The tenant name, a DNS-1123 label of at most 43 characters so that every derived name fits.
    type: str
    required: true
  state:
    description:
      - V(present) creates or updates the tenant, V(absent) removes it.
      - V(rendered) returns the tenant's manifests (RV(manifests)) as its first run writes them, sorted, without a
        cluster - no kubeconfig is read and no request is made; O(pod_cidr) and O(service_cidr) are then required.
        M(gpucloud.platform.tenant_catalog) renders many tenants the same way.
      - V(gathered) makes the reads of a V(present) run and returns them in RV(gathered) (the tenant's objects,
        queues and pod groups, the Nodes and ServiceCIDRs, the queues of a name the tenant is to get, the oversell
        guard's Nodes and Queues when the purchase grows, the parent-queues ConfigMap); nothing is written. The
        reads stop where the run would be refused, as a V(present) run's do.
      - V(parsed) plans a V(present) run from O(facts) (what V(gathered) returned, from this or another cluster)
        without connecting, and returns what a check-mode run on that cluster returns, with C(changed=false); a
        change the cluster's state forbids is refused as that run refuses it.
    type: str
    choices: [present, absent, rendered, gathered, parsed]
    default: present
  facts:
    description:
      - With O(state=parsed), the facts to plan from, as RV(gathered) holds them (C(objects) per kind, C(queues),
        C(podgroups), C(nodes), C(service_cidrs), C(taken), C(pool_nodes), C(committed), C(parent_list)).
    type: dict
  subscription:
    description:
      - "The purchase - resource name to quantity, for example C({nvidia.com/gpu: 40, cpu: 160, memory: 640Gi})."
      - Becomes both deserved and capability of the subscription queue. Must name C(nvidia.com/gpu).
      - Required with O(state=present).
    type: dict
  subscription_guarantee:
    description:
      - Guarantee of the subscription queue; the sum of the teams' guarantee may not exceed it.
      - When left out, a new tenant gets none and an existing one keeps its subscription queue's guarantee (rule
        guarantee-kept), so a run that only changes sizes never drops a guarantee its teams name; C({}) removes it.
    type: dict
  payg:
    description:
      - Deserved and capability of the pay-as-you-go queue, per resource (resources of O(subscription) not named
        here are 0).
      - When left out, a new tenant gets 0 and an existing one keeps what the pay-as-you-go scaler set.
    type: dict
  teams:
    description:
      - The team sub-queues of the subscription queue, the complete list.
      - Team queues not listed are removed (refused while they run jobs, unless O(force=true)).
      - When left out, team queues are left as they are (see M(gpucloud.platform.team_queue)).
    type: list
    elements: dict
    suboptions:
      name:
        description:
          - Team name; the queue is C(tenant-<tenant>-<name>). It may not end in C(subscription), C(payg), C(spot) or C(burst).
        type: str
        required: true
      deserved:
        description:
          - Deserved per resource; the teams' deserved add up to at most the subscription.
        type: dict
      capability:
        description:
          - Capability per resource, at most the subscription's; a resource left out is bounded by the subscription.
        type: dict
      guarantee:
        description:
          - Guarantee per resource, at most deserved; the teams' guarantee add up to at most O(subscription_guarantee).
        type: dict
  subjects:
    description:
      - Who is bound to Role C(tenant-user). Each item has C(kind) (V(Group), V(User) or V(ServiceAccount)),
        C(name) and, for a ServiceAccount, C(namespace) (default the tenant namespace).
      - Default is the group C(tenant:<name>).
    type: list
    elements: dict
  egress_cidrs:
    description:
      - External networks the tenant's pods may reach. A CIDR that contains the pod or service network, a node
        address or the metadata address gets them as exceptions.
      - A CIDR inside the pod or service network is refused, because it would open other tenants' pods and
        services; so is one inside a node address or the metadata address while O(egress_to_nodes) or
        O(egress_to_metadata) do not allow it, and one made of nothing but the cluster's own networks.
    type: list
    elements: str
    default: [0.0.0.0/0]
  pod_cidr:
    description:
      - The cluster's pod network, cut out of every egress CIDR.
      - When left out (null), the pod CIDRs the cluster gave its Nodes (C(spec.podCIDRs), else C(spec.podCIDR)),
        from one list of the Nodes. Nothing is guessed - when no Node has one, the run fails and asks for this
        option.
      - Give the whole pod network here (the controller manager's C(--cluster-cidr)) where nodes join later, since
        the Nodes tell only the ranges given out so far.
    type: str
  service_cidr:
    description:
      - The cluster's service network, cut out of every egress CIDR.
      - When left out (null), the C(spec.cidrs) of the cluster's C(networking.k8s.io/v1) ServiceCIDR objects (the
        API server makes C(kubernetes) from its C(--service-cluster-ip-range)), from one list of them. Nothing is
        guessed - on an API server without ServiceCIDRs, or without any, the run fails and asks for this option.
    type: str
  egress_to_nodes:
    description:
      - Let the tenant's pods reach the nodes' addresses (their C(InternalIP) and C(ExternalIP)), where an egress
        CIDR covers them.
      - By default every node address is cut out of the egress CIDRs - kubelets and host-network daemons are no
        tenant's business.
    type: bool
    default: false
  egress_to_metadata:
    description:
      - Let the tenant's pods reach the cloud metadata address C(169.254.169.254/32), where an egress CIDR covers it.
      - By default it is cut out - it serves the nodes' cloud credentials.
    type: bool
    default: false
  allow_critical:
    description:
      - Sets the namespace label C(platform.io/allow-critical) to C("true") (else C("false")). The queue-priority
        admission policy (C(gpucloud-queue-priority)) admits jobs of priority class C(critical-job) only in
        namespaces with C(platform.io/allow-critical=true).
    type: bool
    default: false
  bounds:
    description:
      - "How much the tenant may hold beyond its queues, enforced by the API server in its namespace (rule
        tenant-bounds): a ResourceQuota C(platform-bounds) (C(pods), C(persistentvolumeclaims), C(requests.storage))
        and a LimitRange C(platform-bounds) (the largest claim, in any storage class)."
      - "Keys: C(pods) (default the larger of 110 and 16 per GPU of the subscription plus pay-as-you-go), C(claims)
        (default 50), C(storage) (all claims together, default C(20Ti)), C(claim_size) (one claim, default C(4Ti)),
        C(storage_classes) (a mapping of storage class to the most its claims may request together, for example
        C({checkpoints: 10Ti}), each within C(storage); rule storage-class-bounds)."
      - "A class bound that grows is refused when the tenants' bounds of that class would add up to more than the class
        holds, as the storage role records it (C(storage_classes[].capacity); rule storage-class-oversell), unless
        O(oversell_check=false)."
      - Volcano does not hold a queue to a C(pods) capability, so the pod bound lives here. A bound below what the
        namespace holds refuses only new pods or claims; nothing running is evicted.
      - The tenant's Role grants neither object.
    type: dict
  vgpu:
    description:
      - "The tenant's vGPU purchase (rule vgpu-purchase), shared by its subscription queue and every team queue under
        it: C(number) (required, 0 or more) vGPUs its jobs may hold at once; C(memory_mib) (optional) the device
        memory, MiB, all of them may hold together; C(cores) (optional, default C(number) x 100) the percent of GPU
        compute all of them may hold together."
      - Without C(memory_mib) the memory is bounded only by the number (a vGPU holds at most its GPU's memory).
      - "Left out: no vGPU. The tenant's queues then hold 0 vGPU (or what their pods already hold), and its jobs asking
        for C(volcano.sh/vgpu-number) wait. Pay-as-you-go and spot queues never get vGPU beyond what they hold."
      - A purchase below what the queues hold right now is refused unless O(force=true), as for any capability.
    type: dict
  node_selector:
    description:
      - Node labels (name to value) a node must carry to count in the pool the oversell guard checks against, as in
        M(gpucloud.platform.spot_capacity). Empty means every Ready, schedulable node.
      - Every key must be a Kubernetes label key and every value a label value; anything else is refused before the
        first request, naming C(node_selector.<key>).
    type: dict
    default: {}
    aliases: [pool_node_selector]
  oversell_check:
    description:
      - With O(state=present), refuse a growing O(subscription) or O(payg) that would make all subscriptions plus all
        pay-as-you-go grants exceed the pool.
      - Only values that grow are checked; keeping or shrinking a purchase is never refused.
      - The check reads the Nodes and every managed Queue (two list calls), and only when something grows.
      - Set to V(false) on a platform that deliberately oversells.
    type: bool
    default: true
  force:
    description:
      - With O(state=present), accept a capability below what a queue has allocated and remove team queues that
        run jobs.
      - With O(state=absent), delete the tenant even while jobs or pods are active.
    type: bool
    default: false
  wait:
    description:
      - With O(state=absent), wait until the namespace and the queues are gone.
    type: bool
    default: false
  wait_timeout:
    description:
      - Seconds to wait with O(wait=true), at least 1; a smaller value is refused before anything is deleted.
      - When the namespace or a queue is still there after that long, the module fails with what is left and
        reports C(changed=true), since the deletes were made.
    type: int
    default: 120
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
notes:
  - Reads with one list call per kind, selected by label C(platform.io/tenant=<name>).
  - With O(state=present) it also reads one list of the Nodes (pod CIDRs and node addresses) and, unless
    O(service_cidr) is given, one list of the ServiceCIDRs; and one GET per queue the tenant does not have yet, to
    refuse a name another tenant already has (none on a re-run).
  - The oversell guard adds one list of Nodes and one of the Queues labelled
    C(platform.io/managed-by=gpucloud-platform) when the purchase grows.
  - The network policy holds the pod networks as the run found them; after nodes join with new pod CIDRs, run the
    module again (or give O(pod_cidr)).
"""

EXAMPLES = r"""
- name: Onboard tenant alpha with three teams
  gpucloud.platform.tenant:
    name: alpha
    subscription:
      nvidia.com/gpu: 40
      cpu: 160
      memory: 640Gi
    teams:
      - name: algo
        deserved: {nvidia.com/gpu: 20}
        capability: {nvidia.com/gpu: 40}
      - name: eng
        deserved: {nvidia.com/gpu: 10}
      - name: data
        deserved: {nvidia.com/gpu: 10}

- name: Tenant beta buys 4 vGPUs with 80 GiB of device memory and two GPUs' compute, besides its whole GPUs
  gpucloud.platform.tenant:
    name: beta
    subscription: {nvidia.com/gpu: 8, cpu: 32, memory: 128Gi}
    vgpu: {number: 4, memory_mib: 81920, cores: 200}

- name: Allow only one external network
  gpucloud.platform.tenant:
    name: alpha
    subscription: {nvidia.com/gpu: 40, cpu: 160, memory: 640Gi}
    egress_cidrs: [203.0.113.0/24]

- name: On a cluster that does not tell its networks, give them; let the pods reach the cloud metadata address
  gpucloud.platform.tenant:
    name: delta
    subscription: {nvidia.com/gpu: 8, cpu: 32, memory: 128Gi}
    pod_cidr: 10.244.0.0/16
    service_cidr: 10.96.0.0/12
    egress_to_metadata: true

- name: A tenant whose jobs may run as critical-job
  gpucloud.platform.tenant:
    name: ops
    subscription: {nvidia.com/gpu: 8, cpu: 32, memory: 128Gi}
    allow_critical: true

- name: Sell only what the main node pool holds (the oversell guard counts nodes labelled platform.io/pool=main)
  gpucloud.platform.tenant:
    name: beta
    subscription: {nvidia.com/gpu: 16, cpu: 64, memory: 256Gi}
    node_selector:
      platform.io/pool: main

- name: Oversell on purpose
  gpucloud.platform.tenant:
    name: gamma
    subscription: {nvidia.com/gpu: 80, cpu: 320, memory: 1280Gi}
    oversell_check: false

- name: Read what a run of tenant alpha decides from ...
  gpucloud.platform.tenant:
    name: alpha
    subscription: {nvidia.com/gpu: 40, cpu: 160, memory: 640Gi}
    state: gathered
  register: alpha_facts

- name: "... and plan a larger purchase from it offline (the oversell guard judges it on the saved pool)"
  gpucloud.platform.tenant:
    name: alpha
    subscription: {nvidia.com/gpu: 48, cpu: 192, memory: 768Gi}
    state: parsed
    facts: "{{ alpha_facts.gathered }}"

- name: Retire tenant alpha even though jobs still run
  gpucloud.platform.tenant:
    name: alpha
    state: absent
    force: true
    wait: true
"""

RETURN = r"""
changed:
  description: Whether an object was (in check mode, would be) written or deleted.
  returned: always
  type: bool
objects:
  description: The objects written or deleted (in check mode, that would be), in order.
  returned: always
  type: list
  elements: dict
  sample: [{kind: Queue, name: tenant-alpha-subscription, action: update}]
diff:
  description:
    - One diff per changed object, sorted by C(before_header), which is C(Kind/namespace/name); each holds the before
      and after of each changed object, only the fields the module owns. Ansible shows each under its own header (rule
      diff-per-object).
  returned: when diff mode is on
  type: list
  elements: dict
added:
  description:
    - What the purchase newly sells, per pool resource (C(nvidia.com/gpu), C(cpu), C(memory)) - the growth of
      O(subscription) plus the growth of O(payg) over the live queues; what shrinks counts 0 (rule purchase-demand).
    - The purchase flows (C(tenant_create.yml), C(tenant_update.yml)) run the module in check mode first and reclaim
      this many GPUs from spot jobs before they apply the purchase.
  returned: when O(state=present) or O(state=parsed)
  type: dict
  sample: {nvidia.com/gpu: 8, cpu: "32", memory: 128Gi}
manifests:
  description:
    - Every object of the tenant, sorted as M(gpucloud.platform.tenant_catalog) sorts them (rule rendered-order).
  returned: when O(state=rendered)
  type: list
  elements: dict
gathered:
  description:
    - The objects a V(present) run reads, as read - C(objects) (per kind), C(queues), C(podgroups), C(nodes),
      C(service_cidrs), C(taken), C(parent_list) and, when the purchase grows, C(pool_nodes) and C(committed).
  returned: when O(state=gathered)
  type: dict
state:
  description: The offline state answered (V(rendered) or V(parsed)); nothing was read or written.
  returned: when O(state=rendered) or O(state=parsed)
  type: str
running:
  description: Active Volcano Jobs and pods found in the tenant namespace (O(state=absent)).
  returned: when O(state=absent)
  type: dict
  sample: {jobs: 1, pods: 2}
done:
  description:
    - When the run fails part-way, the writes it had made (C(changed) is true when there are any); running again
      finishes the change.
  returned: when the run fails part-way
  type: list
  elements: str
summary:
  description:
    - The tenant, what was written (in check mode, would be) and its queues with their sizes; with
      O(state=rendered), how many manifests were rendered.
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
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.inputs import SPEC_OPTIONS
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.summary import (
    tenant_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.tenant_flow import (
    STATES,
    tenant_flow,
)

OPTIONS = {
    "name": {"type": "str", "required": True},
    "state": {"type": "str", "choices": list(STATES), "default": "present"},
    "facts": {"type": "dict"},
    **SPEC_OPTIONS,
    "node_selector": {"type": "dict", "default": {}, "aliases": ["pool_node_selector"]},
    "oversell_check": {"type": "bool", "default": True},
    "force": {"type": "bool", "default": False},
    "wait": {"type": "bool", "default": False},
    "wait_timeout": {"type": "int", "default": 120},
}


# The service, and with it the Kubernetes client, is imported once the module connects:
# rendered and parsed answer without either.
def gather(request, cluster):
    from ansible_collections.gpucloud.platform.plugins.module_utils.tenants import service

    return service.gather_tenant(request, cluster)


def apply(request, planned, cluster, check_mode):
    from ansible_collections.gpucloud.platform.plugins.module_utils.tenants import service

    return service.apply_tenant(request, planned, cluster, check_mode)


def main() -> None:
    # Every input is checked before the module connects.
    run_flow(
        OPTIONS,
        tenant_flow(gather, apply),
        required_if=[("state", "parsed", ["facts"])],
        diff_by_object=True,
        summary=tenant_summary,
    )


if __name__ == "__main__":
    main()
