#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: hypernode
short_description: One Volcano HyperNode, present or absent, checked against the topology rules
description:
  - Creates, updates or deletes one HyperNode (C(topology.volcano.sh/v1alpha1)) labelled
    C(platform.io/managed-by=gpucloud-platform).
  - Before any write, checks the HyperNode's own rules (tier 1 or more; at least one member; exactly one selector
    per member; members all of type Node or all of type HyperNode; a HyperNode member matched by C(exactMatch) only,
    so C(regexMatch) and C(labelMatch) only in a leaf) and the rules of the tree it joins (tiers increase upward,
    no cycles, one parent per HyperNode, every node in at most one leaf, members exist). Only problems this change
    would introduce are refused; problems already in the cluster are left to M(gpucloud.platform.topology).
  - Never changes or deletes a HyperNode without the managed-by label, for example one made by Volcano's discovery.
  - Reads the cluster with one list call for HyperNodes (and one for Nodes when a leaf uses C(regexMatch) or
    C(labelMatch)), and writes with server-side apply under the field manager C(gpucloud-platform).
version_added: 0.1.0
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
options:
  name:
    description: The HyperNode's name (a DNS-1123 subdomain).
    type: str
    required: true
  state:
    description:
      - V(present) and V(absent) - whether the HyperNode should exist.
      - V(rendered) plans the HyperNode present against an empty cluster and returns its manifest in RV(hypernode),
        without connecting (no kubeconfig is needed).
      - V(gathered) returns the live HyperNodes, and the Nodes when a leaf selects them by pattern or label, in
        RV(gathered); nothing is written.
      - V(parsed) plans the HyperNode present from O(facts) (what V(gathered) returned) without connecting.
      - V(rendered) and V(parsed) return what a check-mode run returns, with C(changed=false).
    type: str
    choices: [present, absent, rendered, gathered, parsed]
    default: present
  facts:
    description:
      - With O(state=parsed), the facts to plan from, as RV(gathered) holds them (C(hypernodes), C(nodes)).
    type: dict
  tier:
    description: The HyperNode's tier, 1 or more; lower tiers are closer to the nodes. Required when O(state=present).
    type: int
  tier_name:
    description: A name for the tier (C(spec.tierName)), for example C(tor) or C(spine).
    type: str
  members:
    description:
      - The members, as in the HyperNode CRD. Required when O(state=present).
    type: list
    elements: dict
    suboptions:
      type:
        description: V(Node) for a leaf's nodes, V(HyperNode) for a member switch.
        type: str
        required: true
        choices: [Node, HyperNode]
      selector:
        description:
          - Exactly one of C(exactMatch) (C({name}) of a node or HyperNode), C(regexMatch) (C({pattern}), Node members only)
            or C(labelMatch) (a label selector, Node members only).
        type: dict
        required: true
notes:
  - In check mode a creation or update is sent as a server-side dry run; a deletion is only reported in RV(action).
seealso:
  - module: gpucloud.platform.topology
"""

EXAMPLES = r"""
- name: A leaf switch with two nodes
  gpucloud.platform.hypernode:
    name: tor-0
    tier: 1
    tier_name: tor
    members:
      - {type: Node, selector: {exactMatch: {name: gpu-0}}}
      - {type: Node, selector: {exactMatch: {name: gpu-1}}}

- name: A spine over two leaves
  gpucloud.platform.hypernode:
    name: spine-0
    tier: 2
    members:
      - {type: HyperNode, selector: {exactMatch: {name: tor-0}}}
      - {type: HyperNode, selector: {exactMatch: {name: tor-1}}}

- name: A leaf holding a rack by label
  gpucloud.platform.hypernode:
    name: tor-7
    tier: 1
    members:
      - type: Node
        selector:
          labelMatch:
            matchLabels: {topology.volcano.sh/tor: rack-07}

- name: Remove a switch no longer listed by any parent
  gpucloud.platform.hypernode:
    name: tor-7
    state: absent

- name: The manifest of a leaf switch for a GitOps repository, without a cluster
  gpucloud.platform.hypernode:
    name: tor-9
    state: rendered
    tier: 1
    members:
      - {type: Node, selector: {exactMatch: {name: gpu-9}}}
  register: leaf
"""

RETURN = r"""
hypernode:
  description:
    - The HyperNode as the API server returned it (absent when deleted or never existed).
    - With O(state=rendered) or O(state=parsed), the manifest the plan writes (or the live one when nothing changes).
  returned: when O(state=present), O(state=rendered) or O(state=parsed)
  type: dict
action:
  description: What the run did (in check mode, would do), V(created), V(updated), V(deleted) or V(none).
  returned: always
  type: str
  sample: created
diff:
  description: The HyperNode before and after.
  returned: when diff mode is on
  type: dict
gathered:
  description: The live HyperNodes, and the Nodes (C(name), C(labels)) when they were read (else null).
  returned: when O(state=gathered)
  type: dict
state:
  description: The offline state answered (V(rendered) or V(parsed)); nothing was written.
  returned: when O(state=rendered) or O(state=parsed)
  type: str
summary:
  description: What the run did (in check mode, would do) to the HyperNode, in a line a person reads.
  returned: always
  type: list
  elements: str
  sample: ["HyperNode tor-0: created (tier 1, 2 members of type Node)"]
requests:
  description: How many API requests the run made.
  returned: always
  type: int
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow
from ansible_collections.gpucloud.platform.plugins.module_utils.topology import service
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.summary import (
    hypernode_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.tree import MEMBER_TYPES

OPTIONS = dict(
    name=dict(type="str", required=True),
    state=dict(
        type="str",
        choices=["present", "absent", "rendered", "gathered", "parsed"],
        default="present",
    ),
    facts=dict(type="dict"),
    tier=dict(type="int"),
    tier_name=dict(type="str"),
    members=dict(
        type="list",
        elements="dict",
        options=dict(
            type=dict(type="str", required=True, choices=list(MEMBER_TYPES)),
            selector=dict(type="dict", required=True),
        ),
    ),
)


def main() -> None:
    run_flow(
        OPTIONS,
        service.HYPERNODE_FLOW,
        summary=hypernode_summary,
        required_if=[
            ("state", "present", ["tier", "members"]),
            ("state", "rendered", ["tier", "members"]),
            ("state", "parsed", ["tier", "members", "facts"]),
        ],
    )


if __name__ == "__main__":
    main()
