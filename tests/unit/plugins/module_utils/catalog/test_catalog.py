# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tenant catalog's pure core: the catalog checked as a whole, the per-tenant plan
and status, pruning, the fleet-wide oversell guard, rendering and gathering."""

from __future__ import annotations

import copy
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.capacity.oversell import (
    catalog_oversell_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.catalog import (
    fleet,
    gather,
    plan,
    spec,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.objects import (
    strip_server_fields,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants import render, service
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.network import (
    ClusterNetworks,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.workload.pool import (
    commitments_from_queues,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.tenants.tenant_objects import (
    GPU,
    POD_CIDR,
    SERVICE_CIDR,
    networks_of,
    pool,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.tenants.tenant_objects import (
    tenant_params as module_params,
)

SHARED = {"pod_cidr": POD_CIDR, "service_cidr": SERVICE_CIDR}


def entry(name, gpus=4, **over):
    out = {"name": name, "subscription": {GPU: gpus, "cpu": 16, "memory": "64Gi"}}
    out.update(over)
    return out


def messages(exc_info):
    return exc_info.value.messages


# -- the catalog as a whole ------------------------------------------------------------------


def test_every_entry_error_is_reported_under_its_index_at_once():
    with pytest.raises(PlatformValidationError) as exc:
        spec.parse_catalog(
            [
                entry("ok"),
                {"name": "Bad_Name", "subscription": {GPU: 1}},
                entry("x", colour="red"),
                "not a mapping",
                entry("y", subscription={GPU: -1}),
            ]
        )
    fields = [m.split(":")[0] for m in messages(exc)]
    assert "tenants[1].name" in fields
    assert "tenants[2].colour" in fields
    assert "tenants[3]" in fields
    assert "tenants[4].subscription.nvidia.com/gpu" in fields
    assert not any(f.startswith("tenants[0]") for f in fields)


def test_a_tenant_declared_twice_is_refused_naming_both_places():
    with pytest.raises(PlatformValidationError) as exc:
        spec.parse_catalog([entry("a"), entry("b"), entry("a", gpus=8)])
    assert messages(exc) == [
        "tenants[2].name: 'a' is already declared at tenants[0]; a tenant is declared once "
        "(rule catalog-unique-names)"
    ]


def test_two_tenants_deriving_the_same_queue_are_refused():
    teams_x = [{"name": "b-x", "deserved": {GPU: 1}}]
    with pytest.raises(PlatformValidationError) as exc:
        spec.parse_catalog(
            [entry("pa", teams=teams_x), entry("pa-b", teams=[{"name": "x", "deserved": {GPU: 1}}])]
        )
    (message,) = messages(exc)
    assert message.startswith("tenants[1]: tenant 'pa-b' derives queue tenant-pa-b-x")
    assert "(rule catalog-queue-names-unique)" in message


def test_team_rules_hold_per_entry():
    too_much = [{"name": "ml", "deserved": {GPU: 9}}]
    with pytest.raises(PlatformValidationError) as exc:
        spec.parse_catalog([entry("a", gpus=4, teams=too_much)])
    assert all(m.startswith("tenants[0].") for m in messages(exc)), messages(exc)


def test_defaults_apply_under_each_entry_and_cannot_name_a_tenant():
    catalog = spec.parse_catalog(
        [entry("a"), entry("b", allow_critical=False)], defaults={"allow_critical": True}
    )
    assert [t.allow_critical for t in catalog.tenants] == [True, False]
    with pytest.raises(PlatformValidationError) as exc:
        spec.parse_catalog([entry("a")], defaults={"name": "x", "colour": 1})
    assert sorted(m.split(":")[0] for m in messages(exc)) == ["defaults.colour", "defaults.name"]


def test_an_entry_means_what_the_tenant_module_means():
    """Same defaults: the catalog's tenant and the module's tenant plan the same objects."""
    alone = module_params()
    catalog = spec.parse_catalog(
        [
            {
                "name": "a",
                "subscription": alone["subscription"],
                "teams": [{k: v for k, v in t.items() if v is not None} for t in alone["teams"]],
            }
        ]
    )
    from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.inputs import (
        parse_present,
    )

    assert catalog.tenants[0] == parse_present(alone)


def test_a_bad_shared_network_is_reported_once_not_per_tenant():
    with pytest.raises(PlatformValidationError) as exc:
        spec.parse_catalog([entry("a"), entry("b")], shared={"pod_cidr": "10.0.0.0/33"})
    assert [m.split(":")[0] for m in messages(exc)] == ["pod_cidr"]


# -- the fleet-wide oversell guard -----------------------------------------------------------


def queues_of(*tenants):
    out = []
    for name, gpus, payg in tenants:
        out.append(
            {
                "metadata": {
                    "name": f"tenant-{name}-subscription",
                    "labels": {
                        "platform.io/tenant": name,
                        "platform.io/queue-type": "subscription",
                    },
                },
                "spec": {"deserved": {GPU: gpus}},
            }
        )
        out.append(
            {
                "metadata": {
                    "name": f"tenant-{name}-payg",
                    "labels": {"platform.io/tenant": name, "platform.io/queue-type": "payg"},
                },
                "spec": {"deserved": {GPU: payg}, "capability": {GPU: payg}},
            }
        )
    return commitments_from_queues(out)


POOL = {GPU: Decimal(64), "cpu": Decimal(1000), "memory": Decimal(10**15)}


def test_the_catalog_total_must_fit_and_names_the_growing_tenants():
    live = queues_of(("a", 32, 0), ("outside", 16, 8))
    desired = {"a": ({GPU: Decimal(40)}, None), "b": ({GPU: Decimal(8)}, {GPU: Decimal(4)})}
    (error,) = catalog_oversell_errors(POOL, live, desired)
    assert error.field == "tenants.nvidia.com/gpu"
    assert "sells 76 " in error.message and "pool has 64" in error.message
    assert "12 too many" in error.message
    assert "a (+8)" in error.message and "b (+12)" in error.message
    # pruning the tenant outside the catalog frees its 24
    assert catalog_oversell_errors(POOL, live, desired, pruned=["outside"]) == []


def test_an_oversold_cluster_takes_a_catalog_that_sells_no_more():
    live = queues_of(("a", 60, 10))  # 70 sold of 64 (nodes left)
    assert catalog_oversell_errors(POOL, live, {"a": ({GPU: Decimal(60)}, None)}) == []
    assert catalog_oversell_errors(POOL, live, {"a": ({GPU: Decimal(61)}, None)}) != []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=8), st.integers(0, 128))
def test_the_fleet_guard_agrees_with_the_plain_sum(gpus, pool_gpus):
    """From an empty cluster: refused exactly when the catalog sells more than the pool."""
    desired = {f"t{i}": ({GPU: Decimal(g)}, None) for i, g in enumerate(gpus)}
    errors = catalog_oversell_errors({GPU: Decimal(pool_gpus)}, {}, desired)
    assert bool(errors) == (sum(gpus) > pool_gpus)


# -- plan, status, prune ---------------------------------------------------------------------


def test_prune_candidates_are_the_managed_tenants_the_catalog_leaves_out():
    tenants = fleet.group_fleet(
        {"Namespace": [ns("a"), ns("gone")]}, [queue("old", "subscription")]
    )
    assert plan.prune_candidates(tenants, ["a"]) == ["gone", "old"]


def test_a_tenant_to_prune_with_running_work_is_refused_unless_forced():
    assert plan.prune_refusal("x", {"jobs": 0, "pods": 0}, force=False) == []
    (why,) = plan.prune_refusal("x", {"jobs": 1, "pods": 2}, force=False)
    assert "1 active Volcano Job(s) and 2 active pod(s)" in why and "(rule catalog-prune)" in why
    assert plan.prune_refusal("x", {"jobs": 1, "pods": 2}, force=True) == []


def test_an_empty_catalog_never_prunes():
    """Rule catalog-prune-empty."""
    (error,) = plan.prune_empty_errors(True, [])
    assert error.field == "prune" and "(rule catalog-prune-empty)" in str(error)
    assert plan.prune_empty_errors(False, []) == []
    assert plan.prune_empty_errors(True, ["a"]) == []


@given(st.lists(st.from_regex(r"[a-z]{1,8}", fullmatch=True), unique=True), st.integers(0, 20))
def test_a_run_prunes_at_most_max_prune_tenants(candidates, max_prune):
    """Rule catalog-prune-max: refused exactly when there are more candidates than allowed,
    naming them."""
    errors = plan.prune_max_errors(sorted(candidates), max_prune)
    assert bool(errors) == (len(candidates) > max_prune)
    if errors:
        assert f"would prune {len(candidates)} tenants, more than {max_prune}" in str(errors[0])
        assert all(name in str(errors[0]) for name in sorted(candidates)[:50])


def test_a_tenant_with_data_is_pruned_only_when_confirmed():
    """Rule catalog-prune-data: claims or Secrets of its own need its name in prune_confirm."""
    assert plan.prune_data_refusal("x", {"claims": 0, "secrets": 0}, []) == []
    (why,) = plan.prune_data_refusal("x", {"claims": 2, "secrets": 0}, ["y"])
    assert "holds 2 PersistentVolumeClaim(s) and 0 Secret(s)" in why
    assert "(rule catalog-prune-data)" in why
    assert plan.prune_data_refusal("x", {"claims": 2, "secrets": 1}, ["x"]) == []


def test_max_prune_is_a_whole_number_zero_or_more():
    from ansible_collections.gpucloud.platform.plugins.module_utils.catalog import inputs

    for bad in (-1, True, "3"):
        (error,) = [e for e in inputs.option_errors({"max_prune": bad}) if e.field == "max_prune"]
        assert "must be a whole number, 0 or more" in str(error)
    assert not [e for e in inputs.option_errors({"max_prune": 0}) if e.field == "max_prune"]


def ns(name):
    return {
        "kind": "Namespace",
        "metadata": {"name": f"tenant-{name}", "labels": {"platform.io/tenant": name}},
    }


def queue(tenant, queue_type, name=None):
    return {
        "kind": "Queue",
        "metadata": {
            "name": name or f"tenant-{tenant}-{queue_type}",
            "labels": {"platform.io/tenant": tenant, "platform.io/queue-type": queue_type},
        },
        "spec": {"parent": "root"},
    }


def test_a_label_copied_into_another_namespace_does_not_make_an_object_the_tenants():
    role = {
        "kind": "Role",
        "metadata": {"name": "r", "namespace": "tenant-b", "labels": {"platform.io/tenant": "a"}},
    }
    tenants = fleet.group_fleet({"Namespace": [ns("a")], "Role": [role]}, [])
    assert tenants["a"].objects["Role"] == {}


def test_a_queue_of_a_tenant_outside_the_catalog_is_refused_for_a_catalog_tenant():
    catalog = spec.parse_catalog([entry("a")], shared=SHARED)
    taken = queue("someone", "subscription", name="tenant-a-subscription")
    work = plan.plan_tenant_work(
        catalog.tenants[0],
        fleet.Fleet().live("a"),
        {"tenant-a-subscription": taken},
        ClusterNetworks(),
    )
    assert work.refused and "already exists and belongs to tenant 'someone'" in work.errors[0]
    assert plan.tenant_status(work, False) == plan.REFUSED


def test_status_follows_what_was_written():
    catalog = spec.parse_catalog([entry("a")], shared=SHARED)
    new = plan.plan_tenant_work(catalog.tenants[0], fleet.Fleet().live("a"), {}, ClusterNetworks())
    assert new.steps and plan.tenant_status(new, True) == plan.CREATED
    existing = plan.TenantWork("a", fleet.group_fleet({"Namespace": [ns("a")]}, [])["a"])
    assert plan.tenant_status(existing, True) == plan.CHANGED
    assert plan.tenant_status(existing, False) == plan.UNCHANGED
    rows = [{"status": "created"}, {"status": "created"}, {"status": "refused"}]
    assert plan.counts(rows) == {
        "created": 2,
        "changed": 0,
        "unchanged": 0,
        "refused": 1,
        "pruned": 0,
    }


def test_the_objects_are_compared_once_in_the_plan_and_only_what_differs_is_written():
    tenant = spec.parse_catalog([entry("a")], shared=SHARED).tenants[0]
    new = plan.plan_tenant_work(tenant, fleet.Fleet().live("a"), {}, ClusterNetworks())
    assert [(m["kind"], action) for m, action, _live in new.object_changes] == [
        (m["kind"], "create") for m in new.plan.objects
    ]
    # The cluster as that plan leaves it: nothing differs, so nothing is written.
    by_kind = {}
    for manifest in new.plan.objects:
        by_kind.setdefault(manifest["kind"], []).append(copy.deepcopy(manifest))
    written = fleet.group_fleet(by_kind, [q.to_manifest() for q in new.plan.queues])["a"]
    assert plan.plan_tenant_work(tenant, written, {}, ClusterNetworks()).object_changes == []
    # A queue list naming a queue the tenant no longer has is rewritten, although the
    # live object has every key the manifest has (`queue_list_stale`).
    [queue_list] = [m for m in by_kind["ConfigMap"] if m["data"]]
    queue_list["data"]["tenant-a-gone"] = "spot"
    stale = fleet.group_fleet(by_kind, [q.to_manifest() for q in new.plan.queues])["a"]
    changed = plan.plan_tenant_work(tenant, stale, {}, ClusterNetworks()).object_changes
    assert [(m["metadata"]["name"], action) for m, action, _live in changed] == [
        (queue_list["metadata"]["name"], "update")
    ]


# -- rendered and gathered -------------------------------------------------------------------


CATALOG = [
    entry("a", gpus=40, teams=[{"name": "ml", "deserved": {GPU: 30}, "capability": {GPU: 40}}]),
    entry("b", gpus=8, payg={GPU: 4}, allow_critical=True, egress_cidrs=["203.0.113.0/24"]),
    entry("c", gpus=2, subjects=[{"kind": "User", "name": "carol"}], egress_to_metadata=True),
]


def test_rendering_is_stable_and_sorted_whatever_the_catalog_order():
    one = render.render_catalog(
        spec.parse_catalog(CATALOG, shared=SHARED).tenants, ClusterNetworks()
    )
    other = render.render_catalog(
        spec.parse_catalog(list(reversed(CATALOG)), shared=SHARED).tenants, ClusterNetworks()
    )
    assert one == other
    kinds = [m["kind"] for m in one]
    assert kinds == sorted(kinds, key=render.KIND_ORDER.index)
    queues = [m for m in one if m["kind"] == "Queue"]
    parents = [m["spec"]["parent"] for m in queues]
    assert parents.index("tenant-a-subscription") > max(
        i for i, p in enumerate(parents) if p == "root"
    )


def test_the_rendered_manifests_are_what_the_tenant_module_applies():
    """Every rendered object equals the object the module leaves in a cluster, field for
    field (the module applies the queue's capacity under a second field manager)."""
    cluster = pool(nodes=8)
    catalog = spec.parse_catalog(CATALOG)
    for tenant in CATALOG:
        service.run_tenant({**module_params(), "teams": None, **tenant}, cluster)
    rendered = render.render_catalog(catalog.tenants, networks_of(list(cluster.store.values())))
    for manifest in rendered:
        meta = manifest["metadata"]
        live = cluster.store[cluster.key(manifest["kind"], meta.get("namespace"), meta["name"])]
        stripped = strip_server_fields(live)
        stripped.pop("apiVersion", None)
        expected = copy.deepcopy(manifest)
        expected.pop("apiVersion", None)
        assert project(stripped, expected) == expected, manifest["metadata"]["name"]


def project(live, desired):
    if isinstance(desired, dict) and isinstance(live, dict):
        return {k: project(live.get(k), v) for k, v in desired.items()}
    return live


def test_gathering_the_rendered_tenants_gives_back_the_catalog():
    catalog = spec.parse_catalog(CATALOG, shared=SHARED)
    manifests = render.render_catalog(catalog.tenants, ClusterNetworks())
    by_kind: dict[str, list] = {}
    for m in manifests:
        by_kind.setdefault(m["kind"], []).append(m)
    queues = by_kind.pop("Queue")
    tenants = fleet.group_fleet(by_kind, queues)
    gathered = gather.gather_fleet(tenants, ClusterNetworks())
    assert [g["name"] for g in gathered] == ["a", "b", "c"]
    again = spec.parse_catalog(gathered, shared=SHARED)
    # The same objects: a gathered pay-as-you-go grant is written out (0 where the
    # catalog left it to its default), which plans the same queue.
    assert render.render_catalog(again.tenants, ClusterNetworks()) == manifests
    assert gathered[1]["payg"] == {"cpu": "0", "memory": "0", GPU: 4}


def test_gathered_egress_flags_follow_the_policy():
    networks = ClusterNetworks(nodes=[__import__("ipaddress").ip_network("192.168.0.10/32")])
    catalog = spec.parse_catalog([entry("n", egress_to_nodes=True), entry("m")], shared=SHARED)
    manifests = render.render_catalog(catalog.tenants, networks)
    policies = [m for m in manifests if m["kind"] == "NetworkPolicy"]
    tenants = fleet.group_fleet({"Namespace": [ns("n"), ns("m")], "NetworkPolicy": policies}, [])
    gathered = {g["name"]: g for g in gather.gather_fleet(tenants, networks)}
    assert gathered["n"]["egress_to_nodes"] is True
    assert gathered["m"]["egress_to_nodes"] is False
    assert gathered["m"]["egress_to_metadata"] is False
