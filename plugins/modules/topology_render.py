#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: topology_render
short_description: Write the network topology tree as Mermaid, Graphviz DOT and PNG files
description:
  - Reads the tree as M(gpucloud.platform.topology_info) does and writes C(<basename>.mmd) and C(<basename>.dot) into
    O(dest), and C(<basename>.png) when the Graphviz C(dot) program is installed on the host the module runs on.
  - Files are written only when their content changes; C(changed) says whether one did. It returns what
    M(gpucloud.platform.topology_info) returns, and the files.
  - Reads the cluster with one list call for Nodes and, with O(source=cluster), one for HyperNodes. It never writes
    to the cluster.
version_added: 0.2.0
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
    description: The directory to write the renderings into; created when missing.
    type: path
    required: true
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
  - module: gpucloud.platform.topology_info
  - module: gpucloud.platform.topology
"""

EXAMPLES = r"""
- name: The cluster's topology, rendered for the docs
  gpucloud.platform.topology_render:
    dest: /srv/platform/topology
  register: topo

- name: Say which files changed
  ansible.builtin.debug:
    msg: "{{ topo.files }}"

- name: What the inventory's description would give, as a Mermaid file only
  gpucloud.platform.topology_render:
    source: inventory
    switches: "{{ topology_switches }}"
    dest: /srv/platform/topology
    basename: planned
    formats: [mermaid]
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
    dest=dict(type="path", required=True),
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
        service.run_render,
        validate=check_node_selector,
        required_if=[("source", "inventory", ["switches"])],
    )


if __name__ == "__main__":
    main()
