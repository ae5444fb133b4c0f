# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``tenant_catalog`` service over the fake cluster: the read count, what a run
writes, refusals before the first write, pruning and check mode. The same flows run
on the real API server in tests/integration/test_tenant_catalog.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.catalog import (
    service,
    source_io,
    steps,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PartialWrite,
    PlatformValidationError,
    Refused,
)
from ansible_collections.gpucloud.platform.plugins.modules import tenant_catalog
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster, conflict
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.tenants.tenant_objects import (
    GPU,
    podgroup,
    pool,
    vcjob,
)


def params(tenants, **over):
    p = {
        "state": "present",
        "tenants": tenants,
        "src": None,
        "defaults": {},
        "pod_cidr": None,
        "service_cidr": None,
        "node_selector": {},
        "oversell_check": True,
        "prune": False,
        "force": False,
        "on_refusal": "fail",
        "workers": 4,
        "progress_file": None,
    }
    p.update(over)
    return p


def fleet(n=3, gpus=2):
    return [
        {"name": f"t{i}", "subscription": {GPU: gpus, "cpu": 8, "memory": "32Gi"}} for i in range(n)
    ]


def test_a_fleet_is_read_with_one_list_per_kind_whatever_its_size():
    for n in (2, 20):
        cluster = pool(nodes=8)
        result = service.run_catalog(params(fleet(n, gpus=1)), cluster)
        assert result["counts"]["created"] == n
        assert sorted(cluster.lists) == sorted(
            [
                "Namespace",
                "Role",
                "RoleBinding",
                "NetworkPolicy",
                "ConfigMap",
                "ClusterRole",
                "ClusterRoleBinding",
                "ResourceQuota",
                "LimitRange",
                "Queue",
                "PodGroup",
                "Node",
                "ServiceCIDR",
                # Rule catalog-sale, once per run: the reclaim's plan (Nodes, unfinished
                # Pods, Queues, spot Jobs, running Volcano pods) and the spot recompute's.
                *SALE_LISTS,
            ]
        )


SALE_LISTS = ["Node", "Pod", "Queue", "Job", "Pod", "Node", "Queue"]


def test_an_unchanged_run_only_reads():
    cluster = pool(nodes=8)
    service.run_catalog(params(fleet()), cluster)
    cluster.writes.clear()
    result = service.run_catalog(params(fleet()), cluster)
    assert cluster.writes == []
    assert result["changed"] is False
    assert result["counts"]["unchanged"] == 3


def test_one_changed_tenant_writes_only_its_objects():
    cluster = pool(nodes=8)
    service.run_catalog(params(fleet()), cluster)
    cluster.writes.clear()
    tenants = fleet()
    tenants[1]["subscription"][GPU] = 3
    result = service.run_catalog(params(tenants), cluster)
    assert {r["name"]: r["status"] for r in result["summary"]} == {
        "t0": "unchanged",
        "t1": "changed",
        "t2": "unchanged",
    }
    assert {o["name"] for o in result["objects"]} == {"tenant-t1-subscription"}
    # The sale's recompute: one GPU more sold is one less idle for every spot queue.
    assert {w[2] for w in cluster.writes} == {"tenant-t1-subscription", *SPOT_QUEUES}
    assert sorted(result["spot"]["updated"]) == sorted(SPOT_QUEUES)


SPOT_QUEUES = ("tenant-t0-spot", "tenant-t1-spot", "tenant-t2-spot")


def test_a_catalog_beyond_the_pool_writes_nothing():
    cluster = pool(nodes=1)  # 8 GPUs
    with pytest.raises(PlatformValidationError) as exc:
        service.run_catalog(params(fleet(3, gpus=4)), cluster)
    assert exc.value.messages[0].startswith("tenants.nvidia.com/gpu: the catalog sells 12 ")
    assert cluster.writes == []


def test_a_refused_tenant_stops_the_run_before_any_write_unless_skipped(monkeypatch):
    cluster = pool(nodes=8)
    tenants = fleet()
    tenants[0]["teams"] = [{"name": "ml", "deserved": {GPU: 1}}]
    service.run_catalog(params(tenants), cluster)
    cluster.put(podgroup("tenant-t0-ml", phase="Running", namespace="tenant-t0"))
    cluster.writes.clear()
    tenants = fleet()
    tenants[0]["teams"] = []  # removes a busy team
    tenants[2]["subscription"][GPU] = 3
    with pytest.raises(Refused) as exc:
        service.run_catalog(params(tenants), cluster)
    assert "1 tenant(s) of the catalog are refused" in str(exc.value)
    assert exc.value.extra["summary"][0]["name"] == "t0"
    assert cluster.writes == []
    warned = []
    monkeypatch.setattr(steps, "warn", warned.append)
    result = service.run_catalog(params(tenants, on_refusal="skip"), cluster)
    statuses = {r["name"]: r["status"] for r in result["summary"]}
    assert statuses == {"t0": "refused", "t1": "unchanged", "t2": "changed"}
    assert "warnings" not in result and "t0" in warned[0]
    assert {w[2] for w in cluster.writes} == {"tenant-t2-subscription", *SPOT_QUEUES}


def test_prune_only_when_asked_and_never_with_running_work_unless_forced():
    cluster = pool(nodes=8)
    service.run_catalog(params(fleet()), cluster)
    busy = vcjob(phase="Running", name="busy", queue="tenant-t2-spot")
    busy["metadata"]["namespace"] = "tenant-t2"
    cluster.put(busy)
    cluster.writes.clear()
    assert service.run_catalog(params(fleet(2)), cluster)["changed"] is False  # t2 stays
    with pytest.raises(Refused) as exc:
        service.run_catalog(params(fleet(2), prune=True), cluster)
    assert "'t2' is not in the catalog but still has 1 active Volcano Job(s)" in str(exc.value)
    assert cluster.writes == []
    cluster.dry_run = True
    check = service.run_catalog(params(fleet(2), prune=True, force=True), cluster, check_mode=True)
    assert cluster.real_writes == []
    cluster.dry_run = False
    result = service.run_catalog(params(fleet(2), prune=True, force=True), cluster)
    assert check["objects"] == result["objects"]
    assert {r["name"]: r["status"] for r in result["summary"]}["t2"] == "pruned"
    assert not [k for k in cluster.store if k[2].startswith("tenant-t2")]


def test_check_mode_reports_the_real_runs_objects_and_writes_nothing():
    cluster = pool(nodes=8)
    cluster.dry_run = True  # as kubernetes.core's client in check mode
    check = service.run_catalog(params(fleet()), cluster, check_mode=True)
    assert cluster.real_writes == []
    cluster.dry_run = False
    real = service.run_catalog(params(fleet()), cluster)
    assert check["objects"] == real["objects"] and check["summary"] == real["summary"]


class FailingCluster(FakeCluster):
    """Refuses every write to tenant t1's namespace."""

    def apply(self, manifest, field_manager=None, **kw):
        if manifest["metadata"].get("namespace") == "tenant-t1":
            raise conflict("t1 is being changed")
        return super().apply(
            manifest, **({"field_manager": field_manager} if field_manager else {})
        )


def test_a_failed_tenant_fails_the_run_naming_it_and_what_was_written(tmp_path):
    cluster = pool(nodes=8, cluster_class=FailingCluster)
    progress = tmp_path / "progress"
    with pytest.raises(PartialWrite) as exc:
        service.run_catalog(params(fleet(), progress_file=str(progress)), cluster)
    assert "1 tenant(s) failed: t1" in exc.value.what
    # The progress file counts what happened: the failed tenant is not "written".
    assert progress.read_text().splitlines()[-1].endswith("tenants 3/3 (failed 1, written 2)")
    rows = {r["name"]: r for r in exc.value.report["summary"]}
    assert rows["t1"]["status"] == "failed" and rows["t0"]["status"] == "created"
    assert any("tenant-t0" in d for d in exc.value.done)


def test_rendered_reads_nothing_and_needs_the_networks():
    result = tenant_catalog.rendered(
        params(fleet(2), state="rendered", pod_cidr="10.244.0.0/16", service_cidr="10.96.0.0/12")
    )
    assert result["tenants"] == ["t0", "t1"] and len(result["manifests"]) == 2 * 12
    with pytest.raises(PlatformValidationError) as exc:
        tenant_catalog.rendered(params(fleet(2), state="rendered"))
    assert [m.split(":")[0] for m in exc.value.messages] == ["pod_cidr", "service_cidr"]


def test_gathered_reads_back_what_present_wrote():
    cluster = pool(nodes=8)
    tenants = fleet()
    tenants[0]["teams"] = [{"name": "ml", "deserved": {GPU: 1}}]
    service.run_catalog(params(tenants), cluster)
    gathered = service.run_catalog(params(None, state="gathered"), cluster)["tenants"]
    assert [g["name"] for g in gathered] == ["t0", "t1", "t2"]
    cluster.writes.clear()
    assert service.run_catalog(params(gathered), cluster)["changed"] is False
    assert cluster.writes == []


def test_a_catalog_file_is_read_and_checked(tmp_path):
    path = tmp_path / "tenants.yml"
    path.write_text(
        "tenants:\n  - name: t0\n    subscription: {nvidia.com/gpu: 1}\n  - {name: t0}\n"
    )
    with pytest.raises(PlatformValidationError) as exc:
        service.run_catalog(params(None, src=str(path)), pool(nodes=1))
    assert any(
        m.startswith("tenants[1].name: 't0' is already declared") for m in exc.value.messages
    )
    with pytest.raises(PlatformValidationError) as exc:
        service.run_catalog(params(None, src=str(tmp_path / "missing.yml")), pool(nodes=1))
    assert exc.value.messages[0] == (
        f"src: cannot read the catalog file {tmp_path / 'missing.yml'}: No such file or directory"
    )


def test_a_relative_catalog_path_is_taken_from_the_caller_and_named_absolute(tmp_path, monkeypatch):
    """Rule catalog-path: a relative src is read from the working directory and a missing
    one is named by its absolute path."""
    (tmp_path / "inventories").mkdir()
    (tmp_path / "inventories" / "tenants.yml").write_text("tenants:\n  - {name: t0}\n")
    monkeypatch.chdir(tmp_path)
    assert source_io.load_catalog_file("inventories/tenants.yml") == [{"name": "t0"}]
    with pytest.raises(PlatformValidationError) as exc:
        source_io.load_catalog_file("inventories/../other.yml")
    assert exc.value.messages[0].startswith(
        f"src: cannot read the catalog file {tmp_path}/other.yml: "
    )
    assert source_io.resolved("a/b.yml", "/srv/project") == Path("/srv/project/a/b.yml")
    assert source_io.resolved("/etc/t.yml", "/srv/project") == Path("/etc/t.yml")
    assert source_io.resolved("~/t.yml", "/srv") == Path.home() / "t.yml"


# -- prune guards: an empty catalog, too many tenants, tenants with data -------------------


def test_an_empty_catalog_never_prunes_whatever_on_refusal_says():
    """Rule catalog-prune-empty: refused before anything is read."""
    cluster = pool(nodes=8)
    service.run_catalog(params(fleet()), cluster)
    cluster.lists.clear()
    cluster.writes.clear()
    for on_refusal in ("fail", "skip"):
        with pytest.raises(PlatformValidationError) as exc:
            service.run_catalog(params([], prune=True, on_refusal=on_refusal), cluster)
        assert "prune: the catalog names no tenant" in str(exc.value)
        assert "(rule catalog-prune-empty)" in str(exc.value)
    assert cluster.lists == [] and cluster.writes == []
    # Without prune an empty catalog changes nothing, as before.
    assert service.run_catalog(params([]), cluster)["changed"] is False


def test_more_tenants_to_prune_than_max_prune_stops_the_run_naming_them():
    """Rule catalog-prune-max: the whole run, before any write, whatever on_refusal says."""
    cluster = pool(nodes=8)
    service.run_catalog(params(fleet(4)), cluster)
    cluster.writes.clear()
    for on_refusal in ("fail", "skip"):
        with pytest.raises(PlatformValidationError) as exc:
            service.run_catalog(
                params(fleet(1), prune=True, max_prune=2, on_refusal=on_refusal), cluster
            )
        assert "max_prune: the run would prune 3 tenants, more than 2: t1, t2, t3" in str(exc.value)
    assert cluster.writes == []
    result = service.run_catalog(params(fleet(1), prune=True, max_prune=3), cluster)
    pruned = sorted(r["name"] for r in result["summary"] if r["status"] == "pruned")
    assert pruned == ["t1", "t2", "t3"]


def test_the_default_max_prune_is_small():
    cluster = pool(nodes=16)
    service.run_catalog(params(fleet(7, gpus=1)), cluster)
    cluster.writes.clear()
    with pytest.raises(PlatformValidationError, match="would prune 6 tenants, more than 5"):
        service.run_catalog(params(fleet(1, gpus=1), prune=True), cluster)
    assert cluster.writes == []


def claim(ns, name="data"):
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"resources": {"requests": {"storage": "1Gi"}}},
    }


def secret(ns, name, managed=False):
    labels = {"platform.io/managed-by": "gpucloud-platform"} if managed else {}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
    }


def test_a_tenant_holding_claims_or_secrets_is_pruned_only_when_confirmed_by_name():
    """Rule catalog-prune-data: its data goes with its namespace."""
    cluster = pool(nodes=8)
    service.run_catalog(params(fleet(4)), cluster)
    cluster.put(claim("tenant-t1"))
    cluster.put(secret("tenant-t2", "token"))
    cluster.put(secret("tenant-t3", "platform-made", managed=True))  # not the tenant's data
    cluster.writes.clear()
    with pytest.raises(Refused) as exc:
        service.run_catalog(params(fleet(1), prune=True), cluster)
    assert "'t1' is not in the catalog but holds 1 PersistentVolumeClaim(s) and 0 Secret(s)" in str(
        exc.value
    )
    assert "'t2' is not in the catalog but holds 0 PersistentVolumeClaim(s) and 1 Secret(s)" in str(
        exc.value
    )
    assert "name it in prune_confirm to prune it (rule catalog-prune-data)" in str(exc.value)
    assert cluster.writes == []
    # skip prunes only the tenant without data of its own
    skipped = service.run_catalog(params(fleet(1), prune=True, on_refusal="skip"), cluster)
    statuses = {r["name"]: r["status"] for r in skipped["summary"]}
    assert statuses == {"t0": "unchanged", "t1": "refused", "t2": "refused", "t3": "pruned"}
    # confirming t1 alone leaves t2 refused, so nothing is written
    cluster.writes.clear()
    with pytest.raises(Refused, match="'t2' is not in the catalog but holds"):
        service.run_catalog(params(fleet(1), prune=True, prune_confirm=["t1"]), cluster)
    assert cluster.writes == []
    confirmed = service.run_catalog(
        params(fleet(1), prune=True, prune_confirm=["t1", "t2"]), cluster
    )
    statuses = {r["name"]: r["status"] for r in confirmed["summary"]}
    assert statuses == {"t0": "unchanged", "t1": "pruned", "t2": "pruned"}
    assert not [k for k in cluster.store if k[2].startswith(("tenant-t1", "tenant-t2"))]


def test_check_mode_progress_says_what_would_be_done(tmp_path):
    cluster = pool(nodes=8)
    cluster.dry_run = True
    progress = tmp_path / "progress"
    service.run_catalog(params(fleet(2), progress_file=str(progress)), cluster, check_mode=True)
    assert progress.read_text().splitlines()[-1].endswith("tenants 2/2 (would be written 2)")


def test_the_module_answers_gathered_with_the_facts_and_the_catalog_entries(run_module):
    """Through ``main()``, as a playbook runs it: ``gathered`` returns the facts and the
    live tenants as catalog entries, and writes nothing."""
    cluster = pool(nodes=8)
    service.run_catalog(params(fleet()), cluster)
    cluster.writes.clear()
    out = run_module(tenant_catalog, cluster, state="gathered")
    assert not out.get("failed"), out.get("msg")
    assert out["changed"] is False and cluster.writes == []
    assert [t["name"] for t in out["tenants"]] == ["t0", "t1", "t2"]
    queues = {q["metadata"]["name"] for q in out["gathered"]["queues"]}
    assert "tenant-t0-subscription" in queues, sorted(queues)
