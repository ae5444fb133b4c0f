# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.filter.gpu_node_changes import (
    FilterModule,
    gpu_node_changes,
)


def test_the_filter_is_registered_and_decides():
    live = {"metadata": {"name": "n1", "labels": {}}, "spec": {}}
    out = FilterModule().filters()["gpu_node_changes"](live, {"platform.io/tor": "t1"})
    assert out == {"found": True, "apply_labels": True, "patch_taints": False, "taints": []}


@pytest.mark.parametrize(
    "args, field",
    [
        (("node", {}), "node"),
        ((None, ["a"]), "labels"),
        ((None, {}, "gpu"), "taints"),
        ((None, {}, [{"value": "x"}]), "taints"),
        ((None, {}, [], "old"), "absent"),
    ],
)
def test_bad_input_names_the_argument(args, field):
    with pytest.raises(AnsibleFilterError, match=f"gpu_node_changes: {field}:"):
        gpu_node_changes(*args)
