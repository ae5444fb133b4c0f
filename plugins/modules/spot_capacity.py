#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: spot_capacity
short_description: Recompute every tenant's spot queue capability from the idle GPU pool
description:
  - Reads the pool (allocatable C(nvidia.com/gpu), C(cpu) and C(memory) of the Ready, schedulable Nodes matching
    O(node_selector)) and the managed Volcano Queues, then sets every spot queue's capability to its tenant's
    share of the idle pool, with deserved 0.
  - "Idle = pool - sum of subscription queues' deserved - sum of pay-as-you-go queues' granted capacity, never below 0.
    A tenant's share is its subscribed GPUs / all subscribed GPUs. GPUs are apportioned in whole GPUs by the
    largest-remainder method so the capabilities add up to exactly the idle GPUs (ties: larger subscription, then
    tenant name); cpu and memory by the same shares, in whole millicores and MiB. A tenant without a subscription gets 0."
  - "With O(offer=unused), idle = pool - what the paying queues hold or wait for: each tenant's subscription and team
    queues, and its PAYG queue, claim what their unfinished pods hold on the pool's nodes and what their waiting
    PodGroups (Pending or Inqueue) still want of their C(minResources), at most what the tenant bought. GPUs bought and
    left unused then go to spot, and come back when a paying pod waits for them: M(gpucloud.platform.spot_reclaim) with
    O(gpucloud.platform.spot_reclaim#module:need_from=unused), which C(spot_recompute.yml) runs with
    C(spot_offer=unused)."
  - "With O(apportion=demand), the shares are lent: every tenant keeps what its spot queue holds and its waiting spot
    gangs (Pending or Inqueue PodGroups) that fit its share, oldest first; what the shares leave unused goes, whole
    gangs at a time and oldest first, to waiting gangs larger than their own tenant's share; what is still left goes
    back to the tenants below their share. cpu and memory follow the GPUs. A share lent out comes back as the borrowing
    jobs end; nothing running is put over its capability by a lend."
  - One list call for Nodes and one for Queues (label selector C(platform.io/managed-by=gpucloud-platform)); a
    server-side apply of just C(spec.capability) and C(spec.deserved), under the field manager
    C(gpucloud-platform-capacity), only for the spot queues whose value changes.
  - When O(node_selector) is given, a pool without a Ready, schedulable node, or without an allocatable GPU, is
    refused naming O(node_selector), its value and how many nodes it matched (a typo in the selector would otherwise
    set every spot queue to 0 GPUs), unless O(allow_empty_pool=true).
  - A cpu or memory capability that would be 0 is written as C(1m) and C(1Mi), because Volcano reads a 0 cpu or
    memory capability as unlimited.
  - Safe to run every minute. The result counts the whole fleet (RV(counts)) but, unless O(report=all), lists only
    the tenants whose spot capability changes, so a large fleet's unchanged run returns a few numbers, not a row per
    tenant.
options:
  offer:
    description:
      - What spot may hold. V(unsold), the design's, is every GPU nobody bought. V(unused) is every GPU no paying queue
        holds or waits for (see the description); it reads every managed Queue, the unfinished Pods and the
        PodGroups too.
      - Choose V(unused) only with a reclaim that gives the GPUs back, C(spot_recompute.yml) with C(spot_offer=unused)
        run when a paying job is blocked (the event-driven reconcile) and on its schedule.
    type: str
    choices: [unsold, unused]
    default: unsold
    version_added: 0.2.0
  apportion:
    description:
      - How the offer is shared among the tenants. V(share), the design's, gives each tenant its subscription's share.
        V(demand) gives each its share, then lends what shares leave unused to waiting spot gangs larger than their
        tenant's share (see the description); it reads the unfinished Pods and the PodGroups too.
    type: str
    choices: [share, demand]
    default: share
    version_added: 0.2.0
  report:
    description:
      - Which tenants RV(tenants) lists. V(changed) lists the tenants whose spot capability changes (in check mode,
        would change). V(all) lists every tenant with a managed queue.
      - RV(counts) covers every tenant either way. A tenant with a subscription but no spot queue is named in a warning.
    type: str
    choices: [changed, all]
    default: changed
    version_added: 0.2.0
  allow_empty_pool:
    description:
      - Accept a pool with no node or no GPU and set every spot queue to 0 GPUs (for example while a pool is
        drained on purpose).
    type: bool
    default: false
  state:
    description:
      - V(present) writes every spot queue's capability from the idle pool.
      - V(gathered) reads the pool's Nodes and the billing Queues (with O(offer=unused) or O(apportion=demand), every managed Queue, the
        unfinished C(pods) and the C(podgroups)), as the rules read them, and returns them in RV(gathered); nothing is
        written.
      - V(parsed) plans from O(facts) (what V(gathered) returned, edited for a what-if or from another cluster)
        without connecting, and returns what a check-mode run returns, with C(changed=false).
    type: str
    choices: [present, gathered, parsed]
    default: present
  facts:
    description:
      - With O(state=parsed), the facts to plan from, as RV(gathered) holds them (C(nodes), C(queues), and with
        O(offer=unused) or O(apportion=demand) C(pods) and C(podgroups)).
    type: dict
version_added: 0.1.0
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
  - gpucloud.platform.pool
notes:
  - In check mode the writes are sent as server-side dry runs.
seealso:
  - module: gpucloud.platform.spot_reclaim
  - module: gpucloud.platform.payg_capacity
"""

EXAMPLES = r"""
- name: Recompute spot capabilities over the whole cluster
  gpucloud.platform.spot_capacity:
  register: spot

- name: Only nodes of the main pool count
  gpucloud.platform.spot_capacity:
    node_selector:
      platform.io/pool: main

- name: Recompute while the pool is drained on purpose (every spot queue gets 0 GPUs)
  gpucloud.platform.spot_capacity:
    node_selector:
      platform.io/pool: main
    allow_empty_pool: true

- name: Show what changed, and how many spot queues there are
  ansible.builtin.debug:
    msg: >-
      {{ spot.counts.changed }} of {{ spot.counts.spot_queues }} spot queues changed:
      {{ spot.tenants | map(attribute='tenant') | zip(spot.tenants | map(attribute='new')) }}

- name: Offer spot the GPUs bought and left unused, not only the unsold ones
  gpucloud.platform.spot_capacity:
    offer: unused

- name: Lend the shares spot jobs leave unused to spot gangs larger than their tenant's share
  gpucloud.platform.spot_capacity:
    offer: unused
    apportion: demand

- name: Every tenant's share and spot capability, changed or not
  gpucloud.platform.spot_capacity:
    report: all
  register: spot_table

- name: The pool and the billing queues as the spot rules read them (nothing written)
  gpucloud.platform.spot_capacity:
    state: gathered
  register: spot_facts

- name: What spot capacity would be without the first two nodes, planned offline
  gpucloud.platform.spot_capacity:
    state: parsed
    facts:
      nodes: "{{ spot_facts.gathered.nodes[2:] }}"
      queues: "{{ spot_facts.gathered.queues }}"
"""

RETURN = r"""
pool:
  description: The pool (allocatable GPUs, cpu and memory of the pool nodes).
  returned: always
  type: dict
  sample: {nvidia.com/gpu: 64, cpu: "512", memory: 2Ti}
idle:
  description: What spot may hold, by RV(offer) - what is left after subscriptions and pay-as-you-go grants
    (V(unsold)), or after what the paying queues hold or wait for (V(unused)).
  returned: always
  type: dict
  sample: {nvidia.com/gpu: 24, cpu: "192", memory: 768Gi}
offer:
  description: The offer RV(idle) was counted by, O(offer).
  returned: always
  type: str
  sample: unsold
  version_added: 0.2.0
apportion:
  description: How RV(idle) was shared, O(apportion).
  returned: always
  type: str
  sample: share
  version_added: 0.2.0
counts:
  description:
    - Every tenant with a managed queue (C(tenants)), those with a spot queue (C(spot_queues)), and how many of those
      change (C(changed); in check mode, would change) or stay as they are (C(unchanged)).
  returned: always
  type: dict
  sample: {tenants: 3, spot_queues: 2, changed: 1, unchanged: 1}
  version_added: 0.2.0
tenants:
  description:
    - One row per tenant whose spot capability changes, or with O(report=all) per tenant with a managed queue, sorted
      by tenant. C(old) is the live spot capability (null without a spot queue), C(new) the computed one, C(share)
      the tenant's fraction of the idle pool. With O(apportion=demand), C(lent) is the GPUs it borrows (positive) or
      lends (negative) against its share.
  returned: always
  type: list
  elements: dict
  sample:
    - {tenant: alpha, queue: tenant-alpha-spot, subscription: 40, share: 0.666667,
       old: {nvidia.com/gpu: 20}, new: {nvidia.com/gpu: 16, cpu: "128", memory: 512Gi}, changed: true}
updated:
  description:
    - Spot queues whose capability was changed (in check mode, would be).
    - When some writes failed, only the queues that were written; RV(planned) names every queue the run meant to
      change.
  returned: always
  type: list
  elements: str
planned:
  description: Every spot queue the run meant to change, when some of its writes failed.
  returned: failure
  type: list
  elements: str
diff:
  description:
    - One diff per changed object, sorted by C(before_header), which is the queue name; each holds the before and
      after of each changed spot queue's capability and deserved. Ansible shows each under its own header (rule
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
    - The idle pool and each tenant's spot capacity old -> new (in check mode, what would change).
    - In a few lines a person reads (rule run-summary); a playbook's last task prints them.
  returned: on success
  type: list
  elements: str
gathered:
  description: The pool's Nodes and the billing Queues as the rules read them.
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

from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow
from ansible_collections.gpucloud.platform.plugins.module_utils.spot import service
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.capacity_plan import REPORTS
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.lending import APPORTIONS
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.offer import OFFERS
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.summary import capacity_summary
from ansible_collections.gpucloud.platform.plugins.module_utils.workload.pool import (
    POOL_OPTIONS,
)

OPTIONS = dict(
    POOL_OPTIONS,
    offer=dict(type="str", choices=list(OFFERS), default="unsold"),
    apportion=dict(type="str", choices=list(APPORTIONS), default="share"),
    allow_empty_pool=dict(type="bool", default=False),
    report=dict(type="str", choices=list(REPORTS), default="changed"),
    state=dict(type="str", choices=["present", "gathered", "parsed"], default="present"),
    facts=dict(type="dict"),
)


def main() -> None:
    run_flow(
        OPTIONS,
        service.RECOMPUTE_FLOW,
        required_if=[("state", "parsed", ["facts"])],
        diff_by_object=True,
        summary=capacity_summary,
    )


if __name__ == "__main__":
    main()
