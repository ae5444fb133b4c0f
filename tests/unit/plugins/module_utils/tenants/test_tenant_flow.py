# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``tenant`` through the flow contract: its plan as tables of (request, facts) ->
plan with no cluster and no fake, and the contract's promise against runs on the fake
cluster: ``parsed`` of what ``gathered`` returned is the check-mode run on that cluster,
and ``rendered`` is a run on an empty one."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
    Refused,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    LABEL_TENANT,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants import tenant_flow
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.changes import project
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.live import (
    TENANT_KINDS,
    TenantLive,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.render import (
    render_catalog,
    render_plans,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.service import (
    TENANT_FLOW,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.tenant_flow import (
    TenantFacts,
    facts_in,
    facts_out,
    parse,
    plan,
    report,
)
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.tenants.tenant_objects import (
    GPU,
    POD_CIDR,
    SERVICE_CIDR,
    foreign_queue,
    gpu_nodes,
    parent_list,
    podgroup,
    pool,
    service_cidr,
    tenant_params,
    vcjob,
)

NODES = tuple(gpu_nodes(8))
CIDRS = (service_cidr(),)


def live_of(manifests, **workloads) -> TenantLive:
    """A tenant's live objects: the manifests as a cluster holds them, by kind (the shared
    parent-queues list is no tenant's)."""
    live = TenantLive(name="a", objects={kind: {} for _api, kind in TENANT_KINDS})
    for m in manifests:
        if m["metadata"]["name"] == "platform-parent-queues":
            continue
        if m["kind"] == "Queue":
            live.queues[m["metadata"]["name"]] = copy.deepcopy(m)
        else:
            live.objects[m["kind"]][m["metadata"]["name"]] = copy.deepcopy(m)
    for key, items in workloads.items():
        setattr(live, key, list(items))
    return live


def created(**workloads) -> TenantLive:
    """Tenant ``a`` (``tenant_params``) as its first run leaves it on a cluster of ``NODES``."""
    planned = plan(parse(tenant_params()), facts())
    assert planned.plan is not None
    return live_of(render_plans([planned.plan]), **workloads)


def facts(live=None, **over) -> TenantFacts:
    base = {"live": live or TenantLive(name="a", objects={k: {} for _a, k in TENANT_KINDS})}
    return TenantFacts(**{"nodes": NODES, "service_cidrs": CIDRS, **base, **over})


def actions(said):
    return [(o["kind"], o["name"], o["action"]) for o in said["objects"]]


# -- the plan, as tables ---------------------------------------------------------------------

# (case, options, facts, the first objects the plan writes, in order)
WRITES = [
    (
        "a new tenant: the parent list, then its namespace first",
        {},
        facts(),
        [
            ("ConfigMap", "platform-parent-queues", "create"),
            ("Namespace", "tenant-a", "create"),
            ("Role", "tenant-user", "create"),
        ],
    ),
    (
        "the parent list another tenant keeps is updated, not made",
        {},
        facts(parent_list=parent_list("tenant-b-subscription")),
        [("ConfigMap", "platform-parent-queues", "update"), ("Namespace", "tenant-a", "create")],
    ),
    (
        "teams left out keep the team queues: nothing to write",
        {"teams": None},
        facts(created(), parent_list=parent_list("tenant-a-subscription")),
        [],
    ),
]


@pytest.mark.parametrize("options,given,first", [c[1:] for c in WRITES], ids=[c[0] for c in WRITES])
def test_what_the_plan_writes(options, given, first):
    request = parse(tenant_params(**options))
    said = report(request, plan(request, given))
    assert actions(said)[: len(first)] == first
    assert said["changed"] is bool(first)


# (case, options, facts, the field or text each refusal names)
REFUSALS = [
    (
        "a cluster that tells no pod network, none given",
        {},
        facts(nodes=()),
        "pod_cidr",
    ),
    (
        "a queue name another tenant has",
        {"name": "pa", "teams": [{"name": "b-x", "deserved": {GPU: 1}}]},
        facts(taken=(foreign_queue("tenant-pa-b-x", "pa-b"),)),
        "tenant-pa-b-x",
    ),
    (
        "a purchase the pool cannot hold, judged on the guard's reads",
        {"subscription": {GPU: 80, "cpu": 160, "memory": "640Gi"}, "teams": None},
        facts(pool_nodes=NODES, committed=()),
        "subscription.nvidia.com/gpu",
    ),
    (
        "a busy team queue removed",
        {"teams": [{"name": "algo", "deserved": {GPU: 20}}]},
        facts(created(podgroups=[podgroup("tenant-a-eng")])),
        "teams",
    ),
]


@pytest.mark.parametrize(
    "options,given,named", [c[1:] for c in REFUSALS], ids=[c[0] for c in REFUSALS]
)
def test_what_the_plan_refuses(options, given, named):
    request = parse(tenant_params(**options))
    with pytest.raises(PlatformValidationError) as exc:
        plan(request, given)
    assert any(named in m for m in exc.value.messages), exc.value.messages


def test_the_guard_is_not_judged_without_its_reads_nor_when_nothing_grows():
    big = parse(tenant_params(subscription={GPU: 80, "cpu": 160, "memory": "640Gi"}, teams=None))
    assert plan(big, facts()).added[GPU] == 80  # not read: a run reads only when it grows
    kept = parse(tenant_params())
    assert plan(kept, facts(created(), pool_nodes=(), committed=())).added == {
        GPU: 0,
        "cpu": "0",
        "memory": "0",
    }


def test_force_deletes_the_busy_team_queue():
    request = parse(tenant_params(force=True, teams=[{"name": "algo", "deserved": {GPU: 20}}]))
    said = report(request, plan(request, facts(created(podgroups=[podgroup("tenant-a-eng")]))))
    assert ("Queue", "tenant-a-eng", "delete") in actions(said)


def test_a_left_out_guarantee_is_the_live_one():
    live = created()
    live.queues["tenant-a-subscription"]["spec"]["guarantee"] = {"resource": {GPU: "4"}}
    planned = plan(parse(tenant_params()), facts(live))
    assert planned.spec is not None and planned.spec.subscription_guarantee == {GPU: 4}
    cleared = plan(parse(tenant_params(subscription_guarantee={})), facts(live))
    assert cleared.spec is not None and cleared.spec.subscription_guarantee == {}


# (case, options, live, what runs, the active jobs it deletes first)
ABSENT = [
    ("nothing runs", {}, created(), {"jobs": 0, "pods": 0}, 0),
    ("a job runs, forced", {"force": True}, created(jobs=[vcjob()]), {"jobs": 1, "pods": 0}, 1),
    (
        "a finished job is no reason",
        {},
        created(jobs=[vcjob("Completed")]),
        {"jobs": 0, "pods": 0},
        0,
    ),
]


@pytest.mark.parametrize(
    "options,live,running,jobs", [c[1:] for c in ABSENT], ids=[c[0] for c in ABSENT]
)
def test_what_absent_deletes(options, live, running, jobs):
    request = parse({"name": "a", "state": "absent", **options})
    planned = plan(request, TenantFacts(live=live))
    assert (planned.running, len(planned.jobs), planned.said) == (running, jobs, ())


def test_absent_is_refused_while_a_job_runs_and_says_a_missing_tenant():
    request = parse({"name": "a", "state": "absent"})
    with pytest.raises(Refused) as exc:
        plan(request, TenantFacts(live=created(jobs=[vcjob()])))
    assert exc.value.extra["running"] == {"jobs": 1, "pods": 0}
    missing = plan(request, tenant_flow.empty_facts(request))
    assert "tenant 'a' does not exist" in missing.said[0]


def test_parsed_needs_facts_shaped_as_gathered():
    request = parse(tenant_params(state="parsed"))
    with pytest.raises(PlatformValidationError, match=r"facts\.queues: must be a list"):
        facts_in(request, {"queues": "tenant-a-spot"})
    with pytest.raises(PlatformValidationError, match=r"facts\.objects: must map"):
        facts_in(request, {"objects": ["Namespace"]})


# -- the contract's promise ------------------------------------------------------------------


def busy_team(cluster):
    cluster.put(podgroup("tenant-a-eng"))
    return cluster


def other_tenant_has_the_name(cluster):
    cluster.put(foreign_queue("tenant-a-algo", "other"))
    return cluster


def first_run(cluster, **options):
    TENANT_FLOW.run(tenant_params(**options), cluster, check_mode=False)
    return cluster


def class_bounds(tib: int) -> dict:
    return {"storage": "20Ti", "storage_classes": {"checkpoints": f"{tib}Ti"}}


def storage_sold() -> FakeCluster:
    """A pool whose checkpoints class holds 10Ti, 4Ti of it bound to tenant b."""
    return pool(
        objects=[
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "platform-storage-capacity", "namespace": "platform-system"},
                "data": {"checkpoints": "10Ti"},
            },
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {
                    "name": "platform-bounds",
                    "namespace": "tenant-b",
                    "labels": {
                        "platform.io/tenant": "b",
                        "platform.io/managed-by": "gpucloud-platform",
                    },
                },
                "spec": {
                    "hard": {"checkpoints.storageclass.storage.k8s.io/requests.storage": "4Ti"}
                },
            },
        ]
    )


def test_a_class_bound_beyond_the_class_capacity_is_refused_with_the_numbers():
    """Rule storage-class-oversell: 10Ti - 4Ti sold to b leaves 6Ti; 7Ti is refused before
    any write, 6Ti fits, and a bound that does not grow is not judged (nor read for)."""
    cluster = storage_sold()
    with pytest.raises(PlatformValidationError) as caught:
        TENANT_FLOW.run(tenant_params(bounds=class_bounds(7)), cluster, False)
    assert (
        "bounds.storage_classes.checkpoints: 7Ti does not fit in storage class checkpoints: "
        "10Ti in all - 4Ti sold to other tenants = 6Ti left"
    ) in str(caught.value)
    assert cluster.real_writes == []
    cluster.lists.clear()
    done = TENANT_FLOW.run(tenant_params(bounds=class_bounds(6)), cluster, False)
    assert done["changed"]
    assert cluster.lists.count("ResourceQuota") == 1  # every tenant's bounds
    quota = cluster.get("v1", "ResourceQuota", "platform-bounds", namespace="tenant-a")
    assert (
        quota["spec"]["hard"]["checkpoints.storageclass.storage.k8s.io/requests.storage"] == "6Ti"
    )
    cluster.lists.clear()
    TENANT_FLOW.run(tenant_params(bounds=class_bounds(5)), cluster, False)
    assert cluster.lists.count("ResourceQuota") == 1  # its own only: shrinking is not judged
    cluster.lists.clear()
    TENANT_FLOW.run(tenant_params(bounds=class_bounds(6)), cluster, False)
    assert cluster.lists.count("ResourceQuota") == 2  # its own, then every tenant's


# (case, cluster, options)
CLUSTERS = [
    ("an empty pool", pool, {}),
    ("a re-run", lambda: first_run(pool()), {}),
    (
        "a resize",
        lambda: first_run(pool()),
        {"subscription": {GPU: 48, "cpu": 160, "memory": "640Gi"}},
    ),
    ("teams dropped", lambda: first_run(pool()), {"teams": []}),
    ("a busy team dropped", lambda: busy_team(first_run(pool())), {"teams": []}),
    ("oversold", lambda: pool(nodes=2), {}),
    ("a name taken", lambda: other_tenant_has_the_name(pool()), {}),
    ("no networks told", lambda: FakeCluster([]), {}),
    ("the guard off", lambda: first_run(pool()), {"oversell_check": False, "payg": {GPU: 8}}),
    ("a class bound that fits", storage_sold, {"bounds": class_bounds(6)}),
    ("a class oversold", storage_sold, {"bounds": class_bounds(7)}),
    (
        "a class bound that stays",
        lambda: first_run(storage_sold(), bounds=class_bounds(9), oversell_check=False),
        {"bounds": class_bounds(9)},
    ),
]


@pytest.mark.parametrize("make,options", [c[1:] for c in CLUSTERS], ids=[c[0] for c in CLUSTERS])
def test_parsed_of_gathered_is_the_check_mode_run(make, options):
    gathering = make()
    gathering.lists.clear()
    gathering.writes.clear()
    gathered = TENANT_FLOW.run(tenant_params(state="gathered", **options), gathering, False)
    checking = make()
    checking.lists.clear()
    checking.dry_run = True
    given = tenant_params(state="parsed", facts=gathered["gathered"], **options)
    try:
        check = TENANT_FLOW.run(tenant_params(**options), checking, check_mode=True)
    except (PlatformValidationError, Refused) as exc:
        with pytest.raises(type(exc)) as again:
            TENANT_FLOW.offline(given)
        assert str(again.value) == str(exc)
        assert gathering.lists == checking.lists  # the reads stop where the run stops
        return
    parsed = TENANT_FLOW.offline(given)
    assert parsed is not None and parsed.pop("state") == "parsed" and parsed.pop("changed") is False
    assert check.pop("changed") is bool(check["objects"])
    assert parsed == check
    # gathered makes a run's reads, the same lists in the same order, and writes nothing
    assert gathering.lists == checking.lists and gathering.real_writes == []
    again = facts_out(facts_in(parse(given), gathered["gathered"]))
    assert {key: again[key] for key in gathered["gathered"]} == gathered["gathered"]


def test_rendered_is_a_run_on_an_empty_cluster_without_one():
    options = {"pod_cidr": POD_CIDR, "service_cidr": SERVICE_CIDR, "oversell_check": False}
    rendered = TENANT_FLOW.offline(tenant_params(state="rendered", **options))
    empty = FakeCluster([])
    run = TENANT_FLOW.run(tenant_params(**options), empty, check_mode=False)
    assert rendered is not None and rendered.pop("state") == "rendered"
    assert rendered.pop("changed") is False and run["changed"] is True
    made = {
        (m["kind"], m["metadata"].get("namespace"), m["metadata"]["name"])
        for m in rendered["manifests"]
    }
    assert made == {(k, ns or None, n) for k, ns, n in empty.store}
    for manifest in rendered["manifests"]:
        meta = manifest["metadata"]
        live = empty.store[(manifest["kind"], meta.get("namespace") or "", meta["name"])]
        assert project(live, manifest) == manifest
    assert rendered["manifests"] == render_catalog(
        [parse(tenant_params(state="rendered", **options)).spec],
        tenant_flow.discovered_networks((), ()),
    )
    assert TENANT_FLOW.offline(tenant_params()) is None  # present connects
    assert all(
        (m["metadata"].get("labels") or {}).get(LABEL_TENANT) == "a"
        for m in rendered["manifests"]
        if m["kind"] != "ConfigMap" or m["metadata"]["name"] != "platform-parent-queues"
    )
