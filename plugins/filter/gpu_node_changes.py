# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_node_changes: what the gpu_node role writes on a Node (rules node-labels-apply and
node-taints-patch)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.module_utils.nodes.node_changes import (
    node_changes,
)


def gpu_node_changes(
    node: Any, labels: Any, taints: Any = (), absent: Any = (), manager: str = "gpucloud-platform"
) -> dict[str, Any]:
    """Whether the role applies its labels and patches its taints on ``node``."""
    if node is not None and not isinstance(node, Mapping):
        raise AnsibleFilterError(f"gpu_node_changes: node: {node!r} must be a Node or null")
    if not isinstance(labels, Mapping):
        raise AnsibleFilterError(f"gpu_node_changes: labels: {labels!r} must be a mapping")
    if (
        isinstance(taints, str | bytes)
        or not isinstance(taints, Sequence)
        or not all(isinstance(t, Mapping) and t.get("key") for t in taints)
    ):
        raise AnsibleFilterError(
            f"gpu_node_changes: taints: {taints!r} must be a list of taints, each with a key"
        )
    if isinstance(absent, str | bytes) or not isinstance(absent, Sequence):
        raise AnsibleFilterError(f"gpu_node_changes: absent: {absent!r} must be a list of keys")
    return node_changes(
        node, {str(k): str(v) for k, v in labels.items()}, list(taints), list(absent), manager
    )


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"gpu_node_changes": gpu_node_changes}
