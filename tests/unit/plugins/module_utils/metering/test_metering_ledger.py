# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules sample-step, tenant-usage, spot-job-usage, spot-bid, subscription-size,
metering-known-tenant, the amounts and ledger-rounding; and the ledger's invariants."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.metering import (
    ledger,
    period,
    prices,
    tenants,
    usage,
)

DAY = period.parse_period("2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", 60)
T0 = DAY.start.timestamp()
PRICES = prices.parse_prices(
    {
        "subscription": {"gpu_hour": "2.00", "overage_gpu_hour": "3.00"},
        "payg": {"gpu_hour": "3.50"},
        "spot": {},
    }
)


def series(values, **labels):
    return {"metric": labels, "values": [[T0 + 60 * k, v] for k, v in values]}


def flat(gpus, first, last):
    """``gpus`` from the sample ``first`` to ``last`` (step numbers, inclusive)."""
    return [(k, str(gpus)) for k in range(first, last + 1)]


def test_a_sample_stands_for_the_step_that_ends_at_it():
    # Samples 0..1440: the one at the start stands for the minute before the period.
    matrix = [series(flat(2, 0, 1440), tenant="alpha", billing_type="payg")]
    got, warnings = usage.tenant_usage(matrix, DAY)
    assert got == {("alpha", "payg"): Decimal(2 * 1440 * 60)} and warnings == []
    assert usage.hours(got[("alpha", "payg")]) == 48


def test_samples_outside_the_period_and_bad_values_do_not_count():
    values = [(-3, "9"), (1, "1"), (2, "NaN"), (3, "+Inf"), (4, "x"), (1441, "9")]
    got, warnings = usage.series_gpu_seconds(series(values)["values"], DAY, "s")
    assert got == 60 and len(warnings) == 3 and "counted as 0" in warnings[0]


def test_series_without_tenant_or_with_unknown_billing_type_are_left_out():
    matrix = [
        series(flat(1, 1, 10), billing_type="payg"),
        series(flat(1, 1, 10), tenant="alpha", billing_type="reserved"),
    ]
    got, warnings = usage.tenant_usage(matrix, DAY)
    assert got == {} and len(warnings) == 2


def test_spot_lines_per_job_and_bid_missing_bid_is_zero():
    labels = {"tenant": "alpha", "namespace": "tenant-alpha", "billing_type": "spot"}
    matrix = [
        series(flat(4, 1, 60), job_name="a", spot_price="0.5", **labels),
        series(flat(4, 61, 120), job_name="a", spot_price="0.7", **labels),
        series(flat(1, 1, 60), job_name="free", **labels),
        series(flat(1, 1, 60), job_name="typo", spot_price="O.2", **labels),
        series(flat(8, 1, 60), job_name="paid", **{**labels, "billing_type": "payg"}),
    ]
    got, warnings = usage.spot_job_usage(matrix, DAY)
    assert sorted((k.job, k.bid, v) for k, v in got.items()) == [
        ("a", Decimal("0.5"), 4 * 3600),
        ("a", Decimal("0.7"), 4 * 3600),
        ("free", Decimal(0), 3600),
        ("typo", Decimal(0), 3600),
    ]
    assert warnings == [
        'platform:job_gpus:allocated{billing_type="spot",job_name="typo",'
        'namespace="tenant-alpha",spot_price="O.2",tenant="alpha"}: spot_price \'O.2\' '
        "is not a price; counted as 0"
    ]


def queue(tenant, gpus, name=None):
    return {
        "metadata": {
            "name": name or f"tenant-{tenant}-subscription",
            "labels": {"platform.io/tenant": tenant},
        },
        "spec": {"capability": {"nvidia.com/gpu": gpus}},
    }


def test_subscription_sizes_from_queue_capability():
    sizes, warnings = tenants.subscription_sizes(
        [queue("alpha", 16), queue("beta", "8"), queue("gamma", "lots"), {"metadata": {}}]
    )
    assert sizes == {"alpha": 16, "beta": 8, "gamma": 0}
    assert warnings == [
        "Queue tenant-gamma-subscription: spec.capability.nvidia.com/gpu 'lots' is not a quantity; 0"
    ]


def test_unknown_tenants_are_named_with_the_known_ones():
    assert tenants.unknown_tenant_errors(None, {"alpha"}) == []
    assert tenants.unknown_tenant_errors(["alpha"], {"alpha"}) == []
    (error,) = tenants.unknown_tenant_errors(["gamma", "alpha", "delta"], {"alpha", "beta"})
    assert error.field == "tenants"
    assert str(error).startswith("tenants: delta, gamma: not a tenant")
    assert "(known tenants: alpha, beta) (rule metering-known-tenant)" in str(error)


def test_subscription_included_overage_and_amount():
    # 16 GPUs for a day: 384 included; 400 used: 16 over.
    row = ledger.subscription_row("alpha", Decimal(400), Decimal(16), PRICES, DAY)
    assert row["included_gpu_hours"] == "384.000000" and row["overage_gpu_hours"] == "16.000000"
    assert row["amount"] == "816.00"  # 384 x 2.00 + 16 x 3.00
    idle = ledger.subscription_row("alpha", Decimal(0), Decimal(16), PRICES, DAY)
    assert idle["overage_gpu_hours"] == "0.000000" and idle["amount"] == "768.00"


def test_amounts_round_half_up_to_cents_only_when_written():
    # 1 GPU-minute of payg at 3.50: 0.058333... -> 0.06; hours to 6 places
    row = ledger.payg_row("alpha", Decimal(1) / 60, PRICES)
    assert row == {
        "tenant": "alpha",
        "billing_type": "payg",
        "gpu_hours": "0.016667",
        "price": "3.50",
        "amount": "0.06",
    }
    assert ledger.cents(Decimal("0.005")) == "0.01" and ledger.cents(Decimal("0.0049")) == "0.00"


def sample_ledger():
    labels = {"tenant": "alpha", "namespace": "tenant-alpha", "billing_type": "spot"}
    tenant_matrix = [
        series(flat(16, 1, 1440), tenant="alpha", billing_type="subscription"),
        series(flat(2, 1, 300), tenant="alpha", billing_type="payg"),
        series(flat(1, 1, 120), tenant="alpha", billing_type="spot"),
    ]
    job_matrix = [series(flat(1, 1, 120), job_name="cheap", spot_price="0.5", **labels)]
    used = usage.tenant_usage(tenant_matrix, DAY)[0]
    jobs = usage.spot_job_usage(job_matrix, DAY)[0]
    return ledger.build_ledger(
        DAY, PRICES, ["beta", "alpha"], {"alpha": Decimal(16)}, used, jobs, currency="EUR"
    )


def test_the_ledger_shape():
    got = sample_ledger()
    assert list(got) == ["period", "prices", "currency", "rows", "totals"]
    assert [(r["tenant"], r["billing_type"], r["amount"]) for r in got["rows"]] == [
        ("alpha", "subscription", "768.00"),
        ("alpha", "payg", "35.00"),
        ("alpha", "spot", "1.00"),
        ("beta", "subscription", "0.00"),
        ("beta", "payg", "0.00"),
        ("beta", "spot", "0.00"),
    ]
    assert got["rows"][2]["jobs"] == [
        {
            "job": "cheap",
            "namespace": "tenant-alpha",
            "gpu_hours": "2.000000",
            "bid": "0.5",
            "amount": "1.00",
        }
    ]
    assert got["totals"] == {
        "gpu_hours": "396.000000",
        "amount": "804.00",
        "by_billing_type": {
            "subscription": {"gpu_hours": "384.000000", "amount": "768.00"},
            "payg": {"gpu_hours": "10.000000", "amount": "35.00"},
            "spot": {"gpu_hours": "2.000000", "amount": "1.00"},
        },
        "by_tenant": {"alpha": "804.00", "beta": "0.00"},
    }
    assert "currency" not in ledger.build_ledger(DAY, PRICES, [], {}, {}, {})


def test_the_csv_has_a_usage_line_per_row_and_a_line_per_spot_job():
    text = ledger.ledger_csv(sample_ledger())
    lines = list(csv.DictReader(io.StringIO(text)))
    assert text.splitlines()[0] == ",".join(ledger.CSV_COLUMNS)
    assert [(r["kind"], r["tenant"], r["billing_type"], r["job"]) for r in lines] == [
        ("usage", "alpha", "subscription", ""),
        ("usage", "alpha", "payg", ""),
        ("usage", "alpha", "spot", ""),
        ("spot_job", "alpha", "spot", "cheap"),
        ("usage", "beta", "subscription", ""),
        ("usage", "beta", "payg", ""),
        ("usage", "beta", "spot", ""),
    ]
    assert lines[3]["price"] == "0.5" and lines[3]["currency"] == "EUR"
    assert lines[0]["included_gpu_hours"] == "384.000000"
    usage_sum = sum(Decimal(r["amount"]) for r in lines if r["kind"] == "usage")
    assert usage_sum == Decimal("804.00")


# --- invariants -------------------------------------------------------------------

gpus = st.integers(min_value=0, max_value=64).map(str) | st.decimals(
    min_value=0, max_value=64, places=3, allow_nan=False, allow_infinity=False
).map(str)


@given(
    values=st.lists(gpus, min_size=2, max_size=60),
    step=st.sampled_from([1, 5, 60, 300]),
    split=st.data(),
)
def test_hours_are_additive_over_split_periods(values, step, split):
    whole = period.Period(DAY.start, DAY.start + timedelta(seconds=step * len(values)), step)
    stamps = [[whole.start.timestamp() + step * (k + 1), v] for k, v in enumerate(values)]
    matrix = [{"metric": {"tenant": "t", "billing_type": "payg"}, "values": stamps}]
    cut = split.draw(st.integers(min_value=1, max_value=len(values) - 1))
    middle = whole.start + timedelta(seconds=step * cut)
    parts = [
        period.Period(whole.start, middle, step),
        period.Period(middle, whole.end, step),
    ]
    total = usage.tenant_usage(matrix, whole)[0].get(("t", "payg"), Decimal(0))
    pieces = [usage.tenant_usage(matrix, p)[0].get(("t", "payg"), Decimal(0)) for p in parts]
    assert sum(pieces) == total
    # and the windows the service reads in are such a split
    windows = list(period.windows(whole, max_points=cut))
    assert (
        sum(usage.tenant_usage(matrix, w)[0].get(("t", "payg"), Decimal(0)) for w in windows)
        == total
    )


money = st.decimals(min_value=0, max_value=100, places=4, allow_nan=False, allow_infinity=False)
hours_used = st.decimals(
    min_value=0, max_value=5000, places=6, allow_nan=False, allow_infinity=False
)


@given(
    sub=money,
    over=money,
    payg=money,
    size=st.integers(min_value=0, max_value=64),
    used=st.dictionaries(
        st.tuples(
            st.sampled_from(["a", "b", "c"]), st.sampled_from(["subscription", "payg", "spot"])
        ),
        hours_used,
    ),
    spot_jobs=st.dictionaries(
        st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["j1", "j2"]), money),
        hours_used,
        max_size=6,
    ),
)
def test_totals_are_the_sums_of_the_rows_and_no_overage_is_negative(
    sub, over, payg, size, used, spot_jobs
):
    table = prices.parse_prices(
        {
            "subscription": {"gpu_hour": sub, "overage_gpu_hour": over},
            "payg": {"gpu_hour": payg},
            "spot": {},
        }
    )
    seconds = {k: v * 3600 for k, v in used.items()}
    jobs = {
        usage.SpotJobKey(t, f"tenant-{t}", j, bid): h * 3600 for (t, j, bid), h in spot_jobs.items()
    }
    got = ledger.build_ledger(DAY, table, ["a", "b", "c"], {"a": Decimal(size)}, seconds, jobs)
    rows = got["rows"]
    assert Decimal(got["totals"]["amount"]) == sum(Decimal(r["amount"]) for r in rows)
    assert Decimal(got["totals"]["gpu_hours"]) == sum(Decimal(r["gpu_hours"]) for r in rows)
    assert sum(Decimal(a) for a in got["totals"]["by_tenant"].values()) == Decimal(
        got["totals"]["amount"]
    )
    for row in rows:
        assert Decimal(row["amount"]) >= 0
        if row["billing_type"] == "subscription":
            assert Decimal(row["overage_gpu_hours"]) >= 0
        if row["billing_type"] == "spot":
            assert Decimal(row["amount"]) == sum(Decimal(j["amount"]) for j in row["jobs"])
