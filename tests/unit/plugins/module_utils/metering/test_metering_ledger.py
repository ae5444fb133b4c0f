# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules subscription-included, subscription-overage, subscription-amount, payg-amount,
spot-amount, cloud-amount, reconciliation, ledger-rounding and metering-known-tenant; and
the ledger's invariants."""

from __future__ import annotations

import csv
import io
import math
from decimal import Decimal
from fractions import Fraction

import pytest
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
RES = Decimal(30)
TABLE = {
    "subscription": {"gpu_hour": "2.00", "overage_gpu_hour": "3.00"},
    "payg": {"gpu_hour": "3.50"},
    "spot": {},
    "cloud": {"gpu_hour": "5.00"},
}
PRICES = prices.parse_prices(TABLE)
H = Decimal(3600)  # seconds in an hour


def test_unknown_tenants_are_named_with_the_known_ones():
    assert tenants.unknown_tenant_errors(None, {"alpha"}) == []
    assert tenants.unknown_tenant_errors(["alpha"], {"alpha"}) == []
    (error,) = tenants.unknown_tenant_errors(["gamma", "alpha", "delta"], {"alpha", "beta"})
    assert error.field == "tenants"
    assert str(error).startswith("tenants: delta, gamma: not a tenant")
    assert "no subscription or GPU use is recorded for it" in str(error)
    assert "(known tenants: alpha, beta) (rule metering-known-tenant)" in str(error)


def test_tenants_are_the_labelled_namespaces():
    namespaces = [
        {"metadata": {"name": "tenant-alpha", "labels": {"platform.io/tenant": "alpha"}}},
        {"metadata": {"name": "kube-system"}},
        {"metadata": {"name": "x", "labels": {"platform.io/tenant": ""}}},
    ]
    assert tenants.namespace_tenants(namespaces) == {"alpha"}


# --- subscription ---------------------------------------------------------------------


def test_a_subscription_the_whole_period_includes_its_size_times_the_hours():
    """Rule subscription-included: 16 GPUs for a day include 384 GPU-hours."""
    assert ledger.included_gpu_hours({Decimal(16): Decimal(DAY.seconds)}) == 16 * DAY.hours == 384


def test_a_resized_subscription_includes_each_size_for_its_hours():
    # 16 GPUs until noon, 24 after: 192 + 288
    sizes = {Decimal(16): 12 * H, Decimal(24): 12 * H}
    assert ledger.included_gpu_hours(sizes) == 480
    assert ledger.size_lines(sizes) == [
        {"subscription_gpus": "16", "hours": "12.000000", "included_gpu_hours": "192.000000"},
        {"subscription_gpus": "24", "hours": "12.000000", "included_gpu_hours": "288.000000"},
    ]


def test_a_subscription_created_within_the_period_is_prorated():
    # created at 18:00: 6 hours of 8 GPUs, not 24
    row = ledger.subscription_row("beta", Decimal(0), {Decimal(8): 6 * H}, PRICES)
    assert row["included_gpu_hours"] == "48.000000" and row["amount"] == "96.00"


def test_a_size_held_for_no_time_is_not_a_line():
    assert ledger.size_lines({Decimal(8): Decimal(0), Decimal(16): H}) == [
        {"subscription_gpus": "16", "hours": "1.000000", "included_gpu_hours": "16.000000"}
    ]


def test_subscription_included_overage_and_amount():
    # 16 GPUs for a day: 384 included; 400 used: 16 over.
    row = ledger.subscription_row("alpha", Decimal(400), {Decimal(16): 24 * H}, PRICES)
    assert row == {
        "tenant": "alpha",
        "billing_type": "subscription",
        "gpu_hours": "400.000000",
        "sizes": [
            {"subscription_gpus": "16", "hours": "24.000000", "included_gpu_hours": "384.000000"}
        ],
        "included_gpu_hours": "384.000000",
        "overage_gpu_hours": "16.000000",
        "price": "2.00",
        "overage_price": "3.00",
        "amount": "816.00",  # 384 x 2.00 + 16 x 3.00
    }
    idle = ledger.subscription_row("alpha", Decimal(0), {Decimal(16): 24 * H}, PRICES)
    assert idle["overage_gpu_hours"] == "0.000000" and idle["amount"] == "768.00"


def test_team_use_without_a_subscription_is_all_overage():
    """A tenant with no subscription Queue in the period includes nothing."""
    row = ledger.subscription_row("alpha", Decimal(10), {}, PRICES)
    assert row["sizes"] == [] and row["included_gpu_hours"] == "0.000000"
    assert row["overage_gpu_hours"] == "10.000000" and row["amount"] == "30.00"


# --- the other lines -------------------------------------------------------------------


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
    assert ledger.hours_text(Decimal("0.0000005")) == "0.000001"


def test_cloud_hours_at_the_cloud_price():
    """Rule cloud-amount."""
    assert ledger.cloud_row("alpha", Decimal("2.5"), PRICES) == {
        "tenant": "alpha",
        "billing_type": "cloud",
        "gpu_hours": "2.500000",
        "price": "5.00",
        "amount": "12.50",
    }


def test_a_spot_row_is_the_sum_of_its_written_job_lines():
    """Rule spot-amount: three jobs of 0.333... each round down; the row adds the cents."""
    lines = [
        ledger.spot_job_line(usage.SpotJobKey("a", "tenant-a", j, Decimal(1)), Decimal(1200))
        for j in ("j1", "j2", "j3")
    ]
    assert [line["amount"] for line in lines] == ["0.33", "0.33", "0.33"]
    row = ledger.spot_row("a", Decimal(1), lines)
    assert row["amount"] == "0.99" and row["gpu_hours"] == "1.000000"


def test_reconciliation_names_each_unclaimed_pod():
    """Rule reconciliation."""
    got = ledger.reconciliation(
        {("tenant-beta", "stolen-0"): 2 * H, ("tenant-alpha", "loose-0"): H / 2}
    )
    assert got == {
        "unclaimed_gpu_hours": "2.500000",
        "pods": [
            {"namespace": "tenant-alpha", "pod": "loose-0", "gpu_hours": "0.500000"},
            {"namespace": "tenant-beta", "pod": "stolen-0", "gpu_hours": "2.000000"},
        ],
    }
    assert ledger.reconciliation({}) == {"unclaimed_gpu_hours": "0.000000", "pods": []}


# --- the ledger --------------------------------------------------------------------------


def sample_ledger():
    """alpha: a subscription of 16 all day, used fully; 10 h payg; 2 h spot at 0.5; 1 h on
    cloud. beta: nothing. One unclaimed pod."""
    seconds = {
        ("alpha", "subscription"): 384 * H,
        ("alpha", "payg"): 10 * H,
        ("alpha", "spot"): 2 * H,
        ("alpha", "cloud"): H,
    }
    jobs = {usage.SpotJobKey("alpha", "tenant-alpha", "cheap", Decimal("0.5")): 2 * H}
    return ledger.build_ledger(
        DAY,
        RES,
        PRICES,
        ["beta", "alpha"],
        {"alpha": {Decimal(16): 24 * H}},
        seconds,
        jobs,
        {("tenant-beta", "stolen-0"): H},
        currency="EUR",
    )


def test_the_ledger_shape():
    got = sample_ledger()
    assert list(got) == [
        "period",
        "resolution_seconds",
        "prices",
        "currency",
        "rows",
        "totals",
        "reconciliation",
    ]
    assert got["period"] == {"start": "2026-01-01T00:00:00Z", "end": "2026-01-02T00:00:00Z"}
    assert got["resolution_seconds"] == "30" and got["prices"] == PRICES.view()
    assert [(r["tenant"], r["billing_type"], r["amount"]) for r in got["rows"]] == [
        ("alpha", "subscription", "768.00"),
        ("alpha", "payg", "35.00"),
        ("alpha", "spot", "1.00"),
        ("alpha", "cloud", "5.00"),
        ("beta", "subscription", "0.00"),
        ("beta", "payg", "0.00"),
        ("beta", "spot", "0.00"),
        ("beta", "cloud", "0.00"),
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
    assert got["rows"][4]["sizes"] == []
    assert got["totals"] == {
        "gpu_hours": "397.000000",
        "amount": "809.00",
        "by_billing_type": {
            "subscription": {"gpu_hours": "384.000000", "amount": "768.00"},
            "payg": {"gpu_hours": "10.000000", "amount": "35.00"},
            "spot": {"gpu_hours": "2.000000", "amount": "1.00"},
            "cloud": {"gpu_hours": "1.000000", "amount": "5.00"},
        },
        "by_tenant": {"alpha": "809.00", "beta": "0.00"},
    }
    assert got["reconciliation"] == {
        "unclaimed_gpu_hours": "1.000000",
        "pods": [{"namespace": "tenant-beta", "pod": "stolen-0", "gpu_hours": "1.000000"}],
    }


def test_an_empty_ledger_has_no_currency_and_zero_totals():
    got = ledger.build_ledger(DAY, RES, PRICES, [], {}, {}, {}, {})
    assert "currency" not in got and got["rows"] == []
    assert got["totals"]["amount"] == "0.00" and set(got["totals"]["by_billing_type"]) == {
        "subscription",
        "payg",
        "spot",
        "cloud",
    }


def test_a_tenant_named_twice_has_its_four_rows_once():
    got = ledger.build_ledger(DAY, RES, PRICES, ["a", "a"], {}, {}, {}, {})
    assert [r["billing_type"] for r in got["rows"]] == ["subscription", "payg", "spot", "cloud"]


def test_the_csv_has_a_usage_line_per_row_a_line_per_size_and_per_spot_job():
    text = ledger.ledger_csv(sample_ledger())
    lines = list(csv.DictReader(io.StringIO(text)))
    assert text.splitlines()[0] == ",".join(ledger.CSV_COLUMNS)
    assert [(r["kind"], r["tenant"], r["billing_type"], r["job"]) for r in lines] == [
        ("usage", "alpha", "subscription", ""),
        ("subscription_size", "alpha", "subscription", ""),
        ("usage", "alpha", "payg", ""),
        ("usage", "alpha", "spot", ""),
        ("spot_job", "alpha", "spot", "cheap"),
        ("usage", "alpha", "cloud", ""),
        ("usage", "beta", "subscription", ""),
        ("usage", "beta", "payg", ""),
        ("usage", "beta", "spot", ""),
        ("usage", "beta", "cloud", ""),
    ]
    size = lines[1]
    assert (size["subscription_gpus"], size["hours"], size["included_gpu_hours"]) == (
        "16",
        "24.000000",
        "384.000000",
    )
    assert size["amount"] == "" and size["currency"] == "EUR"
    # the usage line of a subscription names no size: its sizes are the lines after it
    assert lines[0]["subscription_gpus"] == "" and lines[0]["included_gpu_hours"] == "384.000000"
    assert lines[4]["price"] == "0.5" and lines[4]["currency"] == "EUR"
    usage_sum = sum(Decimal(r["amount"]) for r in lines if r["kind"] == "usage")
    assert usage_sum == Decimal("809.00")


# --- invariants -------------------------------------------------------------------


money = st.decimals(min_value=0, max_value=100, places=4, allow_nan=False, allow_infinity=False)
hours_used = st.decimals(
    min_value=0, max_value=5000, places=6, allow_nan=False, allow_infinity=False
)
gpu_counts = st.integers(min_value=0, max_value=256).map(Decimal)
# seconds at a size: whole multiples of a 30 s resolution, up to a year
held = st.integers(min_value=0, max_value=366 * 2880).map(lambda n: Decimal(30 * n))
sizes = st.dictionaries(gpu_counts, held, max_size=6)


def half_up(exact: Fraction, places: int) -> Decimal:
    """The exact value rounded half-up, as the ledger writes it."""
    scale = 10**places
    return Decimal(math.floor(exact * scale + Fraction(1, 2))) / scale


def exact_included(held: dict) -> Fraction:
    return sum((Fraction(g) * Fraction(s) for g, s in held.items()), Fraction(0)) / 3600


@given(first=sizes, second=sizes)
def test_included_gpu_hours_are_additive_over_sizes_and_time(first, second):
    """Rule subscription-included: a subscription's time split by size, or by part of the
    period, includes what the whole includes."""
    merged = dict(first)
    for gpus, seconds in second.items():
        merged[gpus] = merged.get(gpus, Decimal(0)) + seconds
    whole = exact_included(first) + exact_included(second)
    assert Decimal(ledger.hours_text(ledger.included_gpu_hours(merged))) == half_up(whole, 6)
    each = [ledger.included_gpu_hours({g: s}) for g, s in first.items()]
    assert abs(sum(each, Decimal(0)) - ledger.included_gpu_hours(first)) < Decimal("1e-20")


@given(size=gpu_counts, seconds=st.integers(min_value=1, max_value=366 * 86400))
def test_one_size_all_period_includes_the_size_times_the_period_hours(size, seconds):
    got = ledger.hours_text(ledger.included_gpu_hours({size: Decimal(seconds)}))
    assert Decimal(got) == half_up(Fraction(int(size) * seconds, 3600), 6)


ODD_PRICE = prices.parse_prices(
    {
        "subscription": {"gpu_hour": "1.65", "overage_gpu_hour": "1.65"},
        "payg": {"gpu_hour": "1.65"},
        "spot": {},
        "cloud": {"gpu_hour": "1.65"},
    }
)
TWO_MINUTES = Decimal(120)  # x 1.65 / 3600 = 0.055 exactly


@pytest.mark.parametrize(
    "line",
    [
        lambda: ledger.payg_row("a", usage.hours(TWO_MINUTES), ODD_PRICE),
        lambda: ledger.cloud_row("a", usage.hours(TWO_MINUTES), ODD_PRICE),
        lambda: ledger.spot_job_line(
            usage.SpotJobKey("a", "tenant-a", "j", Decimal("1.65")), TWO_MINUTES
        ),
        # included, then overage
        lambda: ledger.subscription_row("a", Decimal(0), {Decimal(1): TWO_MINUTES}, ODD_PRICE),
        lambda: ledger.subscription_row("a", usage.hours(TWO_MINUTES), {}, ODD_PRICE),
    ],
    ids=["payg", "cloud", "spot", "included", "overage"],
)
def test_an_exact_half_cent_rounds_up_although_hours_are_divided(line):
    """Rule ledger-rounding: 2 GPU-minutes at 1.65 are 0.055, though hours (seconds / 3600,
    rounded by Decimal) times the price make 0.05499...9: written 0.06."""
    assert line()["amount"] == "0.06"


price_text = st.decimals(min_value=0, max_value=50, places=2, allow_nan=False, allow_infinity=False)


@given(
    gpu_seconds=st.integers(min_value=0, max_value=10**7).map(lambda n: Decimal(15 * n)),
    price=price_text,
    held=sizes,
)
def test_every_amount_is_the_exact_amount_rounded_half_up(gpu_seconds, price, held):
    """Rule ledger-rounding, for each kind of line: computed unrounded, written half-up."""
    table = prices.parse_prices(
        {
            "subscription": {"gpu_hour": price, "overage_gpu_hour": price * 2},
            "payg": {"gpu_hour": price},
            "spot": {},
            "cloud": {"gpu_hour": price},
        }
    )
    used = usage.hours(gpu_seconds)
    exact = Fraction(gpu_seconds) / 3600 * Fraction(price)
    assert Decimal(ledger.payg_row("a", used, table)["amount"]) == half_up(exact, 2)
    assert Decimal(ledger.cloud_row("a", used, table)["amount"]) == half_up(exact, 2)
    job = usage.SpotJobKey("a", "tenant-a", "j", price)
    assert Decimal(ledger.spot_job_line(job, gpu_seconds)["amount"]) == half_up(exact, 2)
    included = exact_included(held)
    overage = max(Fraction(0), Fraction(gpu_seconds) / 3600 - included)
    row = ledger.subscription_row("a", used, held, table)
    assert Decimal(row["amount"]) == half_up(
        included * Fraction(price) + overage * Fraction(price) * 2, 2
    )


@given(held_sizes=sizes, used=hours_used)
def test_the_size_lines_add_up_to_the_row_to_their_rounding(held_sizes, used):
    """Each size line is written to 6 places, the row from the exact sum: they differ by
    at most half a millionth of an hour per line."""
    row = ledger.subscription_row("a", used, held_sizes, PRICES)
    half = Decimal("0.0000005")
    included = sum((Decimal(s["included_gpu_hours"]) for s in row["sizes"]), Decimal(0))
    assert abs(included - Decimal(row["included_gpu_hours"])) <= half * (len(row["sizes"]) + 1)
    hours_held = sum((Decimal(s["hours"]) for s in row["sizes"]), Decimal(0))
    assert abs(hours_held - sum(held_sizes.values(), Decimal(0)) / H) <= half * len(row["sizes"])
    assert [s["subscription_gpus"] for s in row["sizes"]] == [
        str(g) for g in sorted(held_sizes) if held_sizes[g]
    ]


@given(
    sub=money,
    over=money,
    payg=money,
    cloud=money,
    sizes_a=sizes,
    used=st.dictionaries(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(usage.LINES)),
        hours_used,
    ),
    spot_jobs=st.dictionaries(
        st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["j1", "j2"]), money),
        hours_used,
        max_size=6,
    ),
    unclaimed=st.dictionaries(
        st.tuples(st.sampled_from(["tenant-a", "tenant-b"]), st.sampled_from(["p0", "p1"])),
        hours_used,
        max_size=4,
    ),
)
def test_totals_are_the_sums_of_the_rows_and_no_overage_is_negative(
    sub, over, payg, cloud, sizes_a, used, spot_jobs, unclaimed
):
    table = prices.parse_prices(
        {
            "subscription": {"gpu_hour": sub, "overage_gpu_hour": over},
            "payg": {"gpu_hour": payg},
            "spot": {},
            "cloud": {"gpu_hour": cloud},
        }
    )
    seconds = {k: v * H for k, v in used.items()}
    jobs = {
        usage.SpotJobKey(t, f"tenant-{t}", j, bid): h * H for (t, j, bid), h in spot_jobs.items()
    }
    got = ledger.build_ledger(
        DAY,
        RES,
        table,
        ["a", "b", "c"],
        {"a": sizes_a},
        seconds,
        jobs,
        {k: v * H for k, v in unclaimed.items()},
    )
    rows = got["rows"]
    assert len(rows) == 3 * 4
    assert Decimal(got["totals"]["amount"]) == sum(Decimal(r["amount"]) for r in rows)
    assert Decimal(got["totals"]["gpu_hours"]) == sum(Decimal(r["gpu_hours"]) for r in rows)
    by_type = got["totals"]["by_billing_type"]
    assert sum(Decimal(t["amount"]) for t in by_type.values()) == Decimal(got["totals"]["amount"])
    assert sum(Decimal(a) for a in got["totals"]["by_tenant"].values()) == Decimal(
        got["totals"]["amount"]
    )
    assert Decimal(got["reconciliation"]["unclaimed_gpu_hours"]) == sum(
        Decimal(p["gpu_hours"]) for p in got["reconciliation"]["pods"]
    )
    for row in rows:
        assert Decimal(row["amount"]) >= 0
        if row["billing_type"] == "subscription":
            assert Decimal(row["overage_gpu_hours"]) >= 0
        if row["billing_type"] == "spot":
            assert Decimal(row["amount"]) == sum(Decimal(j["amount"]) for j in row["jobs"])
    # the CSV's usage lines add up to the total a spreadsheet would show
    lines = csv.DictReader(io.StringIO(ledger.ledger_csv(got)))
    assert sum(Decimal(r["amount"]) for r in lines if r["kind"] == "usage") == Decimal(
        got["totals"]["amount"]
    )


@pytest.mark.parametrize("tenant", ["a", "b"])
def test_a_tenant_pays_only_for_its_own_lines(tenant):
    other = "b" if tenant == "a" else "a"
    seconds = {(other, line): 10 * H for line in usage.LINES}
    got = ledger.build_ledger(DAY, RES, PRICES, [tenant], {other: {Decimal(8): H}}, seconds, {}, {})
    assert got["totals"]["amount"] == "0.00" and {r["tenant"] for r in got["rows"]} == {tenant}
