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
  - With O(dest), writes C(<basename>.mmd) and C(<basename>.dot) there, and C(<basename>.png) when the Graphviz
    C(dot) program is installed on the host the module runs on. Files are written only when their content changes.
  - Reads the cluster with one list call for Nodes and, with O(source=cluster), one for HyperNodes.
version_added: 0.1.0
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
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
  dest:
    description: A directory to write the renderings into; created when missing. Nothing is written without it.
    type: path
  basename:
    description: The file name, without extension, of the renderings.
    type: str
    default: topology
  formats:
    description: Which files to write into O(dest). V(png) needs the Graphviz C(dot) program; without it a warning is given.
    type: list
    elements: str
    choices: [mermaid, dot, png]
    default: [mermaid, dot, png]
attributes:
  check_mode:
    details: No file is written; RV(files) lists the renderings and C(changed) says whether one would change.
  diff_mode:
    support: none
    details: The module returns no diff of the files it writes.
seealso:
  - module: gpucloud.platform.topology
"""

EXAMPLES = r"""
- name: The cluster's topology, rendered for the docs
  gpucloud.platform.topology_info:
    dest: /srv/platform/topology
  register: topo

- name: Print it
  ansible.builtin.debug:
    msg: "{{ topo.text }}"

- name: Preview what the node labels would give, without writing HyperNodes
  gpucloud.platform.topology_info:
    source: labels
    tier_labels: [topology.volcano.sh/tor, topology.volcano.sh/spine]
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
files:
  description: The files of the renderings in O(dest), whether or not their content changed.
  returned: always
  type: list
  elements: str
done:
  description:
    - When the run fails part-way, the writes it had made (C(changed) is true when there are any); running again
      finishes the change.
  returned: when the run fails part-way
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
    TREE_OPTIONS,
    check_node_selector,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.view import (
    RENDERING_FORMATS,
    VIEW_SOURCES,
)

OPTIONS = dict(
    source=dict(type="str", choices=list(VIEW_SOURCES), default="cluster"),
    managed_only=dict(type="bool", default=False),
    dest=dict(type="path"),
    basename=dict(type="str", default="topology"),
    formats=dict(
        type="list",
        elements="str",
        choices=list(RENDERING_FORMATS),
        default=list(RENDERING_FORMATS),
    ),
    **TREE_OPTIONS,
)


def main() -> None:
    run_module(
        OPTIONS,
        service.run_info,
        validate=check_node_selector,
        required_if=[("source", "inventory", ["switches"])],
    )


if __name__ == "__main__":
    main()
