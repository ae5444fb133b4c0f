# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""spot_capacity, spot_reclaim and payg_capacity against an in-memory cluster."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpucloud.platform.plugins.modules import payg_capacity as payg_module
from ansible_collections.gpucloud.platform.plugins.modules import spot_capacity as capacity_module
from ansible_collections.gpucloud.platform.plugins.modules import spot_reclaim as reclaim_module

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from spot_fixtures import spot_cluster

GPU = "nvidia.com/gpu"


def run(module, cluster, monkeypatch, capsys, **args):
    monkeypatch.setattr(module.Cluster, "from_module", classmethod(lambda cls, m: cluster))
    args.setdefault("_ansible_diff", True)
    cluster.requests = 0
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    return json.loads(capsys.readouterr().out)


def job_deletes(cluster):
    return [w[2] for w in cluster.writes if w[:2] == ("delete", "Job")]


def test_spot_capacity_applies_changed_queues_then_is_idempotent(monkeypatch, capsys):
    cluster = spot_cluster()
    first = run(capacity_module, cluster, monkeypatch, capsys)
    assert first["changed"] is True and first["requests"] == 2 + 2
    assert first["idle"][GPU] == 64 - 48 - 4
    rows = {r["tenant"]: r for r in first["tenants"]}
    assert rows["alpha"]["new"][GPU] == 10 and rows["beta"]["new"][GPU] == 2
    assert rows["alpha"]["old"] == {GPU: 0} and rows["alpha"]["subscription"] == 40
    assert first["updated"] == ["tenant-alpha-spot", "tenant-beta-spot"]
    assert first["diff"]["after"]["tenant-alpha-spot"]["capability"][GPU] == 10
    live = cluster.store[("Queue", None, "tenant-alpha-spot")]
    assert live["spec"]["capability"][GPU] == 10 and live["spec"]["parent"] == "root"
    assert live["metadata"]["labels"]["platform.io/queue-type"] == "spot"
    second = run(capacity_module, cluster, monkeypatch, capsys)
    assert second["changed"] is False and second["requests"] == 2 and second["updated"] == []


def test_spot_capacity_failing_part_way_names_what_it_wrote(monkeypatch, capsys):
    from kubernetes.client.rest import ApiException

    cluster = spot_cluster()
    real_apply = cluster.apply

    def apply_then_refuse(manifest, field_manager="gpucloud-platform"):
        if manifest["metadata"]["name"] == "tenant-beta-spot":
            exc = ApiException(status=422)
            exc.body = json.dumps({"message": "spec.capability: Invalid value"})
            raise exc
        return real_apply(manifest, field_manager=field_manager)

    cluster.apply = apply_then_refuse
    out = run(capacity_module, cluster, monkeypatch, capsys)
    assert out["failed"] is True
    assert out["msg"].startswith(
        "updating spot queues failed after 1 change(s): spec.capability: Invalid value; "
    )
    assert out["done"] == ["tenant-alpha-spot"] and out["requests"] == 2 + 1  # lists, one apply
    # one queue was written before the refusal: the report says so
    assert "tenants" in out and out["changed"] is True


def test_spot_capacity_refuses_a_bad_selector_before_any_request(monkeypatch, capsys):
    cluster = spot_cluster()
    out = run(capacity_module, cluster, monkeypatch, capsys, node_selector={"pool": 3})
    assert out["failed"] is True and "node_selector.pool: 3 must be a string" in out["msg"]
    assert cluster.requests == 0


def test_spot_reclaim_check_mode_then_real(monkeypatch, capsys):
    cluster = spot_cluster()
    preview = run(reclaim_module, cluster, monkeypatch, capsys, need=16, _ansible_check_mode=True)
    assert [v["name"] for v in preview["victims"]] == ["spot-a", "spot-b"] and preview[
        "changed"
    ] is True
    assert cluster.writes == []
    done = run(
        reclaim_module,
        cluster,
        monkeypatch,
        capsys,
        need=16,
        demand_reason="order 9",
        holder_identity="t",
    )
    assert job_deletes(cluster) == ["spot-a", "spot-b"]
    assert done["reclaim"]["reason"] == "order 9" and done["reclaim"]["freed"] == 12
    assert done["history"][0]["victims"] == done["victims"]
    assert done["diff"]["after"] == {
        "tenant-alpha/spot-a": "deleted",
        "tenant-alpha/spot-b": "deleted",
    }


def test_spot_reclaim_nothing_needed(monkeypatch, capsys):
    cluster = spot_cluster()
    out = run(reclaim_module, cluster, monkeypatch, capsys, need=4)
    assert out["changed"] is False and out["shortfall"] == 0 and job_deletes(cluster) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"need": -3}, "need: -3 is negative"),
        ({"need": 1, "history_size": -1}, "history_size: -1 is too small"),
        ({"need": 1, "lease_duration": 0}, "lease_duration: 0 is too small"),
        ({"need": 1, "demand_reason": " "}, "demand_reason: must say what the GPUs are for"),
    ],
)
def test_spot_reclaim_bad_input_fails_before_any_request(monkeypatch, capsys, args, message):
    cluster = spot_cluster()
    out = run(reclaim_module, cluster, monkeypatch, capsys, **args)
    assert out["failed"] is True and message in out["msg"] and cluster.requests == 0


def test_spot_reclaim_more_than_spot_holds_fails_before_deleting(monkeypatch, capsys):
    cluster = spot_cluster()
    out = run(reclaim_module, cluster, monkeypatch, capsys, need=60)
    assert (
        out["failed"] is True
        and "56 must be reclaimed" in out["msg"]
        and job_deletes(cluster) == []
    )


def test_payg_grow_reclaims_spot_first_then_applies(monkeypatch, capsys):
    cluster = spot_cluster()
    out = run(
        payg_module,
        cluster,
        monkeypatch,
        capsys,
        tenant="alpha",
        capability={GPU: 12},
        holder_identity="t",
    )
    assert out["changed"] is True and out["updated"] == ["tenant-alpha-payg"]
    # growth 12, 4 free: 8 reclaimed, spot-a (4) then spot-b (8) in victim order
    assert out["reclaim"]["shortfall"] == 8 and job_deletes(cluster) == ["spot-a", "spot-b"]
    assert (
        "pay-as-you-go growth of tenant alpha by 12 GPUs" in out["reclaim"]["history"][0]["reason"]
    )
    live = cluster.store[("Queue", None, "tenant-alpha-payg")]["spec"]
    assert live["capability"] == {GPU: 12} and live["deserved"] == {GPU: 12}
    again = run(payg_module, cluster, monkeypatch, capsys, tenant="alpha", capability={GPU: 12})
    assert again["changed"] is False and again["reclaim"] is None


def test_payg_oversell_is_refused_before_any_change(monkeypatch, capsys):
    cluster = spot_cluster()
    out = run(payg_module, cluster, monkeypatch, capsys, tenant="alpha", capability={GPU: 17})
    assert out["failed"] is True
    assert "17 for the pay-as-you-go queue of tenant 'alpha' exceeds" in out["msg"]
    assert "(64 in the pool - 52 sold as subscriptions and pay-as-you-go = 12)" in out["msg"]
    assert cluster.writes == []


def test_payg_shrink_below_use_and_unknown_tenant_fail_clearly(monkeypatch, capsys):
    cluster = spot_cluster()
    out = run(payg_module, cluster, monkeypatch, capsys, tenant="beta", capability={GPU: 2})
    assert out["failed"] is True and "2 is below what tenant 'beta' uses" in out["msg"]
    out = run(payg_module, cluster, monkeypatch, capsys, tenant="nobody", capability={GPU: 2})
    assert out["failed"] is True and "'nobody' has no pay-as-you-go queue" in out["msg"]
    out = run(payg_module, cluster, monkeypatch, capsys, tenant="Bad_Name", capability={GPU: 2})
    assert out["failed"] is True and "tenant: 'Bad_Name' is not a DNS-1123 label" in out["msg"]
    assert cluster.writes == []


def test_payg_grow_without_reclaim_fails_when_short(monkeypatch, capsys):
    cluster = spot_cluster()
    out = run(
        payg_module,
        cluster,
        monkeypatch,
        capsys,
        tenant="alpha",
        capability={GPU: 8},
        reclaim=False,
    )
    assert out["failed"] is True and "needs 4 more free GPUs than the 4 free of 64" in out["msg"]
    assert cluster.writes == []


def test_payg_fit_to_use_shrinks_every_queue_and_never_grows(monkeypatch, capsys):
    cluster = spot_cluster()
    cluster.store[("Queue", None, "tenant-beta-payg")]["spec"]["capability"] = {GPU: 10}
    cluster.store[("Queue", None, "tenant-beta-payg")]["spec"]["deserved"] = {GPU: 10}
    out = run(payg_module, cluster, monkeypatch, capsys, fit_to_use=True)
    rows = {r["tenant"]: r for r in out["queues"]}
    assert rows["beta"]["new"] == {GPU: 4} and rows["beta"]["changed"] is True
    assert rows["alpha"]["changed"] is False and out["reclaim"] is None
    assert out["updated"] == ["tenant-beta-payg"]


def test_payg_needs_capability_or_fit(monkeypatch, capsys):
    out = run(payg_module, spot_cluster(), monkeypatch, capsys, tenant="alpha")
    assert out["failed"] is True and "fit_to_use" in out["msg"]
