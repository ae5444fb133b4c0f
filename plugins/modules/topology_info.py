#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import HYPERNODE_API

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
author:
  - gpucloud platform team (@gpucloud)
requirements:
  - kubernetes >= 24.2.0
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
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
  tier_labels:
    description: With O(source=labels), the node label keys per tier, lowest tier first.
    type: list
    elements: str
    default: [topology.volcano.sh/tor, topology.volcano.sh/spine]
  name_template:
    description: With O(source=labels), how a label value becomes a HyperNode name (must contain C({value})).
    type: str
    default: "{value}"
  switches:
    description: With O(source=inventory), the switches, as for M(gpucloud.platform.topology).
    type: list
    elements: dict
  node_selector:
    description: A label selector limiting the Nodes considered.
    type: str
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
notes:
  - Supports check mode (nothing is written) and diff mode is not applicable.
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
  description: The files written (or, in check mode, that would be written) into O(dest).
  returned: always
  type: list
  elements: str
"""

import os
import shutil
import tempfile

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.cluster import (
    ApiException,
    Cluster,
    api_error_message,
    argument_spec,
    platform_module,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.discovery import (
    DEFAULT_NAME_TEMPLATE,
    tree_from_source,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.manifests import (
    is_managed,
    tree_from_manifests,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.render import (
    dot,
    mermaid,
    text_tree,
    tree_data,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.tree import (
    DEFAULT_TIER_LABELS,
    KIND,
    node_infos,
    nodes_in_no_leaf,
    tree_errors,
)


def _write(path: str, content: bytes, check_mode: bool) -> bool:
    """Write ``content`` to ``path`` atomically; False when it already holds it."""
    if os.path.exists(path):
        with open(path, "rb") as f:
            if f.read() == content:
                return False
    if check_mode:
        return True
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".topology-")
    with os.fdopen(fd, "wb") as f:
        f.write(content)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return True


def main() -> None:
    module = platform_module(
        argument_spec=argument_spec(
            source=dict(type="str", choices=["cluster", "labels", "inventory"], default="cluster"),
            managed_only=dict(type="bool", default=False),
            tier_labels=dict(type="list", elements="str", default=list(DEFAULT_TIER_LABELS)),
            name_template=dict(type="str", default=DEFAULT_NAME_TEMPLATE),
            switches=dict(type="list", elements="dict"),
            node_selector=dict(type="str"),
            dest=dict(type="path"),
            basename=dict(type="str", default="topology"),
            formats=dict(
                type="list",
                elements="str",
                choices=["mermaid", "dot", "png"],
                default=["mermaid", "dot", "png"],
            ),
        ),
        required_if=[("source", "inventory", ["switches"])],
        supports_check_mode=True,
    )
    p = module.params
    cluster = Cluster.from_module(module)
    errors: list[str] = []
    try:
        raw_nodes = cluster.list("v1", "Node", label_selector=p["node_selector"])
        live = cluster.list(HYPERNODE_API, KIND) if p["source"] == "cluster" else []
    except ApiException as exc:
        module.fail_json(msg=f"reading Nodes and HyperNodes failed: {api_error_message(exc)}")
    nodes = node_infos(raw_nodes)

    if p["source"] == "cluster":
        objects = [o for o in live if is_managed(o)] if p["managed_only"] else live
        tree, shape_errors = tree_from_manifests(objects)
        errors += [str(e) for e in shape_errors]
        unplaced = nodes_in_no_leaf(tree, nodes)
    else:
        try:
            found = tree_from_source(
                p["source"], nodes, p["tier_labels"], p["name_template"], p["switches"]
            )
        except PlatformValidationError as exc:
            module.fail_json(msg=str(exc), errors=exc.messages)
        tree, unplaced = found.tree, found.unplaced_nodes
    errors += [str(e) for e in tree_errors(tree, nodes)]

    renderings = {
        "mermaid": mermaid(tree, nodes, unplaced),
        "dot": dot(tree, nodes, unplaced),
    }
    result = dict(
        changed=False,
        hypernodes=tree_data(tree, nodes),
        text=text_tree(tree, nodes, unplaced),
        errors=errors,
        unplaced_nodes=unplaced,
        files=[],
        **renderings,
    )

    if p["dest"]:
        dest = p["dest"]
        if not os.path.isdir(dest) and not module.check_mode:
            os.makedirs(dest, exist_ok=True)
        suffix = {"mermaid": "mmd", "dot": "dot"}
        for fmt in ("mermaid", "dot"):
            if fmt in p["formats"]:
                path = os.path.join(dest, f"{p['basename']}.{suffix[fmt]}")
                result["files"].append(path)
                result["changed"] |= _write(path, renderings[fmt].encode(), module.check_mode)
        if "png" in p["formats"]:
            dot_bin = shutil.which("dot")
            if not dot_bin:
                module.warn(
                    "Graphviz 'dot' is not installed on this host; no PNG was written (install graphviz to get one)"
                )
            else:
                path = os.path.join(dest, f"{p['basename']}.png")
                result["files"].append(path)
                rc, out, err = module._module.run_command(
                    [dot_bin, "-Tpng"], data=renderings["dot"], binary_data=True, encoding=None
                )
                if rc != 0:
                    module.fail_json(msg=f"Graphviz dot failed (rc {rc}): {err!r}", **result)
                result["changed"] |= _write(path, out, module.check_mode)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
