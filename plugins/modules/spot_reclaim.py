#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: spot_reclaim
short_description: Free GPUs for a paying demand by deleting spot jobs, cheapest first
description:
  - "Given a demand of O(need) GPUs: free = pool - GPUs held by the unfinished pods on pool nodes now. If free >= O(need)
    nothing is touched. Otherwise O(need) - free GPUs are freed by deleting running spot Volcano Jobs."
  - "With O(need_from=unsold) the need is a sale (a purchase or a pay-as-you-go growth): it must come out of GPUs nobody
    has bought, because a tenant may use what it bought at any moment. Spot keeps at most pool - sold - O(need) GPUs
    (sold: every subscription and PAYG grant) and the spot jobs holding more are deleted; never fewer than the free
    count above asks. O(need=0) with O(need_from=unsold) reclaims the spot jobs holding sold GPUs (after the pool
    shrank), which the scheduled spot recompute does."
  - "With O(need_from=unused) spot may hold the GPUs that no paying queue holds or waits for (the offer C(unused) of
    M(gpucloud.platform.spot_capacity)): each tenant's subscription and team queues, and its PAYG queue, claim what their
    unfinished pods hold on the pool's nodes and what their waiting PodGroups still want, at most what the tenant
    bought. Spot keeps at most
    pool - claims - O(need) GPUs and the spot jobs holding more are deleted; never fewer than the free count asks.
    O(need=0) with O(need_from=unused) gives a waiting paying job the GPUs spot borrowed, which C(spot_recompute.yml)
    with C(spot_offer=unused) does when a paying job is blocked."
  - "A job is a candidate only when it is in a spot queue (a managed Queue labelled C(platform.io/queue-type=spot)) and
    labelled C(platform.io/billing-type=spot); both must hold."
  - "Victim order: lowest C(platform.io/spot-price) annotation first (a missing price, or one that is not a number,
    counts as 0); at equal price single-pod jobs before multi-pod ones; then fewer GPUs first; then the most recently
    started first; then namespace and name. Deleting stops as soon as enough GPUs are freed, never more."
  - Holds the C(coordination.k8s.io/v1) Lease C(spot-reclaim) in C(platform-system) while it selects and deletes, so two
    runs never both delete; when another holder has it and it has not expired the module fails naming the holder.
  - Records a Kubernetes Event of reason C(SpotReclaimed) on every deleted job (price, GPUs and the demand that caused it)
    and adds the reclaim at the head of the ConfigMap C(spot-reclaim-history) in C(platform-system), keeping the newest
    O(history_size) entries.
  - In check mode it returns the victims it would delete and deletes nothing.
version_added: 0.1.0
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
  - gpucloud.platform.pool
  - gpucloud.platform.reclaim
options:
  need:
    description: GPUs the demand needs free (0 or more).
    type: int
    required: true
  demand_reason:
    description: What the GPUs are for; written into the Events and the history (for example a purchase order).
    type: str
    default: an operator's request
  need_from:
    description:
      - C(free) meets O(need) from the GPUs free now (pool - held).
      - C(unsold) treats O(need) as a sale met from the GPUs nobody has bought (see the description).
      - C(unused) meets O(need) from the GPUs no paying queue holds or waits for (see the description); it reads
        every managed Queue (team queues too) instead of the billing ones, and the C(podgroups).
    type: str
    choices: [free, unsold, unused]
    default: free
  state:
    description:
      - V(present) reclaims (in check mode, names the victims).
      - V(gathered) makes the reads the reclaim decides on without the Lease and returns them in RV(gathered) (the
        pool's C(nodes) and unfinished C(pods); when the decision needs them, the billing C(queues), the spot Volcano
        C(jobs) and the Running Volcano C(running_pods); with O(need_from=unused) the C(podgroups)); nothing is
        written.
      - V(parsed) plans from O(facts) without connecting and returns what a check-mode run on a cluster holding them
        returns (the shortfall, the victims, each victim queue's reclaim count, the diff, the summary) except
        RV(history), which only the cluster holds; a shortfall spot cannot cover is refused as a run refuses it.
      - A run that deletes reads and decides again under the Lease, on what the cluster then is.
    type: str
    choices: [present, gathered, parsed]
    default: present
  facts:
    description:
      - With O(state=parsed), the facts to plan from, as RV(gathered) holds them.
    type: dict
  allow_partial:
    description:
      - When the spot jobs together hold fewer GPUs than are missing, delete them all instead of failing.
      - Without it such a run fails before deleting anything.
    type: bool
    default: false
attributes:
  diff_mode:
    support: partial
    details:
      - The diff holds the deleted jobs and each of their spot queues' reclaim count (annotation
        C(platform.io/spot-reclaimed-jobs)); the Events and the history entry the reclaim records are not in it
        (RV(history) is the history after the run).
notes:
  - Pass RV(reclaim) to M(ansible.builtin.set_stats) to show the reclaim in AWX.
seealso:
  - module: gpucloud.platform.spot_capacity
  - module: gpucloud.platform.payg_capacity
"""

EXAMPLES = r"""
- name: Free 20 GPUs for a new subscription
  gpucloud.platform.spot_reclaim:
    need: 20
    demand_reason: subscription order 4711 of tenant gamma
    wait: true
  register: reclaimed

- name: Show the reclaim in AWX
  ansible.builtin.set_stats:
    data:
      spot_reclaim: "{{ reclaimed.reclaim }}"

- name: Free the GPUs a new 20-GPU subscription sells, counting bought but unused GPUs as taken
  gpucloud.platform.spot_reclaim:
    need: 20
    need_from: unsold
    demand_reason: subscription order 4712 of tenant delta

- name: Delete the spot jobs that hold sold GPUs (after the pool shrank), cheapest first
  gpucloud.platform.spot_reclaim:
    need: 0
    need_from: unsold
    demand_reason: spot above the unsold GPUs

- name: Give waiting paying jobs the GPUs spot borrowed (offer unused), cheapest spot jobs first
  gpucloud.platform.spot_reclaim:
    need: 0
    need_from: unused
    demand_reason: paying jobs wait for GPUs spot borrowed
    allow_partial: true

- name: Save what the reclaim decides on
  gpucloud.platform.spot_reclaim:
    need: 20
    need_from: unsold
    state: gathered
  register: reclaim_facts

- name: Which jobs a 20-GPU sale would take on the saved cluster (no connection)
  gpucloud.platform.spot_reclaim:
    need: 20
    need_from: unsold
    state: parsed
    facts: "{{ reclaim_facts.gathered }}"
  register: what_if

- name: Which jobs would go (nothing is deleted)
  gpucloud.platform.spot_reclaim:
    need: 12
  check_mode: true
  register: preview
"""

RETURN = r"""
demand:
  description: The GPUs asked for (O(need)).
  returned: unless O(state=gathered)
  type: int
pool:
  description: GPUs in the pool.
  returned: unless O(state=gathered)
  type: int
allocated:
  description: GPUs held by unfinished pods on pool nodes when the run read them (pods being deleted not counted).
  returned: unless O(state=gathered)
  type: int
free:
  description: Pool - allocated.
  returned: unless O(state=gathered)
  type: int
shortfall:
  description: GPUs that had to be reclaimed (0 when enough were free).
  returned: unless O(state=gathered)
  type: int
need_from:
  description: C(unsold) when the need was counted as a sale, C(unused) when against the GPUs no paying queue holds or
    waits for.
  returned: when O(need_from) is C(unsold) or C(unused)
  type: str
offer:
  description: GPUs no paying queue holds or waits for (what spot may hold).
  returned: when O(need_from=unused)
  type: int
sold:
  description: GPUs sold before the sale (every subscription and PAYG grant).
  returned: when O(need_from=unsold)
  type: int
spot:
  description: GPUs held by the running spot jobs.
  returned: when O(need_from) is C(unsold) or C(unused)
  type: int
freed:
  description: GPUs held by the deleted jobs.
  returned: unless O(state=gathered)
  type: int
victims:
  description:
    - The deleted jobs and pods (in check mode, those that would be deleted), in the order they were deleted.
    - C(kind) is C(Job) for a Volcano Job, C(Pod) for a pod of any other workload in a spot queue (an
      InferenceService's predictor, say; rule spot-candidate-pod), which its controller makes again, Pending.
  returned: unless O(state=gathered)
  type: list
  elements: dict
  sample:
    - {kind: Job, namespace: tenant-alpha, name: spot-a, queue: tenant-alpha-spot, price: "0.1", gpus: 4, pods: 1,
       started_at: "2026-01-01T11:50:00Z"}
history:
  description: The reclaim history after this run, newest first.
  returned: when O(state=present)
  type: list
  elements: dict
reclaim:
  description: This run's summary (time, reason, demand, pool, allocated, free, shortfall, freed, victims), for M(ansible.builtin.set_stats).
  returned: unless O(state=gathered)
  type: dict
waited:
  description: Whether the run waited for the GPUs to be free.
  returned: unless O(state=gathered)
  type: bool
free_after:
  description: Free GPUs (pods on their way out counted as holding) when the wait ended.
  returned: when O(wait=true)
  type: int
counted:
  description:
    - Each spot queue the victims came from, with its reclaim count (annotation C(platform.io/spot-reclaimed-jobs))
      before and after this run; in check mode, what the run would write. A count that could not be written is
      left out (and warned about).
  returned: unless O(state=gathered)
  type: dict
  sample: {tenant-alpha-spot: {before: 5, after: 7}}
diff:
  description:
    - The victims before (running) and after (deleted), keyed C(<namespace>/<name>), and each queue's reclaim count
      before and after, keyed C(<queue> platform.io/spot-reclaimed-jobs).
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
    - The reclaim's reason and each deleted job (in check mode, that would be) with its GPUs and bid.
    - In a few lines a person reads (rule run-summary); a playbook's last task prints them.
  returned: on success
  type: list
  elements: str
gathered:
  description:
    - The facts the reclaim decides on, as listed (C(nodes), C(pods); C(queues), C(jobs), C(running_pods) when the
      decision needs the spot candidates), for O(facts) of a V(parsed) run.
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

from ansible_collections.gpucloud.platform.plugins.module_utils.kube.flow import (
    READ_STATE_OPTIONS,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow
from ansible_collections.gpucloud.platform.plugins.module_utils.spot import service
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.reclaim import (
    RECLAIM_OPTIONS,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.summary import (
    reclaim_summary_lines,
)

OPTIONS = dict(
    need=dict(type="int", required=True),
    demand_reason=dict(type="str", default="an operator's request"),
    need_from=dict(type="str", choices=["free", "unsold", "unused"], default="free"),
    allow_partial=dict(type="bool", default=False),
    **RECLAIM_OPTIONS,
    **READ_STATE_OPTIONS,
)


def main() -> None:
    run_flow(
        OPTIONS,
        service.RECLAIM_FLOW,
        summary=reclaim_summary_lines,
        required_if=[("state", "parsed", ["facts"])],
    )


if __name__ == "__main__":
    main()
