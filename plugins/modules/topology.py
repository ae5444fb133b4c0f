#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: topology
short_description: Make the cluster's HyperNodes equal the network topology tree
description:
  - Computes the Volcano HyperNode tree (C(topology.volcano.sh/v1alpha1)) from node labels or from a
    description of the switches in inventory, checks every topology rule, and then creates and updates
    HyperNodes so the cluster holds exactly that tree, in one run.
  - With O(prune=true) it also deletes the HyperNodes it manages (label C(platform.io/managed-by=gpucloud-platform))
    that the tree no longer needs. HyperNodes without that label, for example those Volcano's own discovery
    labels C(volcano.sh/network-topology-source), are never changed or deleted; a tree that needs one of their
    names fails before anything is written.
  - Reads the cluster with one list call for Nodes and one for HyperNodes, and writes only what changed,
    with server-side apply under the field manager C(gpucloud-platform).
  - Every input is checked before the first write; a refused input names the switch or node and the rule.
version_added: 0.1.0
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
  - gpucloud.platform.topology_tree
options:
  source:
    description:
      - Where the tree comes from.
      - V(labels) reads one node label per tier (O(tier_labels)).
      - V(inventory) takes the switches described in O(switches).
    type: str
    choices: [labels, inventory]
    default: labels
  prune:
    description:
      - Delete managed HyperNodes the tree no longer needs. When false they are kept and returned in RV(stale).
    type: bool
    default: false
  state:
    description:
      - V(present) makes the cluster's HyperNodes equal the tree.
      - V(rendered) plans an O(source=inventory) tree against an empty cluster and returns what would be created,
        without connecting (no kubeconfig is needed). A O(source=labels) tree comes from the Nodes' labels and is
        refused with V(rendered).
      - V(gathered) reads the cluster and returns its Nodes (name and labels) and HyperNodes in RV(gathered);
        nothing is written.
      - V(parsed) plans from O(facts) (what V(gathered) returned, from this or another cluster) without
        connecting.
      - V(rendered) and V(parsed) return what a check-mode run returns, with C(changed=false).
    type: str
    choices: [present, rendered, gathered, parsed]
    default: present
  facts:
    description:
      - With O(state=parsed), the facts to plan from, as RV(gathered) holds them (C(nodes), C(hypernodes)).
    type: dict
notes:
  - In check mode creations and updates are sent as server-side dry runs; deletions are only reported in RV(deleted).
seealso:
  - module: gpucloud.platform.hypernode
  - module: gpucloud.platform.topology_info
"""

EXAMPLES = r"""
- name: HyperNodes from the ToR and spine labels of the nodes
  gpucloud.platform.topology:
    tier_labels: [topology.volcano.sh/tor, topology.volcano.sh/spine]
    prune: true

- name: A three-tier fabric described in inventory
  gpucloud.platform.topology:
    source: inventory
    switches:
      - {name: core, tier: 3, switches: [spine-a, spine-b]}
      - {name: spine-a, tier: 2, switches: [tor-1]}
      - {name: spine-b, tier: 2, switches: [tor-2]}
      - {name: tor-1, tier: 1, nodes: [gpu-0, gpu-1]}
      - {name: tor-2, tier: 1, node_pattern: "^gpu-rack2-"}
    prune: true
  register: topo

- name: Show the tree
  ansible.builtin.debug:
    msg: "{{ topo.tree }}"

- name: What an inventory tree makes, without a cluster
  gpucloud.platform.topology:
    source: inventory
    state: rendered
    switches:
      - {name: spine-a, tier: 2, switches: [tor-1]}
      - {name: tor-1, tier: 1, nodes: [gpu-0, gpu-1]}

- name: Read a cluster's nodes and HyperNodes once ...
  gpucloud.platform.topology:
    state: gathered
  register: facts

- name: "... and plan a label tree from them offline"
  gpucloud.platform.topology:
    state: parsed
    facts: "{{ facts.gathered }}"
    tier_labels: [topology.volcano.sh/tor, topology.volcano.sh/spine]
"""

RETURN = r"""
created:
  description: HyperNodes created (in check mode, that would be created).
  returned: always
  type: list
  elements: str
  sample: [tor-0, spine-0]
updated:
  description: HyperNodes whose spec or labels were changed (in check mode, that would be changed).
  returned: always
  type: list
  elements: str
deleted:
  description:
    - Managed HyperNodes deleted because the tree no longer needs them (only with O(prune=true)).
    - In check mode, those that would be deleted; nothing is deleted.
  returned: always
  type: list
  elements: str
unchanged:
  description: HyperNodes already equal to the tree.
  returned: always
  type: list
  elements: str
stale:
  description: Managed HyperNodes the tree no longer needs, kept because O(prune=false).
  returned: always
  type: list
  elements: str
unplaced_nodes:
  description: Nodes that no leaf HyperNode holds.
  returned: always
  type: list
  elements: str
moved_nodes:
  description: Nodes whose leaf HyperNode changes, with the leaves before and after.
  returned: always
  type: dict
  sample: {gpu-3: {from: [tor-1], to: [tor-2]}}
tree:
  description: The tree as indented text.
  returned: always
  type: str
  sample: "spine-0 (tier 2)\n└── tor-0 (tier 1)\n    ├── gpu-0\n    └── gpu-1\n"
diff:
  description:
    - One diff per changed object, sorted by C(before_header), which is the HyperNode name; each holds the before and
      after of each HyperNode created, changed or deleted. Ansible shows each under its own header (rule
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
    - The HyperNodes created, updated and deleted (in check mode, that would be) and the nodes in no leaf.
    - In a few lines a person reads (rule run-summary); a playbook's last task prints them.
  returned: on success
  type: list
  elements: str
gathered:
  description: With O(state=gathered), the Nodes (C(name), C(labels)) and HyperNodes the plan reads.
  returned: when O(state=gathered)
  type: dict
  sample: {nodes: [{name: gpu-0, labels: {topology.volcano.sh/tor: tor-1}}], hypernodes: []}
state:
  description: The offline state answered (V(rendered) or V(parsed)); nothing was written.
  returned: when O(state=rendered) or O(state=parsed)
  type: str
requests:
  description: How many API requests the run made (0 with V(rendered) and V(parsed)).
  returned: always
  type: int
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow
from ansible_collections.gpucloud.platform.plugins.module_utils.topology import service
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.discovery import (
    SOURCES,
    TREE_OPTIONS,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.summary import sync_summary

OPTIONS = dict(
    source=dict(type="str", choices=list(SOURCES), default="labels"),
    prune=dict(type="bool", default=False),
    state=dict(
        type="str", choices=["present", "rendered", "gathered", "parsed"], default="present"
    ),
    facts=dict(type="dict"),
    **TREE_OPTIONS,
)


def main() -> None:
    run_flow(
        OPTIONS,
        service.SYNC_FLOW,
        required_if=[("source", "inventory", ["switches"]), ("state", "parsed", ["facts"])],
        diff_by_object=True,
        summary=sync_summary,
    )


if __name__ == "__main__":
    main()
