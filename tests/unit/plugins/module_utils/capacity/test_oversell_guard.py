# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule oversell-guard: nothing is sold beyond the pool."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.capacity.oversell import (
    check_oversell,
    tenant_oversell_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.workload.pool import (
    TenantCommitment,
)

GPU = "nvidia.com/gpu"


def commitment(tenant, sub=0, payg=0):
    zero = {GPU: Decimal(0), "cpu": Decimal(0), "memory": Decimal(0)}
    return TenantCommitment(
        tenant,
        subscription={**zero, GPU: Decimal(sub)},
        payg={**zero, GPU: Decimal(payg)},
    )


def test_oversell_guard_refuses_with_the_numbers():
    pool = {GPU: Decimal(64)}
    check_oversell("capability", pool, {GPU: Decimal(40)}, {GPU: Decimal(24)})
    with pytest.raises(PlatformValidationError) as info:
        check_oversell(
            "capability",
            pool,
            {GPU: Decimal(48)},
            {GPU: Decimal(20)},
            what="tenant gamma's subscription",
        )
    message = str(info.value)
    assert message.startswith(
        "capability.nvidia.com/gpu: 20 for tenant gamma's subscription exceeds"
    )
    assert "(64 in the pool - 48 sold as subscriptions and pay-as-you-go = 16)" in message
    assert "at most 16 can be granted" in message


def test_oversell_guard_when_already_oversold_shows_negative_left():
    with pytest.raises(PlatformValidationError, match=r"= -6\); at most 0"):
        check_oversell("x", {GPU: Decimal(10)}, {GPU: Decimal(16)}, {GPU: Decimal(1)})


def test_tenant_oversell_names_the_field_and_every_number():
    commitments = {
        "a": commitment("a", sub=8, payg=2),
        "b": commitment("b", sub=30, payg=6),
        "c": commitment("c", sub=10),
    }
    pool = {GPU: Decimal(64)}
    assert tenant_oversell_errors("a", pool, commitments, {GPU: Decimal(16)}) == []
    errors = tenant_oversell_errors("a", pool, commitments, {GPU: Decimal(17)})
    assert [str(e) for e in errors] == [
        "subscription.nvidia.com/gpu: 17 for the subscription of tenant 'a' exceeds what the pool "
        "has left for it (64 in the pool - 40 in other tenants' subscriptions - 6 in other "
        "tenants' pay-as-you-go - 2 in this tenant's pay-as-you-go = 16); at most 16 can be "
        "granted (rule oversell-guard)"
    ]
    errors = tenant_oversell_errors("a", pool, commitments, {GPU: Decimal(8)}, {GPU: Decimal(11)})
    assert [e.field for e in errors] == ["payg.nvidia.com/gpu"]
    assert "- 8 in this tenant's new subscription = 10); at most 10" in str(errors[0])


@given(
    pool=st.integers(0, 100),
    others=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=3),
    live=st.none() | st.tuples(st.integers(0, 40), st.integers(0, 40)),
    new_sub=st.integers(0, 60),
    new_payg=st.none() | st.integers(0, 60),
)
def test_tenant_oversell_refuses_exactly_growth_that_does_not_fit(
    pool, others, live, new_sub, new_payg
):
    commitments = {f"o{i}": commitment(f"o{i}", s, p) for i, (s, p) in enumerate(others)}
    if live is not None:
        commitments["t"] = commitment("t", *live)
    live_sub, live_payg = live or (0, 0)
    payg = None if new_payg is None else {GPU: Decimal(new_payg)}
    errors = tenant_oversell_errors(
        "t", {GPU: Decimal(pool)}, commitments, {GPU: Decimal(new_sub)}, payg
    )
    grows = new_sub > live_sub or (new_payg is not None and new_payg > live_payg)
    total = sum(s + p for s, p in others) + new_sub + (live_payg if new_payg is None else new_payg)
    assert bool(errors) == (grows and total > pool)
    assert all(e.field in (f"subscription.{GPU}", f"payg.{GPU}") for e in errors)
