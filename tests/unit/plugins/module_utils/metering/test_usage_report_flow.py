# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``usage_report`` through the flow contract: the ledger as a table of cases over
facts (no cluster, no Prometheus), and ``parsed`` of ``gathered`` against the normal run
on the fake cluster and the fake Prometheus."""

from __future__ import annotations

from decimal import Decimal
from unittest import mock

import pytest
from ansible.module_utils.common import warnings as ansible_warnings
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.metering import report, service
from ansible_collections.gpucloud.platform.plugins.module_utils.metering.inputs import (
    parse_report,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.metering.service import (
    REPORT_FLOW,
)
from ansible_collections.gpucloud.platform.plugins.modules import usage_report
from ansible_collections.gpucloud.platform.tests.unit.flow_checks import assert_parsed_is_the_run
from ansible_collections.gpucloud.platform.tests.unit.plugins.modules.test_usage_report import (
    DAY_SERIES,
    END,
    JOBS,
    PRICES,
    SIZES,
    START,
    T0,
    TENANT,
    TWO_HOURS,
    UNCLAIMED,
    FakePrometheus,
    cluster,
    holding,
    idc,
)

HOUR = 3600


@pytest.fixture(autouse=True)
def _warnings_of_this_test_only(monkeypatch):
    """The plans here warn (bad samples, unclaimed GPUs): keep those out of the process's
    warnings, which the module tests read after."""
    monkeypatch.setattr(ansible_warnings, "_global_warnings", {})


def options(**given):
    base = {n: s.get("default") for n, s in usage_report.OPTIONS.items()}
    return (
        base
        | {
            "prometheus_url": "http://prom:9090",
            "start": START,
            "end": END,
            "step": 3600,
            "prices": PRICES,
        }
        | given
    )


def series(labels, *values):
    """One series of a ``query_range`` answer: a point per hour from T0 + 1 h."""
    return {"metric": labels, "values": [[T0 + HOUR * (i + 1), v] for i, v in enumerate(values)]}


def namespace(tenant):
    return {"metadata": {"name": f"tenant-{tenant}", "labels": {"platform.io/tenant": tenant}}}


# Samples every 5 s: 720 samples of 1 GPU are one GPU-hour.
FACTS = report.UsageFacts(
    namespaces=(namespace("alpha"), namespace("beta")),
    resolution=Decimal(5),
    tenant_billing=(series(idc(tenant="alpha", billing_type="payg"), "720", "1440"),),
    unclaimed=(
        series({"namespace": "tenant-alpha", "pod": "a-0"}, "720"),
        series({"namespace": "tenant-beta", "pod": "b-0"}, "360"),
    ),
)


def by_tenant(ledger):
    return {
        (row["tenant"], row["billing_type"]): (row["gpu_hours"], row["amount"])
        for row in ledger["rows"]
        if row["gpu_hours"] != "0.000000"
    }


# (case, options, facts, {(tenant, line): (GPU-hours, amount)}, reconciled pods, warned)
CASES = [
    (
        "every tenant known",
        {},
        FACTS,
        {("alpha", "payg"): ("3.000000", "10.50")},
        ["a-0", "b-0"],
        2,
    ),
    ("one tenant reconciles its namespace alone", {"tenants": ["beta"]}, FACTS, {}, ["b-0"], 1),
    (
        "a tenant known only by its use",
        {"tenants": ["gone"]},
        report.UsageFacts(
            resolution=Decimal(5),
            tenant_billing=(series(idc(tenant="gone", billing_type="payg"), "720"),),
        ),
        {("gone", "payg"): ("1.000000", "3.50")},
        [],
        0,
    ),
    (
        "a bad sample counts as 0, warned",
        {},
        report.UsageFacts(
            resolution=Decimal(5),
            tenant_billing=(series(idc(tenant="alpha", billing_type="payg"), "NaN", "720"),),
        ),
        {("alpha", "payg"): ("1.000000", "3.50")},
        [],
        1,
    ),
    ("nothing", {}, report.UsageFacts(resolution=Decimal(5)), {}, [], 0),
]


@pytest.mark.parametrize(
    "given,facts,billed,pods,warned", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_ledger_over_facts(given, facts, billed, pods, warned):
    request = parse_report(options(**given))
    planned = report.plan_report(request, facts)
    said = report.report(request, planned)
    assert set(said) == {"ledger", "csv"}
    assert by_tenant(said["ledger"]) == billed
    assert [p["pod"] for p in said["ledger"]["reconciliation"]["pods"]] == pods
    assert len(report.warnings_of(planned)) == warned


def test_an_unknown_tenant_is_refused_in_the_plan():
    with pytest.raises(PlatformValidationError, match="gamma: not a tenant"):
        report.plan_report(parse_report(options(tenants=["gamma"])), FACTS)


def test_gathered_keeps_the_namespaces_names_and_labels_and_the_period():
    ns = {**namespace("alpha"), "kind": "Namespace"}
    ns["metadata"]["uid"] = "x"
    facts = report.UsageFacts(
        period=parse_report(options()).period, namespaces=(ns,), resolution=Decimal(30)
    )
    data = report.facts_out(facts)
    assert data["namespaces"] == [namespace("alpha")]
    assert data["period"] == {"start": START, "end": END, "step": 3600}
    assert data["resolution_seconds"] == "30"


@pytest.mark.parametrize(
    "facts,field",
    [
        ({"resolution_seconds": "5"}, "facts.period"),
        (
            {"period": {"start": START, "end": END, "step": 60}, "resolution_seconds": "5"},
            "facts.period",
        ),
        ({"period": {"start": START, "end": END, "step": 3600}}, "facts.resolution_seconds"),
        (
            {
                "period": {"start": START, "end": END, "step": 3600},
                "resolution_seconds": "5",
                "spot_jobs": {},
            },
            "facts.spot_jobs",
        ),
    ],
    ids=["no period", "another step", "no interval", "not a list"],
)
def test_parsed_refuses_facts_it_cannot_bill(facts, field):
    with pytest.raises(PlatformValidationError) as exc:
        REPORT_FLOW.offline(options(state="parsed", facts=facts))
    assert exc.value.errors[0].field.startswith(field)


def without_queries(result):
    return {k: v for k, v in result.items() if k != "queries"}


def gather_and_run(held, interval, **given):
    """``gathered`` and the normal run on the fake cluster and Prometheus."""
    fake = FakePrometheus(held, interval=interval)
    with mock.patch.object(service, "open_url", fake.open_url):
        gathered = REPORT_FLOW.run(options(state="gathered", **given), cluster(), False)
        run = REPORT_FLOW.run(options(**given), cluster(), False)
    assert set(gathered) == {"changed", "gathered"}
    assert run["queries"] == len(fake.calls) // 2
    return gathered["gathered"], without_queries(run)


def test_parsed_of_a_gathered_day_is_the_normal_run():
    gathered, run = gather_and_run(DAY_SERIES, 5)
    assert_parsed_is_the_run(REPORT_FLOW, lambda: run, options(state="parsed", facts=gathered))


@settings(max_examples=30, deadline=None)
@given(
    interval=st.sampled_from([5, 15, 30]),
    payg=st.lists(holding, max_size=3),
    spot=st.lists(holding, max_size=2),
    unclaimed=st.lists(holding, max_size=2),
    tenants=st.sampled_from([None, ["alpha"], ["beta"], ["gamma"]]),
)
def test_parsed_of_gathered_is_the_normal_run(interval, payg, spot, unclaimed, tenants):
    held = {
        TENANT: [(idc(tenant="alpha", billing_type="payg"), payg)],
        JOBS: [
            (
                idc(
                    tenant="alpha",
                    namespace="tenant-alpha",
                    billing_type="spot",
                    job_name="j",
                    spot_price="0.7",
                ),
                spot,
            )
        ],
        SIZES: [],
        UNCLAIMED: [({"namespace": "tenant-beta", "pod": "p"}, unclaimed)],
    }
    two_hours = {"end": "2026-01-01T02:00:00Z", "step": 300, "tenants": tenants}
    assert TWO_HOURS == 2 * HOUR
    fake = FakePrometheus(held, interval=interval)
    with mock.patch.object(service, "open_url", fake.open_url):
        gathered = REPORT_FLOW.run(options(state="gathered", **two_hours), cluster(), False)
    assert_parsed_is_the_run(
        REPORT_FLOW,
        lambda: without_queries(_run(held, interval, two_hours)),
        options(state="parsed", facts=gathered["gathered"], **two_hours),
    )


def _run(held, interval, given):
    fake = FakePrometheus(held, interval=interval)
    with mock.patch.object(service, "open_url", fake.open_url):
        return REPORT_FLOW.run(options(**given), cluster(), False)


def test_the_module_bills_what_it_gathered_without_connecting(run_module, monkeypatch):
    fake = FakePrometheus(DAY_SERIES)
    monkeypatch.setattr(service, "open_url", fake.open_url)
    args = {k: v for k, v in options().items() if v is not None and k != "state"}
    gathered = run_module(usage_report, cluster(), **args, state="gathered")
    assert gathered["changed"] is False and gathered["requests"] == 1
    assert "ledger" not in gathered and gathered["summary"][0].startswith("gathered ")
    ran = run_module(usage_report, cluster(), **args)
    calls = len(fake.calls)
    parsed = run_module(usage_report, cluster(), **args, state="parsed", facts=gathered["gathered"])
    assert len(fake.calls) == calls and parsed["requests"] == 0 and parsed["state"] == "parsed"
    assert parsed["ledger"] == ran["ledger"] and parsed["summary"] == ran["summary"]
    assert parsed["csv"] == ran["csv"] and "queries" not in parsed
