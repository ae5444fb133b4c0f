# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node changes: a kwok GPU node (a copy of the cluster's first) added to the pool,
then removed, each done when the spot queues' capabilities have changed
(``pool_changed`` -> ``spot_recompute.yml``). Nothing runs on the added node."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    LABEL_QUEUE_TYPE,
    QUEUE_API,
    QUEUE_TYPE_SPOT,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.quantity import GPU

from .changes import Change

VOLCANO = (*QUEUE_API.split("/"), "queues")
KIND = "node change"


def spot_capabilities(custom: Any) -> dict[str, str]:
    """Every spot queue's GPU capability."""
    queues = custom.list_cluster_custom_object(
        *VOLCANO, label_selector=f"{LABEL_QUEUE_TYPE}={QUEUE_TYPE_SPOT}"
    )["items"]
    return {
        q["metadata"]["name"]: str(((q.get("spec") or {}).get("capability") or {}).get(GPU))
        for q in queues
    }


def add_node(core: Any, name: str) -> None:
    """A kwok GPU node like the cluster's first one, under another name (the integration
    test of the event source adds its node with this too)."""
    template = core.list_node(label_selector="type=kwok").items[0]
    labels = dict(template.metadata.labels or {}, **{"kubernetes.io/hostname": name})
    annotations = {k: v for k, v in (template.metadata.annotations or {}).items() if "kwok" in k}
    core.create_node({"metadata": {"name": name, "labels": labels, "annotations": annotations}})
    capacity = dict(template.status.capacity)
    core.patch_node_status(name, {"status": {"capacity": capacity, "allocatable": capacity}})


def node_changes(core: Any, custom: Any, count: int) -> Iterator[Change]:
    """``count`` changes: a node added, the same node removed, another added, ..."""
    before: dict[str, str] = {}

    def read() -> None:
        before.clear()
        before.update(spot_capabilities(custom))

    def changed() -> bool:
        return spot_capabilities(custom) != before

    for i in range(count):
        if i % 2 == 0:
            name = f"bench-node-{uuid.uuid4().hex[:5]}"
            added = Change(KIND, make=lambda n=name: add_node(core, n), done=changed, prepare=read)
            if i == count - 1:  # nobody times its removal
                added.cleanup = lambda n=name: core.delete_node(n)
            yield added
        else:
            yield Change(KIND, make=lambda n=name: core.delete_node(n), done=changed, prepare=read)
