# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

from decimal import Decimal

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.capacity.payg import (
    growth_reason,
    no_reclaim_error,
    parse_target,
    payg_growth_gpus,
    payg_in_use,
    payg_input_errors,
    payg_oversell_errors,
    payg_queue_spec,
    payg_target,
    plan_payg,
    resize_table,
    validate_payg_input,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.workload.pool import (
    commitments_from_queues,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import queue, vcjob

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


def payg_params(**given):
    base = {
        "tenant": None,
        "capability": None,
        "fit_to_use": False,
        "node_selector": {},
        "history_size": 100,
        "lease_duration": 60,
        "wait_timeout": 300,
    }
    return base | given


def test_input_needs_a_capability_or_fit_to_use_before_anything_else():
    errors = payg_input_errors(payg_params(tenant="Bad_Name"))
    assert [str(e) for e in errors] == [
        "capability: give the new capability (with tenant), or set fit_to_use: true"
    ]


def test_input_collects_every_problem():
    errors = payg_input_errors(
        payg_params(
            tenant="Bad_Name",
            capability={"pods": 3},
            node_selector={"a": 1},
            lease_duration=0,
        )
    )
    fields = [e.field for e in errors]
    assert fields == ["tenant", "capability.pods", "node_selector.a", "lease_duration"]
    assert payg_input_errors(payg_params(fit_to_use=True)) == []
    with pytest.raises(PlatformValidationError, match="lease_duration: 0 is too small"):
        validate_payg_input(payg_params(fit_to_use=True, lease_duration=0))


def test_resize_table_reports_every_row_and_changes_only_what_differs():
    queues = [
        queue("alpha", "payg", deserved={GPU: 8}, capability={GPU: 8}),
        queue("beta", "payg", deserved={GPU: 4}, capability={GPU: 4}),
    ]
    commitments = commitments_from_queues(queues)
    rows = plan_payg(commitments, [], None, None)  # alpha and beta use nothing
    rows[1]["target"] = rows[1]["live"]  # beta stays as it is
    resize = resize_table(rows, queues)
    assert [(r["tenant"], r["old"], r["new"], r["changed"]) for r in resize.table] == [
        ("alpha", {GPU: 8}, {GPU: 0}, True),
        ("beta", {GPU: 4}, {GPU: 4}, False),
    ]
    assert resize.updated == ["tenant-alpha-payg"]
    manifest = resize.changes[0][1]
    assert manifest["metadata"] == {"name": "tenant-alpha-payg"}
    assert manifest["spec"] == {"capability": {GPU: 0}, "deserved": {GPU: 0}}
    assert resize.before == {"tenant-alpha-payg": {"capability": {GPU: 8}, "deserved": {GPU: 8}}}
    assert resize.growth == 0 and resize.growing == []


def test_growth_meets_the_oversell_guard_beside_every_subscription():
    queues = [
        queue("alpha", "subscription", deserved={GPU: 40}),
        queue("alpha", "payg", deserved={GPU: 0}, capability={GPU: 0}),
        queue("beta", "payg", deserved={GPU: 4}, capability={GPU: 4}),
    ]
    commitments = commitments_from_queues(queues)
    resize = resize_table(plan_payg(commitments, [], "alpha", {GPU: Decimal(21)}), queues)
    assert resize.growth == 21 and [r["tenant"] for r in resize.growing] == ["alpha"]
    pool = {GPU: Decimal(64)}
    errors = payg_oversell_errors(resize.growing, pool, commitments)
    assert [str(e) for e in errors] == [
        "capability.nvidia.com/gpu: 21 for the pay-as-you-go queue of tenant 'alpha' exceeds what "
        "the pool has left for it (64 in the pool - 44 sold as subscriptions and pay-as-you-go = "
        "20); at most 20 can be granted (rule oversell-guard)"
    ]
    assert payg_oversell_errors(resize.growing, {GPU: Decimal(65)}, commitments) == []


def test_growth_reason_and_the_no_reclaim_refusal():
    growing = [{"tenant": "alpha"}, {"tenant": "beta"}]
    assert growth_reason({}, growing, 8) == "pay-as-you-go growth of tenant alpha, beta by 8 GPUs"
    assert growth_reason({"tenant": "alpha"}, growing[:1], 8).endswith("tenant alpha by 8 GPUs")
    assert growth_reason({"demand_reason": "job 42"}, growing, 8) == "job 42"
    assert str(no_reclaim_error(8, 4, 12, 8)) == (
        "capability.nvidia.com/gpu: growing by 8 GPUs needs 4 spot GPUs reclaimed: 12 GPUs are "
        "unsold and spot jobs hold 8; set reclaim: true to reclaim spot jobs first"
    )
