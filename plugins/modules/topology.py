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
requests:
  description: How many API requests the run made.
  returned: always
  type: int
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_module
from ansible_collections.gpucloud.platform.plugins.module_utils.topology import service
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.discovery import (
    SOURCES,
    TREE_OPTIONS,
    check_source_options,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.summary import sync_summary

OPTIONS = dict(
    source=dict(type="str", choices=list(SOURCES), default="labels"),
    prune=dict(type="bool", default=False),
    **TREE_OPTIONS,
)


def main() -> None:
    run_module(
        OPTIONS,
        service.run_sync,
        validate=check_source_options,
        required_if=[("source", "inventory", ["switches"])],
        diff_by_object=True,
        summary=sync_summary,
    )


if __name__ == "__main__":
    main()
