# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""spot_capacity, spot_reclaim and payg_capacity against the fake cluster."""

from __future__ import annotations

import pytest
from ansible.module_utils import _internal as module_internals

from ansible_collections.gpucloud.platform.plugins.modules import payg_capacity as payg_module
from ansible_collections.gpucloud.platform.plugins.modules import spot_capacity as capacity_module
from ansible_collections.gpucloud.platform.plugins.modules import spot_reclaim as reclaim_module
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import (
    RefusingCluster,
    SpotCluster,
    api_error,
    queue,
    spot_cluster,
    spot_objects,
)

GPU = "nvidia.com/gpu"


def job_deletes(cluster):
    return [w[2] for w in cluster.real_writes if w[:2] == ("delete", "Job")]


def queue_spec(cluster, name):
    return cluster.store[cluster.key("Queue", None, name)]["spec"]


def test_spot_capacity_applies_changed_queues_then_is_idempotent(run_module):
    cluster = spot_cluster()
    first = run_module(capacity_module, cluster)
    assert first["changed"] is True and first["requests"] == 2 + 2
    assert first["idle"][GPU] == 64 - 48 - 4
    rows = {r["tenant"]: r for r in first["tenants"]}
    assert rows["alpha"]["new"][GPU] == 10 and rows["beta"]["new"][GPU] == 2
    assert rows["alpha"]["old"] == {GPU: 0} and rows["alpha"]["subscription"] == 40
    assert first["updated"] == ["tenant-alpha-spot", "tenant-beta-spot"]
    diffs = {d["after_header"]: d for d in first["diff"]}  # one per queue (rule diff-per-object)
    assert list(diffs) == ["tenant-alpha-spot", "tenant-beta-spot"]
    assert diffs["tenant-alpha-spot"]["after"]["capability"][GPU] == 10
    live = cluster.store[cluster.key("Queue", None, "tenant-alpha-spot")]
    assert live["spec"]["capability"][GPU] == 10 and live["spec"]["parent"] == "root"
    assert live["metadata"]["labels"]["platform.io/queue-type"] == "spot"
    assert ("apply:gpucloud-platform-capacity", "Queue", "tenant-alpha-spot") in cluster.writes
    assert first["counts"] == {"tenants": 2, "spot_queues": 2, "changed": 2, "unchanged": 0}
    second = run_module(capacity_module, cluster)
    assert second["changed"] is False and second["requests"] == 2 and second["updated"] == []
    # nothing changed: no row, the counts say how many queues were looked at
    assert second["tenants"] == [] and second["counts"]["unchanged"] == 2
    table = run_module(capacity_module, cluster, report="all")
    assert [r["tenant"] for r in table["tenants"]] == ["alpha", "beta"]
    assert not any(r["changed"] for r in table["tenants"])


def test_spot_capacity_in_check_mode_sends_dry_runs_only(run_module):
    cluster = spot_cluster(dry_run=True)
    out = run_module(capacity_module, cluster, _ansible_check_mode=True)
    assert out["changed"] is True and out["updated"] == ["tenant-alpha-spot", "tenant-beta-spot"]
    assert cluster.real_writes == [] and queue_spec(cluster, "tenant-alpha-spot")["capability"] == {
        GPU: 0
    }


def test_spot_capacity_without_diff_mode_returns_no_diff(run_module):
    out = run_module(capacity_module, spot_cluster(), _ansible_diff=False)
    assert out["changed"] is True and "diff" not in out


def test_spot_capacity_warns_about_a_subscription_without_spot_queue(run_module, monkeypatch):
    # As in a module's own process: once a test imported Ansible's controller
    # code, warnings would go to the controller's display instead of the result.
    monkeypatch.setattr(module_internals, "is_controller", False)
    cluster = SpotCluster([*spot_objects(), queue("gamma", "subscription", deserved={GPU: 8})])
    out = run_module(capacity_module, cluster, report="all")
    rows = {r["tenant"]: r for r in out["tenants"]}
    assert rows["gamma"]["queue"] is None and rows["gamma"]["old"] is None
    assert any(
        "tenant 'gamma' has a subscription but no spot queue" in str(w) for w in out["warnings"]
    )


def test_spot_capacity_failing_part_way_names_what_it_wrote(run_module):
    refusal = api_error(message="spec.capability: Invalid value")
    cluster = RefusingCluster(
        spot_objects(), refuse={("apply", "Queue", "tenant-beta-spot"): refusal}
    )
    out = run_module(capacity_module, cluster)
    assert out["failed"] is True
    assert out["msg"].startswith(
        "updating spot queues failed after 1 change(s): spec.capability: Invalid value; "
    )
    # two lists, the apply that went through and the one refused
    assert out["done"] == ["tenant-alpha-spot"] and out["requests"] == 2 + 2
    # one queue was written before the refusal: the report says so
    assert "tenants" in out and out["changed"] is True


def test_spot_capacity_losing_the_api_server_part_way_names_what_it_wrote(run_module):
    from urllib3.exceptions import MaxRetryError

    gone = MaxRetryError(None, "/apis/scheduling.volcano.sh/v1beta1/queues", "Connection refused")
    cluster = RefusingCluster(spot_objects(), refuse={("apply", "Queue", "tenant-beta-spot"): gone})
    out = run_module(capacity_module, cluster)
    assert out["failed"] is True and out["changed"] is True
    assert out["done"] == ["tenant-alpha-spot"]
    assert out["msg"].startswith(
        "updating spot queues failed after 1 change(s): cannot reach the Kubernetes API server ("
    )
    assert out["msg"].endswith("every write is idempotent, so running again finishes the change")


def test_a_reclaim_that_loses_the_api_server_reports_its_deletes_not_the_lease(
    run_module, monkeypatch
):
    from urllib3.exceptions import MaxRetryError

    monkeypatch.setattr(module_internals, "is_controller", False)  # warnings into the result
    gone = MaxRetryError(None, "/apis/batch.volcano.sh/v1alpha1", "Connection refused")
    cluster = RefusingCluster(
        spot_objects(),
        refuse={("delete", "Job", "spot-b"): gone, ("delete", "Lease", "spot-reclaim"): gone},
    )
    out = run_module(reclaim_module, cluster, need=16)
    assert out["failed"] is True and out["changed"] is True
    assert out["done"] == ["tenant-alpha/spot-a"]
    assert "cannot reach the Kubernetes API server" in out["msg"]
    assert any("could not be given back" in str(w) for w in out["warnings"])


def test_spot_capacity_refuses_a_bad_selector_before_any_request(run_module):
    cluster = spot_cluster()
    out = run_module(capacity_module, cluster, node_selector={"pool": 3})
    assert out["failed"] is True and "node_selector.pool: 3 must be a string" in out["msg"]
    assert cluster.requests == 0 and out["requests"] == 0


def test_spot_reclaim_check_mode_then_real(run_module):
    cluster = spot_cluster()
    preview = run_module(reclaim_module, cluster, need=16, _ansible_check_mode=True)
    assert [v["name"] for v in preview["victims"]] == ["spot-a", "spot-b"]
    assert preview["changed"] is True and preview["waited"] is False
    assert cluster.writes == []
    done = run_module(
        reclaim_module, cluster, need=16, demand_reason="order 9", holder_identity="t"
    )
    assert job_deletes(cluster) == ["spot-a", "spot-b"]
    assert done["reclaim"]["reason"] == "order 9" and done["reclaim"]["freed"] == 12
    assert done["history"][0]["victims"] == done["victims"]
    assert done["history"][0]["holder"].startswith("t/")  # the identity, then this run
    count = "tenant-alpha-spot platform.io/spot-reclaimed-jobs"
    assert done["diff"]["after"] == {
        "tenant-alpha/spot-a": "deleted",
        "tenant-alpha/spot-b": "deleted",
        count: "2",
    }
    assert done["diff"]["before"] == {
        "tenant-alpha/spot-a": "running",
        "tenant-alpha/spot-b": "running",
        count: "0",
    }
    # Check mode said exactly what the run then did, the queue's count included.
    assert preview["diff"] == done["diff"] and preview["counted"] == done["counted"]


def test_spot_reclaim_nothing_needed(run_module):
    cluster = spot_cluster()
    out = run_module(reclaim_module, cluster, need=4)
    assert out["changed"] is False and out["shortfall"] == 0 and job_deletes(cluster) == []
    assert cluster.writes == []  # not even the Lease: nothing was to be reclaimed


def test_spot_reclaim_of_a_sale_counts_sold_gpus_as_taken(run_module):
    # 64 GPUs, 52 sold, spot holds 24, 4 free: a 4-GPU need is met from the free
    # ones, but a 4-GPU sale leaves 8 unsold for spot, which holds 24: 16 go.
    cluster = spot_cluster()
    free = run_module(reclaim_module, cluster, need=4, _ansible_check_mode=True)
    assert free["shortfall"] == 0 and "sold" not in free
    sale = run_module(reclaim_module, cluster, need=4, need_from="unsold", holder_identity="t")
    assert (sale["need_from"], sale["sold"], sale["spot"]) == ("unsold", 52, 24)
    assert sale["shortfall"] == 16 and sale["freed"] == 16
    assert job_deletes(cluster) == ["spot-a", "spot-b", "spot-c"]
    # need 0 asks which spot GPUs hold sold ones: spot-d's 8 fit the 12 unsold.
    again = run_module(reclaim_module, cluster, need=0, need_from="unsold")
    assert again["shortfall"] == 0 and again["spot"] == 8 and again["changed"] is False


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"need": -3}, "need: -3 is negative"),
        ({"need": 1, "history_size": -1}, "history_size: -1 is too small"),
        ({"need": 1, "lease_duration": 0}, "lease_duration: 0 is too small"),
        ({"need": 1, "demand_reason": " "}, "demand_reason: must say what the GPUs are for"),
    ],
)
def test_spot_reclaim_bad_input_fails_before_any_request(run_module, args, message):
    cluster = spot_cluster()
    out = run_module(reclaim_module, cluster, **args)
    assert out["failed"] is True and message in out["msg"] and cluster.requests == 0
    assert message in " ".join(out["errors"])


def test_spot_reclaim_more_than_spot_holds_fails_before_deleting(run_module):
    cluster = spot_cluster()
    out = run_module(reclaim_module, cluster, need=60)
    assert out["failed"] is True and "56 must be reclaimed" in out["msg"]
    assert job_deletes(cluster) == [] and out["changed"] is False
    # what the run found is reported with the refusal
    assert (out["pool"], out["free"], out["shortfall"]) == (64, 4, 56)


def test_spot_reclaim_delete_refused_part_way_reports_what_went(run_module):
    refusal = api_error(403, 'jobs.batch.volcano.sh "spot-b" is forbidden')
    cluster = RefusingCluster(spot_objects(), refuse={("delete", "Job", "spot-b"): refusal})
    out = run_module(reclaim_module, cluster, need=16)
    assert out["failed"] is True and out["changed"] is True
    assert out["msg"].startswith("reclaiming spot jobs failed after 1 change(s): jobs.batch")
    assert out["done"] == ["tenant-alpha/spot-a"] and job_deletes(cluster) == ["spot-a"]
    assert [v["name"] for v in out["victims"]] == ["spot-a"] and out["freed"] == 4
    assert cluster.objects("Lease") == []  # released


def test_payg_grow_reclaims_spot_first_then_applies(run_module):
    cluster = spot_cluster(alpha_subscription=28)
    out = run_module(
        payg_module, cluster, tenant="alpha", capability={GPU: 12}, holder_identity="t"
    )
    assert out["changed"] is True and out["updated"] == ["tenant-alpha-payg"]
    # growth 12 out of 24 unsold leaves 12 for spot, which holds 24 (4 GPUs are free,
    # but sold): 12 reclaimed, spot-a (4) then spot-b (8) in victim order
    assert out["reclaim"]["shortfall"] == 12 and job_deletes(cluster) == ["spot-a", "spot-b"]
    assert out["reclaim"]["victims"][0]["gpus"] == 4
    assert (
        "pay-as-you-go growth of tenant alpha by 12 GPUs" in out["reclaim"]["history"][0]["reason"]
    )
    live = queue_spec(cluster, "tenant-alpha-payg")
    assert live["capability"] == {GPU: 12} and live["deserved"] == {GPU: 12}
    (payg_diff,) = out["diff"]
    assert payg_diff["after_header"] == "tenant-alpha-payg" and payg_diff["after"] == {
        "capability": {GPU: 12},
        "deserved": {GPU: 12},
    }
    again = run_module(payg_module, cluster, tenant="alpha", capability={GPU: 12})
    assert again["changed"] is False and again["reclaim"] is None


def test_payg_grow_in_check_mode_deletes_and_writes_nothing(run_module):
    cluster = spot_cluster(dry_run=True, alpha_subscription=28)
    out = run_module(
        payg_module, cluster, tenant="alpha", capability={GPU: 12}, _ansible_check_mode=True
    )
    assert out["changed"] is True and out["updated"] == ["tenant-alpha-payg"]
    assert [v["name"] for v in out["reclaim"]["victims"]] == ["spot-a", "spot-b"]
    assert cluster.real_writes == [] and queue_spec(cluster, "tenant-alpha-payg")["capability"] == {
        GPU: 0
    }


def test_payg_oversell_is_refused_before_any_change(run_module):
    cluster = spot_cluster()
    out = run_module(payg_module, cluster, tenant="alpha", capability={GPU: 17})
    assert out["failed"] is True and out["changed"] is False
    assert "17 for the pay-as-you-go queue of tenant 'alpha' exceeds" in out["msg"]
    assert "(64 in the pool - 52 sold as subscriptions and pay-as-you-go = 12)" in out["msg"]
    assert out["errors"][0].startswith("capability.nvidia.com/gpu: 17 for")
    assert out["queues"][0]["new"] == {GPU: 17}
    assert cluster.writes == []


def test_payg_shrink_below_use_and_unknown_tenant_fail_clearly(run_module):
    cluster = spot_cluster()
    out = run_module(payg_module, cluster, tenant="beta", capability={GPU: 2})
    assert out["failed"] is True and "2 is below what tenant 'beta' uses" in out["msg"]
    out = run_module(payg_module, cluster, tenant="nobody", capability={GPU: 2})
    assert out["failed"] is True and "'nobody' has no pay-as-you-go queue" in out["msg"]
    out = run_module(payg_module, cluster, tenant="Bad_Name", capability={GPU: 2})
    assert out["failed"] is True and "tenant: 'Bad_Name' is not a DNS-1123 label" in out["msg"]
    assert out["requests"] == 0  # refused before connecting
    assert cluster.writes == []


def test_payg_grow_without_reclaim_fails_when_short(run_module):
    cluster = spot_cluster(alpha_subscription=28)
    out = run_module(payg_module, cluster, tenant="alpha", capability={GPU: 8}, reclaim=False)
    assert (
        out["failed"] is True
        and "growing by 8 GPUs needs 8 spot GPUs reclaimed: 24 GPUs are unsold and spot jobs hold 24"
        in out["msg"]
    )
    assert cluster.writes == []


def test_payg_fit_to_use_shrinks_every_queue_and_never_grows(run_module):
    objects = spot_objects()
    beta = next(o for o in objects if o["metadata"]["name"] == "tenant-beta-payg")
    beta["spec"]["capability"] = beta["spec"]["deserved"] = {GPU: 10}
    cluster = SpotCluster(objects)
    out = run_module(payg_module, cluster, fit_to_use=True)
    rows = {r["tenant"]: r for r in out["queues"]}
    assert rows["beta"]["new"] == {GPU: 4} and rows["beta"]["changed"] is True
    assert rows["alpha"]["changed"] is False and out["reclaim"] is None
    assert out["updated"] == ["tenant-beta-payg"]
    assert queue_spec(cluster, "tenant-beta-payg")["capability"] == {GPU: 4}


def test_payg_apply_refused_after_the_reclaim_reports_the_deletes(run_module):
    refusal = api_error(message="spec.capability: Invalid value")
    cluster = RefusingCluster(
        spot_objects(alpha_subscription=28),
        refuse={("apply", "Queue", "tenant-alpha-payg"): refusal},
    )
    out = run_module(payg_module, cluster, tenant="alpha", capability={GPU: 12})
    assert out["failed"] is True and out["changed"] is True
    assert out["msg"].startswith("updating pay-as-you-go queues failed after 2 change(s): ")
    assert out["done"] == ["tenant-alpha/spot-a", "tenant-alpha/spot-b"] and out["updated"] == []
    assert [v["name"] for v in out["reclaim"]["victims"]] == ["spot-a", "spot-b"]


def test_payg_needs_capability_or_fit(run_module):
    out = run_module(payg_module, spot_cluster(), tenant="alpha")
    assert out["failed"] is True and "fit_to_use" in out["msg"]
    assert (
        out["msg"] == "capability: give the new capability (with tenant), or set fit_to_use: true"
    )
