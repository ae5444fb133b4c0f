#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: federation_platform
short_description: Put the GPU cloud platform's own objects in every member of a Karmada federation
version_added: 0.2.0
description:
  - Connects to the B(Karmada API server) (the connection options below are Karmada's, not a member's) and
    makes the platform's own objects there - what every member needs before a tenant or a job is put in the
    federation - and the policies that say which member gets which (rule federation-platform-propagation).
  - "In Karmada only: the ResourceInterpreterCustomization C(gpucloud-platform-volcano-job), which tells Karmada a
    Volcano Job's replicas and per-pod requirement (rule federation-job-replicas), the ClusterTaintPolicy
    C(gpucloud-platform-member-not-ready), which taints a member Karmada cannot reach
    C(platform.io/member-not-ready:NoExecute) so that its jobs are moved once or held (rule
    federation-member-failover; Karmada's webhook must allow a NoExecute taint policy and its controller manager run
    the C(Failover) gate, see C(docs/federation.md)), and the Namespace
    C(volcano-system), labelled C(namespace.karmada.io/skip-auto-propagation=true): it holds the scheduler
    ConfigMap's template, and each member has its own from its Volcano install."
  - "To every member labelled C(platform.io/node-location=idc) or C(cloud): the five PriorityClasses
    (ClusterPropagationPolicy C(gpucloud-platform-priority-classes)) and the Volcano scheduler ConfigMap
    C(volcano-system/volcano-scheduler-configmap) (PropagationPolicy C(gpucloud-platform-scheduler-conf))."
  - "To the cloud members only, with O(cloud_burst_gpus): the platform's parent queue C(cloud-burst) of that
    many GPUs, the parent of the tenants' burst leaves (ClusterPropagationPolicy C(gpucloud-platform-cloud-burst))."
  - "The federation's admission, in Karmada only (rule federation-admission): the platform's admission policies and
    their bindings, the same as a member's C(scheduling_policy) role applies, and the leaf policy's parameter
    C(platform-system/platform-parent-queues) (the Namespace C(platform-system) labelled as C(volcano-system)
    is). Karmada's API server enforces them on what is submitted there: a Volcano Job naming another tenant's
    queue, or a class its queue does not take, is refused at the federation's admission, as in one cluster. Each
    tenant's queue list, their other parameter, is C(federation_tenant)'s; the large-job throttle's is a
    member's own. The pod-placement policy is a cloud-burst site's - a job that may go to a cloud member
    tolerates its nodes' taint. They are not propagated: each member keeps the policies of its own bring-up."
  - Every policy has C(conflictResolution=Overwrite) - a member holds a scheduler ConfigMap of its own bring-up, and
    may hold the PriorityClasses or C(cloud-burst) of a single-cluster bring-up; Karmada takes them over.
  - Reads with one list call per kind in Karmada, selected by C(platform.io/managed-by=gpucloud-platform), compares
    what it wants with what Karmada holds and writes only what differs (server-side apply, field manager
    C(gpucloud-platform)) - the Namespaces first, then the other templates, then the policies and admission
    bindings (a binding after its policy and parameter), each batch concurrently. A second run with the same
    options writes nothing.
  - Nothing is deleted but the admission policies O(admission) switches off (and the image-registries policy once
    O(image_registries) is empty), with their bindings. O(cloud_burst_gpus) left out leaves a C(cloud-burst) already
    in Karmada as it is - jobs may be running in it in a cloud member.
  - Every input is checked before the first request (the scheduler configuration as the C(scheduling_policy) role
    checks it); a bad one fails naming its option, and nothing is written.
options:
  scheduler_actions:
    description:
      - The Volcano scheduler's actions, in order, as the C(scheduling_policy) role's C(scheduling_policy_actions).
      - Left out, the platform's - C(enqueue), C(allocate), C(preempt), C(gangpreempt), C(reclaim), C(gangreclaim),
        C(backfill).
    type: list
    elements: str
  scheduler_tiers:
    description:
      - The Volcano scheduler's tiers, as the C(scheduling_policy) role's C(scheduling_policy_tiers) - each a
        mapping with C(plugins).
      - Left out, the platform's.
    type: list
    elements: dict
  scheduler_configurations:
    description:
      - The Volcano scheduler's action configurations, as the C(scheduling_policy) role's
        C(scheduling_policy_configurations).
    type: list
    elements: dict
  cloud_burst_gpus:
    description:
      - The capability in GPUs of the platform's parent queue C(cloud-burst), written for the cloud members only
        (a whole number, 0 or more).
      - Left out, C(cloud-burst) is neither written nor deleted.
    type: int
  admission:
    description:
      - Which of the platform's admission policies Karmada holds, as the C(scheduling_policy) role's
        C(scheduling_policy_admission) says it for a member - C(queue_tenant), C(queue_leaf), C(queue_priority),
        C(queue_billing), C(large_job_throttle), C(pod_placement), C(platform_state), C(compliance_placement),
        C(workload_queue), C(tenant_services), each C(true) or C(false). A switch left out is on.
      - Give the members' settings, so that what Karmada admits is what the members admit. C(cloud_burst) is not a
        switch here - a federation's pod placement is always a cloud-burst site's.
      - A policy switched off is deleted from Karmada with its binding (the binding first). Switching off every
        policy whose binding reads a ConfigMap parameter is refused unless O(remove_last_parameterised_policy).
    type: dict
  platform_groups:
    description:
      - The groups the platform-state admission policy lets write the platform's own ConfigMaps in tenant namespaces,
        as the role's C(scheduling_policy_platform_groups). The account that runs the federation modules must be in one
        (or be a service account of C(platform-system)).
    type: list
    elements: str
    default: [system:masters]
  image_registries:
    description:
      - The registry prefixes tenant pods may pull from, each ending in C(/), as the role's
        C(scheduling_policy_image_registries). Empty - no such policy in Karmada (one written before is deleted).
    type: list
    elements: str
    default: []
  remove_last_parameterised_policy:
    description:
      - Remove the last admission policy binding that reads a ConfigMap parameter anyway. Kubernetes 1.35 then stops
        the API server's parameter informer until it restarts (kubernetes/kubernetes#133827); restart Karmada's API
        server afterwards.
    type: bool
    default: false
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
notes:
  - Reads one list per kind in Karmada - Namespaces, ResourceInterpreterCustomizations, ClusterTaintPolicies,
    PriorityClasses, ConfigMaps (in C(volcano-system) and C(platform-system), each when it exists),
    ValidatingAdmissionPolicies, ValidatingAdmissionPolicyBindings, Queues, PropagationPolicies (in the same two
    namespaces) and ClusterPropagationPolicies.
  - In check mode every write is the Karmada API server's dry run, so nothing reaches Karmada or a member; the
    namespaced objects and their policy are only reported while Karmada lacks C(volcano-system) or
    C(platform-system).
  - A member's Volcano reads its copy of the scheduler ConfigMap as it reads one written there.
  - The account that runs the federation modules in Karmada must be one the platform-state admission policy
    exempts (a platform group such as C(system:masters), or a service account of C(platform-system), as in one
    cluster) - it writes each tenant's C(platform-queues).
"""

EXAMPLES = r"""
- name: The platform's objects in every member, with a cloud of 64 GPUs
  gpucloud.platform.federation_platform:
    kubeconfig: /etc/karmada/karmada-apiserver.config
    cloud_burst_gpus: 64

- name: The members' admission settings - Services not checked, images from one registry only
  gpucloud.platform.federation_platform:
    kubeconfig: /etc/karmada/karmada-apiserver.config
    admission:
      tenant_services: false
    image_registries: [registry.example/]
    platform_groups: [system:masters, platform-operators]

- name: The same objects, the scheduler without backfill; cloud-burst left as it is
  gpucloud.platform.federation_platform:
    kubeconfig: /etc/karmada/karmada-apiserver.config
    scheduler_actions: [enqueue, allocate, preempt, gangpreempt, reclaim, gangreclaim]
"""

RETURN = r"""
changed:
  description: Whether an object was (in check mode, would be) written in Karmada.
  returned: always
  type: bool
objects:
  description: The objects written in Karmada (in check mode, that would be), in order.
  returned: always
  type: list
  elements: dict
  sample: [{kind: Queue, name: cloud-burst, action: create}]
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
    - One line a person reads - what was written (in check mode, would be) in Karmada and what became of
      C(cloud-burst) (rule run-summary).
  returned: on success
  type: list
  elements: str
requests:
  description: How many API requests the run made.
  returned: always
  type: int
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.federation.platform_federation import (
    federation_platform_flow,
    federation_platform_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow

OPTIONS = {
    "scheduler_actions": {"type": "list", "elements": "str"},
    "scheduler_tiers": {"type": "list", "elements": "dict"},
    "scheduler_configurations": {"type": "list", "elements": "dict"},
    "cloud_burst_gpus": {"type": "int"},
    "admission": {"type": "dict"},
    "platform_groups": {"type": "list", "elements": "str", "default": ["system:masters"]},
    "image_registries": {"type": "list", "elements": "str", "default": []},
    "remove_last_parameterised_policy": {"type": "bool", "default": False},
}


# The I/O, and with it the Kubernetes client, is imported once the module connects: a
# refused input answers without either.
def gather(request, cluster):
    from ansible_collections.gpucloud.platform.plugins.module_utils.federation import (
        platform_federation_io,
    )

    return platform_federation_io.gather_federation_platform(request, cluster)


def apply(request, planned, cluster, check_mode):
    from ansible_collections.gpucloud.platform.plugins.module_utils.federation import (
        platform_federation_io,
    )

    return platform_federation_io.apply_federation_platform(request, planned, cluster, check_mode)


def main() -> None:
    # Every input is checked before the module connects.
    run_flow(
        OPTIONS,
        federation_platform_flow(gather, apply),
        diff_by_object=True,
        summary=federation_platform_summary,
    )


if __name__ == "__main__":
    main()
