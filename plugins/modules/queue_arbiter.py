#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: queue_arbiter
short_description: Evict whole lower-priority jobs for a job Volcano cannot make room for inside a full subscription
description:
  - "Inside a fully used subscription Volcano 1.15.1 keeps a job's PodGroup C(Pending) while its queue or an ancestor
    queue is at its capability. The platform's scheduler configuration has the C(sla) plugin admit a job after its
    waiting time (C(volcano.sh/sla-waiting-time), set per job class), and C(gangpreempt) then preempts in the job's
    queue; but C(gangreclaim) cannot place a team's job while the parent subscription still counts the victims' GPUs,
    so a team below its deserved share never takes back what a sibling team borrowed. The arbiter does that, and
    preempts for a job Volcano never admits (one without a waiting time)."
  - "Candidates: jobs whose PodGroup is C(Pending) or C(Inqueue) for at least O(settle_seconds), and whose queue or an
    ancestor queue would exceed its capability with the job (rule blocked-by-capacity). Highest priority first, then
    the oldest. A run decides for the first candidate only and reports the others in RV(waiting); the next run takes
    the next."
  - "The decision (rule arbiter-plan): a job that can never run (rule job-never-runs, the rule
    M(gpucloud.platform.vcjob) and the throttle use: a PVC its namespace lacks, more GPUs than the nodes it may use
    or than a capability above it) is refused in that rule's words; a team queue below its deserved share with a
    sibling team above its own takes back from the sibling (rule
    team-reclaim-victims: any priority but critical-job, never below the sibling's deserved share; a debug-job takes
    nothing); for a job that is admitted, or that sla will admit, preemption is Volcano's (rule volcano-preempts)
    and the arbiter does nothing more; otherwise a C(large-job) or C(critical-job) preempts lower-priority jobs of
    its own queue (rule preempt-victims). Victims are whole jobs, lowest priority first, then the newest; never
    C(critical-job) nor a job marked C(volcano.sh/preemptable=false); taken until the GPUs to free (rule
    arbiter-need) are covered, and nothing is evicted when they cannot be (RV(decision) C(refuse), the reason in
    RV(reason) and a warning)."
  - "Reads one list per kind: PodGroups (in the tenant's namespace with O(tenant)); only when one waits and is
    settled, the Volcano Jobs, the managed Queues, the unfinished Pods and the Nodes. A run with nothing waiting makes
    one list request and writes nothing. Safe to run every minute."
  - "To evict, it holds the C(coordination.k8s.io/v1) Lease C(queue-arbiter) in C(platform-system), reads and decides
    again under it, evicts every pod of each victim Volcano Job through the Eviction API (PodDisruptionBudgets apply)
    in victim order, raises each victim queue's count of evicted jobs (annotation
    C(platform.io/arbiter-evicted-jobs), rule arbiter-eviction-count, which the monitoring role's alert
    C(ArbiterJobsEvicted) reads per tenant; a GET and a merge patch per queue), records an Event of reason
    C(ArbiterEvicted) on each evicted job and one of reason
    C(ArbiterMadeRoom) on the waiting job, adds the run at the head of the ConfigMap C(queue-arbiter-history) in
    C(platform-system) and gives the Lease back. When another run holds the Lease the module fails naming the holder."
  - In check mode it reports the victims it would evict and the counts it would raise, and writes nothing, not even
    the Lease.
version_added: 0.1.0
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
options:
  tenant:
    description:
      - Arbitrate only in this tenant's namespace C(tenant-<tenant>) (a tenant name). Without it, every namespace.
    type: str
  job:
    description:
      - Arbitrate only for this Volcano Job of O(tenant) (a DNS-1123 subdomain); needs O(tenant).
      - A job that is not in the tenant's namespace, or whose queue is not one of the tenant's, is refused before
        anything is evicted.
    type: str
  queue:
    description:
      - Arbitrate only for jobs of this leaf queue of O(tenant) (C(tenant-<tenant>-...)); needs O(tenant).
      - "Rule leaf-queue-of-tenant: C(root), C(default) or another tenant's queue is refused before any request; the
        tenant's subscription queue with team queues under it (it holds no job), a queue the platform does not
        manage or one that does not exist is refused once the queues are read, before anything is evicted. The
        message says what the queue is and lists the tenant's leaf queues."
    type: str
  settle_seconds:
    description:
      - Seconds a PodGroup must have existed, C(Pending) or C(Inqueue), before the arbiter acts for it (a new PodGroup
        is Pending until the scheduler's next enqueue, and Volcano's own actions get their cycles first). 0 or more.
    type: int
    default: 10
  wait_for_admission:
    description:
      - With O(job), when its PodGroup is C(Pending) and has an sla waiting time that has not passed, wait (reading
        the tenant's PodGroups every second) until sla admits it or it is due (rule arbiter-settle), then decide.
      - "Without it such a job is not a candidate yet: evicting for it before sla admits it lets its victims'
        restarted pods take the GPUs back. C(job_submit.yml) sets it, so a team's job gets its room right after
        submission."
    type: bool
    default: false
  hold_seconds:
    description:
      - "After a team reclaim, how long (seconds) to keep the evicted jobs from taking the GPUs back (rule
        reclaim-hold): each sibling queue it took from is held at the GPU capability it keeps until the waiting job
        runs or this time has passed, then put back; the run holds its Lease meanwhile. 0 or more, less than
        O(lease_duration)."
    type: int
    default: 45
  holder_identity:
    description:
      - The name the run holds the Lease under, followed by an id of the run, so that two runs under one name still
        exclude each other. Defaults to the controller's host name and process id.
    type: str
  lease_duration:
    description:
      - Seconds the Lease (C(queue-arbiter) in C(platform-system)) is valid; a run that dies holding it blocks other
        runs for at most this long. 1 or more.
    type: int
    default: 60
  history_size:
    description: How many runs the history ConfigMap C(queue-arbiter-history) keeps (newest first). 0 or more.
    type: int
    default: 100
  state:
    description:
      - V(present) decides for the first waiting job and evicts its victims (in check mode, reports them).
      - V(gathered) reads what the decision is made from, as V(present) reads it (the kinds the decision needs, each
        object as read, with the run's time and Lease holder), and returns it in RV(gathered); nothing is written.
      - V(parsed) decides from O(facts) (what V(gathered) returned, from this or another cluster, or edited as a
        what-if) without connecting, and returns what a check-mode run returns, with C(changed=false); a job or
        queue out of the tenant's scope and a refusal read while another run holds the Lease fail as they do in a
        run.
    type: str
    choices: [present, gathered, parsed]
    default: present
  facts:
    description:
      - With O(state=parsed), the facts to decide from, as RV(gathered) holds them (C(now), C(holder),
        C(podgroups), C(queues), C(vcjobs), C(pods), C(nodes), C(pvcs), C(leases), C(history)); a missing list is
        empty, C(now) is required.
    type: dict
attributes:
  diff_mode:
    support: partial
    details:
      - The diff holds the evicted jobs (running before, evicted after) and each victim queue's eviction count; the
        Events and the history entry are not in it (RV(history) is the history after the run).
notes:
  - Pass RV(job), RV(decision), RV(victims) and RV(reason) to M(ansible.builtin.set_stats) to show the decision in AWX
    (the playbook C(arbiter_reconcile.yml) does).
  - Evicted pods go back to their Volcano Job's controller, which restarts the job as it does after Volcano's own
    preemption; GPUs of pods on their way out count as free, so a second run does not evict again for them.
seealso:
  - module: gpucloud.platform.large_job_throttle
  - module: gpucloud.platform.spot_reclaim
"""

EXAMPLES = r"""
- name: Make room for the highest-priority job Volcano keeps Pending behind a full queue
  gpucloud.platform.queue_arbiter:
  register: arbiter

- name: Show the decision in AWX
  ansible.builtin.set_stats:
    data:
      queue_arbiter:
        job: "{{ arbiter.job }}"
        decision: "{{ arbiter.decision }}"
        victims: "{{ arbiter.victims }}"
        reason: "{{ arbiter.reason }}"

- name: Only for one job of tenant alpha
  gpucloud.platform.queue_arbiter:
    tenant: alpha
    job: big-train

- name: Only for the jobs of team eng of tenant alpha
  gpucloud.platform.queue_arbiter:
    tenant: alpha
    queue: tenant-alpha-eng

- name: Which jobs would be evicted (nothing is evicted)
  gpucloud.platform.queue_arbiter:
    tenant: alpha
  check_mode: true
  register: preview

- name: Read what the arbiter decides from, without deciding
  gpucloud.platform.queue_arbiter:
    tenant: alpha
    state: gathered
  register: arbiter_facts

- name: Decide from those facts, offline (nothing is read or evicted)
  gpucloud.platform.queue_arbiter:
    tenant: alpha
    state: parsed
    facts: "{{ arbiter_facts.gathered }}"
"""

RETURN = r"""
job:
  description: The waiting job the run decided for (namespace/name), or null when no job is a candidate.
  returned: always
  type: str
  sample: tenant-alpha/big-train
decision:
  description:
    - C(preempt) or C(reclaim) when jobs were (in check mode, would be) evicted; C(refuse) when no set of whole jobs
      can make room (see RV(reason), also warned); C(none) when nothing is to be done.
  returned: always
  type: str
  sample: preempt
need:
  description: The GPUs to free for the job (rule arbiter-need), 0 when there is no job.
  returned: always
  type: int
freed:
  description: GPUs held by the evicted jobs (in check mode, by the jobs that would be evicted).
  returned: always
  type: int
victims:
  description: The evicted jobs (in check mode, the jobs that would be evicted), in eviction order.
  returned: always
  type: list
  elements: dict
  sample:
    - {namespace: tenant-alpha, name: task-d, queue: tenant-alpha-algo, priority_class: debug-job, gpus: 4}
reason:
  description: Why the run did what it did, naming the queues, the GPUs and the victims or what was missing.
  returned: always
  type: str
blocked_by:
  description: The queue whose capability holds the job back (rule blocked-by-capacity), or null.
  returned: always
  type: str
waiting:
  description: The other candidates (namespace/name), in the order later runs take them.
  returned: always
  type: list
  elements: str
may_preempt_after_restart:
  description:
    - Rule restart-may-preempt. For each victim that comes back after its eviction (its C(PodEvicted) policy
      restarts it) at a class that preempts, the jobs left running in its queue that Volcano's gangpreempt may then
      evict for it, as it would for any job of that queue. Empty when there are none, as in most runs. Also warned.
  returned: always
  type: list
  elements: dict
  sample:
    - victim: tenant-acme/task-c
      priority_class: normal-job
      queue: tenant-acme-a
      may_preempt: [tenant-acme/task-d]
evicted:
  description: The pods evicted (namespace/name); empty in check mode.
  returned: always
  type: list
  elements: str
held_seconds:
  description:
    - After a team reclaim, how long the victims' queues were held (rule reclaim-hold) before the waiting job ran,
      or O(hold_seconds) when it had not run by then.
  returned: when it evicted for a team reclaim
  type: int
  sample: 2
history:
  description: The arbiter's history after this run, newest first, when it evicted; empty otherwise (not read).
  returned: always
  type: list
  elements: dict
counted:
  description:
    - Each queue the victims came from, with its count of evicted jobs (annotation C(platform.io/arbiter-evicted-jobs),
      rule arbiter-eviction-count) before and after this run; in check mode, what the run would write. A count that
      could not be written is left out (and warned about).
  returned: when the run evicts (in check mode, would evict)
  type: dict
  sample: {tenant-alpha-algo: {before: 5, after: 7}}
diff:
  description:
    - The victims before (running) and after (evicted), keyed C(<namespace>/<name>), and each victim queue's eviction
      count before and after, keyed C(<queue> platform.io/arbiter-evicted-jobs).
  returned: when diff mode is on
  type: dict
done:
  description:
    - When the run fails part-way, the writes it had made (the pods evicted; C(changed) is true when there are any);
      running again finishes the change.
  returned: when the run fails part-way
  type: list
  elements: str
summary:
  description:
    - The decision for the waiting job, the victims (in check mode, that would be evicted) and why.
    - In a few lines a person reads (rule run-summary); a playbook's last task prints them.
  returned: on success
  type: list
  elements: str
gathered:
  description:
    - What the decision is made from (C(now), C(holder) and the lists read, each object as read); the kinds the
      decision did not need are left out.
  returned: when O(state=gathered)
  type: dict
state:
  description: V(parsed) when the answer is a decision from O(facts); nothing was read or written.
  returned: when O(state=parsed)
  type: str
requests:
  description: How many API requests the run made.
  returned: always
  type: int
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.arbiter import service
from ansible_collections.gpucloud.platform.plugins.module_utils.arbiter.summary import (
    arbiter_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow

OPTIONS = dict(
    tenant=dict(type="str"),
    job=dict(type="str"),
    queue=dict(type="str"),
    settle_seconds=dict(type="int", default=10),
    holder_identity=dict(type="str"),
    lease_duration=dict(type="int", default=60),
    history_size=dict(type="int", default=100),
    wait_for_admission=dict(type="bool", default=False),
    hold_seconds=dict(type="int", default=45),
    state=dict(type="str", choices=["present", "gathered", "parsed"], default="present"),
    facts=dict(type="dict"),
)


def main() -> None:
    run_flow(
        OPTIONS,
        service.ARBITER_FLOW,
        required_if=[("state", "parsed", ["facts"])],
        summary=arbiter_summary,
    )


if __name__ == "__main__":
    main()
