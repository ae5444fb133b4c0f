# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module gpu_health on the fake cluster: the writes and their order, check mode,
idempotence, the request counts, the Prometheus signals, and ``parsed`` of ``gathered``
equal to the check-mode run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common import names
from ansible_collections.gpucloud.platform.plugins.module_utils.common.history import read_history
from ansible_collections.gpucloud.platform.plugins.module_utils.gpu_health import service
from ansible_collections.gpucloud.platform.plugins.module_utils.gpu_health.service import (
    HEALTH_FLOW,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.metering.service import (
    PrometheusError,
)
from ansible_collections.gpucloud.platform.plugins.modules import gpu_health
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster
from ansible_collections.gpucloud.platform.tests.unit.flow_checks import (
    assert_parsed_is_the_check_run,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.gpu_health.fixtures import (
    PARAMS,
    node,
    quarantined,
    tenant_workload,
    xid,
)


def sick_cluster(dry_run=False):
    return FakeCluster([node("n1", sick=True), node("n2"), *tenant_workload()], dry_run=dry_run)


def kinds_written(cluster):
    return [(verb, kind, name) for verb, kind, name in cluster.writes if kind != "Event"]


def test_a_sick_node_is_quarantined_and_its_jobs_handled_by_class(run_module):
    cluster = sick_cluster()
    out = run_module(gpu_health, cluster)
    assert out["changed"] is True
    assert out["quarantined"] == [
        {"node": "n1", "reasons": ["condition GpuUnhealthy: nvidia-smi failed"], "cordoned": True}
    ]
    n1 = cluster.kinds("Node")["n1"]
    assert n1["spec"]["unschedulable"] is True
    assert n1["spec"]["taints"][0]["key"] == names.TAINT_GPU_UNHEALTHY
    assert cluster.kinds("Node")["n2"].get("spec") == {}
    # node first, then the jobs in name order, then the counts, then the history
    assert kinds_written(cluster) == [
        ("merge-patch", "Node", "n1"),
        ("delete", "Job", "cheap"),
        ("delete", "Job", "poke"),
        ("evict", "Pod", "train-0"),
        ("evict", "Pod", "tune-0"),
        ("merge-patch", "Queue", "tenant-alpha-spot"),
        ("merge-patch", "Queue", "tenant-alpha-subscription"),
        ("apply", "ConfigMap", names.GPU_HEALTH_HISTORY),
    ]
    assert "serve-0" in {p["metadata"]["name"] for p in cluster.objects("Pod")}  # critical stays
    assert "train-1" in {p["metadata"]["name"] for p in cluster.objects("Pod")}  # other node
    queues = cluster.kinds("Queue")
    disrupted = names.ANNOTATION_GPU_QUARANTINE_DISRUPTED
    assert queues["tenant-alpha-subscription"]["metadata"]["annotations"][disrupted] == "6"
    assert queues["tenant-alpha-spot"]["metadata"]["annotations"][disrupted] == "1"
    assert out["disrupted"] == {
        "tenant-alpha-spot": {"before": 0, "after": 1},
        "tenant-alpha-subscription": {"before": 3, "after": 6},
    }
    events = {
        (e["involvedObject"]["kind"], e["involvedObject"]["name"], e["reason"])
        for e in cluster.objects("Event")
    }
    assert events == {
        ("Node", "n1", "GpuQuarantined"),
        ("Job", "cheap", "GpuQuarantined"),
        ("Job", "poke", "GpuQuarantined"),
        ("Job", "train", "GpuQuarantined"),
        ("Job", "tune", "GpuQuarantined"),
    }
    (entry,) = read_history(cluster.kinds("ConfigMap")[names.GPU_HEALTH_HISTORY])
    assert [q["node"] for q in entry["quarantined"]] == ["n1"]
    assert {j["name"] for j in entry["jobs"]} == {"cheap", "poke", "train", "tune"}
    assert out["counts"]["jobs_left_running"] == 1
    assert any("critical job tenant-alpha/serve" in str(w) for w in out["warnings"])
    assert out["unowned_pods"] == ["tenant-alpha/lonely on n1 (not owned by a Volcano Job)"]
    assert out["summary"][0].startswith("GPU health: 1 unhealthy node(s), 1 quarantined")
    # one list per kind, then the writes
    assert cluster.lists == ["Node", "Pod", "Job", "Queue"]


def test_the_second_run_writes_nothing(run_module):
    cluster = sick_cluster()
    run_module(gpu_health, cluster)
    # the deleted jobs' pods go with them (the garbage collector)
    for name in ("cheap-0", "poke-0"):
        cluster.store.pop(("Pod", "tenant-alpha", name))
    cluster.writes.clear()
    again = run_module(gpu_health, cluster)
    assert again["changed"] is False
    assert cluster.writes == []
    assert [s["node"] for s in again["still_quarantined"]] == ["n1"]
    assert [j["action"] for j in again["jobs"]] == ["left running"]
    assert again["requests"] == 4


def test_check_mode_sends_dry_runs_only_and_records_nothing(run_module):
    cluster = sick_cluster(dry_run=True)
    out = run_module(gpu_health, cluster, _ansible_check_mode=True)
    assert out["changed"] is True
    assert cluster.real_writes == []
    assert {w[0] for w in cluster.writes} == {"dry-run", "dry-run-delete", "dry-run-evict"}
    assert cluster.objects("Event") == []
    diffs = {d["before_header"]: d for d in out["diff"]}
    assert set(diffs) >= {"Node/n1", "Job/tenant-alpha/cheap", "Job/tenant-alpha/train"}


def test_a_healthy_cluster_reads_nodes_only(run_module):
    cluster = FakeCluster([node("n1"), *tenant_workload()])
    out = run_module(gpu_health, cluster)
    assert (out["changed"], out["requests"], cluster.lists) == (False, 1, ["Node"])
    assert out["summary"] == [
        "GPU health: 0 unhealthy node(s), 0 quarantined, 0 released, 0 still quarantined"
    ]


def test_the_guard_refuses_before_any_write(run_module):
    cluster = FakeCluster([node(f"n{i}", sick=True) for i in range(3)])
    out = run_module(gpu_health, cluster)
    assert out["failed"] is True and out["changed"] is False
    assert out["refused"] == ["n0", "n1", "n2"] and out["max_quarantine"] == 2
    assert "max_quarantine" in out["msg"]
    assert cluster.writes == []


def test_a_node_healthy_for_the_period_is_released_and_uncordoned(run_module):
    since = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    other = {"key": "maintenance", "effect": "NoSchedule"}
    cluster = FakeCluster([quarantined("n1", healthy_since=since, taints=[other])])
    out = run_module(gpu_health, cluster)
    assert [r["node"] for r in out["released"]] == ["n1"]
    n1 = cluster.kinds("Node")["n1"]
    assert n1["spec"] == {"taints": [other]}
    assert not set(n1["metadata"]["annotations"]) & {
        names.ANNOTATION_GPU_QUARANTINED_AT,
        names.ANNOTATION_GPU_HEALTHY_SINCE,
    }
    (event,) = cluster.objects("Event")
    assert (event["reason"], event["metadata"]["namespace"]) == ("GpuReleased", "default")


def test_a_node_healthy_again_is_marked_first(run_module):
    cluster = FakeCluster([quarantined("n1")])
    out = run_module(gpu_health, cluster)
    assert out["changed"] is True and out["released"] == []
    notes = cluster.kinds("Node")["n1"]["metadata"]["annotations"]
    assert names.ANNOTATION_GPU_HEALTHY_SINCE in notes
    assert cluster.kinds("Node")["n1"]["spec"]["unschedulable"] is True


def test_prometheus_signals_quarantine_and_the_queries_are_asked(run_module, monkeypatch):
    asked = []

    def answer(url, query, start, end, step, timeout):
        asked.append((url, query, start == end))
        return [xid("n2", 79, "5")] if "XID" in query else []

    monkeypatch.setattr(service, "query_range", answer)
    cluster = FakeCluster([node("n1"), node("n2")])
    out = run_module(gpu_health, cluster, prometheus_url="http://prom:9090/")
    assert out["unhealthy"] == {"n2": ["GPU 5 XID 79"]}
    assert [q["node"] for q in out["quarantined"]] == ["n2"]
    assert asked == [
        (
            "http://prom:9090",
            "max by (Hostname, hostname, gpu) (max_over_time(DCGM_FI_DEV_XID_ERRORS[10m])) > 0",
            True,
        ),
        (
            "http://prom:9090",
            "max by (Hostname, hostname, gpu) (DCGM_FI_DEV_ROW_REMAP_FAILURE) > 0",
            True,
        ),
    ]


def test_an_unreachable_prometheus_fails_before_any_write(run_module, monkeypatch):
    def down(url, query, *args):
        raise PrometheusError(url, query, "cannot reach Prometheus: refused")

    monkeypatch.setattr(service, "query_range", down)
    cluster = FakeCluster([node("n1", sick=True)])
    out = run_module(gpu_health, cluster, prometheus_url="http://prom:9090")
    assert out["failed"] is True and "prometheus_url" in out["msg"]
    assert cluster.writes == []


def test_bad_input_is_refused_before_connecting(run_module):
    out = run_module(gpu_health, FakeCluster(), xid_window="often")
    assert (out["failed"], out["requests"]) == (True, 0)
    assert out["errors"][0].startswith("xid_window")


@pytest.mark.parametrize(
    "objects",
    [
        [node("n1", sick=True), node("n2"), *tenant_workload()],
        [quarantined("n1"), *tenant_workload()],
        [quarantined("n1", sick=True, healthy_since="2026-01-01T00:00:00Z"), *tenant_workload()],
        [node(f"n{i}", sick=True) for i in range(3)],
        [node("n1")],
    ],
)
def test_parsed_of_gathered_is_the_check_mode_run(objects):
    gathered = HEALTH_FLOW.run({**PARAMS, "state": "gathered"}, FakeCluster(objects), False)
    facts = gathered["gathered"]
    check = FakeCluster(objects, dry_run=True)

    def run():
        # the same moment as the facts: the release timing depends on it
        answer = service.apply_health(
            service.parse_health(PARAMS),
            service.plan_health(
                service.parse_health(PARAMS),
                service.facts_in(service.parse_health(PARAMS), facts),
            ),
            check,
            True,
        )
        return answer

    assert_parsed_is_the_check_run(HEALTH_FLOW, run, {**PARAMS, "state": "parsed", "facts": facts})


def test_a_node_changed_since_the_read_is_read_again_and_its_new_taint_kept():
    cluster = FakeCluster([node("n1", sick=True)])
    request = service.parse_health(PARAMS)
    planned = service.plan_health(request, service.gather_health(request, cluster))
    other = {"key": "maintenance", "effect": "NoSchedule"}
    cluster.put(node("n1", sick=True, taints=[other]))  # a new resourceVersion
    service.apply_health(request, planned, cluster, False)
    taints = cluster.kinds("Node")["n1"]["spec"]["taints"]
    assert taints == [
        other,
        {"key": names.TAINT_GPU_UNHEALTHY, "value": "true", "effect": "NoSchedule"},
    ]
    assert [w for w in cluster.writes if w[1] == "Node"] == [("merge-patch", "Node", "n1")]


def test_marking_a_node_healthy_records_no_history_or_event(run_module):
    cluster = FakeCluster([quarantined("n1")])
    run_module(gpu_health, cluster)
    assert cluster.objects("Event") == [] and cluster.objects("ConfigMap") == []
