#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: spot_info
short_description: Report the spot market - spot queues, running spot jobs by reclaim rank, the safe bid, reclaim history
version_added: 0.1.0
description:
  - "The spot market view of design section 13 (price display and reclaim history), for one tenant (O(tenant)) or every
    tenant that has a managed Queue."
  - "Per tenant: its spot queue C(tenant-<tenant>-spot) with C(spec.capability) and C(status.allocated) (GPUs as
    numbers), its running spot Volcano Jobs with their price (annotation C(platform.io/spot-price); a missing price, or
    one that is not a number, counts as 0, as in a reclaim) and their rank in the reclaim order, and the reclaims of the
    history ConfigMap C(platform-system/spot-reclaim-history) that took one of its jobs, newest first."
  - "Ranks are over every running spot job of the cluster (the reclaim is cluster-wide): rank 1 is taken first. The
    order is the reclaim's own (lowest price first; at equal price single-pod jobs before multi-pod ones; then fewer
    GPUs first; then the most recently started first; then namespace and name). A job holding no GPU is never taken and
    has no rank."
  - "RV(safe_bid): the lowest price a new spot job can bid now to stay out of a reclaim of O(reclaim_gpus) GPUs. The
    module simulates the reclaim's selection for O(reclaim_gpus) GPUs over every running spot job and gives the
    smallest price (6 decimal places, what a spot job may bid) strictly above the highest price it takes. Strictly
    above: a new job is the most recently started, so at the same price it is taken before the running jobs of its
    shape. It holds for the jobs running now; jobs that finish, or that start at a higher price, change it."
  - "When the running spot jobs hold fewer than O(reclaim_gpus) GPUs together, RV(safe_bid) is null and
    RV(safe_bid_detail.possible) false: such a reclaim cannot be met from spot."
  - "Reads with one list of managed Queues, one list of Volcano Jobs (label selector
    C(platform.io/billing-type=spot)), one list of the Running pods Volcano schedules (the pods of any other workload
    in a spot queue, such as an InferenceService's, are reclaimable too: rule spot-candidate-pod) and one get of the
    history ConfigMap, however many tenants there are. It never writes."
options:
  tenant:
    description:
      - Only this tenant. Default is every tenant with a managed Queue.
      - "A tenant without a managed Queue labelled C(platform.io/tenant: <tenant>) is refused (field C(tenant))."
    type: str
  reclaim_gpus:
    description:
      - The size of the reclaim RV(safe_bid) is safe from, in GPUs (1 or more).
      - "The default 1 is the smallest reclaim there is, what the next paying job of any size sets off: a bid below
        RV(safe_bid) for 1 is taken by the very next reclaim. Give a node's GPUs (8) or the GPUs of the largest paying
        job expected to be safe from larger reclaims too."
    type: int
    default: 1
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
  - gpucloud.platform.read_states
attributes:
  diff_mode:
    support: N/A
    details: The module never writes.
seealso:
  - module: gpucloud.platform.spot_reclaim
  - module: gpucloud.platform.vcjob
"""

EXAMPLES = r"""
- name: The spot market of tenant alpha
  gpucloud.platform.spot_info:
    tenant: alpha
  register: market

- name: Show it - the safe bid, the spot queue, the jobs by reclaim rank, the last reclaim
  ansible.builtin.debug:
    msg: "{{ market.summary }}"

- name: Show alpha's spot jobs, first to go first
  ansible.builtin.debug:
    msg: "{{ market.tenants[0].jobs | map(attribute='rank') | zip(market.tenants[0].jobs | map(attribute='name')) }}"

- name: The lowest bid safe from a reclaim of a whole 8-GPU node
  gpucloud.platform.spot_info:
    reclaim_gpus: 8
  register: node_reclaim

- name: Submit a spot job at that bid
  gpucloud.platform.vcjob:
    tenant: alpha
    name: spot-finetune
    queue: tenant-alpha-spot
    kind: single
    job_class: spot
    spot_price: "{{ node_reclaim.safe_bid }}"
    image: registry.example.com/training:v1
    command: [python, finetune.py]
    gpus_per_pod: 4
  when: node_reclaim.safe_bid is not none
"""

RETURN = r"""
reclaim_gpus:
  description: The reclaim size RV(safe_bid) is for (O(reclaim_gpus)).
  returned: always
  type: int
  sample: 8
safe_bid:
  description:
    - The lowest price per GPU-hour (a decimal string) at which a new spot job is not taken by a reclaim of
      O(reclaim_gpus) GPUs now; null when such a reclaim cannot be met from spot.
  returned: always
  type: str
  sample: "0.100001"
safe_bid_detail:
  description: How RV(safe_bid) was found.
  returned: always
  type: dict
  contains:
    reclaim_gpus:
      description: O(reclaim_gpus).
      type: int
    spot_gpus:
      description: The GPUs every running spot job of the cluster holds together.
      type: int
    possible:
      description: Whether the running spot jobs hold O(reclaim_gpus) GPUs; false means RV(safe_bid) is null.
      type: bool
    victims:
      description: The jobs (C(namespace/name)) a reclaim of O(reclaim_gpus) GPUs would take now, in kill order.
      type: list
      elements: str
    highest_price:
      description: The highest price among those jobs; null when there are none.
      type: str
    safe_bid:
      description: RV(safe_bid).
      type: str
    reason:
      description: The answer in words, with how equal prices are ordered.
      type: str
  sample:
    reclaim_gpus: 12
    spot_gpus: 24
    possible: true
    victims: [tenant-alpha/spot-a, tenant-alpha/spot-b]
    highest_price: "0.1"
    safe_bid: "0.100001"
    reason: "a reclaim of 12 GPUs now takes 2 job(s), up to price 0.1; a job bidding 0.100001 or more is not taken by it; ..."
spot_jobs:
  description: How many running spot jobs the cluster has (every tenant's).
  returned: always
  type: int
tenants:
  description: One entry per tenant (the one named by O(tenant), else every tenant), sorted by name.
  returned: always
  type: list
  elements: dict
  contains:
    tenant:
      description: Tenant name.
      type: str
    queue:
      description:
        - "The spot queue: C(name), C(exists), C(capability) (C(spec.capability)) and C(allocated) (C(status.allocated)),
          quantities as manifests write them, GPUs as numbers; C(reclaimed_jobs), how many of its jobs the platform has
          reclaimed so far (its C(platform.io/spot-reclaimed-jobs) annotation, which Prometheus also counts)."
      type: dict
      sample:
        name: tenant-alpha-spot
        exists: true
        capability: {nvidia.com/gpu: 10, cpu: "40", memory: 160Gi}
        allocated: {nvidia.com/gpu: 8, cpu: "2", memory: 8Gi, pods: 3}
        reclaimed_jobs: 7
    jobs:
      description:
        - The tenant's running spot jobs, by rank (jobs without a rank last).
        - "C(rank): the position in the cluster-wide reclaim order, 1 taken first; null for a job holding no GPU.
          C(at_risk): a reclaim of O(reclaim_gpus) GPUs would take it now."
      type: list
      elements: dict
      sample:
        - namespace: tenant-alpha
          name: spot-a
          queue: tenant-alpha-spot
          price: "0.1"
          gpus: 4
          pods: 1
          started_at: "2026-01-01T11:50:00Z"
          rank: 1
          at_risk: true
    history:
      description:
        - "The reclaims that took one of the tenant's jobs, newest first, as C(spot_reclaim) recorded them (C(time),
          C(reason), C(holder), C(demand), C(shortfall), C(freed) of the whole reclaim), with C(victims) cut to the
          tenant's jobs and C(tenant_freed) their GPUs."
      type: list
      elements: dict
summary:
  description:
    - The spot market in a few lines a person reads (rule run-summary) - the safe bid, each tenant's spot queue
      (GPUs, CPU cores, memory in Gi as allocated/capability, its running spot jobs, the jobs reclaimed so far), the
      running spot jobs first reclaimed first, and each tenant's last reclaim.
    - Quantities for people (rule quantity-for-people) - C(426667m) CPU is C(426.7) cores, C(3495253Mi) is
      C(3413.3Gi), GPUs are whole numbers.
  returned: always
  type: list
  elements: str
  sample:
    - "spot market: 1 running spot job(s) hold 4 GPUs; safe bid against a reclaim of 1 GPU(s): 0.100001 per GPU-hour
      (it would take 1 job(s), up to price 0.1)"
    - "spot queues (GPUS, CORES, MEMORY as allocated/capability):"
    - "TENANT  SPOT QUEUE         GPUS  CORES    MEMORY        JOBS  RECLAIMED"
    - "alpha   tenant-alpha-spot  4/27  2/426.7  8Gi/3413.3Gi     1          3"
    - "running spot jobs, first reclaimed first:"
    - "RANK  JOB                  PRICE  GPUS  PODS  AT RISK"
    - "1     tenant-alpha/spot-a  0.1       4     1  yes"
changed:
  description: Always false; the module only reads.
  returned: always
  type: bool
gathered:
  description: With O(state=gathered), the managed Queues, the running spot jobs and the reclaim history's entries.
  returned: when O(state=gathered)
  type: dict
  sample:
    queues: []
    candidates:
      - {kind: Job, namespace: tenant-alpha, name: spot-a, queue: tenant-alpha-spot, uid: "", price: "0.1", gpus: 4,
         pods: 1, started: 1767225600.0}
    history: []
state:
  description: The offline state answered (V(parsed)); nothing was read.
  returned: when O(state=parsed)
  type: str
requests:
  description: How many API requests the run made (0 with V(parsed)).
  returned: always
  type: int
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.kube.flow import READ_STATE_OPTIONS
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow
from ansible_collections.gpucloud.platform.plugins.module_utils.spot import service
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.info_summary import (
    info_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.market import (
    MARKET_OPTIONS,
)

OPTIONS = dict(
    **MARKET_OPTIONS,
    **READ_STATE_OPTIONS,
)


def main() -> None:
    run_flow(
        OPTIONS,
        service.MARKET_FLOW,
        required_if=[("state", "parsed", ["facts"])],
        summary=info_summary,
    )


if __name__ == "__main__":
    main()
