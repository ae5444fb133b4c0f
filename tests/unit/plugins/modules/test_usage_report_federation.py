# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""usage_report with ``members`` (``federation/ledger_io``): the fake cluster as Karmada's
API server (its Clusters and Namespaces) and a fake Prometheus per member, told apart by
host."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.metering import service
from ansible_collections.gpucloud.platform.plugins.modules import usage_report
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster
from ansible_collections.gpucloud.platform.tests.unit.plugins.modules.test_usage_report import (
    END,
    HOUR,
    JOBS,
    PRICES,
    SIZES,
    START,
    TENANT,
    UNCLAIMED,
    FakePrometheus,
    idc,
    namespace,
)

# Neither member's node is labelled cloud: its series say idc, its member says where it is.
IDC_SERIES = {
    TENANT: [(idc(tenant="alpha", billing_type="payg"), [(0, HOUR, 2)])],
    JOBS: [],
    SIZES: [({"tenant": "alpha", "gpus": "16"}, [(0, 24 * HOUR, 1)])],
    UNCLAIMED: [],
}
CLOUD_SERIES = {
    TENANT: [(idc(tenant="alpha", billing_type="payg"), [(0, 2 * HOUR, 1)])],
    JOBS: [],
    # a copy of the subscription Queue in the cloud member bills nothing
    SIZES: [({"tenant": "alpha", "gpus": "16"}, [(0, 24 * HOUR, 1)])],
    UNCLAIMED: [],
}
MEMBERS = {"idc-1": "http://prom.idc-1:9090", "cloud-1": "http://prom.cloud-1:9090"}


def karmada(**locations: str | None) -> FakeCluster:
    clusters = [
        {
            "apiVersion": "cluster.karmada.io/v1alpha1",
            "kind": "Cluster",
            "metadata": {
                "name": name,
                "labels": {} if where is None else {"platform.io/node-location": where},
            },
        }
        for name, where in (locations or {"idc-1": "idc", "cloud-1": "cloud"}).items()
    ]
    return FakeCluster([*clusters, namespace("alpha")])


@pytest.fixture
def prometheus(monkeypatch):
    """One fake Prometheus per member, as the service's ``open_url``."""
    fakes = {
        "prom.idc-1:9090": FakePrometheus(IDC_SERIES),
        "prom.cloud-1:9090": FakePrometheus(CLOUD_SERIES),
    }
    monkeypatch.setattr(
        service, "open_url", lambda url, **kw: fakes[urlsplit(url).netloc].open_url(url, **kw)
    )
    return fakes


def report(run_module, fake=None, **args):
    base = {"members": MEMBERS, "start": START, "end": END, "step": 3600, "prices": PRICES}
    return run_module(usage_report, fake or karmada(), **{**base, **args})


def rows(out):
    return {(r["tenant"], r["billing_type"]): r for r in out["ledger"]["rows"]}


def test_one_ledger_from_karmada_and_each_members_prometheus(run_module, prometheus):
    fake = karmada()
    out = report(run_module, fake)
    assert not out.get("failed"), out
    assert fake.lists == ["Cluster", "Namespace"] and fake.writes == []
    assert out["queries"] == 10  # each member: its rules, then four rules in one window
    alpha = rows(out)
    assert alpha[("alpha", "payg")]["gpu_hours"] == "2.000000"
    assert alpha[("alpha", "cloud")]["gpu_hours"] == "2.000000"
    assert out["summary"][-1] == "members: cloud-1, idc-1"
    # bought once: 16 GPUs for the day, from the IDC member only
    assert alpha[("alpha", "subscription")]["included_gpu_hours"] == "384.000000"


def test_a_member_alone_bills_its_own_part(run_module, prometheus):
    out = report(run_module, members={"cloud-1": MEMBERS["cloud-1"]})
    alpha = rows(out)
    assert alpha[("alpha", "cloud")]["gpu_hours"] == "2.000000"
    assert alpha[("alpha", "payg")]["gpu_hours"] == "0.000000"
    assert alpha[("alpha", "subscription")]["sizes"] == []
    assert prometheus["prom.idc-1:9090"].calls == []


def test_gathered_labels_each_series_with_its_member_and_parsed_bills_it(run_module, prometheus):
    gathered = report(run_module, state="gathered")["gathered"]
    assert sorted(
        (s["metric"]["member"], s["metric"]["location"]) for s in gathered["tenant_billing"]
    ) == [
        ("cloud-1", "cloud"),
        ("idc-1", "idc"),
    ]
    assert [s["metric"]["member"] for s in gathered["subscription_sizes"]] == ["idc-1"]
    parsed = report(run_module, state="parsed", facts=gathered)
    assert parsed["ledger"] == report(run_module)["ledger"]


def test_a_member_karmada_does_not_have_is_refused_naming_it(run_module, prometheus):
    out = report(run_module, members={**MEMBERS, "edge-9": "http://prom.edge-9:9090"})
    assert out["failed"] is True
    assert out["msg"].startswith("members.edge-9: is not a member of the federation")
    assert all(f.calls == [] for f in prometheus.values())


def test_a_member_without_a_location_is_refused_naming_it(run_module, prometheus):
    out = report(run_module, karmada(**{"idc-1": "idc", "cloud-1": None}))
    assert out["failed"] is True
    assert "clusters[cloud-1].metadata.labels.platform.io/node-location" in out["msg"]


def test_a_member_evaluated_at_another_interval_is_refused(run_module, prometheus):
    prometheus["prom.idc-1:9090"].interval = 30
    out = report(run_module)
    assert out["failed"] is True
    assert out["msg"].startswith("members.idc-1: its metering rules are evaluated every 30 s")


def test_a_members_prometheus_that_fails_names_the_member(run_module, monkeypatch):
    def refused(url, **_kw):
        raise OSError("connection refused")

    monkeypatch.setattr(service, "open_url", refused)
    out = report(run_module)
    assert out["failed"] is True and out["member"] == "cloud-1"
    assert out["prometheus_url"] == MEMBERS["cloud-1"]
    assert out["msg"].startswith("members.cloud-1: cannot reach Prometheus: connection refused")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ({"prometheus_url": "http://prom:9090"}, "members: is given with prometheus_url"),
        ({"members": None}, "prometheus_url: is required"),
        ({"members": {}}, "members: {}: give each member's name"),
        ({"members": {"idc-1": "prom:9090"}}, "members.idc-1: 'prom:9090' is not an http(s) URL"),
    ],
)
def test_prometheus_url_or_members_never_both(run_module, prometheus, args, said):
    out = report(run_module, **args)
    assert out["failed"] is True and said in out["msg"], out["msg"]
