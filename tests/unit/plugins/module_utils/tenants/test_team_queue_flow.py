# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``team_queue`` through the flow contract: its plan as a table of cases over
facts (no cluster), and ``parsed`` of ``gathered`` as the check-mode run."""

from __future__ import annotations

import copy
from functools import cache

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants import service, teams
from ansible_collections.gpucloud.platform.plugins.modules import team_queue
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster
from ansible_collections.gpucloud.platform.tests.unit.flow_checks import (
    assert_parsed_is_the_check_run,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.tenants.tenant_objects import (
    GPU,
    control_plane,
    podgroup,
)

PARENTS = {"kind": "ConfigMap", "name": "platform-parent-queues", "namespace": "platform-system"}
QUEUE_LIST = {"kind": "ConfigMap", "name": "platform-queues", "namespace": "tenant-a"}
READER = {"kind": "ClusterRole", "name": "gpucloud-tenant-a-queues"}
ML = {"kind": "Queue", "name": "tenant-a-ml"}


def team(**over):
    p = {
        "tenant": "a",
        "name": "ml",
        "state": "present",
        "deserved": {GPU: 10},
        "capability": None,
        "guarantee": None,
        "force": False,
    }
    return p | over


@cache
def _tenant(with_team):
    cluster = FakeCluster(control_plane())
    tenant = {"name": "a", "subscription": {GPU: 40, "cpu": 160, "memory": "640Gi"}}
    service.run_tenant({**tenant, "oversell_check": False}, cluster)
    if with_team:
        service.run_team_queue(team(), cluster)
    return tuple(cluster.store.values())


def tenant(with_team=False):
    """Tenant ``a``'s objects (with team ``ml`` of 10 GPUs when ``with_team``)."""
    return copy.deepcopy(list(_tenant(with_team)))


def foreign(name):
    """A queue of that name that tenant ``x`` owns."""
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name, "labels": {"platform.io/tenant": "x"}},
        "spec": {"parent": "root"},
    }


def facts(objects, taken=()):
    """The facts a run reads from ``objects``, every read made."""

    def one(kind, name):
        return tuple(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)

    queues = tuple(
        o
        for o in objects
        if o["kind"] == "Queue" and o["metadata"].get("labels", {}).get("platform.io/tenant") == "a"
    )
    return teams.TeamQueueFacts(
        queues=queues,
        podgroups=tuple(o for o in objects if o["kind"] == "PodGroup"),
        taken=tuple(taken),
        parent_list=one("ConfigMap", "platform-parent-queues"),
        queue_list=one("ConfigMap", "platform-queues"),
        reader=one("ClusterRole", "gpucloud-tenant-a-queues"),
    )


# (case, options, facts, the objects planned or the refusal's words)
CASES = [
    (
        "a first team",
        {},
        facts(tenant()),
        [
            {**PARENTS, "action": "create"},
            {**ML, "action": "create"},
            {**QUEUE_LIST, "action": "update"},
            {**READER, "action": "update"},
        ],
    ),
    ("in step", {}, facts(tenant(True)), []),
    ("resized", {"deserved": {GPU: 12}}, facts(tenant(True)), [{**ML, "action": "update"}]),
    (
        "removed",
        {"state": "absent"},
        facts(tenant(True)),
        [
            {**ML, "action": "delete"},
            {**PARENTS, "action": "update"},
            {**QUEUE_LIST, "action": "update"},
            {**READER, "action": "update"},
        ],
    ),
    ("removed, not there", {"state": "absent"}, facts(tenant()), []),
    ("no tenant", {}, teams.TeamQueueFacts(), "create the tenant first"),
    (
        "a busy subscription",
        {},
        facts([*tenant(), podgroup("tenant-a-subscription")]),
        "leaf queues",
    ),
    ("more than the subscription", {"deserved": {GPU: 50}}, facts(tenant()), f"deserved.{GPU}"),
    (
        "a busy team removed",
        {"state": "absent"},
        facts([*tenant(True), podgroup("tenant-a-ml")]),
        "team.name",
    ),
    (
        "the name another tenant's",
        {},
        facts(tenant(), [foreign("tenant-a-ml")]),
        "belongs to tenant 'x'",
    ),
]


@pytest.mark.parametrize(
    "options,given,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_plan_over_facts(options, given, expected):
    request = teams.parse_team(team(**options))
    if isinstance(expected, str):
        with pytest.raises(PlatformValidationError, match=expected):
            teams.plan(request, given)
        return
    said = teams.report(request, teams.plan(request, given))
    assert said["objects"] == expected and said["changed"] is bool(expected)


def test_the_queue_list_planned_names_the_new_team():
    request = teams.parse_team(team())
    planned = teams.plan(request, facts(tenant()))
    (queue_list, _action, _live), _reader = planned.access
    assert queue_list["data"] == {
        "tenant-a-ml": "team",
        "tenant-a-payg": "payg",
        "tenant-a-spot": "spot",
    }


CLUSTERS = {
    "a tenant without teams": tenant,
    "a tenant with a team": lambda: tenant(True),
    "a busy subscription": lambda: [*tenant(), podgroup("tenant-a-subscription")],
    "a busy team": lambda: [*tenant(True), podgroup("tenant-a-ml")],
    "no tenant": control_plane,
    "the name taken": lambda: [*tenant(), foreign("tenant-a-ml")],
    "no parent-queues list": lambda: [
        o for o in tenant() if o["metadata"]["name"] != "platform-parent-queues"
    ],
}
OPTIONS = [{}, {"deserved": {GPU: 12}, "capability": {GPU: 20}}, {"name": "cv", "force": True}]


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("name", sorted(CLUSTERS))
def test_parsed_of_gathered_is_the_check_mode_run(name, options):
    objects = CLUSTERS[name]()
    gathered = service.TEAM_QUEUE_FLOW.run(
        team(state="gathered", **options), FakeCluster(copy.deepcopy(objects)), False
    )["gathered"]
    assert_parsed_is_the_check_run(
        service.TEAM_QUEUE_FLOW,
        lambda: service.run_team_queue(
            team(**options), FakeCluster(copy.deepcopy(objects), dry_run=True), True
        ),
        team(state="parsed", facts=gathered, **options),
    )


def test_gathered_reads_what_a_run_reads_before_writing(run_module):
    cluster = FakeCluster(tenant())
    out = run_module(
        team_queue, cluster, tenant="a", name="ml", deserved={GPU: 10}, state="gathered"
    )
    assert out["changed"] is False and cluster.writes == []
    # two lists, the new name's GET, and the three ConfigMap and ClusterRole GETs
    assert out["requests"] == 6
    assert sorted(out["gathered"]) == sorted(teams.FACT_KEYS)
    assert out["gathered"]["taken"] == []


def test_the_module_plans_offline(run_module):
    gathered = service.TEAM_QUEUE_FLOW.run(team(state="gathered"), FakeCluster(tenant()), False)[
        "gathered"
    ]
    offline = FakeCluster([])
    out = run_module(
        team_queue,
        offline,
        tenant="a",
        name="ml",
        deserved={GPU: 10},
        state="parsed",
        facts=gathered,
    )
    assert out["requests"] == 0 and offline.requests == 0 and out["changed"] is False
    assert {**ML, "action": "create"} in out["objects"]
    assert out["summary"][0].startswith("team ml of tenant a (tenant-a-ml): ")
