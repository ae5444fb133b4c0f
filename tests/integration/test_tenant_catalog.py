# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``tenant_catalog`` module against the local cluster (real API server, Volcano's
queue webhook and controllers), run as Ansible runs a task.

The cluster is shared with the other test files, so every catalog here is the live
fleet gathered (``state: gathered``) plus this file's tenants: the other tenants must
come out ``unchanged``, which proves on real objects that a gathered catalog writes
nothing, and only this file's tenants are ever candidates to prune."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    remove_tenants,
    wait_until,
)
from ansible_collections.gpucloud.platform.tests.integration.test_tenant import (
    job_body,
    parent_queues,
    queues_of,
)

pytestmark = pytest.mark.integration

GPU = "nvidia.com/gpu"
MINE = ("cat-a", "cat-b", "cat-c")
# Every tenant this file makes: MINE, and the one the prune-guard test keeps.
OURS = (*MINE, "cat-d")
SUB = {"cpu": 4, "memory": "16Gi"}


def mine():
    return [
        {"name": "cat-a", "subscription": {GPU: 1, **SUB}},
        {
            "name": "cat-b",
            "subscription": {GPU: 2, **SUB},
            "teams": [{"name": "ml", "deserved": {GPU: 1}}, {"name": "web", "deserved": {GPU: 1}}],
        },
        {"name": "cat-c", "subscription": {GPU: 1, **SUB}, "allow_critical": True},
    ]


@pytest.fixture(scope="module")
def others(run_module, api_client):
    """Every other tenant of the cluster as a catalog entry; none of this file's before
    or after the tests."""

    def clean():
        remove_tenants(run_module, api_client, list(OURS))

    clean()
    gathered = run_module("tenant_catalog", {"state": "gathered"})
    assert not gathered.get("failed"), gathered.get("msg")
    yield [t for t in gathered["tenants"] if t["name"] not in OURS]
    clean()


def catalog(others, tenants, **extra):
    return {"tenants": [*copy.deepcopy(others), *tenants], "workers": 8, **extra}


def statuses(result):
    return {row["name"]: row["status"] for row in result["summary"]}


def test_create_every_tenant_of_the_catalog(others, run_module, api_client):
    result = run_module("tenant_catalog", catalog(others, mine()))
    assert not result.get("failed"), result.get("msg")
    got = statuses(result)
    assert {n: got[n] for n in MINE} == dict.fromkeys(MINE, "created")
    assert {n: s for n, s in got.items() if n not in MINE} == dict.fromkeys(
        [t["name"] for t in others], "unchanged"
    )
    queues = queues_of(api_client, "cat-b")
    assert set(queues) == {
        f"tenant-cat-b-{s}" for s in ("subscription", "payg", "spot", "ml", "web")
    }
    wait_until(
        lambda: all(
            q["status"].get("state") == "Open" for q in queues_of(api_client, "cat-b").values()
        ),
        what="cat-b's queues Open",
    )
    assert queues["tenant-cat-b-ml"]["spec"]["parent"] == "tenant-cat-b-subscription"
    assert "tenant-cat-b-subscription" in parent_queues(api_client)
    assert "tenant-cat-a-subscription" not in parent_queues(api_client)
    from kubernetes import client

    ns = client.CoreV1Api(api_client).read_namespace("tenant-cat-c")
    assert ns.metadata.labels["platform.io/allow-critical"] == "true"


def test_an_unchanged_run_only_lists(others, run_module, api_client):
    before = {n: our_writes(api_client, n) for n in MINE}
    result = run_module("tenant_catalog", catalog(others, mine()))
    assert not result.get("failed"), result.get("msg")
    assert result["changed"] is False and result["objects"] == []
    assert set(statuses(result).values()) == {"unchanged"}
    # One LIST per kind (13), the parent-queues GET and the storage capacity GET, whatever
    # the fleet's size.
    assert result["requests"] == 15
    assert {n: our_writes(api_client, n) for n in MINE} == before


def our_writes(api_client, tenant):
    """When the platform's field managers last changed each queue (Volcano's controller
    writes the status on its own, which moves the resourceVersion)."""
    return {
        n: sorted(
            (f["manager"], f["operation"], f.get("time"))
            for f in q["metadata"].get("managedFields") or []
            if f["manager"].startswith("gpucloud-platform")
        )
        for n, q in queues_of(api_client, tenant).items()
    }


def rv(api_client, tenant):
    """What a write of the queues changes: their spec (``generation``) and metadata. Not
    ``resourceVersion``: Volcano's queue controller writes ``status`` on its own time, for
    example after a spot recompute of an earlier run."""
    return {
        n: (
            q["metadata"].get("generation"),
            repr(sorted((q["metadata"].get("labels") or {}).items())),
            repr(sorted((q["metadata"].get("annotations") or {}).items())),
        )
        for n, q in queues_of(api_client, tenant).items()
    }


def test_check_mode_predicts_the_change_of_one_tenant_and_the_real_run_makes_it(
    others, run_module, api_client
):
    changed = mine()
    changed[1]["subscription"][GPU] = 3
    changed[1]["teams"][0]["capability"] = {GPU: 3}
    before = {n: rv(api_client, n) for n in MINE}
    check = run_module("tenant_catalog", catalog(others, changed), check=True, diff=True)
    assert not check.get("failed"), check.get("msg")
    assert {n: rv(api_client, n) for n in MINE} == before  # nothing written
    real = run_module("tenant_catalog", catalog(others, changed), diff=True)
    assert not real.get("failed"), real.get("msg")
    assert check["objects"] == real["objects"] and check["summary"] == real["summary"]
    assert check["diff"] == real["diff"]
    got = statuses(real)
    assert got["cat-b"] == "changed"
    assert {n for n, s in got.items() if s != "unchanged"} == {"cat-b"}
    assert {o["name"] for o in real["objects"]} == {"tenant-cat-b-subscription", "tenant-cat-b-ml"}
    queues = queues_of(api_client, "cat-b")
    assert str(queues["tenant-cat-b-subscription"]["spec"]["capability"][GPU]) == "3"
    # cat-a is not written; its spot queue is the spot recompute's, which the sale (cat-b
    # grew) runs once after the last write (rule catalog-sale).
    untouched = {n: v for n, v in rv(api_client, "cat-a").items() if not n.endswith("-spot")}
    assert untouched == {n: v for n, v in before["cat-a"].items() if not n.endswith("-spot")}
    assert real["spot"]["recomputed"] is True


def test_the_rendered_manifests_are_the_live_objects(others, run_module, api_client):
    from kubernetes import client

    rendered = run_module(
        "tenant_catalog",
        {
            "state": "rendered",
            "tenants": mine(),
            "pod_cidr": "10.0.0.0/8",
            "service_cidr": "10.96.0.0/12",
            "kubeconfig": "/nonexistent",  # nothing is read: no cluster is needed
        },
    )
    assert not rendered.get("failed"), rendered.get("msg")
    assert rendered["requests"] == 0
    by_name = {(m["kind"], m["metadata"]["name"]): m for m in rendered["manifests"]}
    queue = by_name[("Queue", "tenant-cat-a-subscription")]
    live = queues_of(api_client, "cat-a")["tenant-cat-a-subscription"]
    assert as_text(live["spec"]["deserved"]) == as_text(queue["spec"]["deserved"])
    assert as_text(live["spec"]["capability"]) == as_text(queue["spec"]["capability"])
    role = client.RbacAuthorizationV1Api(api_client).read_namespaced_role(
        "tenant-user", "tenant-cat-a"
    )
    rules = [api_client.sanitize_for_serialization(r) for r in role.rules]
    assert rules == by_name[("Role", "tenant-user")]["rules"]


def as_text(resources):
    return {k: str(v) for k, v in resources.items()}


def test_prune_is_refused_while_work_runs_then_done_when_nothing_runs(
    others, run_module, api_client, priority_classes
):
    from kubernetes import client

    custom = client.CustomObjectsApi(api_client)
    custom.create_namespaced_custom_object(
        "batch.volcano.sh",
        "v1alpha1",
        "tenant-cat-a",
        "jobs",
        job_body("busy", "tenant-cat-a", "tenant-cat-a-subscription"),
    )
    without_a = [t for t in mine() if t["name"] != "cat-a"]
    kept = run_module("tenant_catalog", catalog(others, without_a))
    assert not kept.get("failed") and "cat-a" not in statuses(kept)  # no prune unless asked
    refused = run_module("tenant_catalog", catalog(others, without_a, prune=True))
    assert refused.get("failed")
    assert "'cat-a' is not in the catalog but still has 1 active Volcano Job(s)" in refused["msg"]
    assert refused["summary"] == [
        {
            "name": "cat-a",
            "status": "refused",
            "objects": 0,
            "errors": [refused["summary"][0]["errors"][0]],
            "running": refused["summary"][0]["running"],
        }
    ]
    assert "tenant-cat-a-subscription" in queues_of(api_client, "cat-a")

    custom.delete_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", "tenant-cat-a", "jobs", "busy"
    )
    wait_until(
        lambda: (
            not custom.list_namespaced_custom_object(
                "batch.volcano.sh", "v1alpha1", "tenant-cat-a", "jobs"
            )["items"]
            and not client.CoreV1Api(api_client).list_namespaced_pod("tenant-cat-a").items
        ),
        what="cat-a's job and pods gone",
    )
    check = run_module("tenant_catalog", catalog(others, without_a, prune=True), check=True)
    assert not check.get("failed"), check.get("msg")
    assert statuses(check)["cat-a"] == "pruned"
    assert "tenant-cat-a-subscription" in queues_of(api_client, "cat-a")  # check mode: listed only
    pruned = run_module("tenant_catalog", catalog(others, without_a, prune=True))
    assert not pruned.get("failed"), pruned.get("msg")
    assert statuses(pruned)["cat-a"] == "pruned"
    assert check["objects"] == pruned["objects"]
    assert {n for n, s in statuses(pruned).items() if s != "unchanged"} == {"cat-a"}
    wait_until(lambda: queues_of(api_client, "cat-a") == {}, what="cat-a's queues gone")


def test_a_misspelt_variable_stops_the_playbook_before_anything_is_read(ansible_env, api_client):
    """The red team's case: prune on, the catalog file's variable misspelt, refusals
    skipped. The run fails at its first task, naming the variable; every tenant stays."""
    from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
        run_playbook,
    )

    before = sorted(ns.metadata.name for ns in _tenant_namespaces(api_client))
    rc, tasks = run_playbook(
        ansible_env,
        "tenant_catalog.yml",
        {
            "tenant_catalog_prune": True,
            "tenant_catalg_file": "inventories/production/tenants.yml",
            "tenant_catalog_on_refusal": "skip",
        },
        inventory="inventories/local",
    )
    assert rc != 0
    assert list(tasks) == ["Refuse misspelt variables"], tasks
    assert tasks["Refuse misspelt variables"]["msg"] == (
        "tenant_catalg_file: not a variable of tenant_catalog.yml; did you mean "
        "tenant_catalog_file? (rule playbook-variables)"
    )
    assert sorted(ns.metadata.name for ns in _tenant_namespaces(api_client)) == before


def test_the_playbook_renders_into_a_directory_it_makes(ansible_env, tmp_path):
    """``state: rendered`` through the playbook on the pinned ansible-core: the directory
    is made, one file per tenant plus the shared list, and nothing is read or written."""
    from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
        run_playbook,
    )

    out = tmp_path / "gitops" / "tenants"
    rc, tasks = run_playbook(
        ansible_env,
        "tenant_catalog.yml",
        {
            "tenant_catalog_state": "rendered",
            "tenant_catalog": [{"name": "rnd", "subscription": {GPU: 1}}],
            "tenant_catalog_pod_cidr": "10.244.0.0/16",
            "tenant_catalog_service_cidr": "10.96.0.0/12",
            "tenant_catalog_render_dir": str(out),
        },
        inventory="inventories/local",
    )
    assert rc == 0, {n: r.get("msg") for n, r in tasks.items() if r.get("failed")}
    # The tenant's file; the shared parent-queues list only when a tenant has teams.
    assert sorted(p.name for p in out.iterdir()) == ["rnd.yaml"]
    assert "kind: Namespace" in (out / "rnd.yaml").read_text()
    assert "name: tenant-rnd" in (out / "rnd.yaml").read_text()


def _tenant_namespaces(api_client):
    from kubernetes import client

    return client.CoreV1Api(api_client).list_namespace(label_selector="platform.io/tenant").items


def test_an_empty_catalog_with_prune_is_refused_before_any_request(others, run_module):
    for on_refusal in ("fail", "skip"):
        out = run_module("tenant_catalog", {"tenants": [], "prune": True, "on_refusal": on_refusal})
        assert out.get("failed") and "(rule catalog-prune-empty)" in out["msg"], out.get("msg")
        assert out["requests"] == 0


def test_prune_is_bounded_and_a_tenant_with_claims_needs_its_name_confirmed(
    others, run_module, api_client
):
    """Rules catalog-prune-max and catalog-prune-data on the real API server: more tenants
    to prune than allowed stops the run naming them; a tenant holding a claim is pruned
    only when prune_confirm names it; nothing is written until both hold."""
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    # cat-a was pruned by the test before: its namespace may still be terminating, and
    # until it is gone it is one more tenant to prune.
    wait_until(
        lambda: "tenant-cat-a" not in {n.metadata.name for n in _tenant_namespaces(api_client)},
        timeout=300,
        what="cat-a's namespace gone",
    )
    # The catalog keeps cat-d and leaves out cat-b and cat-c.
    kept = [{"name": "cat-d", "subscription": {GPU: 1, **SUB}}]
    bc = [t for t in mine() if t["name"] in ("cat-b", "cat-c")]
    made = run_module("tenant_catalog", catalog(others, [*kept, *bc]))
    assert not made.get("failed"), made.get("msg")
    core.create_namespaced_persistent_volume_claim(
        "tenant-cat-b",
        {
            "metadata": {"name": "datasets"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    )
    only_a = kept
    too_many = run_module("tenant_catalog", catalog(others, only_a, prune=True, max_prune=1))
    assert too_many.get("failed")
    assert "would prune 2 tenants, more than 1: cat-b, cat-c" in too_many["msg"]
    assert "(rule catalog-prune-max)" in too_many["msg"]
    unconfirmed = run_module("tenant_catalog", catalog(others, only_a, prune=True, max_prune=2))
    assert unconfirmed.get("failed")
    assert (
        "'cat-b' is not in the catalog but holds 1 PersistentVolumeClaim(s)" in unconfirmed["msg"]
    )
    assert {r["name"] for r in unconfirmed["summary"]} == {"cat-b"}
    assert queues_of(api_client, "cat-b") and queues_of(api_client, "cat-c")  # nothing written
    confirmed = run_module(
        "tenant_catalog",
        catalog(others, only_a, prune=True, max_prune=2, prune_confirm=["cat-b"]),
    )
    assert not confirmed.get("failed"), confirmed.get("msg")
    assert {n for n, s in statuses(confirmed).items() if s == "pruned"} == {"cat-b", "cat-c"}
    wait_until(
        lambda: queues_of(api_client, "cat-b") == {} and queues_of(api_client, "cat-c") == {},
        what="cat-b's and cat-c's queues gone",
    )


def test_a_catalog_selling_a_storage_class_beyond_its_capacity_writes_nothing(
    others, run_module, api_client
):
    """Rule catalog-storage-oversell on the real cluster: the capacity the storage role
    records, every tenant's class bound together; refused whole, nothing written."""
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    name, ns = "platform-storage-capacity", "platform-system"
    before = None
    try:
        before = core.read_namespaced_config_map(name, ns)
    except client.ApiException as exc:
        assert exc.status == 404, exc
    body = {"metadata": {"name": name}, "data": {"ckpt-test": "10Ti"}}
    if before is None:
        core.create_namespaced_config_map(ns, body)
    else:
        core.patch_namespaced_config_map(name, ns, {"data": {"ckpt-test": "10Ti"}})
    try:
        tenants = [
            {**t, "bounds": {"storage_classes": {"ckpt-test": size}}}
            for t, size in zip(mine()[:2], ("6Ti", "5Ti"), strict=True)
        ]
        out = run_module("tenant_catalog", catalog(others, tenants))
        assert out.get("failed"), out
        assert "the catalog sells 11Ti of storage class ckpt-test" in out["msg"], out["msg"]
        assert "growing: cat-a, cat-b" in out["msg"], out["msg"]
        for tenant in ("cat-a", "cat-b"):
            quotas = core.list_namespaced_resource_quota(f"tenant-{tenant}").items
            assert not any("ckpt-test" in k for q in quotas for k in (q.spec.hard or {})), quotas
    finally:
        if before is None:
            core.delete_namespaced_config_map(name, ns)
        else:
            core.patch_namespaced_config_map(name, ns, {"data": {"ckpt-test": None}})
