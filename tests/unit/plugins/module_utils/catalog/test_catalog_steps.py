# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``tenant_catalog``'s plan (``catalog.steps.plan_catalog``) as tables of (request,
facts) -> plan, with no cluster: the facts are what a catalog renders, the nodes and the
running work of the tenants to prune as ``gathered`` returns them."""

from __future__ import annotations

from typing import Any

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.catalog.rendered import (
    rendered_catalog,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.catalog.source_io import (
    parse_request,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.catalog.steps import (
    CatalogFacts,
    plan_catalog,
    prune_names,
    report_catalog,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
    Refused,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.network import (
    discovered_networks,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.render import render_catalog
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.tenants.tenant_objects import (
    GPU,
    gpu_nodes,
    service_cidr,
)

NETWORKS = {"pod_cidr": "10.244.0.0/16", "service_cidr": "10.96.0.0/12"}


def entry(name: str, gpus: int = 2) -> dict[str, Any]:
    return {"name": name, "subscription": {GPU: gpus, "cpu": 8, "memory": "32Gi"}}


def request(tenants, **over):
    params = {
        "state": "present",
        "tenants": tenants,
        "defaults": {},
        "node_selector": {},
        "oversell_check": True,
        "prune": False,
        "max_prune": 5,
        "prune_confirm": [],
        "force": False,
        "on_refusal": "fail",
        "workers": 4,
        **NETWORKS,
    }
    params.update(over)
    return parse_request(params)


def facts(live=(), nodes=8, running=None) -> CatalogFacts:
    """A cluster holding the tenants ``live`` (as the catalog renders them) on ``nodes``
    GPU nodes, with ``running``: what runs in and is held by each tenant to prune."""
    out = CatalogFacts(
        nodes=gpu_nodes(nodes), service_cidrs=[service_cidr()], running=dict(running or {})
    )
    if live:
        networks = discovered_networks(out.nodes, out.service_cidrs)
        for manifest in render_catalog(request(list(live)).catalog.tenants, networks):
            manifest = {**manifest, "metadata": {**manifest["metadata"], "resourceVersion": "1"}}
            if manifest["kind"] == "Queue":
                out.queues.append(manifest)
            elif manifest["metadata"]["name"] == "platform-parent-queues":
                out.parent_list = manifest
            else:
                out.objects.setdefault(manifest["kind"], []).append(manifest)
    return out


IDLE = {"jobs": [], "pods": [], "data": {"claims": 0, "secrets": 0}}
BUSY = {
    "jobs": [{"kind": "Job", "metadata": {"name": "train", "namespace": "tenant-t1"}}],
    "pods": [],
    "data": {"claims": 0, "secrets": 0},
}
HOLDS = {"jobs": [], "pods": [], "data": {"claims": 1, "secrets": 0}}
T = [entry(f"t{i}") for i in range(4)]

# (request, facts) -> what the plan writes: the tenants in order with their part, and
# whether the sale reclaims / recomputes.
PLANS = [
    ("nothing differs", request(T[:2]), facts(T[:2]), [("t0", "-"), ("t1", "-")], (False, False)),
    ("a new tenant", request(T[:2]), facts(T[:1]), [("t0", "-"), ("t1", "write")], (True, True)),
    (
        "a tenant left out stays without prune",
        request(T[:1]),
        facts(T[:2]),
        [("t0", "-")],
        (False, False),
    ),
    (
        "a prune of an idle tenant",
        request(T[:1], prune=True),
        facts(T[:2], running={"t1": IDLE}),
        [("t0", "-"), ("t1", "prune")],
        (False, True),
    ),
    (
        "a forced prune of a busy tenant",
        request(T[:1], prune=True, force=True),
        facts(T[:2], running={"t1": BUSY}),
        [("t0", "-"), ("t1", "prune")],
        (False, True),
    ),
    (
        "a confirmed prune of a tenant holding data",
        request(T[:1], prune=True, prune_confirm=["t1"]),
        facts(T[:2], running={"t1": HOLDS}),
        [("t0", "-"), ("t1", "prune")],
        (False, True),
    ),
    (
        "skip leaves a refused prune out",
        request(T[:1], prune=True, on_refusal="skip"),
        facts(T[:2], running={"t1": HOLDS}),
        [("t0", "-")],
        (False, False),
    ),
    (
        "a grown subscription",
        request([entry("t0", 4)]),
        facts(T[:1]),
        [("t0", "write")],
        (True, True),
    ),
]


@pytest.mark.parametrize(
    ("asked", "given", "writes", "sale"), [p[1:] for p in PLANS], ids=[p[0] for p in PLANS]
)
def test_the_plan_writes(asked, given, writes, sale):
    planned = plan_catalog(asked, given)
    said = [
        (w.name, "prune" if w.prune else "write" if busy else "-")
        for w, busy in zip(planned.todo, planned.busy, strict=True)
    ]
    assert said == writes
    assert (planned.sale.reclaims, planned.sale.recomputes) == sale


# (request, facts) -> the refusal, raised before any write.
REFUSALS = [
    (
        "more to prune than max_prune",
        request(T[:1], prune=True, max_prune=2),
        facts(T),
        PlatformValidationError,
        "max_prune: the run would prune 3 tenants, more than 2: t1, t2, t3",
    ),
    (
        "a busy tenant to prune",
        request(T[:1], prune=True),
        facts(T[:2], running={"t1": BUSY}),
        Refused,
        "'t1' is not in the catalog but still has 1 active Volcano Job(s)",
    ),
    (
        "a tenant to prune holding data prune_confirm does not name",
        request(T[:1], prune=True, prune_confirm=["t9"]),
        facts(T[:2], running={"t1": HOLDS}),
        Refused,
        "holds 1 PersistentVolumeClaim(s) and 0 Secret(s)",
    ),
    (
        "a catalog that sells more than the pool",
        request([entry("t0", 70)]),
        facts(),
        PlatformValidationError,
        "rule catalog-oversell-guard",
    ),
    (
        "a prune the facts say nothing of",
        request(T[:1], prune=True),
        facts(T[:2]),
        PlatformValidationError,
        "facts.running.t1: is missing",
    ),
]


@pytest.mark.parametrize(
    ("asked", "given", "error", "says"), [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS]
)
def test_the_plan_refuses(asked, given, error, says):
    with pytest.raises(error) as exc:
        plan_catalog(asked, given)
    assert says in str(exc.value)


def test_the_oversell_guard_can_be_turned_off():
    planned = plan_catalog(request([entry("t0", 70)], oversell_check=False), facts())
    assert planned.sale.added == 70 and planned.sale.reclaims


def test_gather_reads_the_running_of_no_more_tenants_than_may_be_pruned():
    assert prune_names(request(T[:1], prune=True), facts(T)) == ["t1", "t2", "t3"]
    assert prune_names(request(T[:1], prune=True, max_prune=2), facts(T)) == []
    assert prune_names(request(T[:1]), facts(T)) == []


def test_rendered_plans_the_manifests_and_nothing_else():
    asked = request(T[:2], state="rendered")
    planned = plan_catalog(asked, CatalogFacts())
    assert planned.todo == [] and planned.sale is None
    assert report_catalog(asked, planned) == rendered_catalog(asked.catalog)


def test_the_report_of_a_prune_deletes_children_first_and_the_namespace_last():
    asked = request(T[:1], prune=True, force=True)
    said = report_catalog(asked, plan_catalog(asked, facts(T[:2], running={"t1": BUSY})))
    gone = [(o["kind"], o["name"]) for o in said["objects"] if o["action"] == "delete"]
    assert gone[0] == ("Job", "train")
    assert gone[-1] == ("Namespace", "tenant-t1")
    assert {r["name"]: r["status"] for r in said["summary"]} == {"t0": "unchanged", "t1": "pruned"}


def stored(name: str, gpus: int, checkpoints: str) -> dict[str, Any]:
    return {**entry(name, gpus), "bounds": {"storage_classes": {"checkpoints": checkpoints}}}


CAPACITY = {"data": {"checkpoints": "10Ti"}}


def test_a_catalog_that_sells_a_storage_class_beyond_its_capacity_is_refused():
    """Rule catalog-storage-oversell: the catalog's class bounds together, with a tenant
    outside it keeping its own."""
    given = facts([stored("t0", 2, "4Ti"), stored("t9", 2, "5Ti")])
    given.storage_capacity = CAPACITY
    with pytest.raises(PlatformValidationError) as exc:
        plan_catalog(request([stored("t0", 2, "6Ti")]), given)
    said = str(exc.value)
    assert "sells 11Ti of storage class checkpoints" in said
    assert "5Ti kept by tenants outside it" in said and "growing: t0" in said


def test_a_catalog_within_a_class_or_not_growing_it_or_unjudged_is_planned():
    given = facts([stored("t0", 2, "4Ti"), stored("t9", 2, "5Ti")])
    given.storage_capacity = CAPACITY
    assert plan_catalog(request([stored("t0", 2, "5Ti")]), given).works
    # Pruning t9 frees its 5Ti.
    given.running = {"t9": {"jobs": [], "pods": [], "claims": [], "secrets": []}}
    assert plan_catalog(request([stored("t0", 2, "9Ti")], prune=True), given).works
    given.storage_capacity = None  # no capacity recorded: not judged
    assert plan_catalog(request([stored("t0", 2, "15Ti")]), given).works
