# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The prometheus_rule_groups filter: the shared GPU's memory reaches the metering rule."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.filter.prometheus_rule_groups import (
    prometheus_rule_groups,
)


def running_rule(groups):
    return next(
        r["expr"]
        for g in groups
        for r in g["rules"]
        if r.get("record") == "platform:pod_gpus:running"
    )


def test_the_vgpu_memory_share_is_of_the_given_gpu():
    assert "/ 81920)" in running_rule(prometheus_rule_groups({}))
    assert "/ 40960)" in running_rule(prometheus_rule_groups({}, "30s", 40960))


@pytest.mark.parametrize("bad", [0, -1, "80Gi", True])
def test_a_memory_that_is_not_whole_mib_is_refused(bad):
    with pytest.raises(AnsibleFilterError, match="vgpu_gpu_memory_mib"):
        prometheus_rule_groups({}, None, bad)
