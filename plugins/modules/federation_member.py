#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: federation_member
short_description: Join a member cluster to a Karmada federation in Push mode, as an IDC or a cloud member
version_added: 0.2.0
description:
  - Connects to the B(Karmada API server) (the connection options below are Karmada's) and to the member cluster
    (O(member_kubeconfig)), and joins the member as C(karmadactl join) does, in Push mode (rule
    federation-member-join).
  - "In the member: the Namespace C(karmada-cluster), the ServiceAccount C(karmada-<name>) bound to
    C(cluster-admin) (what Karmada's controllers act as) and the ServiceAccount C(karmada-impersonator)."
  - "In Karmada: the Secrets C(karmada-cluster/<name>) (a token of the first account and the member's CA) and
    C(karmada-cluster/<name>-impersonator), and the C(Cluster) O(name) in Push mode, labelled
    C(platform.io/node-location) (O(location)), C(topology.kubernetes.io/region) (O(region)) and
    C(platform.io/compliance-zone) (O(compliance_zone)) - the labels every placement of the platform reads
    (rule federation-member)."
  - A token is requested (TokenRequest, for a year) only when Karmada holds none for the account, or holds one issued
    for another account of that name (a member wiped and built again), or one with less than a week left. A second
    run with the same options writes nothing and requests no token.
  - A member Karmada already has is never moved (rule member-identity-kept) - a run that would give it another API
    endpoint, location or compliance zone is refused before anything is written, as Karmada would take its jobs
    out of it. O(region) may change.
  - Nothing is deleted; taking a member out of the federation is not done by this module.
  - The result never holds a token; the diff shows each Secret value as a fingerprint.
options:
  name:
    description:
      - The member's name in Karmada (its C(Cluster)), a DNS label of at most 48 characters.
    type: str
    required: true
  location:
    description:
      - Where the member's GPUs are - C(idc) (the platform's own data centre; compliance work may run there) or
        C(cloud) (burst capacity).
    type: str
    required: true
    choices: [idc, cloud]
  region:
    description:
      - The member's region, written as the label C(topology.kubernetes.io/region) and the Cluster's
        C(spec.region).
    type: str
  compliance_zone:
    description:
      - The compliance zone of an IDC member. A cloud member has none.
    type: str
  member_kubeconfig:
    description:
      - The path of a kubeconfig with the right to make a Namespace, ServiceAccounts and a ClusterRoleBinding in the
        member. Used by this run only; Karmada keeps the tokens, not this kubeconfig.
      - Its cluster must name its certificate authority - Karmada is given it to trust the member's API server.
    type: path
    required: true
  member_context:
    description:
      - The context of O(member_kubeconfig) to use; its current context when left out.
    type: str
  api_endpoint:
    description:
      - The member's API server as Karmada's controllers reach it (C(https://...)).
      - Left out, the server of O(member_kubeconfig).
    type: str
  wait:
    description:
      - Wait until Karmada reports the member C(Ready); the run fails after O(wait_timeout) seconds otherwise, saying
        what Karmada reports.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait for C(Ready).
    type: int
    default: 120
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
notes:
  - Reads, in Karmada, the Cluster and its two Secrets; in the member, the Namespace, the two ServiceAccounts and the
    ClusterRoleBinding - one GET each, their names are known.
  - In check mode every write, in Karmada and in the member, is the API server's dry run, and no token is requested;
    the Secrets are dry-run with a stand-in for the token. Nothing reaches either cluster.
  - Karmada's own installation makes the Namespace C(karmada-cluster) in Karmada.
  - C(tools/localcluster/federation.py up --member) joins the local federation's members by the same rule.
"""

EXAMPLES = r"""
- name: The IDC cluster joins as an IDC member of compliance zone z1
  gpucloud.platform.federation_member:
    kubeconfig: /etc/karmada/karmada-apiserver.config
    name: idc-sh1
    location: idc
    region: cn-shanghai
    compliance_zone: z1
    member_kubeconfig: /etc/kubernetes/admin.conf

- name: A cloud cluster joins as burst capacity, reached at its public endpoint
  gpucloud.platform.federation_member:
    kubeconfig: /etc/karmada/karmada-apiserver.config
    name: cloud-hz
    location: cloud
    region: cn-hangzhou
    member_kubeconfig: /etc/gpucloud/cloud-hz.kubeconfig
    member_context: admin@cloud-hz
    api_endpoint: https://cloud-hz.example.internal:6443
"""

RETURN = r"""
changed:
  description: Whether an object was (in check mode, would be) written in the member or in Karmada.
  returned: always
  type: bool
objects:
  description: The objects written (in check mode, that would be), in order - the member's, then Karmada's.
  returned: always
  type: list
  elements: dict
  sample: [{kind: ServiceAccount, namespace: karmada-cluster, name: karmada-cloud-hz, action: create}]
tokens:
  description: The member's ServiceAccounts whose token was (in check mode, would be) requested; never a token.
  returned: always
  type: list
  elements: str
  sample: [karmada-cloud-hz, karmada-impersonator]
ready:
  description: Whether Karmada reports the member C(Ready) (in check mode, before the run).
  returned: always
  type: bool
diff:
  description:
    - One diff per changed object, sorted by C(before_header), which is C(Kind/namespace/name); a Secret's values
      as fingerprints (rule diff-per-object).
  returned: when diff mode is on
  type: list
  elements: dict
done:
  description:
    - When the run fails part-way, the writes it had made; running again finishes the join.
  returned: when the run fails part-way
  type: list
  elements: str
summary:
  description:
    - One line a person reads - the member, what the join wrote, whether Karmada reports it Ready (rule run-summary).
  returned: on success
  type: list
  elements: str
member_requests:
  description: How many API requests the run made in the member.
  returned: when the run connected to the member
  type: int
requests:
  description: How many API requests the run made in Karmada.
  returned: always
  type: int
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.federation.joining import (
    federation_member_flow,
    federation_member_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow

OPTIONS = {
    "name": {"type": "str", "required": True},
    "location": {"type": "str", "required": True, "choices": ["idc", "cloud"]},
    "region": {"type": "str"},
    "compliance_zone": {"type": "str"},
    "member_kubeconfig": {"type": "path", "required": True},
    "member_context": {"type": "str"},
    "api_endpoint": {"type": "str"},
    "wait": {"type": "bool", "default": True},
    "wait_timeout": {"type": "int", "default": 120},
}


# The I/O, and with it the Kubernetes client, is imported once the module connects: a
# refused input answers without either.
def gather(request, cluster):
    from ansible_collections.gpucloud.platform.plugins.module_utils.federation import joining_io

    return joining_io.gather_federation_member(request, cluster)


def apply(request, planned, cluster, check_mode):
    from ansible_collections.gpucloud.platform.plugins.module_utils.federation import joining_io

    return joining_io.apply_federation_member(request, planned, cluster, check_mode)


def main() -> None:
    # Every input is checked before the module connects.
    run_flow(
        OPTIONS,
        federation_member_flow(gather, apply),
        diff_by_object=True,
        summary=federation_member_summary,
    )


if __name__ == "__main__":
    main()
