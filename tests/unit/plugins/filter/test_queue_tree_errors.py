# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

from ansible_collections.gpucloud.platform.plugins.filter.queue_tree_errors import (
    FilterModule,
    queue_tree_errors,
)

GPU = "nvidia.com/gpu"


def q(name, parent="root", deserved=None, capability=None, labels=None):
    spec = {"deserved": deserved or {}, "capability": capability or {}}
    if parent is not None:
        spec["parent"] = parent
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
    }


def test_registered():
    assert FilterModule().filters()["queue_tree_errors"] is queue_tree_errors


def test_valid_tree():
    assert (
        queue_tree_errors(
            [q("p", deserved={GPU: 8}, capability={GPU: 8}), q("c", parent="p", deserved={GPU: 8})]
        )
        == []
    )


def test_missing_parent_named():
    [msg] = queue_tree_errors([q("p", parent=None)])
    assert msg.startswith("p.parent: is not set")


def test_children_over_parent():
    errors = queue_tree_errors(
        [
            q("p", deserved={GPU: 8}),
            q("c1", parent="p", deserved={GPU: 6}),
            q("c2", parent="p", deserved={GPU: 6}),
        ]
    )
    assert errors == [
        f"c2.deserved.{GPU}: 6 exceeds what is left of the deserved of parent queue p (8 - 6 = 2); "
        f"the children's deserved {GPU} add up to 12"
    ]


def test_platform_rule_on_labelled_queue():
    labels = {"platform.io/tenant": "a", "platform.io/queue-type": "spot"}
    [msg] = queue_tree_errors([q("tenant-a-spot", deserved={GPU: 2}, labels=labels)])
    assert "spot queue deserves nothing" in msg


def test_not_a_list():
    assert queue_tree_errors("x")[0].startswith("queues:")
