# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""queue_tree_errors: the queue-tree rules a list of Volcano Queue manifests breaks."""

from __future__ import annotations

from ansible_collections.gpucloud.platform.plugins.module_utils.queues.rules import (
    queue_tree_errors as _queue_tree_errors,
)


def queue_tree_errors(queues):
    """Every broken rule as a message naming the queue and field; [] when the tree is valid."""
    if not isinstance(queues, list):
        return [f"queues: {queues!r} must be a list of Queue manifests"]
    return _queue_tree_errors(queues)


class FilterModule:
    def filters(self):
        return {"queue_tree_errors": queue_tree_errors}
