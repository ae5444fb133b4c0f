#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: payg_capacity
short_description: Grow a tenant's pay-as-you-go queue before use and shrink it after release
description:
  - Sets the capability of a tenant's pay-as-you-go Queue (C(tenant-<tenant>-payg)) and keeps its deserved equal to it,
    so what the tenant runs there is never reclaimed by other tenants.
  - "Never below what the queue uses: the larger, per resource, of its C(status.allocated) and what its unfinished
    Volcano Jobs ask for. A O(capability) below that is refused before any change."
  - "Growing is checked against the pool first (oversell guard: all subscriptions plus all pay-as-you-go grants must
    fit in the pool). When fewer GPUs are free (pool - allocated) than the growth, spot jobs are reclaimed first, by the
    same rules and the same code as M(gpucloud.platform.spot_reclaim) (Lease, Events, history)."
  - "IDC first, then cloud (rule payg-idc-first): with node groups (M(gpucloud.platform.node_groups): a C(cloud-burst)
    queue, the pay-as-you-go queue's affinity naming a cloud group) and a burst quota for the tenant
    (M(gpucloud.platform.burst_quota)), a growth takes the IDC's unsold GPUs first (with O(reclaim=false) only those
    no spot job holds) and the rest from the cloud, up to the burst quota less what the tenant's burst queue uses and
    the cloud GPUs its grant holds already, and never more than the cloud has left after every burst queue's use and
    every tenant's pay-as-you-go cloud GPUs (rule payg-burst-headroom). More is refused with the numbers."
  - "The grant's cloud GPUs are recorded on the queue as annotation C(platform.io/payg-cloud-gpus) (rule
    payg-cloud-part): no IDC pool counts them (oversell guard, spot capacity), and a shrink gives them back first."
  - With O(fit_to_use=true) the queue (or, without O(tenant), every tenant's pay-as-you-go queue) shrinks to what it uses;
    it never grows. Safe to run every minute.
  - One list call for Queues and one for Volcano Jobs; Nodes and Pods are read only when a queue grows. Writes only the
    queues whose value changes, with a server-side apply of just C(spec.capability) and C(spec.deserved) under the field
    manager C(gpucloud-platform-capacity).
version_added: 0.1.0
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
  - gpucloud.platform.pool
  - gpucloud.platform.reclaim
options:
  tenant:
    description: The tenant. Required with O(capability); without it O(fit_to_use=true) acts on every tenant.
    type: str
  capability:
    description:
      - "The pay-as-you-go queue's new capability (= deserved), a map of resource name to quantity of
        C(nvidia.com/gpu), C(cpu) and C(memory), for example C({nvidia.com/gpu: 16, cpu: 128, memory: 1Ti})."
      - Resources not named keep their live value.
    type: dict
  fit_to_use:
    description:
      - Shrink the queue(s) to what they use now instead of setting O(capability).
      - A grant grown less than O(grace_minutes) ago is kept, and its row says until when (C(kept_until)).
    type: bool
    default: false
  grace_minutes:
    description:
      - "How long a growing grant is kept before O(fit_to_use=true) (the scheduled C(payg_reconcile.yml)) may shrink
        it unused (rule payg-grace): a grant is made for a job about to be submitted. Every growth stamps its queue
        with annotation C(platform.io/payg-granted-at), and its row in RV(queues) says when the grace ends
        (C(kept_until)). An explicit O(capability) is never held back."
    type: int
    default: 30
  reclaim:
    description:
      - When a growth finds too few free GPUs, reclaim spot jobs first. When false such a growth fails, unless the
        tenant's burst quota takes what the IDC cannot give without a reclaim (rule payg-idc-first).
    type: bool
    default: true
  demand_reason:
    description: What the growth is for, written into the reclaim Events and history. Defaults to the tenant and the growth.
    type: str
  state:
    description:
      - V(present) resizes (in check mode, says what it would write and which spot jobs it would reclaim).
      - V(gathered) makes the reads the resize decides on and returns them in RV(gathered) (C(read_at), the billing
        C(queues) and the Volcano C(jobs); when a queue grows, the pool's C(nodes), its unfinished C(pods) and the
        Running Volcano C(running_pods); when the IDC cannot give a growth in full, the C(burst) queues); nothing is
        written.
      - V(parsed) plans from O(facts) as of their C(read_at) without connecting, and returns what a check-mode run on a
        cluster holding them returns (the queues, the updates, the diff and the reclaim with its victims) except the
        reclaim's C(history), which only the cluster holds; a refusal is refused as in a run.
      - A run that reclaims reads and decides the reclaim again under the C(spot-reclaim) Lease, on what the cluster
        then is (as M(gpucloud.platform.spot_reclaim) does).
    type: str
    choices: [present, gathered, parsed]
    default: present
  facts:
    description:
      - With O(state=parsed), the facts to plan from, as RV(gathered) holds them.
    type: dict
attributes:
  diff_mode:
    support: partial
    details:
      - The diff holds the queues' capability and deserved; the spot jobs a growth reclaims are in RV(reclaim), not in
        the diff.
notes:
  - In check mode the writes are sent as server-side dry runs and a reclaim only reports its victims.
seealso:
  - module: gpucloud.platform.spot_reclaim
  - module: gpucloud.platform.spot_capacity
  - module: gpucloud.platform.burst_quota
"""

EXAMPLES = r"""
- name: Grow tenant alpha's pay-as-you-go queue to 16 GPUs before submitting
  gpucloud.platform.payg_capacity:
    tenant: alpha
    capability:
      nvidia.com/gpu: 16
      cpu: "128"
      memory: 1Ti
    demand_reason: pay-as-you-go job train-42 of tenant alpha
    wait: true

- name: Shrink every pay-as-you-go queue to what it uses
  gpucloud.platform.payg_capacity:
    fit_to_use: true

- name: Save what a growth of tenant alpha decides on
  gpucloud.platform.payg_capacity:
    tenant: alpha
    capability:
      nvidia.com/gpu: 16
    state: gathered
  register: payg_facts

- name: The growth and the spot jobs it would reclaim, from the saved facts (no connection)
  gpucloud.platform.payg_capacity:
    tenant: alpha
    capability:
      nvidia.com/gpu: 16
    state: parsed
    facts: "{{ payg_facts.gathered }}"
"""

RETURN = r"""
queues:
  description:
    - One row per pay-as-you-go queue the run looked at, with the granted capacity before and after.
    - C(kept_until) (when present) is when a fit-to-use run may shrink the grant unused (rule payg-grace).
    - "C(from_idc) and C(from_cloud): how many GPUs of C(growth) come from the IDC and how many from the cloud
      (rule payg-idc-first); C(cloud_gpus): the cloud GPUs of the new grant (rule payg-cloud-part)."
  returned: unless O(state=gathered)
  type: list
  elements: dict
  sample:
    - {tenant: alpha, queue: tenant-alpha-payg, old: {nvidia.com/gpu: 8}, in_use: {nvidia.com/gpu: 4},
       new: {nvidia.com/gpu: 16}, growth: 8, from_idc: 6, from_cloud: 2, cloud_gpus: 2, changed: true,
       kept_until: "2026-01-01T12:30:00Z"}
updated:
  description: Queues whose capability was changed (in check mode, would be).
  returned: unless O(state=gathered)
  type: list
  elements: str
reclaim:
  description: The spot reclaim the growth needed (same fields as M(gpucloud.platform.spot_reclaim) returns), or null.
  returned: unless O(state=gathered)
  type: dict
diff:
  description:
    - One diff per changed object, sorted by C(before_header), which is the queue name; each holds the before and
      after of each changed queue's capability and deserved. Ansible shows each under its own header (rule
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
gathered:
  description:
    - The facts the resize decides on, as listed (see O(state)), for O(facts) of a V(parsed) run.
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

from ansible_collections.gpucloud.platform.plugins.module_utils.capacity import service
from ansible_collections.gpucloud.platform.plugins.module_utils.capacity.grace import (
    DEFAULT_GRACE_MINUTES,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.flow import (
    READ_STATE_OPTIONS,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.reclaim import RECLAIM_OPTIONS

OPTIONS = dict(
    tenant=dict(type="str"),
    capability=dict(type="dict"),
    fit_to_use=dict(type="bool", default=False),
    grace_minutes=dict(type="int", default=DEFAULT_GRACE_MINUTES),
    reclaim=dict(type="bool", default=True),
    demand_reason=dict(type="str"),
    **RECLAIM_OPTIONS,
    **READ_STATE_OPTIONS,
)


def main() -> None:
    run_flow(
        OPTIONS,
        service.PAYG_FLOW,
        required_if=[("state", "parsed", ["facts"])],
        mutually_exclusive=[("capability", "fit_to_use")],
        required_by={"capability": ("tenant",)},
        diff_by_object=True,
    )


if __name__ == "__main__":
    main()
