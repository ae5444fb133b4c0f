# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.capacity.payg import (
    parse_target,
    payg_growth_gpus,
    payg_in_use,
    payg_queue_spec,
    payg_target,
    plan_payg,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.capacity.pool import (
    commitments_from_queues,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from spot_fixtures import queue, vcjob

GPU = "nvidia.com/gpu"


def test_in_use_is_the_larger_of_allocated_and_unfinished_jobs():
    jobs = [
        vcjob("run", "alpha", 2, 2, queue_type="payg", billing="payg", cpu="4"),
        vcjob("pending", "alpha", 4, 1, queue_type="payg", billing="payg", phase="Pending"),
        vcjob("done", "alpha", 8, 1, queue_type="payg", billing="payg", phase="Completed"),
        vcjob("other-queue", "alpha", 8, 1),
    ]
    used = payg_in_use({GPU: Decimal(3), "cpu": Decimal(20)}, jobs, "tenant-alpha-payg")
    assert used[GPU] == 8 and used["cpu"] == 20 and used["memory"] == 0


def test_target_refuses_below_use_and_keeps_unnamed_resources():
    live = {GPU: Decimal(8), "cpu": Decimal(64)}
    used = {GPU: Decimal(6), "cpu": Decimal(0), "memory": Decimal(0)}
    assert payg_target("alpha", live, {GPU: Decimal(16)}, used) == {GPU: 16, "cpu": 64}
    with pytest.raises(PlatformValidationError) as info:
        payg_target("alpha", live, {GPU: Decimal(4)}, used)
    assert str(info.value).startswith(
        "capability.nvidia.com/gpu: 4 is below what tenant 'alpha' uses"
    )
    assert "(6)" in str(info.value) and "ask for 6 or more" in str(info.value)
    # fit to use only shrinks, and only what the live queue limits
    assert payg_target(
        "alpha", live, None, {GPU: Decimal(10), "cpu": Decimal(8), "memory": Decimal(5)}
    ) == {
        GPU: 8,
        "cpu": 8,
    }


def test_growth_and_spec():
    assert payg_growth_gpus({GPU: Decimal(4)}, {GPU: Decimal(12)}) == 8
    assert payg_growth_gpus({GPU: Decimal(12)}, {GPU: Decimal(4)}) == 0
    spec = payg_queue_spec({GPU: Decimal(4), "cpu": Decimal("0.5")})
    assert spec == {"capability": {GPU: 4, "cpu": "500m"}, "deserved": {GPU: 4, "cpu": "500m"}}


def test_parse_target():
    assert parse_target({GPU: 2, "memory": "1Gi"}) == {GPU: 2, "memory": 2**30}
    with pytest.raises(
        PlatformValidationError, match=r"capability.pods: a pay-as-you-go queue is sized in"
    ):
        parse_target({"pods": 3})
    with pytest.raises(
        PlatformValidationError, match=r"capability.nvidia.com/gpu: '1.5' is not a whole number"
    ):
        parse_target({GPU: "1.5"})
    with pytest.raises(PlatformValidationError, match="must name at least one resource"):
        parse_target({})


def test_plan_unknown_tenant_and_all_tenants():
    commitments = commitments_from_queues(
        [
            queue("alpha", "payg", deserved={GPU: 8}, capability={GPU: 8}, allocated={GPU: "2"}),
            queue("beta", "payg", deserved={GPU: 4}, capability={GPU: 4}),
            queue("gamma", "spot"),
        ]
    )
    with pytest.raises(
        PlatformValidationError,
        match=r"tenant: 'gamma' has no pay-as-you-go queue .* tenants with one: alpha, beta",
    ):
        plan_payg(commitments, [], "gamma", {GPU: Decimal(1)})
    rows = plan_payg(commitments, [], None, None)
    assert [(r["tenant"], r["target"][GPU], r["growth"]) for r in rows] == [
        ("alpha", 2, 0),
        ("beta", 0, 0),
    ]
    grow = plan_payg(commitments, [], "beta", {GPU: Decimal(10)})
    assert grow[0]["growth"] == 6
