# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules exact-integral, ledger-line, tenant-usage, spot-job-usage, spot-bid,
subscription-over-time and unclaimed-gpus: GPU-seconds from ``sum_over_time`` points."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common import names
from ansible_collections.gpucloud.platform.plugins.module_utils.metering import period, usage
from ansible_collections.gpucloud.platform.plugins.module_utils.observability import metering_rules

DAY = period.parse_period("2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", 60)
T0 = DAY.start.timestamp()
# The metering group evaluated every 30 s: each minute's point sums 2 samples.
RES = Decimal(30)


def series(points, **labels):
    """``points``: (step number, value) pairs; step k's point is at T0 + 60 k."""
    return {"metric": labels, "values": [[T0 + 60 * k, v] for k, v in points]}


def flat(value, first, last):
    """``value`` at every point from step ``first`` to ``last`` (inclusive)."""
    return [(k, str(value)) for k in range(first, last + 1)]


def test_a_point_is_a_sum_of_samples_each_standing_for_the_resolution():
    # 2 GPUs all day, sampled every 30 s: each minute's point is 2 samples x 2 GPUs.
    matrix = [series(flat(4, 1, 1440), tenant="alpha", billing_type="payg", location="idc")]
    got, warnings = usage.tenant_usage(matrix, DAY, RES)
    assert got == {("alpha", "payg"): Decimal(2 * 86400)} and warnings == []
    assert usage.hours(got[("alpha", "payg")]) == 48


def test_the_resolution_scales_the_seconds_not_the_step():
    values = series(flat(3, 1, 10))["values"]
    assert usage.series_gpu_seconds(values, DAY, Decimal(5), "s") == (Decimal(150), [])
    assert usage.series_gpu_seconds(values, DAY, Decimal("0.5"), "s") == (Decimal(15), [])
    hour = period.Period(DAY.start, DAY.start + timedelta(hours=1), 3600)
    assert usage.series_gpu_seconds(values, hour, Decimal(5), "s") == (Decimal(150), [])


def test_points_outside_start_end_and_bad_values_do_not_count():
    """The point at the start sums the step before the period; the one at the end is in."""
    values = [
        (-3, "9"),
        (0, "7"),
        (1, "1"),
        (2, "NaN"),
        (3, "+Inf"),
        (4, "x"),
        (1440, "2"),
        (1441, "9"),
    ]
    total, warnings = usage.series_sum(series(values)["values"], DAY, "s")
    assert total == 3
    assert warnings == [
        f"s: sample 'NaN' at {T0 + 120} is not a number; counted as 0",
        f"s: sample '+Inf' at {T0 + 180} is not a number; counted as 0",
        f"s: sample 'x' at {T0 + 240} is not a number; counted as 0",
    ]


@pytest.mark.parametrize(
    ("billing_type", "location", "line"),
    [
        ("subscription", "idc", "subscription"),
        ("payg", "idc", "payg"),
        ("spot", "idc", "spot"),
        ("payg", "", "payg"),  # no location: an IDC node
        ("subscription", "cloud", "cloud"),
        ("payg", "cloud", "cloud"),
        ("spot", "cloud", "cloud"),
    ],
)
def test_a_cloud_gpu_second_is_the_cloud_line_whatever_its_queue(billing_type, location, line):
    """Rule ledger-line."""
    assert usage.line_of(billing_type, location) == line


def test_the_cloud_line_is_the_node_location_the_rules_write():
    assert (
        usage.LINE_CLOUD == metering_rules.CLOUD_LOCATION
        and metering_rules.CLOUD_LOCATION in names.NODE_LOCATIONS
    )
    assert (*names.BILLING_TYPES, "cloud") == usage.LINES


def test_tenant_usage_per_tenant_and_line():
    matrix = [
        series(flat(2, 1, 60), tenant="alpha", billing_type="subscription", location="idc"),
        series(flat(2, 1, 60), tenant="alpha", billing_type="subscription", location="cloud"),
        series(flat(2, 1, 60), tenant="alpha", billing_type="payg", location="cloud"),
        series(flat(2, 1, 60), tenant="alpha", billing_type="payg"),
        series(flat(4, 1, 60), tenant="beta", billing_type="spot", location="idc"),
    ]
    got, warnings = usage.tenant_usage(matrix, DAY, RES)
    assert warnings == []
    assert got == {
        ("alpha", "subscription"): Decimal(3600),
        ("alpha", "cloud"): Decimal(7200),  # subscription and payg queues alike
        ("alpha", "payg"): Decimal(3600),
        ("beta", "spot"): Decimal(7200),
    }


def test_series_without_tenant_or_with_unknown_billing_type_are_left_out():
    matrix = [
        series(flat(1, 1, 10), billing_type="payg", location="idc"),
        series(flat(1, 1, 10), tenant="alpha", billing_type="reserved", location="idc"),
        # the cloud line takes known billing types only
        series(flat(1, 1, 10), tenant="alpha", location="cloud"),
    ]
    got, warnings = usage.tenant_usage(matrix, DAY, RES)
    assert got == {} and len(warnings) == 3
    assert warnings[1] == (
        'platform:tenant_billing_gpus:allocated{billing_type="reserved",location="idc",'
        'tenant="alpha"}: no tenant or no known billing_type; left out'
    )


@pytest.mark.parametrize(
    ("text", "bid", "warned"),
    [
        ("0.5", Decimal("0.5"), False),
        ("2", Decimal(2), False),
        ("0", Decimal(0), False),
        (None, Decimal(0), False),  # no bid: 0, as in a reclaim
        ("", Decimal(0), False),
        ("O.2", Decimal(0), True),
        ("-1", Decimal(0), True),
        ("NaN", Decimal(0), True),
    ],
)
def test_a_bid_that_is_not_a_price_counts_as_zero_and_is_warned_about(text, bid, warned):
    """Rule spot-bid."""
    got, warning = usage.read_bid(text)
    assert got == bid and (warning is not None) == warned


def test_spot_lines_per_job_and_bid_on_idc_nodes():
    labels = {"tenant": "alpha", "namespace": "tenant-alpha", "billing_type": "spot"}
    idc = {**labels, "location": "idc"}
    matrix = [
        series(flat(8, 1, 60), job_name="a", spot_price="0.5", **idc),
        series(flat(8, 61, 120), job_name="a", spot_price="0.7", **idc),
        series(flat(2, 1, 60), job_name="free", **idc),
        series(flat(2, 1, 60), job_name="typo", spot_price="O.2", **idc),
        # on a cloud node: the cloud line bills it, not the bid
        series(flat(2, 1, 60), job_name="far", spot_price="0.5", **{**labels, "location": "cloud"}),
        series(flat(16, 1, 60), job_name="paid", **{**idc, "billing_type": "payg"}),
    ]
    got, warnings = usage.spot_job_usage(matrix, DAY, RES)
    assert sorted((k.job, k.bid, v) for k, v in got.items()) == [
        ("a", Decimal("0.5"), 4 * 3600),
        ("a", Decimal("0.7"), 4 * 3600),
        ("free", Decimal(0), 3600),
        ("typo", Decimal(0), 3600),
    ]
    assert warnings == [
        'platform:job_gpus:allocated{billing_type="spot",job_name="typo",location="idc",'
        'namespace="tenant-alpha",spot_price="O.2",tenant="alpha"}: spot_price \'O.2\' '
        "is not a price; counted as 0"
    ]


def test_two_spellings_of_one_bid_are_one_line():
    """A line is a job and its bid as a number, not as the annotation spells it."""
    labels = {"tenant": "alpha", "namespace": "tenant-alpha", "billing_type": "spot"}
    matrix = [
        series(flat(2, 1, 60), job_name="a", spot_price="0.5", location="idc", **labels),
        series(flat(2, 1, 60), job_name="a", spot_price="0.50", location="idc", **labels),
    ]
    got, _warnings = usage.spot_job_usage(matrix, DAY, RES)
    assert list(got.values()) == [Decimal(7200)]


def test_subscription_seconds_per_size():
    """Rule subscription-over-time: points count samples (count_over_time)."""
    matrix = [
        # 16 GPUs for the first 12 hours, 24 for the last 12: resized at noon
        series(flat(2, 1, 720), tenant="alpha", gpus="16"),
        series(flat(2, 721, 1440), tenant="alpha", gpus="24"),
        # created at 18:00
        series(flat(2, 1081, 1440), tenant="beta", gpus="4"),
        series(flat(2, 1, 10), gpus="8"),  # no tenant: no one's
    ]
    got, warnings = usage.subscription_seconds(matrix, DAY, RES)
    assert warnings == []
    assert got == {
        "alpha": {Decimal(16): Decimal(43200), Decimal(24): Decimal(43200)},
        "beta": {Decimal(4): Decimal(21600)},
    }


def test_a_size_back_after_a_resize_adds_to_its_seconds():
    matrix = [
        series(flat(2, 1, 60), tenant="alpha", gpus="16"),
        series(flat(2, 121, 180), tenant="alpha", gpus="16.0"),
    ]
    got, _warnings = usage.subscription_seconds(matrix, DAY, RES)
    assert got == {"alpha": {Decimal(16): Decimal(7200)}}


@pytest.mark.parametrize("gpus", ["lots", "-8", "NaN"])
def test_a_size_that_is_not_a_number_of_gpus_counts_as_zero(gpus):
    got, warnings = usage.subscription_seconds(
        [series(flat(2, 1, 60), tenant="alpha", gpus=gpus)], DAY, RES
    )
    assert got == {"alpha": {Decimal(0): Decimal(3600)}}
    assert warnings == [
        f'platform:tenant_subscription_gpus:info{{gpus="{gpus}",tenant="alpha"}}: '
        "gpus is not a number of GPUs; counted as 0"
    ]


def test_a_queue_without_a_gpu_capability_is_a_subscription_of_zero():
    got, warnings = usage.subscription_seconds([series(flat(2, 1, 60), tenant="alpha")], DAY, RES)
    assert got == {"alpha": {Decimal(0): Decimal(3600)}} and warnings == []


def test_unclaimed_gpu_seconds_per_pod():
    """Rule unclaimed-gpus."""
    matrix = [
        series(flat(4, 1, 60), namespace="tenant-beta", pod="stolen-0"),
        series(flat(2, 1, 30), namespace="tenant-alpha", pod="loose-0"),
        series(flat(2, 31, 60), namespace="tenant-alpha", pod="loose-0"),  # the pod again
        series(flat(0, 1, 60), namespace="tenant-alpha", pod="idle-0"),  # held nothing
        series([(1, "x")], namespace="tenant-alpha", pod="odd-0"),
    ]
    got, warnings = usage.unclaimed_usage(matrix, DAY, RES)
    assert got == {
        ("tenant-beta", "stolen-0"): Decimal(7200),
        ("tenant-alpha", "loose-0"): Decimal(3600),
    }
    assert len(warnings) == 1 and "sample 'x'" in warnings[0]


def test_the_tenants_a_matrix_names():
    matrix = [series([], tenant="alpha"), series([], tenant=""), series([]), series([], tenant="b")]
    assert usage.matrix_tenants(matrix) == {"alpha", "b"}


# --- invariants -------------------------------------------------------------------

points = st.lists(st.integers(min_value=0, max_value=128).map(str), min_size=2, max_size=60)


@given(values=points, step=st.sampled_from([1, 5, 60, 300]), split=st.data())
def test_gpu_seconds_are_additive_over_split_periods(values, step, split):
    whole = period.Period(DAY.start, DAY.start + timedelta(seconds=step * len(values)), step)
    stamps = [[whole.start.timestamp() + step * (k + 1), v] for k, v in enumerate(values)]
    matrix = [{"metric": {"tenant": "t", "billing_type": "payg"}, "values": stamps}]
    cut = split.draw(st.integers(min_value=1, max_value=len(values) - 1))
    middle = whole.start + timedelta(seconds=step * cut)
    parts = [period.Period(whole.start, middle, step), period.Period(middle, whole.end, step)]

    def used(p):
        return usage.tenant_usage(matrix, p, RES)[0].get(("t", "payg"), Decimal(0))

    total = used(whole)
    assert total == sum(Decimal(v) for v in values) * RES
    assert sum(used(p) for p in parts) == total
    # and the windows the service reads in are such a split
    assert sum(used(w) for w in period.windows(whole, max_points=cut)) == total
