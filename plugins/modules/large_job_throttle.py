#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: large_job_throttle
short_description: Engage and release the large-job submission throttle of every tenant namespace
description:
  - "Design 6.4.2: while a large job (PriorityClass C(large-job)) waits in a queue for the GPUs that preemption frees,
    jobs below C(large-job) must not be admitted to that queue, or they take those GPUs first. The admission policy
    C(gpucloud-large-job-throttle) refuses them while the queue is listed in the namespace's ConfigMap
    C(platform-throttle) (keys C(queues), C(until), C(reason)); this module keeps that ConfigMap right."
  - "Engage: a large-job PodGroup whose phase is C(Pending) or C(Inqueue) with fewer than C(minMember) pods running
    gets an entry (key C(entries.json)) with its queue and a deadline O(timeout) seconds from now; its queue is listed."
  - "Release: the entry goes when the job runs or is gone. When the deadline passes first the entry is kept as
    C(expired) and the queue is no longer listed, so small jobs are never blocked for long and the same job does not
    engage the throttle again. A namespace without entries has no ConfigMap."
  - "A large job's GPUs are what its Volcano Job asks for (the PodGroup's owner): per task, C(replicas) times one
    pod's C(nvidia.com/gpu) requests (else limits). A PodGroup whose Volcano Job is gone, or that no Volcano Job owns,
    engages nothing and its entry is released."
  - "A waiting large job engages only when preemption can get it its GPUs (rule throttle-can-help): its PodGroup was
    admitted (Inqueue; Volcano's preempt and gangpreempt skip Pending jobs), it fits the pool, the free GPUs plus those
    of the running jobs below large-job in its queue cover it, and with a hard network topology one HyperNode of the
    tiers it may use spans that many GPUs. Otherwise it is reported in RV(not_engaged) and warned about."
  - "One list of tenant Namespaces (label C(platform.io/tenant)), one of PodGroups, one of throttle ConfigMaps and,
    when there is a large-job PodGroup, one of Volcano Jobs, for all tenants (and, when an admitted large job waits
    without an entry, one of Nodes, one of Pods and, for a hard topology, one of HyperNodes); writes only the
    ConfigMaps that change.
    A C(platform-throttle) ConfigMap without C(platform.io/managed-by=gpucloud-platform) is left alone and reported.
    Safe to run every minute."
version_added: 0.1.0
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
options:
  timeout:
    description: Seconds a large job may hold its queue before the throttle is released anyway (design, 5 minutes).
    type: int
    default: 300
  namespaces:
    description:
      - Reconcile only these tenant namespaces. Empty means every tenant namespace.
      - Each entry must be a tenant namespace C(tenant-<name>) (a DNS-1123 label); anything else, such as
        C(kube-system), is refused naming C(namespaces[i]) before the module connects.
      - "Each entry must also be the namespace of a tenant the platform made (labelled C(platform.io/tenant)); a
        C(tenant-) name no tenant has is refused from the namespace list, before any write (rule
        tenant-namespace-live)."
    type: list
    elements: str
    default: []
  state:
    description:
      - V(present) engages and releases the throttles, writing the ConfigMaps that change.
      - V(gathered) makes the same reads and returns them in RV(gathered) (the tenant Namespaces, PodGroups, Volcano
        Jobs and throttle ConfigMaps, the time they were read and, when an admitted large job waits, the Nodes,
        unfinished Pods, Queues, PVCs and HyperNodes rule throttle-can-help judges it by); nothing is written.
      - V(parsed) plans the reconcile from O(facts) (what V(gathered) returned, edited for a what-if or from another
        cluster) as of its C(read_at) without connecting, and returns what a check-mode run returns, with
        C(changed=false).
    type: str
    choices: [present, gathered, parsed]
    default: present
    version_added: 0.2.0
  facts:
    description:
      - With O(state=parsed), the facts to plan from, as RV(gathered) holds them (C(read_at), C(namespaces),
        C(podgroups), C(jobs), C(configmaps) and, when read, C(nodes), C(pods), C(queues),
        C(persistentvolumeclaims), C(hypernodes)).
      - Without C(read_at) the plan is as of now; without C(nodes) a waiting large job is judged by its PodGroup
        only, as when the GPUs cannot be read.
    type: dict
    version_added: 0.2.0
attributes:
  diff_mode:
    support: partial
    details:
      - The diff holds each written namespace's throttled queues, not its entries; RV(engaged), RV(released) and
        RV(expired) name the jobs whose entries changed.
notes:
  - In check mode a ConfigMap that would be written is a server-side dry run; one that would be deleted (a release) is
    reported and left in place.
seealso:
  - module: gpucloud.platform.vcjob
"""

EXAMPLES = r"""
- name: Engage and release the throttle of every tenant
  gpucloud.platform.large_job_throttle:
  register: throttle

- name: A shorter wait for one tenant
  gpucloud.platform.large_job_throttle:
    namespaces: [tenant-alpha]
    timeout: 120

- name: What the throttle reads (nothing written)
  gpucloud.platform.large_job_throttle:
    state: gathered
  register: throttle_facts

- name: The same reconcile with a 60-second timeout, planned offline
  gpucloud.platform.large_job_throttle:
    state: parsed
    timeout: 60
    facts: "{{ throttle_facts.gathered }}"
"""

RETURN = r"""
engaged:
  description: Large jobs (namespace/name) whose queue this run started to throttle.
  returned: always
  type: list
  elements: str
released:
  description: Large jobs whose entry this run removed (the job runs or is gone).
  returned: always
  type: list
  elements: str
expired:
  description: Large jobs whose wait passed the timeout in this run (their queue is no longer throttled).
  returned: always
  type: list
  elements: str
not_engaged:
  description:
    - Waiting large jobs whose queue this run did not throttle because preemption cannot get them their GPUs (rule
      throttle-can-help), each with C(job), C(queue) and C(reason); each is also a warning.
    - "Reasons: the PodGroup is Pending (Volcano preempts only for admitted jobs); the job asks for more GPUs than the
      pool has; the free GPUs plus those of the running jobs below large-job in its queue are fewer than it asks for;
      its hard network topology fits no HyperNode of the tiers it may use."
  returned: always
  type: list
  elements: dict
  sample:
    - job: tenant-alpha/big
      queue: tenant-alpha-algo
      reason: >-
        its hard network topology (tier 1 or below) places at most 16 GPUs in one HyperNode, and it asks for 32
throttles:
  description: Per namespace with a throttle ConfigMap after the run, the throttled queues, until when, and why.
  returned: always
  type: dict
  sample: {tenant-alpha: {queues: [tenant-alpha-algo], until: "2026-01-01T12:05:00Z", reason: "large job ..."}}
skipped:
  description: Namespaces whose C(platform-throttle) ConfigMap is not managed by the platform.
  returned: always
  type: list
  elements: str
diff:
  description: Throttled queues per namespace before and after.
  returned: when diff mode is on
  type: dict
done:
  description:
    - When the run fails part-way, the writes it had made (C(changed) is true when there are any); running again
      finishes the change.
  returned: when the run fails part-way
  type: list
  elements: str
summary:
  description:
    - The throttles engaged, released and expired (in check mode, that would be) and the throttled queues.
    - In a few lines a person reads (rule run-summary); a playbook's last task prints them.
  returned: on success
  type: list
  elements: str
gathered:
  description: The objects the reconcile reads, as read (without C(managedFields)), and C(read_at), when they were read.
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
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.jobs import service
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.summary import throttle_summary
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow

OPTIONS = dict(
    timeout=dict(type="int", default=300),
    namespaces=dict(type="list", elements="str", default=[]),
    state=dict(type="str", choices=["present", "gathered", "parsed"], default="present"),
    facts=dict(type="dict"),
)


def main() -> None:
    run_flow(
        OPTIONS,
        service.THROTTLE_FLOW,
        required_if=[("state", "parsed", ["facts"])],
        summary=throttle_summary,
    )


if __name__ == "__main__":
    main()
