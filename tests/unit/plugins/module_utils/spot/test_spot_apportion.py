# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.apportion import (
    apportion_spot,
    largest_remainder,
    share,
)

GPU = "nvidia.com/gpu"
tenants = st.dictionaries(
    st.text("abcdefghij", min_size=1, max_size=4), st.integers(0, 500), min_size=1, max_size=30
)


@given(idle=st.integers(0, 5000), subs=tenants)
def test_capabilities_add_up_to_idle_and_nobody_is_a_gpu_off(idle, subs):
    got = largest_remainder(idle, {t: Fraction(s) for t, s in subs.items()})
    total = sum(subs.values())
    if total == 0:
        assert set(got.values()) == {0}
        return
    assert sum(got.values()) == idle
    for tenant, s in subs.items():
        exact = Fraction(idle * s, total)
        assert abs(got[tenant] - exact) < 1
        if s == 0:
            assert got[tenant] == 0


@given(idle=st.integers(0, 2000), subs=tenants)
def test_larger_subscription_never_gets_less(idle, subs):
    got = largest_remainder(idle, {t: Fraction(s) for t, s in subs.items()})
    for a, sa in subs.items():
        for b, sb in subs.items():
            if sa > sb:
                assert got[a] >= got[b]


def test_ties_go_to_larger_subscription_then_name():
    # 1 GPU over three equal remainders of 1/3: larger subscriptions tie on
    # remainder only when shares are equal, so use equal subscriptions: name decides.
    assert largest_remainder(1, {"b": Fraction(1), "a": Fraction(1), "c": Fraction(1)}) == {
        "a": 1,
        "b": 0,
        "c": 0,
    }
    # 2 GPUs over subscriptions 3 and 1 (exact 1.5 and 0.5: equal remainders): the larger subscription wins.
    assert largest_remainder(2, {"small": Fraction(1), "big": Fraction(3)}) == {
        "big": 2,
        "small": 0,
    }


def test_design_formula_example():
    # idle 25 over 40/20/10: exact 14.29, 7.14, 3.57 -> 14, 7, 4
    got = apportion_spot({GPU: Decimal(25)}, {"alpha": 40, "beta": 20, "gamma": 10})
    assert {t: r[GPU] for t, r in got.items()} == {"alpha": 14, "beta": 7, "gamma": 4}


def test_cpu_in_millicores_and_memory_in_mib_by_the_same_shares():
    idle = {GPU: Decimal(3), "cpu": Decimal("1.001"), "memory": Decimal(3 * 2**20 + 5)}
    got = apportion_spot(idle, {"a": 2, "b": 1})
    assert got["a"]["cpu"] + got["b"]["cpu"] == Decimal("1.001")
    assert got["a"]["cpu"] == Decimal("0.667") and got["b"]["cpu"] == Decimal("0.334")
    assert (
        got["a"]["memory"] == 2 * 2**20 and got["b"]["memory"] == 2**20
    )  # the 5 stray bytes stay unassigned
    assert got["a"][GPU] == 2 and got["b"][GPU] == 1


def test_no_subscription_means_nothing_for_anyone():
    got = apportion_spot({GPU: Decimal(10)}, {"a": 0, "b": 0})
    assert got == {"a": {GPU: 0, "cpu": 0, "memory": 0}, "b": {GPU: 0, "cpu": 0, "memory": 0}}
    assert share(0, 0) == 0 and share(3, 4) == Fraction(3, 4)


def test_bad_subscriptions_are_refused_naming_the_tenant():
    with pytest.raises(PlatformValidationError, match=r"subscriptions\.beta: -1 is negative"):
        apportion_spot({GPU: Decimal(10)}, {"alpha": 1, "beta": -1})
    with pytest.raises(PlatformValidationError, match=r"subscriptions\.beta: 'x' is not a number"):
        apportion_spot({GPU: Decimal(10)}, {"beta": "x"})
    with pytest.raises(PlatformValidationError, match="negative"):
        largest_remainder(-1, {"a": Fraction(1)})


def test_thousand_tenants_is_fast_and_exact():
    subs = {f"t{i:04d}": (i % 17) + 1 for i in range(1000)}
    got = apportion_spot(
        {GPU: Decimal(4096), "cpu": Decimal(100000), "memory": Decimal(2**40)}, subs
    )
    assert sum(r[GPU] for r in got.values()) == 4096
    assert sum(r["cpu"] for r in got.values()) == 100000


def reference_largest_remainder(total: int, weights: dict[str, Fraction]) -> dict[str, int]:
    """The rule as written, in exact fractions per tenant: what the integer arithmetic
    of ``largest_remainder`` must equal."""
    weight_sum = sum(weights.values(), Fraction(0))
    if weight_sum <= 0 or total == 0:
        return {tenant: 0 for tenant in weights}
    shares, remainders = {}, []
    for tenant, weight in weights.items():
        exact = Fraction(total) * weight / weight_sum
        shares[tenant] = exact.numerator // exact.denominator
        if weight > 0:
            remainders.append((exact - shares[tenant], weight, tenant))
    remainders.sort(key=lambda item: (-item[0], -item[1], item[2]))
    for _r, _w, tenant in remainders[: total - sum(shares.values())]:
        shares[tenant] += 1
    return shares


fractional_tenants = st.dictionaries(
    st.text("abcdef", min_size=1, max_size=3),
    st.fractions(min_value=0, max_value=64, max_denominator=12),
    max_size=12,
)


@given(total=st.integers(0, 5000), weights=fractional_tenants)
def test_integer_arithmetic_equals_the_rule_in_fractions(total, weights):
    assert largest_remainder(total, weights) == reference_largest_remainder(total, weights)
