# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The field a job's GPU demand is refused under, and rule spot-price's bounds."""

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
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.spot_price import (
    price_text,
    spot_price_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.submit import demand_field
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.admission import (
    SPOT_PRICE_PATTERN,
)


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
