# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""hypernode_tree_errors: the topology rules a list of HyperNode manifests breaks."""

from __future__ import annotations

from ansible_collections.gpucloud.platform.plugins.module_utils.topology.manifests import (
    tree_from_manifests,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.rules import tree_errors


def hypernode_tree_errors(hypernodes, nodes=None):
    """Every broken rule as a message naming the HyperNode or node; [] when the tree is sound."""
    if not isinstance(hypernodes, list):
        return [f"hypernodes: {hypernodes!r} must be a list of HyperNode manifests"]
    tree, errors = tree_from_manifests(hypernodes)
    errors += tree_errors(tree, nodes)
    return [str(e) for e in errors]


class FilterModule:
    def filters(self):
        return {"hypernode_tree_errors": hypernode_tree_errors}
