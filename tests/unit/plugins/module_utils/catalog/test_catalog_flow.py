# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``tenant_catalog`` on the contract (``catalog.flow.CATALOG_FLOW``): the contract's
promise over the fake cluster (``parsed`` of what ``gathered`` returned is the check-mode
run; ``rendered`` is a run on an empty cluster), and the requests a run makes."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.catalog.flow import CATALOG_FLOW
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
    Refused,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.changes import diff_key
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.tenants.tenant_objects import (
    GPU,
    podgroup,
    pool,
    vcjob,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.modules.test_tenant_catalog import (
    fleet,
    params,
)

NETWORKS = {"pod_cidr": "10.244.0.0/16", "service_cidr": "10.96.0.0/12"}


def built(cluster):
    """``cluster`` after a catalog of three tenants, t0 with a busy team, t2 with a
    running job and a claim."""
    tenants = fleet()
    tenants[0]["teams"] = [{"name": "ml", "deserved": {GPU: 1}}]
    CATALOG_FLOW.run(params(tenants), cluster, False)
    cluster.put(podgroup("tenant-t0-ml", phase="Running", namespace="tenant-t0"))
    job = vcjob(phase="Running", name="busy", queue="tenant-t2-spot")
    job["metadata"]["namespace"] = "tenant-t2"
    cluster.put(job)
    cluster.put(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "tenant-t2"},
        }
    )
    return cluster


def with_team(tenants, index=0):
    tenants[index]["teams"] = [{"name": "ml", "deserved": {GPU: 1}}]
    return tenants


# (catalog, options): what a run on the built cluster is asked.
CASES = {
    "unchanged": (with_team(fleet()), {}),
    "a team and a subject change": (
        [{**t, "subjects": [{"kind": "Group", "name": "g"}]} for t in with_team(fleet())],
        {},
    ),
    "a busy team removed is refused": (fleet(), {}),
    "a busy team removed, the others written": (
        [{**t, "subjects": [{"kind": "Group", "name": "h"}]} for t in fleet()],
        {"on_refusal": "skip"},
    ),
    "a prune of a tenant with running work": (with_team(fleet(2)), {"prune": True}),
    "a forced prune of unconfirmed data": (with_team(fleet(2)), {"prune": True, "force": True}),
    "a forced, confirmed prune": (
        with_team(fleet(2)),
        {"prune": True, "force": True, "prune_confirm": ["t2"]},
    ),
    "too many to prune": (with_team(fleet(1)), {"prune": True, "max_prune": 1}),
    "a shrink that sells less": (
        [{**t, "subscription": {GPU: 1, "cpu": 8, "memory": "32Gi"}} for t in with_team(fleet())],
        {},
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_parsed_of_gathered_is_the_check_mode_run(case):
    tenants, options = CASES[case]
    cluster = built(pool(nodes=8))
    gathered = CATALOG_FLOW.run(
        params(copy.deepcopy(tenants), state="gathered", **options), cluster, False
    )["gathered"]
    cluster.writes.clear()
    cluster.dry_run = True  # as kubernetes.core's client in check mode
    asked = params(copy.deepcopy(tenants), **options)
    try:
        check = CATALOG_FLOW.run(asked, cluster, True)
    except (PlatformValidationError, Refused) as exc:
        with pytest.raises(type(exc)) as again:
            CATALOG_FLOW.offline({**asked, "state": "parsed", "facts": gathered})
        assert str(again.value) == str(exc)
        return
    assert cluster.real_writes == []
    parsed = CATALOG_FLOW.offline({**asked, "state": "parsed", "facts": gathered})
    assert parsed is not None and parsed.pop("state") == "parsed" and parsed.pop("changed") is False
    check.pop("changed")
    assert parsed == check


def test_the_sales_reclaim_is_read_in_apply_so_parsed_names_no_victims():
    cluster = pool(nodes=8)
    gathered = CATALOG_FLOW.run(params(None, state="gathered"), cluster, False)["gathered"]
    cluster.dry_run = True
    check = CATALOG_FLOW.run(params(fleet()), cluster, True)
    parsed = CATALOG_FLOW.offline({**params(fleet()), "state": "parsed", "facts": gathered})
    assert parsed is not None and check["sale"]["reclaims"] is True
    assert parsed["reclaim"] == {} and check["reclaim"]["demand"] == 6
    for key in ("summary", "counts", "objects", "diff", "spot"):
        assert parsed[key] == check[key]
    assert {k: v for k, v in parsed["sale"].items() if k != "summary"} == {
        k: v for k, v in check["sale"].items() if k != "summary"
    }


def test_gathered_reads_what_present_reads_and_says_its_entries():
    cluster = built(pool(nodes=8))
    before = cluster.requests
    present = CATALOG_FLOW.run(params(with_team(fleet())), cluster, True)
    present_reads = cluster.requests - before
    before = cluster.requests
    result = CATALOG_FLOW.run(params(None, state="gathered"), cluster, False)
    assert cluster.requests - before == present_reads and present["changed"] is False
    # Every tenant kind, in the order read: a prune deletes them in reverse.
    assert list(result["gathered"]["objects"]) == [
        *("Namespace", "Role", "RoleBinding", "NetworkPolicy", "ConfigMap"),
        *("ResourceQuota", "LimitRange", "ClusterRole", "ClusterRoleBinding"),
    ]
    assert [t["name"] for t in result["tenants"]] == ["t0", "t1", "t2"]
    assert result["gathered"]["running"] == {}


def test_gathered_for_a_prune_reads_the_tenants_to_prune():
    cluster = built(pool(nodes=8))
    asked = params(fleet(2), state="gathered", prune=True)
    running = CATALOG_FLOW.run(asked, cluster, False)["gathered"]["running"]
    assert list(running) == ["t2"] and running["t2"]["data"] == {"claims": 1, "secrets": 0}
    assert len(running["t2"]["jobs"]) == 1


def test_parsed_with_a_prune_needs_the_running_of_each_tenant_to_prune():
    cluster = built(pool(nodes=8))
    gathered = CATALOG_FLOW.run(params(None, state="gathered"), cluster, False)["gathered"]
    asked = {**params(fleet(2), prune=True), "state": "parsed", "facts": gathered}
    with pytest.raises(PlatformValidationError, match=r"facts\.running\.t2: is missing"):
        CATALOG_FLOW.offline(asked)


def test_parsed_needs_facts_of_the_gathered_shape():
    asked = {**params(fleet()), "state": "parsed"}
    with pytest.raises(PlatformValidationError, match="facts: is required with state: parsed"):
        CATALOG_FLOW.offline(asked)
    with pytest.raises(PlatformValidationError, match=r"facts\.nodes: must be a list"):
        CATALOG_FLOW.offline({**asked, "facts": {"nodes": "n0"}})
    with pytest.raises(PlatformValidationError, match=r"facts\.objects\.Role: must be a list"):
        CATALOG_FLOW.offline({**asked, "facts": {"objects": {"Role": "r"}}})


def test_rendered_is_a_run_on_an_empty_cluster_without_one():
    # Empty: no node either, so the run's egress cuts out only the given networks; the
    # oversell guard is off, as rendered checks no pool.
    tenants = with_team(fleet(gpus=0))
    tenants[0]["teams"][0]["deserved"] = {"cpu": 1}
    rendered = CATALOG_FLOW.offline(params(copy.deepcopy(tenants), state="rendered", **NETWORKS))
    empty = FakeCluster([], dry_run=True)
    asked = params(copy.deepcopy(tenants), oversell_check=False, **NETWORKS)
    run = CATALOG_FLOW.run(asked, empty, True)
    assert rendered is not None and rendered["changed"] is False and run["changed"] is True
    assert rendered["tenants"] == [r["name"] for r in run["summary"]] == ["t0", "t1", "t2"]
    assert {r["status"] for r in run["summary"]} == {"created"}
    after = run["diff"]["after"]
    assert {diff_key(m) for m in rendered["manifests"]} == set(after)
    for manifest in rendered["manifests"]:
        assert after[diff_key(manifest)] == manifest
    assert CATALOG_FLOW.offline(params(tenants)) is None  # present connects


def test_parse_reads_the_catalog_file_only_when_the_state_takes_a_catalog(tmp_path):
    missing = str(tmp_path / "missing.yml")
    assert CATALOG_FLOW.parse(params(None, state="gathered", src=missing)).catalog is None
    with pytest.raises(PlatformValidationError, match="cannot read the catalog file"):
        CATALOG_FLOW.parse(params(None, state="gathered", src=missing, prune=True))
    # The options are checked before the file is read.
    with pytest.raises(PlatformValidationError, match="workers") as exc:
        CATALOG_FLOW.parse(params(None, src=missing, workers=0))
    assert "cannot read" not in str(exc.value)
