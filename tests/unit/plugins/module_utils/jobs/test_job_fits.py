# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule job-fits, the field it names, and rule spot-price's bounds."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    SPOT_PRICE_DECIMALS,
    SPOT_PRICE_LIMIT,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.builders import (
    price_text,
    spot_price_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.demand import job_fits_errors
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.submit import demand_field
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.admission import (
    SPOT_PRICE_PATTERN,
)


def test_a_job_within_both_limits_fits():
    assert job_fits_errors(32, "replicas", "q", Decimal(32), Decimal(64)) == []


def test_none_means_not_compared():
    assert job_fits_errors(10**9, "replicas", "q", None, None) == []


def test_a_job_above_the_queue_names_the_demand_and_the_capability():
    (error,) = job_fits_errors(24, "replicas", "tenant-a-payg", Decimal("16.000"), Decimal(64))
    assert error.field == "replicas"
    assert error.message == (
        "the job asks for 24 GPUs but queue tenant-a-payg has a capability of 16 GPUs; it would "
        "stay Pending forever. Ask for at most 16"
    )


def test_a_job_above_both_gets_both_errors():
    errors = job_fits_errors(8_000_000, "replicas", "q", Decimal(40), Decimal(32))
    assert [e.field for e in errors] == ["replicas", "replicas"]
    assert "queue q has a capability of 40" in errors[0].message
    assert "the GPU pool" in errors[1].message and "has 32" in errors[1].message


@given(
    st.integers(min_value=0, max_value=10**7),
    st.one_of(st.none(), st.integers(min_value=0, max_value=10**6)),
    st.one_of(st.none(), st.integers(min_value=0, max_value=10**6)),
)
def test_refused_exactly_when_above_a_limit(gpus, queue, pool):
    errors = job_fits_errors(
        gpus,
        "gpus_per_pod",
        "q",
        None if queue is None else Decimal(queue),
        None if pool is None else Decimal(pool),
    )
    expected = (queue is not None and gpus > queue) + (pool is not None and gpus > pool)
    assert len(errors) == expected


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"manifest": {"spec": {}}, "replicas": 4}, "manifest.spec.tasks"),
        ({"manifest": None, "replicas": 4}, "replicas"),
        ({"manifest": None, "replicas": 1}, "gpus_per_pod"),
        ({"manifest": None, "replicas": None}, "gpus_per_pod"),
    ],
)
def test_the_field_a_demand_is_refused_under(params, field):
    assert demand_field(params) == field


@pytest.mark.parametrize(
    "price", ["1e400", "1E+6", "1000000", "nan", "NaN", "inf", "-inf", "-1", "0", "0.0000001"]
)
def test_prices_out_of_bounds_are_refused(price):
    (error,) = spot_price_errors(price)
    assert error.field == "spot_price" and repr(price) in error.message


@given(
    st.decimals(
        min_value=Decimal("0.000001"),
        max_value=Decimal(SPOT_PRICE_LIMIT) - Decimal("0.000001"),
        places=SPOT_PRICE_DECIMALS,
        allow_nan=False,
        allow_infinity=False,
    )
)
def test_every_accepted_price_matches_the_admission_pattern(price):
    assert spot_price_errors(str(price)) == []
    assert re.match(SPOT_PRICE_PATTERN, price_text(str(price)))
