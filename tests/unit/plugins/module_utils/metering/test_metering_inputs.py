# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules period-time, period-order, period-step, period-windows, price-table, price and
usage-report-input."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from decimal import Decimal

import pytest

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
}


def messages(errors):
    return [str(e) for e in errors]


def test_a_day_in_minutes():
    got = period.parse_period(*DAY, 60)
    assert got.start == datetime(2026, 1, 1, tzinfo=UTC) and got.steps == 1440
    assert got.hours == Decimal(24)
    assert got.view() == {"start": DAY[0], "end": DAY[1], "step": 60}


def test_a_time_without_zone_is_utc_and_an_offset_is_converted():
    got = period.parse_period("2026-01-01T00:00:00", "2026-01-01T02:00:00+01:00", 60)
    assert got.view()["end"] == "2026-01-01T01:00:00Z"


@pytest.mark.parametrize(
    ("start", "end", "step", "wanted"),
    [
        ("yesterday", DAY[1], 60, ["start: 'yesterday' is not an RFC 3339 date-time"]),
        (DAY[0], "2026-01-02", 60, ["end: '2026-01-02' is not an RFC 3339 date-time"]),
        (DAY[1], DAY[0], 60, ["end: 2026-01-01T00:00:00Z is not after start (2026-01-02"]),
        (DAY[0], DAY[0], 60, ["end: 2026-01-01T00:00:00Z is not after start"]),
        (*DAY, 0, ["step: 0 is not a positive whole number of seconds"]),
        (*DAY, -5, ["step: -5 is not a positive whole number of seconds"]),
        (*DAY, True, ["step: True is not a positive"]),
        (DAY[0], "2026-01-01T00:00:30Z", 60, ["step: 60 is larger than the period (30 s)"]),
        (*DAY, 7, ["step: 7 does not divide the period (86400 s): its last 6 s"]),
        # everything at once, and no step check against a period that is not one
        ("x", "y", 0, ["start: 'x'", "end: 'y'", "step: 0"]),
    ],
)
def test_period_refusals_name_field_value_and_rule(start, end, step, wanted):
    errors = messages(period.period_errors(start, end, step))
    assert len(errors) == len(wanted)
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
    assert list(period.windows(whole)) == [whole]


def test_the_price_table_reads_exact_decimals():
    table = price.parse_prices({**TABLE, "payg": {"gpu_hour": 0.1}, "spot": None})
    assert table.payg_gpu_hour == Decimal("0.1")  # not the float's binary neighbour
    assert table.subscription_gpu_hour == Decimal("2.00")
    assert table.view()["spot"] == {}


@pytest.mark.parametrize(
    ("table", "wanted"),
    [
        ({k: v for k, v in TABLE.items() if k != "payg"}, ["prices.payg: is missing"]),
        ({}, ["prices.subscription: is missing", "prices.payg: is missing", "prices.spot:"]),
        ("cheap", ["prices: 'cheap' is not a mapping"]),
        ({**TABLE, "payg": {"gpu_hour": "-1"}}, ["prices.payg.gpu_hour: '-1' is negative"]),
        ({**TABLE, "payg": {"gpu_hour": "ten"}}, ["prices.payg.gpu_hour: 'ten' is not a price"]),
        ({**TABLE, "payg": {"gpu_hour": "NaN"}}, ["prices.payg.gpu_hour: 'NaN' is not a price"]),
        ({**TABLE, "payg": {"gpu_hour": True}}, ["prices.payg.gpu_hour: True is not a price"]),
        (
            {**TABLE, "payg": {"gpu_hours": 1}},
            ["prices.payg.gpu_hour: is not given", "prices.payg.gpu_hours: is not a price key"],
        ),
        ({**TABLE, "spot": {"gpu_hour": 1}}, ["prices.spot.gpu_hour: is not a price key of spot"]),
        ({**TABLE, "spot": []}, ["prices.spot: [] is not a mapping"]),
        ({**TABLE, "reserved": {}}, ["prices.reserved: is not a billing type"]),
    ],
)
def test_price_table_refusals_name_the_key(table, wanted):
    errors = messages(price.price_table_errors(table))
    assert len(errors) == len(wanted), errors
    for got, prefix in zip(errors, wanted, strict=True):
        assert got.startswith(prefix) and "(rule price" in got
    with pytest.raises(PlatformValidationError):
        price.parse_prices(table)


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
    assert inputs.parse_report(params(tenants=[])).tenants is None


def test_every_input_error_at_once():
    bad = params(
        prometheus_url="prometheus:9090",
        step=0,
        prices={},
        tenants=["Alpha"],
        timeout=0,
    )
    fields = [e.field for e in inputs.report_input_errors(bad)]
    assert fields == [
        "prometheus_url",
        "step",
        "prices.subscription",
        "prices.payg",
        "prices.spot",
        "tenants[0]",
        "timeout",
    ]
