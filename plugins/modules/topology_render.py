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
  - "O(state=rendered), O(state=gathered) and O(state=parsed) write no file: V(rendered) shows an inventory tree
    without a cluster, V(gathered) returns what the module reads, and V(parsed) shows the tree of such O(facts)
    without connecting; V(rendered) and V(parsed) return the files a run would write in RV(files)."
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
  state:
    description:
      - V(present) reads the cluster and writes the renderings into O(dest).
      - V(rendered) shows the tree of O(source=inventory) as a run on a cluster without Nodes or HyperNodes would,
        without a kubeconfig, and writes no file. Another O(source) is refused (its tree is the cluster's).
      - V(gathered) reads the cluster and returns, in RV(gathered), the Nodes (name and labels) and, with
        O(source=cluster), the HyperNodes; it writes no file.
      - V(parsed) shows the tree of O(facts) (what V(gathered) returned, from this or another cluster) without
        connecting, and writes no file.
    type: str
    choices: [present, rendered, gathered, parsed]
    default: present
  facts:
    description:
      - With O(state=parsed), the facts to show the tree of, as RV(gathered) holds them.
    type: dict
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

- name: The same tree, shown without a cluster and without writing a file
  gpucloud.platform.topology_render:
    source: inventory
    switches: "{{ topology_switches }}"
    dest: /srv/platform/topology
    state: rendered
  register: planned
"""

RETURN = r"""
hypernodes:
  description: Every HyperNode of the tree in depth-first order.
  returned: unless O(state=gathered)
  type: list
  elements: dict
  sample:
    - {name: spine-0, tier: 2, tier_name: null, depth: 0, parent: null, leaf: false, children: [tor-0], nodes: []}
    - {name: tor-0, tier: 1, tier_name: null, depth: 1, parent: spine-0, leaf: true, children: [], nodes: [gpu-0, gpu-1]}
text:
  description: The tree as indented text.
  returned: unless O(state=gathered)
  type: str
mermaid:
  description: The tree as a Mermaid flowchart.
  returned: unless O(state=gathered)
  type: str
dot:
  description: The tree as a Graphviz digraph.
  returned: unless O(state=gathered)
  type: str
errors:
  description: The topology rules the tree breaks (empty when it keeps all of them).
  returned: unless O(state=gathered)
  type: list
  elements: str
unplaced_nodes:
  description: Nodes that no leaf HyperNode holds.
  returned: unless O(state=gathered)
  type: list
  elements: str
files:
  description:
    - The files of the renderings in O(dest), whether or not their content changed.
    - With O(state=rendered) or O(state=parsed), the files a run would write (none is), the PNG among them when
      O(formats) asks for it; a run writes it only where Graphviz is installed.
  returned: unless O(state=gathered)
  type: list
  elements: str
gathered:
  description: With O(state=gathered), the Nodes (name and labels) and, with O(source=cluster), the HyperNodes.
  returned: when O(state=gathered)
  type: dict
  sample:
    nodes: [{name: gpu-0, labels: {topology.volcano.sh/tor: tor-0}}]
    hypernodes: []
summary:
  description:
    - The tree drawn (its HyperNodes, whether it keeps the topology rules, the nodes in no leaf) and the files written,
      already as drawn, or (in check mode, with O(state=rendered) or O(state=parsed)) that a run would write.
    - With O(state=gathered), a line saying what was read.
  returned: always
  type: list
  elements: str
state:
  description: The offline state answered (V(rendered) or V(parsed)); nothing was read.
  returned: when O(state=rendered) or O(state=parsed)
  type: str
done:
  description:
    - When the run fails part-way, the writes it had made (C(changed) is true when there are any); running again
      finishes the change.
  returned: when the run fails part-way
  type: list
  elements: str
requests:
  description: How many API requests the run made (0 with V(rendered) and V(parsed)).
  returned: always
  type: int
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.kube.flow import OFFLINE_STATES
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow
from ansible_collections.gpucloud.platform.plugins.module_utils.topology import service
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.discovery import (
    TREE_OPTIONS,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.summary import (
    render_summary,
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
    state=dict(type="str", choices=["present", *OFFLINE_STATES], default="present"),
    facts=dict(type="dict"),
)


def main() -> None:
    run_flow(
        OPTIONS,
        service.RENDER_FLOW,
        summary=render_summary,
        required_if=[("source", "inventory", ["switches"]), ("state", "parsed", ["facts"])],
    )


if __name__ == "__main__":
    main()
