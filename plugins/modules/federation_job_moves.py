#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: federation_job_moves
short_description: Count each federated job's moves between members, and hold a job moved once
version_added: 0.2.0
description:
  - Connects to the B(Karmada API server) (the connection options below are Karmada's, not a member's) and reads
    every job PropagationPolicy the platform wrote (M(gpucloud.platform.vcjob) with O(gpucloud.platform.vcjob#module:federation))
    with the job's ResourceBinding.
  - "A job was moved from a member when its binding has a graceful eviction task from that member (the move under
    way) or places it in another member than the one it was last seen in (the move done) - rule
    federation-moves-counted. Karmada v1.16 keeps no such count, and shows a move only while it is under way, so
    the module writes down what it sees on the job's policy: C(platform.io/placed-in) (the member it is in) and
    C(platform.io/moved-from) (the members it left)."
  - "A C(cloud-ok) or spot job moved once loses its C(failover) and tolerates the lost-member taint from then on
    (rule federation-failover-once): if its new member is lost too it is held there, not moved a second time.
    M(gpucloud.platform.vcjob) keeps the record when it writes the job's policy again."
  - Run it on a schedule (playbook C(gpucloud.platform.federation_reconcile)), often enough to see a move while it
    is under way - it lasts until the lost member answers again - or at the latest before a second member is lost.
  - Only the platform's job policies are read and written (label C(platform.io/managed-by=gpucloud-platform), one
    Volcano Job selected by name); nothing is deleted, and no job is moved, stopped or started. A second run writes
    nothing.
options:
  namespaces:
    description:
      - The tenant namespaces whose jobs are looked at; left out or empty, every one. The policies are still read with
        one list call across namespaces.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
notes:
  - Reads one list of the platform's PropagationPolicies and one of ResourceBindings, across namespaces.
  - In check mode every write is the Karmada API server's dry run.
  - A move that starts and ends between two runs, in a job that was never seen placed before it, is not seen. A job
    is seen placed from the first run after Karmada places it.
seealso:
  - module: gpucloud.platform.vcjob
  - module: gpucloud.platform.federation_platform
"""

EXAMPLES = r"""
- name: Count the federated jobs' moves; hold those moved once
  gpucloud.platform.federation_job_moves:
    kubeconfig: /etc/karmada/karmada-apiserver.config
  register: moves

- name: The same for one tenant
  gpucloud.platform.federation_job_moves:
    kubeconfig: /etc/karmada/karmada-apiserver.config
    namespaces: [tenant-alpha]

- name: Say which jobs moved
  ansible.builtin.debug:
    msg: "{{ moves.summary }}"
"""

RETURN = r"""
changed:
  description: Whether a job policy was (in check mode, would be) written.
  returned: always
  type: bool
policies:
  description: How many of the platform's job policies were read.
  returned: always
  type: int
jobs:
  description:
    - Each job whose policy was (would be) written - C(job) (namespace/name), C(placed_in) (its member now),
      C(moved_from) (the members it was moved from that this run saw first), C(moves) (all of them) and C(held)
      (this run took its failover off).
  returned: always
  type: list
  elements: dict
  sample: [{job: tenant-alpha/roam, placed_in: idc-sh1, moved_from: [cloud-hz], moves: 1, held: true}]
objects:
  description: The policies written (in check mode, that would be).
  returned: always
  type: list
  elements: dict
  sample: [{kind: PropagationPolicy, namespace: tenant-alpha, name: roam, action: update}]
diff:
  description:
    - One diff per written policy, sorted by C(before_header), which is C(Kind/namespace/name) - its record and
      its failover (rule diff-per-object).
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
    - Lines a person reads - the jobs read and moved, the policies written, each move and the jobs now held (rule
      run-summary).
  returned: on success
  type: list
  elements: str
requests:
  description: How many API requests the run made.
  returned: always
  type: int
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.federation.job_moves import (
    job_moves_flow,
    job_moves_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow

OPTIONS = {"namespaces": {"type": "list", "elements": "str", "default": []}}


# The I/O, and with it the Kubernetes client, is imported once the module connects.
def gather(request, cluster):
    from ansible_collections.gpucloud.platform.plugins.module_utils.federation import job_moves_io

    return job_moves_io.gather_job_moves(request, cluster)


def apply(request, planned, cluster, check_mode):
    from ansible_collections.gpucloud.platform.plugins.module_utils.federation import job_moves_io

    return job_moves_io.apply_job_moves(request, planned, cluster, check_mode)


def main() -> None:
    run_flow(OPTIONS, job_moves_flow(gather, apply), diff_by_object=True, summary=job_moves_summary)


if __name__ == "__main__":
    main()
