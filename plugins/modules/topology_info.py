#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: topology_info
short_description: The network topology tree as data, text, Mermaid, Graphviz DOT and PNG
description:
  - Reads the cluster's HyperNodes (or computes the tree from node labels or an inventory description without writing
    anything) and returns the tree as data and as an indented text tree, together with Mermaid and Graphviz DOT
    renderings and the topology rules the tree breaks.
  - It changes nothing, on the cluster or on the host; M(gpucloud.platform.topology_render) writes the renderings as
    files.
  - Reads the cluster with one list call for Nodes and, with O(source=cluster), one for HyperNodes.
version_added: 0.1.0
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
  - gpucloud.platform.read_states
  - gpucloud.platform.topology_tree
options:
  source:
    description:
      - V(cluster) shows the HyperNodes in the cluster.
      - V(labels) and V(inventory) show the tree M(gpucloud.platform.topology) would make from the same options.
    type: str
    choices: [cluster, labels, inventory]
    default: cluster
  managed_only:
    description: With O(source=cluster), show only the HyperNodes labelled C(platform.io/managed-by=gpucloud-platform).
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    details: The module changes nothing in either mode.
  diff_mode:
    support: N/A
    details: The module changes nothing.
seealso:
  - module: gpucloud.platform.topology_render
  - module: gpucloud.platform.topology
"""

EXAMPLES = r"""
- name: The cluster's topology
  gpucloud.platform.topology_info:
  register: topo

- name: Print it - the HyperNodes with their tiers and members, the nodes left out, the rules broken
  ansible.builtin.debug:
    msg: "{{ topo.summary }}"

- name: Print the tree as drawn text
  ansible.builtin.debug:
    msg: "{{ topo.text }}"

- name: Preview what the node labels would give, without writing HyperNodes
  gpucloud.platform.topology_info:
    source: labels
    tier_labels: [topology.volcano.sh/tor, topology.volcano.sh/spine]

- name: Read a cluster's nodes and HyperNodes once ...
  gpucloud.platform.topology_info:
    state: gathered
  register: facts

- name: "... and show their tree offline"
  gpucloud.platform.topology_info:
    state: parsed
    facts: "{{ facts.gathered }}"
"""

RETURN = r"""
hypernodes:
  description: Every HyperNode of the tree in depth-first order.
  returned: always
  type: list
  elements: dict
  sample:
    - {name: spine-0, tier: 2, tier_name: null, depth: 0, parent: null, leaf: false, children: [tor-0], nodes: []}
    - {name: tor-0, tier: 1, tier_name: null, depth: 1, parent: spine-0, leaf: true, children: [], nodes: [gpu-0, gpu-1]}
text:
  description: The tree as indented text.
  returned: always
  type: str
mermaid:
  description: The tree as a Mermaid flowchart.
  returned: always
  type: str
dot:
  description: The tree as a Graphviz digraph.
  returned: always
  type: str
errors:
  description: The topology rules the tree breaks (empty when it keeps all of them).
  returned: always
  type: list
  elements: str
unplaced_nodes:
  description: Nodes that no leaf HyperNode holds.
  returned: always
  type: list
  elements: str
summary:
  description:
    - The tree in a few lines a person reads (rule run-summary) - a headline (HyperNodes, tiers, nodes placed and
      left out, rules broken), one row per HyperNode after its parent with its tier, its parent and what it holds,
      then the nodes in no leaf and each rule the tree breaks.
  returned: always
  type: list
  elements: str
  sample:
    - "topology in the cluster: 3 HyperNode(s) in 2 tier(s), 4 node(s) placed, 0 in no leaf, no rule broken"
    - "HYPERNODE  TIER  PARENT   HOLDS"
    - "spine-0    2     -        2 HyperNode(s) (tor-0, tor-1)"
    - "tor-0      1     spine-0  2 node(s) (gpu-0, gpu-1)"
    - "tor-1      1     spine-0  2 node(s) (gpu-2, gpu-3)"
gathered:
  description: With O(state=gathered), the Nodes (C(name), C(labels)) and HyperNodes the tree is drawn from.
  returned: when O(state=gathered)
  type: dict
  sample: {nodes: [{name: gpu-0, labels: {topology.volcano.sh/tor: tor-1}}], hypernodes: []}
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
from ansible_collections.gpucloud.platform.plugins.module_utils.topology import service
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.discovery import (
    TREE_OPTIONS,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.info_summary import (
    info_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.view import (
    VIEW_SOURCES,
)

OPTIONS = dict(
    source=dict(type="str", choices=list(VIEW_SOURCES), default="cluster"),
    managed_only=dict(type="bool", default=False),
    **READ_STATE_OPTIONS,
    **TREE_OPTIONS,
)


def main() -> None:
    run_flow(
        OPTIONS,
        service.INFO_FLOW,
        required_if=[("source", "inventory", ["switches"]), ("state", "parsed", ["facts"])],
        summary=info_summary,
    )


if __name__ == "__main__":
    main()
