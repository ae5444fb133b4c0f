# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One ledger across the federation (rule federation-ledger), on the real federation
(``conftest.federation``): each member is a whole local cluster with its own Prometheus,
which records the platform's metering rules from its own kube-state-metrics.

A tenant of its own, ``fedbill``, with a subscription and pay-as-you-go GPUs in both
members, runs one job in the IDC member (8 GPUs, ``local-only``) and, once that member is
full, one in the cloud member (4 GPUs, ``local-first`` spills there); both are deleted after
a few rule evaluations. ``usage_report`` with ``members``, its connection Karmada's API
server, then bills:

* one ledger: the IDC job's GPU-hours on the pay-as-you-go line, the cloud job's on the
  cloud line (the cloud member's node is not labelled cloud: the member's location
  decides), each within one scrape plus one evaluation interval per start and per stop of
  each pod (docs/metering.md), and the subscription once, from the IDC member;
* a report of one member sees only that member's part;
* ``gathered`` labels every series with its member, and ``parsed`` bills it to the same
  ledger;
* ``playbooks/usage_report.yml`` with ``metering_members`` writes that ledger.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from ansible_collections.gpucloud.platform.tests.federation.federation_helpers import (
    MEMBERS,
    dynamic,
    federated_job,
    member_gpus_allocated,
    queue_gpus,
    tenant_args,
)
from ansible_collections.gpucloud.platform.tests.integration.conftest import ansible_environment
from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    run_playbook,
    state_dir,
    wait_until,
)
from ansible_collections.gpucloud.platform.tests.integration.test_metering import PRICES

pytestmark = pytest.mark.federation

TENANT = "fedbill"
NS = f"tenant-{TENANT}"
QUEUE = f"tenant-{TENANT}-payg"
IDC, CLOUD = "fed-idc", "fed-cloud"
SUBSCRIPTION_GPUS = 8  # tenant_args'
TENANT_ARGS = tenant_args(TENANT)
# (job, member, pods, GPUs per pod): the IDC job fills the IDC member's one 8-GPU node,
# so the next, local-first, goes to the cloud member
JOBS = (("on-idc", IDC, 2, 4, "local-only"), ("on-cloud", CLOUD, 1, 4, "local-first"))
RUN_SECONDS = 30  # a few evaluations (the local clusters evaluate every 5 s)
POLL = 0.5


def _prometheus(name: str) -> str:
    """A member's Prometheus, where its cluster.py recorded it."""
    return (state_dir(name) / "prometheus-url").read_text().strip()


def _job(name: str, placement: str, replicas: int, gpus: int) -> dict[str, Any]:
    return federated_job(
        TENANT,
        name,
        replicas=replicas,
        gpus_per_pod=gpus,
        placement=placement,
        checkpoint_command=["/bin/sh", "-c", "python save.py"],
    )


def _running(member, job: str) -> int:
    pods = member.resources.get(api_version="v1", kind="Pod")
    items = pods.get(namespace=NS, label_selector=f"volcano.sh/job-name={job}").items
    return sum(1 for p in items if (p.to_dict().get("status") or {}).get("phase") == "Running")


def _when(predicate) -> float:
    """The first poll (every ``POLL`` s) at which ``predicate`` holds, in Unix seconds."""
    wait_until(predicate, 120, POLL, "the jobs' pods")
    return time.time()


def _instant(url: str, query: str) -> list[dict[str, Any]]:
    import json
    from urllib.parse import urlencode
    from urllib.request import urlopen

    with urlopen(f"{url}/api/v1/query?{urlencode({'query': query})}", timeout=10) as answer:
        return json.loads(answer.read())["data"]["result"]


def _rfc3339(stamp: int) -> str:
    return datetime.fromtimestamp(stamp, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture(scope="module")
def billed(federation, federation_platform, run_on_federation) -> Iterator[dict[str, Any]]:
    """The period the two jobs ran in, each job's Running interval as the API showed it,
    and the Prometheus URLs; the tenant and its jobs are removed afterwards."""
    started = time.monotonic()
    karmada = dynamic(federation["karmada"])
    members = {name: dynamic(api) for name, api in federation["members"].items()}
    urls = {name: _prometheus(name) for name in MEMBERS}
    tenant = run_on_federation("federation_tenant", TENANT_ARGS)
    assert tenant.get("failed") is not True, tenant
    try:
        for name in MEMBERS:
            wait_until(
                lambda m=members[name]: queue_gpus(m, QUEUE) == "8", 90, 1, f"{QUEUE} in {name}"
            )
        # the subscription is recorded before the period starts, so it is billed for all of it
        wait_until(
            lambda: _instant(
                urls[IDC], f'platform:tenant_subscription_gpus:info{{tenant="{TENANT}"}}'
            ),
            120,
            1,
            f"{TENANT}'s subscription recorded in {IDC}",
        )
        start = math.floor(time.time())
        ran: dict[str, tuple[float, float, int]] = {}
        for job, member, pods, gpus, placement in JOBS:
            done = run_on_federation("vcjob", _job(job, placement, pods, gpus))
            assert done.get("failed") is not True, done
            on = _when(lambda j=job, m=members[member], p=pods: _running(m, j) == p)
            ran[job] = (on, 0.0, pods * gpus)
            if member == IDC:  # Karmada sees the IDC member full before the next job is placed
                wait_until(
                    lambda: member_gpus_allocated(karmada, IDC) == "8", 60, 1, "IDC member full"
                )
        time.sleep(RUN_SECONDS)
        for job, *_rest in JOBS:
            gone = run_on_federation(
                "vcjob", {"tenant": TENANT, "name": job, "state": "absent", "federation": True}
            )
            assert gone.get("failed") is not True, gone
        for job, member, *_rest in JOBS:
            off = _when(lambda j=job, m=members[member]: _running(m, j) == 0)
            ran[job] = (ran[job][0], off, ran[job][2])
        end = math.ceil(time.time()) + 5
        time.sleep(end - time.time() + 15)  # the period's last evaluations are in
        yield {
            "start": _rfc3339(start),
            "end": _rfc3339(end),
            "seconds": end - start,
            "ran": ran,
            "urls": urls,
            "started": started,
        }
    finally:
        for job, *_rest in JOBS:
            run_on_federation(
                "vcjob", {"tenant": TENANT, "name": job, "state": "absent", "federation": True}
            )
        gone = run_on_federation("federation_tenant", {"name": TENANT, "state": "absent"})
        assert gone.get("failed") is not True, gone


def _report(run_on_federation, billed, **how: Any) -> dict[str, Any]:
    args = {
        "start": billed["start"],
        "end": billed["end"],
        "prices": PRICES,
        "currency": "EUR",
        "tenants": [TENANT],
        **how,
    }
    result = run_on_federation("usage_report", args)
    assert result.get("failed") is not True, result
    return result


def _rows(ledger: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["billing_type"]: r for r in ledger["rows"] if r["tenant"] == TENANT}


def _assert_ran(row: dict[str, Any], ran: tuple[float, float, int], resolution: Decimal) -> None:
    """The row holds the job's GPU-hours, within one scrape plus one evaluation interval
    (5 s each locally: 2 x resolution) and one poll per start and per stop of each pod."""
    on, off, gpus = ran
    truth = Decimal(str(off - on)) * gpus
    billed = Decimal(row["gpu_hours"]) * 3600
    slack = 2 * (2 * resolution + Decimal(str(POLL))) * gpus
    assert abs(billed - truth) <= slack, (row, float(truth), float(slack))
    assert billed > 0


def test_one_ledger_bills_each_member_on_its_line(billed, run_on_federation):
    both = dict(billed["urls"])
    result = _report(run_on_federation, billed, members=both)
    ledger = result["ledger"]
    resolution = Decimal(ledger["resolution_seconds"])
    rows = _rows(ledger)
    _assert_ran(rows["payg"], billed["ran"]["on-idc"], resolution)
    _assert_ran(rows["cloud"], billed["ran"]["on-cloud"], resolution)
    assert Decimal(rows["spot"]["gpu_hours"]) == 0
    assert Decimal(rows["subscription"]["gpu_hours"]) == 0
    # the subscription once, for the whole period, at its one size (from the IDC member)
    sizes = rows["subscription"]["sizes"]
    assert [s["subscription_gpus"] for s in sizes] == [str(SUBSCRIPTION_GPUS)], sizes
    held = Decimal(sizes[0]["hours"]) * 3600
    assert abs(held - billed["seconds"]) <= 2 * resolution, (held, billed["seconds"])
    assert ledger["reconciliation"]["pods"] == []
    print(
        f"\nfederation ledger: payg {rows['payg']['gpu_hours']} GPU-h, cloud "
        f"{rows['cloud']['gpu_hours']} GPU-h, ran {billed['ran']}; "
        f"{time.monotonic() - billed['started']:.0f} s so far"
    )


def test_a_member_alone_sees_only_its_part(billed, run_on_federation):
    idc = _rows(_report(run_on_federation, billed, members={IDC: billed["urls"][IDC]})["ledger"])
    cloud_result = _report(run_on_federation, billed, members={CLOUD: billed["urls"][CLOUD]})
    cloud = _rows(cloud_result["ledger"])
    resolution = Decimal(cloud_result["ledger"]["resolution_seconds"])
    _assert_ran(idc["payg"], billed["ran"]["on-idc"], resolution)
    assert Decimal(idc["cloud"]["gpu_hours"]) == 0
    _assert_ran(cloud["cloud"], billed["ran"]["on-cloud"], resolution)
    assert Decimal(cloud["payg"]["gpu_hours"]) == 0
    # a subscription is the IDC's: the cloud member alone bills none
    assert cloud["subscription"]["sizes"] == [] and Decimal(cloud["subscription"]["amount"]) == 0
    # the same Prometheus read as one cluster's: the member's node is not labelled cloud,
    # so only the member's location puts its GPU-seconds on the cloud line
    plain = _rows(
        _report(run_on_federation, billed, prometheus_url=billed["urls"][CLOUD])["ledger"]
    )
    assert Decimal(plain["cloud"]["gpu_hours"]) == 0
    assert plain["payg"]["gpu_hours"] == cloud["cloud"]["gpu_hours"]


def test_gathered_names_each_member_and_parsed_bills_it_again(billed, run_on_federation):
    both = dict(billed["urls"])
    gathered = _report(run_on_federation, billed, members=both, state="gathered")["gathered"]
    mine = [s["metric"] for s in gathered["tenant_billing"] if s["metric"].get("tenant") == TENANT]
    assert {(m["member"], m["location"]) for m in mine} == {(IDC, "idc"), (CLOUD, "cloud")}
    assert {s["metric"]["member"] for s in gathered["subscription_sizes"]} == {IDC}
    assert f"tenant-{TENANT}" in [n["metadata"]["name"] for n in gathered["namespaces"]]
    parsed = _report(run_on_federation, billed, members=both, state="parsed", facts=gathered)
    run = _report(run_on_federation, billed, members=both)
    assert parsed["ledger"] == run["ledger"]
    print(f"\nfederation metering: {time.monotonic() - billed['started']:.0f} s")


def test_the_playbook_bills_the_federation_as_the_module_does(
    federation, billed, run_on_federation, tmp_path
):
    """playbooks/usage_report.yml with ``metering_members``, its connection Karmada's API
    server: the file it writes is the module's ledger; both a Prometheus and members are
    refused in the playbook's words."""
    import json

    env = ansible_environment(federation["kubeconfig"])
    extra = {
        "metering_members": dict(billed["urls"]),
        "metering_prices": PRICES,
        "metering_currency": "EUR",
        "usage_start": billed["start"],
        "usage_end": billed["end"],
        "usage_tenants": [TENANT],
        "usage_report_dir": str(tmp_path),
    }
    rc, tasks = run_playbook(env, "usage_report.yml", extra)
    assert rc == 0, {n: r.get("msg") for n, r in tasks.items() if r.get("failed")}
    (written,) = tmp_path.glob("usage-*.json")
    module = _report(run_on_federation, billed, members=dict(billed["urls"]))
    assert json.loads(written.read_text()) == module["ledger"]
    assert f"members: {CLOUD}, {IDC}" in tasks["Summary"]["msg"]
    rc, tasks = run_playbook(
        env, "usage_report.yml", {**extra, "metering_prometheus_url": billed["urls"][IDC]}
    )
    assert rc != 0
    refusal = tasks["Refuse one Prometheus and members together"]["msg"]
    assert refusal.startswith("metering_members and metering_prometheus_url are both set"), refusal
    assert "Bill the period" not in tasks  # refused before Prometheus is asked
