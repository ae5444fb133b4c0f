# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules period-time, period-order, period-max, period-step, period-default-step,
period-windows, price-table, price and usage-report-input."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.metering import inputs, period
from ansible_collections.gpucloud.platform.plugins.module_utils.metering import prices as price

DAY = ("2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z")
TABLE = {
    "subscription": {"gpu_hour": "2.00", "overage_gpu_hour": "3.00"},
    "payg": {"gpu_hour": "3.50"},
    "spot": {},
    "cloud": {"gpu_hour": "5.00"},
}


def messages(errors):
    return [str(e) for e in errors]


def test_a_day_in_minutes():
    got = period.parse_period(*DAY, 60)
    assert got.start == datetime(2026, 1, 1, tzinfo=UTC) and got.steps == 1440
    assert got.hours == Decimal(24) and got.seconds == 86400


def test_the_step_is_not_part_of_the_written_period():
    """Two steps bill the same: the ledger's period has no step."""
    assert period.parse_period(*DAY, 60).view() == {"start": DAY[0], "end": DAY[1]}
    assert period.parse_period(*DAY, 5).view() == period.parse_period(*DAY, 3600).view()


def test_a_time_without_zone_is_utc_and_an_offset_is_converted():
    got = period.parse_period("2026-01-01T00:00:00", "2026-01-01T02:00:00+01:00", 60)
    assert got.view()["end"] == "2026-01-01T01:00:00Z"


@pytest.mark.parametrize(
    ("end", "wanted"),
    [
        (DAY[1], 3600),  # a day: hours
        ("2026-01-01T00:30:00Z", 60),  # half an hour: minutes
        ("2026-01-01T01:00:30Z", 1),  # an hour and a half-minute: seconds
        ("2026-01-01T00:01:30Z", 1),
        ("2026-01-01T00:00:01Z", 1),  # the shortest period
        ("2026-01-01T00:01:00Z", 60),  # a minute: no hour fits in it
    ],
)
def test_without_a_step_the_largest_of_hour_minute_second_that_divides(end, wanted):
    """Rule period-default-step."""
    got = period.parse_period(DAY[0], end)
    assert got.step == wanted and got.steps * got.step == got.seconds


@given(seconds=st.integers(min_value=1, max_value=period.PERIOD_MAX_DAYS * 86400))
def test_the_default_step_always_divides_the_period(seconds):
    step = period.default_step(seconds)
    assert step in period.DEFAULT_STEPS and seconds % step == 0
    assert period.step_errors(step, seconds) == []
    # no larger one would do
    assert all(seconds % s or s > seconds for s in period.DEFAULT_STEPS if s > step)


def test_a_year_is_billed_in_one_report_a_longer_period_is_not():
    """Rule period-max: 366 days (a leap year) is the most."""
    leap = period.parse_period("2028-01-01T00:00:00Z", "2029-01-01T00:00:00Z")
    assert leap.seconds == 366 * 86400 and leap.step == 3600
    (error,) = messages(period.period_errors("2028-01-01T00:00:00Z", "2029-01-01T00:00:01Z"))
    assert error.startswith("end: the period is 366.0 days; at most 366 days")
    assert error.endswith("(rule period-max)")


@pytest.mark.parametrize(
    ("start", "end", "step", "wanted"),
    [
        ("yesterday", DAY[1], 60, ["start: 'yesterday' is not an RFC 3339 date-time"]),
        (DAY[0], "2026-01-02", 60, ["end: '2026-01-02' is not an RFC 3339 date-time"]),
        (DAY[1], DAY[0], 60, ["end: 2026-01-01T00:00:00Z is not after start (2026-01-02"]),
        (DAY[0], DAY[0], 60, ["end: 2026-01-01T00:00:00Z is not after start"]),
        (DAY[0], DAY[0], None, ["end: 2026-01-01T00:00:00Z is not after start"]),
        (DAY[0], "2026-01-01T00:00:00.5Z", None, ["end: the period is shorter than a second"]),
        (DAY[0], "2027-01-03T00:00:00Z", None, ["end: the period is 367.0 days"]),
        # a step is not checked against a period that is too long to bill
        (DAY[0], "2027-01-03T00:00:00Z", 7, ["end: the period is 367.0 days"]),
        (*DAY, 0, ["step: 0 is not a positive whole number of seconds"]),
        (*DAY, -5, ["step: -5 is not a positive whole number of seconds"]),
        (*DAY, True, ["step: True is not a positive"]),
        (*DAY, 60.0, ["step: 60.0 is not a positive whole number of seconds"]),
        (DAY[0], "2026-01-01T00:00:30Z", 60, ["step: 60 is larger than the period (30 s)"]),
        (*DAY, 7, ["step: 7 does not divide the period (86400 s): its last 6 s"]),
        # everything at once, and no step check against a period that is not one
        ("x", "y", 0, ["start: 'x'", "end: 'y'", "step: 0"]),
    ],
)
def test_period_refusals_name_field_value_and_rule(start, end, step, wanted):
    errors = messages(period.period_errors(start, end, step))
    assert len(errors) == len(wanted), errors
    for got, prefix in zip(errors, wanted, strict=True):
        assert got.startswith(prefix) and "(rule period-" in got
    with pytest.raises(PlatformValidationError):
        period.parse_period(start, end, step)


def test_windows_cover_the_period_in_at_most_max_points_steps():
    whole = period.parse_period(*DAY, 60)
    parts = list(period.windows(whole, max_points=500))
    assert [p.steps for p in parts] == [500, 500, 440]
    assert parts[0].start == whole.start and parts[-1].end == whole.end
    assert all(a.end == b.start for a, b in itertools.pairwise(parts))
    assert all(p.step == 60 for p in parts)
    assert list(period.windows(whole)) == [whole]


def test_a_year_in_seconds_needs_windows_prometheus_accepts():
    year = period.parse_period("2028-01-01T00:00:00Z", "2029-01-01T00:00:00Z", 1)
    parts = list(period.windows(year))
    assert max(p.steps for p in parts) == period.PROMETHEUS_MAX_POINTS
    assert sum(p.steps for p in parts) == 366 * 86400


@given(
    steps=st.integers(min_value=1, max_value=500),
    step=st.sampled_from([1, 15, 60, 3600]),
    max_points=st.integers(min_value=1, max_value=60),
)
def test_windows_tile_the_period(steps, step, max_points):
    """Rule period-windows: consecutive, each a whole number of steps, together the period."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    whole = period.Period(start, start + timedelta(seconds=steps * step), step)
    parts = list(period.windows(whole, max_points))
    assert parts[0].start == whole.start and parts[-1].end == whole.end
    assert all(a.end == b.start for a, b in itertools.pairwise(parts))
    assert all(1 <= p.steps <= max_points and p.seconds % step == 0 for p in parts)
    assert sum(p.steps for p in parts) == steps


def test_the_price_table_reads_exact_decimals():
    table = price.parse_prices({**TABLE, "payg": {"gpu_hour": 0.1}, "spot": None})
    assert table.payg_gpu_hour == Decimal("0.1")  # not the float's binary neighbour
    assert table.subscription_gpu_hour == Decimal("2.00")
    assert table.cloud_gpu_hour == Decimal("5.00")
    assert table.view() == {
        "subscription": {"gpu_hour": "2.00", "overage_gpu_hour": "3.00"},
        "payg": {"gpu_hour": "0.1"},
        "spot": {},
        "cloud": {"gpu_hour": "5.00"},
    }


@pytest.mark.parametrize(
    ("table", "wanted"),
    [
        ({k: v for k, v in TABLE.items() if k != "payg"}, ["prices.payg: is missing"]),
        ({k: v for k, v in TABLE.items() if k != "cloud"}, ["prices.cloud: is missing"]),
        (
            {},
            [
                "prices.subscription: is missing",
                "prices.payg: is missing",
                "prices.spot:",
                "prices.cloud: is missing",
            ],
        ),
        ("cheap", ["prices: 'cheap' is not a mapping"]),
        ({**TABLE, "payg": {"gpu_hour": "-1"}}, ["prices.payg.gpu_hour: '-1' is negative"]),
        ({**TABLE, "payg": {"gpu_hour": "ten"}}, ["prices.payg.gpu_hour: 'ten' is not a price"]),
        ({**TABLE, "payg": {"gpu_hour": "NaN"}}, ["prices.payg.gpu_hour: 'NaN' is not a price"]),
        ({**TABLE, "payg": {"gpu_hour": True}}, ["prices.payg.gpu_hour: True is not a price"]),
        (
            {**TABLE, "payg": {"gpu_hours": 1}},
            ["prices.payg.gpu_hour: is not given", "prices.payg.gpu_hours: is not a price key"],
        ),
        ({**TABLE, "cloud": {}}, ["prices.cloud.gpu_hour: is not given; cloud needs gpu_hour"]),
        ({**TABLE, "cloud": None}, ["prices.cloud: None is not a mapping"]),
        ({**TABLE, "cloud": {"gpu_hour": "-0.01"}}, ["prices.cloud.gpu_hour: '-0.01' is negative"]),
        ({**TABLE, "spot": {"gpu_hour": 1}}, ["prices.spot.gpu_hour: is not a price key of spot"]),
        ({**TABLE, "spot": []}, ["prices.spot: [] is not a mapping"]),
        ({**TABLE, "reserved": {}}, ["prices.reserved: is not a line of the ledger"]),
    ],
)
def test_price_table_refusals_name_the_key(table, wanted):
    errors = messages(price.price_table_errors(table))
    assert len(errors) == len(wanted), errors
    for got, prefix in zip(errors, wanted, strict=True):
        assert got.startswith(prefix) and "(rule price" in got
    with pytest.raises(PlatformValidationError):
        price.parse_prices(table)


def test_a_free_cloud_is_a_price():
    assert price.parse_prices({**TABLE, "cloud": {"gpu_hour": 0}}).cloud_gpu_hour == 0


def params(**overrides):
    base = {
        "prometheus_url": "http://prometheus:9090/",
        "start": DAY[0],
        "end": DAY[1],
        "step": 60,
        "tenants": None,
        "prices": TABLE,
        "currency": "",
        "timeout": 30,
    }
    return {**base, **overrides}


def test_a_report_request():
    got = inputs.parse_report(params(tenants=["alpha"], currency="EUR"))
    assert got.prometheus_url == "http://prometheus:9090" and got.tenants == ("alpha",)
    assert got.period.steps == 1440 and got.currency == "EUR"
    assert got.prices.cloud_gpu_hour == Decimal("5.00")
    assert inputs.parse_report(params(tenants=[])).tenants is None


def test_a_report_request_without_a_step_takes_the_default_step():
    without = {k: v for k, v in params().items() if k != "step"}
    assert inputs.parse_report(without).period.step == 3600
    assert inputs.parse_report(params(step=None)).period.step == 3600


def test_every_input_error_at_once():
    bad = params(
        prometheus_url="prometheus:9090",
        end="2027-06-01T00:00:00Z",
        prices={},
        tenants=["Alpha"],
        timeout=0,
    )
    fields = [e.field for e in inputs.report_input_errors(bad)]
    assert fields == [
        "prometheus_url",
        "end",
        "prices.subscription",
        "prices.payg",
        "prices.spot",
        "prices.cloud",
        "tenants[0]",
        "timeout",
    ]
