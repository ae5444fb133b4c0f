# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU-hours on the real Prometheus: kube-state-metrics, Volcano's metrics and the
platform's recording rules, as the local cluster runs them (scrape and rule
evaluation every 5 s).

One tenant runs a subscription, a pay-as-you-go and a spot job (submitted by
``vcjob``, so their pods carry the billing labels and the bid) for a known
time. The recorded ``platform:tenant_billing_gpus:allocated``, integrated
over the period, gives each billing type's GPU-hours; they match what ran.
While the jobs run, every dashboard panel's query returns data in its unit.
"""

from __future__ import annotations

import csv
import io
import json
import re
import time
import urllib.parse
import urllib.request
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from ansible_collections.gpucloud.platform.tests.integration import test_jobs as job_tests
from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    prometheus_url,
    run_playbook,
    wait_until,
)

# The job tests' tenant: a namespace with three leaf queues (team, payg, spot), no quota.
SMALL, VCJOBS = job_tests.SMALL, job_tests.VCJOBS
dyn = job_tests.dyn
platform_objects = job_tests.platform_objects
tenant = job_tests.tenant

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
STEP = 5  # the local cluster's scrape and evaluation interval
RUN_SECONDS = 40
# name, queue suffix, class, GPUs, bid
JOBS = [
    ("sub", "algo", "normal", 4, None),
    ("burst", "payg", "normal", 2, None),
    ("cheap", "spot", "spot", 1, "0.5"),
]
BILLING = {"algo": "subscription", "payg": "payg", "spot": "spot"}
# Panels whose series only real hardware or finished jobs make (kwok pods never end):
# their rules are covered by tests/unit/promtool instead.
NEEDS_HARDWARE = re.compile(r"DCGM_FI_")
NEEDS_FINISHED_JOBS = ("platform:queue_job_failure:ratio1h",)


def prom(path: str, **params) -> dict:
    url = f"{prometheus_url()}/api/v1/{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=10) as resp:
        body = json.load(resp)
    assert body["status"] == "success", body
    return body["data"]


def running_since(client, ns: str, job: str) -> bool:
    pods = client.resources.get(api_version="v1", kind="Pod").get(
        namespace=ns, label_selector=f"volcano.sh/job-name={job}"
    )
    return bool(pods.items) and all(p.status.phase == "Running" for p in pods.items)


def pods_gone(client, ns: str, job: str) -> bool:
    pods = client.resources.get(api_version="v1", kind="Pod").get(
        namespace=ns, label_selector=f"volcano.sh/job-name={job}"
    )
    return not pods.items


def watch_edges(client, ns: str, names: list[str], predicate, timeout: float) -> dict[str, float]:
    """When each job first meets ``predicate``, polled every 0.2 s."""
    seen: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    while len(seen) < len(names) and time.monotonic() < deadline:
        for name in names:
            if name not in seen and predicate(client, ns, name):
                seen[name] = time.time()
        time.sleep(0.2)
    assert len(seen) == len(names), f"only {sorted(seen)} of {names} within {timeout}s"
    return seen


def integrate(matrix: list[dict], key: str) -> dict[str, float]:
    """GPU-seconds per label value: each sample stands for the step that ends at it."""
    out: dict[str, float] = {}
    for series in matrix:
        value = series["metric"].get(key, "")
        out[value] = (
            out.get(value, 0.0) + sum(float(sample[1]) for sample in series["values"]) * STEP
        )
    return out


@pytest.fixture
def running_jobs(platform_scheduler_conf, tenant, dyn, run_module):
    """The three jobs, Running; returns (tenant, namespace, job names, when each began to run).

    The platform's scheduler configuration, not the chart's: only Volcano's capacity
    plugin writes volcano_queue_capacity_scalar_resources (proportion writes allocated
    and deserved alone), and the dashboards are drawn for the platform's scheduler."""
    ns = f"tenant-{tenant}"
    # A GPU capability on the team queue, so Volcano reports one for the capability panel
    # (the job tests' queues have none).
    dyn.resources.get(api_version=job_tests.QUEUES[0], kind=job_tests.QUEUES[1]).patch(
        name=f"{ns}-algo",
        body={"spec": {"capability": {"nvidia.com/gpu": 16}}},
        content_type="application/merge-patch+json",
    )
    for name, suffix, job_class, gpus, price in JOBS:
        out = run_module(
            "vcjob",
            dict(
                tenant=tenant,
                name=name,
                queue=f"{ns}-{suffix}",
                kind="single",
                job_class=job_class,
                image="i",
                command=["x"],
                gpus_per_pod=gpus,
                **({"spot_price": price} if price else {}),
                **SMALL,
            ),
        )
        assert out.get("failed") is not True, out.get("msg")
    names = [j[0] for j in JOBS]
    starts = watch_edges(dyn, ns, names, running_since, 60)
    return tenant, ns, names, starts


def test_gpu_hours_per_billing_type_match_what_ran(running_jobs, dyn, run_module):
    name, ns, names, starts = running_jobs
    # Every panel is checked while the jobs hold their GPUs.
    check_dashboard_panels(name)
    time.sleep(max(0.0, RUN_SECONDS - (time.time() - max(starts.values()))))
    jobs = dyn.resources.get(api_version=VCJOBS[0], kind=VCJOBS[1])
    for job in names:
        jobs.delete(name=job, namespace=ns)
    ends = watch_edges(dyn, ns, names, pods_gone, 60)
    # the last scrape and rule evaluation after the end
    time.sleep(3 * STEP)
    start, end = min(starts.values()) - 4 * STEP, max(ends.values()) + 2 * STEP
    data = prom(
        "query_range",
        query=f'platform:tenant_billing_gpus:allocated{{tenant="{name}"}}',
        start=f"{start:.3f}",
        end=f"{end:.3f}",
        step=STEP,
    )
    measured = integrate(data["result"], "billing_type")
    for job, suffix, _class, gpus, _price in JOBS:
        expected = gpus * (ends[job] - starts[job])
        got = measured.get(BILLING[suffix], 0.0)
        # The recorded series starts and stops up to one scrape plus one
        # evaluation after the pods do; both edges lag alike, so the integral
        # is within one interval's GPU-seconds (measured: 1.3 s of 41 s).
        print(f"{job}: {got:.1f} GPU-seconds recorded, {expected:.1f} ran")
        assert abs(got - expected) <= gpus * STEP, (job, got, expected, measured)
    check_usage_report(run_module, name, start, end, measured)
    # The spot job's bid travels with its pods into the per-job series.
    jobs_data = prom(
        "query_range",
        query=f'platform:job_gpus:allocated{{tenant="{name}",billing_type="spot"}}',
        start=f"{start:.3f}",
        end=f"{end:.3f}",
        step=STEP,
    )
    assert {s["metric"].get("spot_price") for s in jobs_data["result"]} == {"0.5"}
    assert {s["metric"]["job_name"] for s in jobs_data["result"]} == {"cheap"}


def dashboard_queries() -> list[tuple[str, str, str]]:
    """(dashboard, unit, expr) of every panel target."""
    out = []
    for path in sorted((ROOT / "roles/monitoring/files/dashboards").glob("*.json")):
        board = json.loads(path.read_text())
        for panel in board["panels"]:
            unit = panel.get("fieldConfig", {}).get("defaults", {}).get("unit", "")
            for target in panel.get("targets", []):
                out.append((path.stem, unit, target["expr"]))
    return out


def check_dashboard_panels(name: str) -> None:
    """Each panel's query has data, in its unit, once the rules have seen the jobs."""
    skipped, checked = [], []
    for board, unit, expr in dashboard_queries():
        if NEEDS_HARDWARE.search(expr) or any(n in expr for n in NEEDS_FINISHED_JOBS):
            skipped.append(expr)
            continue
        query = expr.replace("$tenant", name)
        result = wait_until(
            lambda q=query: prom("query", query=q)["result"], 30, 1, f"{board}: data for {query}"
        )
        values = [float(r["value"][1]) for r in result]
        if unit == "percentunit":
            assert all(0 <= v <= 1 for v in values), (query, values)
        if unit == "s":
            assert all(v >= 0 for v in values), (query, values)
        checked.append(query)
    # The queue GPU panels are in whole GPUs (Volcano's milli-units divided out).
    allocated = prom(
        "query", query=f'platform:queue_gpus:allocated{{queue_name="tenant-{name}-algo"}}'
    )
    assert [float(r["value"][1]) for r in allocated["result"]] == [4.0]
    # 3 DCGM panels and the failure ratio are left to promtool
    assert len(skipped) == 4, skipped
    assert len(checked) + len(skipped) == len(dashboard_queries())


PRICES = {
    "subscription": {"gpu_hour": "2.00", "overage_gpu_hour": "3.00"},
    "payg": {"gpu_hour": "3.50"},
    "spot": {},
}


def rfc3339(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def check_usage_report(run_module, name: str, start: float, end: float, measured: dict) -> None:
    """usage_report over the same period: the same GPU-hours, priced by the table.

    The job tests' tenant has no subscription queue (size 0), so all its
    subscription hours are overage."""
    first = int(start) // STEP * STEP
    last = first + -(-(int(end) + 1 - first) // STEP) * STEP
    out = run_module(
        "usage_report",
        {
            "prometheus_url": prometheus_url(),
            "start": rfc3339(first),
            "end": rfc3339(last),
            "step": STEP,
            "tenants": [name],
            "prices": PRICES,
            "currency": "EUR",
        },
    )
    assert not out.get("failed"), out.get("msg")
    assert out["changed"] is False
    ledger = out["ledger"]
    assert ledger["period"] == {"start": rfc3339(first), "end": rfc3339(last), "step": STEP}
    assert ledger["currency"] == "EUR" and ledger["prices"] == PRICES
    rows = {r["billing_type"]: r for r in ledger["rows"] if r["tenant"] == name}
    gpus = {BILLING[suffix]: g for _job, suffix, _class, g, _price in JOBS}
    for billing, row in rows.items():
        hours = Decimal(row["gpu_hours"])
        # the module's integral over its own grid of the same series
        assert abs(hours * 3600 - Decimal(str(measured[billing]))) <= gpus[billing] * STEP, (
            billing,
            row,
        )
    cents = Decimal("0.01")
    sub = rows["subscription"]
    assert sub["subscription_gpus"] == "0" and Decimal(sub["included_gpu_hours"]) == 0
    assert sub["overage_gpu_hours"] == sub["gpu_hours"]
    assert Decimal(sub["amount"]) == (Decimal(sub["overage_gpu_hours"]) * Decimal("3.00")).quantize(
        cents, ROUND_HALF_UP
    )
    payg = rows["payg"]
    assert Decimal(payg["amount"]) == (Decimal(payg["gpu_hours"]) * Decimal("3.50")).quantize(
        cents, ROUND_HALF_UP
    )
    (line,) = rows["spot"]["jobs"]
    assert line["job"] == "cheap" and Decimal(line["bid"]) == Decimal("0.5")
    assert Decimal(line["amount"]) == (Decimal(line["gpu_hours"]) * Decimal("0.5")).quantize(
        cents, ROUND_HALF_UP
    )
    # The CSV says the same: the spot job's line carries its hours and amount.
    lines = list(csv.DictReader(io.StringIO(out["csv"])))
    (spot_line,) = [r for r in lines if r["tenant"] == name and r["job"] == "cheap"]
    assert spot_line["gpu_hours"] == line["gpu_hours"] and spot_line["amount"] == line["amount"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"end": "2026-01-01T00:00:00Z"}, "end"),
        ({"tenants": ["nosuchtenant"]}, "tenants"),
        ({"prices": {"subscription": PRICES["subscription"], "spot": {}}}, "prices.payg"),
        ({"prometheus_url": "http://127.0.0.1:9"}, "prometheus_url"),
    ],
)
def test_usage_report_refuses_bad_input_naming_the_field(run_module, localcluster, change, field):
    args = {
        "prometheus_url": prometheus_url(),
        "start": "2026-01-02T00:00:00Z",
        "end": "2026-01-02T01:00:00Z",
        "step": 60,
        "prices": PRICES,
        **change,
    }
    out = run_module("usage_report", args)
    assert out.get("failed") is True
    assert field in out["msg"], out["msg"]


def test_the_playbook_writes_the_ledger_as_json_and_csv(ansible_env, localcluster, tmp_path):
    """playbooks/usage_report.yml with the local inventory's Prometheus and prices."""
    rc, tasks = run_playbook(
        ansible_env,
        "usage_report.yml",
        {
            "usage_start": "2026-01-01T00:00:00Z",
            "usage_end": "2026-01-01T01:00:00Z",
            "usage_report_dir": str(tmp_path),
        },
        inventory="inventories/local",
    )
    assert rc == 0, {n: r.get("msg") for n, r in tasks.items() if r.get("failed")}
    stem = tmp_path / "usage-20260101T000000Z-20260101T010000Z"
    ledger = json.loads(stem.with_suffix(".json").read_text())
    assert ledger["period"]["start"] == "2026-01-01T00:00:00Z" and set(ledger["prices"]) == set(
        PRICES
    )
    header = next(csv.reader(io.StringIO(stem.with_suffix(".csv").read_text())))
    assert header[:3] == ["kind", "tenant", "billing_type"]
