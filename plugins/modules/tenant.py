#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    JOB_API,
    QUEUE_API,
)

DOCUMENTATION = r"""
module: tenant
short_description: Create, resize or retire a GPU cloud tenant with its namespace, RBAC, network policy and Volcano queues
version_added: 0.1.0
author: gpucloud platform team (@gpucloud)
description:
  - With O(state=present), makes sure tenant O(name) has everything it is entitled to, in one idempotent run
    that writes only what differs (server-side apply, field manager C(gpucloud-platform)).
  - Namespace C(tenant-<name>) labelled C(platform.io/tenant=<name>).
  - Role C(tenant-user) (Volcano Jobs, pod groups read-only, KServe inference services, pods and their logs and
    events read-only, config maps, secrets, services and persistent volume claims) bound to O(subjects).
    Volcano Queues are cluster-scoped, so tenants get no access to them.
  - NetworkPolicy C(deny-cross-tenant) allowing all traffic inside the namespace, DNS to C(kube-system) on port 53,
    and egress to O(egress_cidrs) with the cluster's O(pod_cidr) and O(service_cidr) cut out.
  - Queues under C(root), labelled C(platform.io/tenant) and C(platform.io/queue-type) -
    C(tenant-<name>-subscription) (deserved = capability = O(subscription)),
    one C(tenant-<name>-<team>) per entry of O(teams) under the subscription queue,
    C(tenant-<name>-payg) (deserved = capability; 0 at creation unless O(payg) is given),
    C(tenant-<name>-spot) (deserved 0; capability 0 GPUs at creation, afterwards left to the spot recompute).
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
    O(force=true); then deletes the Volcano Jobs, team queues, the tenant-level queues, the RoleBinding, Role and
    NetworkPolicy, and the Namespace last.
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
    type: str
    choices: [present, absent]
    default: present
  subscription:
    description:
      - "The purchase - resource name to quantity, for example C({nvidia.com/gpu: 40, cpu: 160, memory: 640Gi})."
      - Becomes both deserved and capability of the subscription queue. Must name C(nvidia.com/gpu).
      - Required with O(state=present).
    type: dict
  subscription_guarantee:
    description:
      - Guarantee of the subscription queue; the sum of the teams' guarantee may not exceed it.
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
          - Team name; the queue is C(tenant-<tenant>-<name>). It may not end in C(subscription), C(payg) or C(spot).
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
      - External networks the tenant's pods may reach. A CIDR that contains O(pod_cidr) or O(service_cidr) gets
        them as exceptions; a CIDR inside one of them is refused, because it would open other tenants' pods.
    type: list
    elements: str
    default: [0.0.0.0/0]
  pod_cidr:
    description:
      - The cluster's pod network, cut out of every egress CIDR.
    type: str
    default: 10.244.0.0/16
  service_cidr:
    description:
      - The cluster's service network, cut out of every egress CIDR.
    type: str
    default: 10.96.0.0/12
  node_selector:
    description:
      - Node labels (name to value) a node must carry to count in the pool the oversell guard checks against, as in
        M(gpucloud.platform.spot_capacity). Empty means every Ready, schedulable node.
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
      - Seconds to wait with O(wait=true).
    type: int
    default: 120
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
requirements:
  - kubernetes >= 24.2.0
notes:
  - Supports check mode and diff mode.
  - Reads with one list call per kind, selected by label C(platform.io/tenant=<name>); the oversell guard adds one
    list of Nodes and one of the Queues labelled C(platform.io/managed-by=gpucloud-platform) when the purchase grows.
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

- name: Allow only one external network
  gpucloud.platform.tenant:
    name: alpha
    subscription: {nvidia.com/gpu: 40, cpu: 160, memory: 640Gi}
    egress_cidrs: [203.0.113.0/24]

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

- name: Retire tenant alpha even though jobs still run
  gpucloud.platform.tenant:
    name: alpha
    state: absent
    force: true
    wait: true
"""

RETURN = r"""
changed:
  description: Whether any object was (or in check mode would be) written or deleted.
  returned: always
  type: bool
objects:
  description: The objects written or deleted, in order.
  returned: always
  type: list
  elements: dict
  sample: [{kind: Queue, name: tenant-alpha-subscription, action: update}]
diff:
  description: Before and after of every changed object, keyed C(Kind/namespace/name); only the fields the module owns.
  returned: when diff mode is on
  type: dict
  contains:
    before:
      description: The live fields before the run.
      type: dict
    after:
      description: The fields after the run.
      type: dict
added:
  description:
    - What the purchase newly sells, per pool resource (C(nvidia.com/gpu), C(cpu), C(memory)) - the growth of
      O(subscription) plus the growth of O(payg) over the live queues; what shrinks counts 0 (rule purchase-demand).
    - The purchase flows (C(tenant_create.yml), C(tenant_update.yml)) run the module in check mode first and reclaim
      this many GPUs from spot jobs before they apply the purchase.
  returned: when O(state=present)
  type: dict
  sample: {nvidia.com/gpu: 8, cpu: "32", memory: 128Gi}
running:
  description: Active Volcano Jobs and pods found in the tenant namespace (O(state=absent)).
  returned: when O(state=absent)
  type: dict
  sample: {jobs: 1, pods: 2}
api_requests:
  description: How many API requests the run made.
  returned: always
  type: int
"""

import time
from typing import Any

from ansible_collections.gpucloud.platform.plugins.module_utils.capacity.pool import (
    selector_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
    raise_if,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    ROOT_QUEUE,
    namespace_name,
    tenant_name_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube import cluster as kube
from ansible_collections.gpucloud.platform.plugins.module_utils.queues.parent_list import (
    parent_queue_names,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.queues.plan import queue_steps
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.service import (
    TENANT_KINDS,
    Changes,
    active_jobs,
    active_pods,
    busy_queues,
    check_purchase_fits,
    object_changes,
    purchase_added,
    read_parent_queues,
    read_tenant,
    run_queue_steps,
    sync_parent_queues,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.spec import (
    TenantSpec,
    parse_tenant_spec,
    plan_tenant,
)

TEAM_SPEC = {
    "name": {"type": "str", "required": True},
    "deserved": {"type": "dict"},
    "capability": {"type": "dict"},
    "guarantee": {"type": "dict"},
}


def module_options() -> dict[str, Any]:
    return {
        "name": {"type": "str", "required": True},
        "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
        "subscription": {"type": "dict"},
        "subscription_guarantee": {"type": "dict"},
        "payg": {"type": "dict"},
        "teams": {"type": "list", "elements": "dict", "options": TEAM_SPEC},
        "subjects": {"type": "list", "elements": "dict"},
        "egress_cidrs": {"type": "list", "elements": "str", "default": ["0.0.0.0/0"]},
        "pod_cidr": {"type": "str", "default": "10.244.0.0/16"},
        "service_cidr": {"type": "str", "default": "10.96.0.0/12"},
        "node_selector": {"type": "dict", "default": {}, "aliases": ["pool_node_selector"]},
        "oversell_check": {"type": "bool", "default": True},
        "force": {"type": "bool", "default": False},
        "wait": {"type": "bool", "default": False},
        "wait_timeout": {"type": "int", "default": 120},
    }


class Refused(Exception):
    """The change is valid input but the cluster's state forbids it."""

    def __init__(self, msg: str, **extra: Any):
        super().__init__(msg)
        self.extra = extra


def parse_present(params: dict[str, Any]) -> TenantSpec:
    """Every input of ``state: present``, checked at once; raises with every error."""
    errors = list(selector_errors(params.get("node_selector"), "node_selector"))
    try:
        spec = parse_tenant_spec(params)
    except PlatformValidationError as exc:
        raise PlatformValidationError([*exc.errors, *errors]) from None
    raise_if(errors)
    return spec


def ensure_present(
    params: dict[str, Any], cluster: kube.Cluster, check_mode: bool
) -> dict[str, Any]:
    spec = parse_present(params)  # raises before any request
    live = read_tenant(cluster, spec.name)
    busy = busy_queues(live.podgroups, live.queues)
    plan = plan_tenant(spec, live.queues, busy, force=params.get("force", False))
    if params.get("oversell_check", True):
        check_purchase_fits(
            cluster,
            spec.name,
            live.queues,
            spec.subscription,
            spec.payg,
            params.get("node_selector") or {},
        )
    changes = Changes()
    # A subscription queue is listed as a parent before it gets its first team
    # and unlisted only after its last team is gone.
    parents = parent_queue_names(plan.queues)
    owned = {q.name for q in plan.queues} | set(live.queues) | set(plan.queue_deletes)
    parent_list = read_parent_queues(cluster)
    parent_list = sync_parent_queues(cluster, parent_list, parents, parents, changes, check_mode)
    namespace_new = not live.namespace_exists
    for manifest, action, current in object_changes(plan.objects, live):
        changes.record(manifest, action, current)
        namespaced = manifest["kind"] != "Namespace"
        if check_mode and namespaced and namespace_new:
            continue  # its namespace does not exist yet: nothing to dry-run against
        cluster.apply(manifest)
    steps = queue_steps(plan.queues, live.queues, plan.queue_deletes)
    run_queue_steps(cluster, steps, live.queues, changes, check_mode)
    sync_parent_queues(cluster, parent_list, parents, owned, changes, check_mode)
    return {
        "changed": changes.changed,
        "objects": changes.objects,
        "diff": changes.diff(),
        "added": purchase_added(spec.name, live.queues, spec.subscription, spec.payg),
    }


def ensure_absent(
    params: dict[str, Any], cluster: kube.Cluster, check_mode: bool
) -> dict[str, Any]:
    name = params["name"]
    raise_if(tenant_name_errors(name, "name"))
    live = read_tenant(cluster, name, workloads=True)
    jobs, pods = active_jobs(live.jobs), active_pods(live.pods)
    running = {"jobs": len(jobs), "pods": len(pods)}
    if (jobs or pods) and not params.get("force"):
        raise Refused(
            f"tenant {name!r} still has {len(jobs)} active Volcano Job(s) and {len(pods)} active pod(s) in "
            f"namespace {namespace_name(name)}; wait for them, or force: true to delete the tenant anyway",
            running=running,
        )
    changes = Changes()
    ns = namespace_name(name)
    # Children before parents: jobs, team queues, tenant-level queues, RBAC and
    # policy, and the namespace last.
    for job in jobs:
        meta = job["metadata"]
        changes.record(job, "delete", job)
        if not check_mode:
            cluster.delete(JOB_API, "Job", meta["name"], namespace=ns)
    teams = [
        q
        for q in live.queues.values()
        if (q.get("spec") or {}).get("parent") not in (ROOT_QUEUE, "", None)
    ]
    tops = [q for q in live.queues.values() if q not in teams]
    for queue in [*teams, *tops]:
        changes.record(queue, "delete", queue)
        if not check_mode:
            queue_name = queue["metadata"]["name"]
            kube.retry_while_denied(
                lambda n=queue_name: cluster.delete(QUEUE_API, "Queue", n), timeout=60
            )
    sync_parent_queues(
        cluster, read_parent_queues(cluster), [], list(live.queues), changes, check_mode
    )
    for api_version, kind in reversed(TENANT_KINDS):
        for obj in live.objects.get(kind, {}).values():
            changes.record(obj, "delete", obj)
            if not check_mode:
                meta = obj["metadata"]
                cluster.delete(api_version, kind, meta["name"], namespace=meta.get("namespace"))
    if params.get("wait") and not check_mode and changes.changed:
        wait_gone(cluster, name, params.get("wait_timeout", 120))
    return {
        "changed": changes.changed,
        "objects": changes.objects,
        "diff": changes.diff(),
        "running": running,
    }


def wait_gone(cluster: kube.Cluster, name: str, timeout: int) -> None:
    deadline = time.monotonic() + timeout
    selector = f"platform.io/tenant={name}"
    while True:
        left = cluster.list("v1", "Namespace", label_selector=selector) + cluster.list(
            QUEUE_API, "Queue", label_selector=selector
        )
        if not left:
            return
        if time.monotonic() >= deadline:
            names = ", ".join(f"{o.get('kind')}/{o['metadata']['name']}" for o in left)
            raise Refused(f"after {timeout}s these objects of tenant {name!r} still exist: {names}")
        time.sleep(2)


def run(params: dict[str, Any], cluster: kube.Cluster, check_mode: bool = False) -> dict[str, Any]:
    """The module's logic, without AnsibleModule: validation errors raise
    PlatformValidationError, refusals raise Refused, API errors ApiException."""
    if params.get("state", "present") == "absent":
        return ensure_absent(params, cluster, check_mode)
    return ensure_present(params, cluster, check_mode)


def main() -> None:
    module = kube.platform_module(
        argument_spec=kube.argument_spec(**module_options()), supports_check_mode=True
    )
    params = dict(module.params)
    if params["state"] == "present":
        try:
            parse_present(params)  # every input checked before connecting
        except PlatformValidationError as exc:
            module.fail_json(msg=str(exc), errors=exc.messages, changed=False)
    cluster = kube.Cluster.from_module(module)
    try:
        result = run(params, cluster, module.check_mode)
    except PlatformValidationError as exc:
        module.fail_json(
            msg=str(exc), errors=exc.messages, changed=False, api_requests=cluster.requests
        )
    except Refused as exc:
        module.fail_json(msg=str(exc), changed=False, api_requests=cluster.requests, **exc.extra)
    except kube.ApiException as exc:
        module.fail_json(msg=kube.api_error_message(exc), api_requests=cluster.requests)
    if not module._diff:
        result.pop("diff", None)
    result["api_requests"] = cluster.requests
    module.exit_json(**result)


if __name__ == "__main__":
    main()
