# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import copy
from decimal import Decimal

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    VGPU_QUEUE_RESOURCES,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.queues.model import (
    Queue,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.plan import (
    desired_queues,
    plan_tenant,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.spec import (
    parse_tenant_spec,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.tenant_queues import (
    TeamSpec,
    payg_queue,
    plan_team_change,
    spot_queue,
    subscription_queue,
    team_queue,
)

GPU = "nvidia.com/gpu"
# What every queue of a tenant without a vGPU purchase names while its pods hold none.
NO_VGPU = {name: Decimal(0) for name in VGPU_QUEUE_RESOURCES}


def good():
    return {
        "name": "a",
        "subscription": {GPU: 40, "cpu": 160, "memory": "640Gi"},
        "teams": [
            {"name": "algo", "deserved": {GPU: 20}, "capability": {GPU: 40}},
            {"name": "eng", "deserved": {GPU: 10}},
            {"name": "data", "deserved": {GPU: 10}},
        ],
        "egress_cidrs": ["0.0.0.0/0"],
        "pod_cidr": "10.244.0.0/16",
        "service_cidr": "10.96.0.0/12",
    }


def with_(path, value):
    params = good()
    target = params
    *parents, last = path
    for p in parents:
        target = target[p]
    target[last] = value
    return params


# (description, params, field the message must name)
BAD = [
    ("negative GPUs", with_(["subscription", GPU], -4), f"subscription.{GPU}"),
    ("negative team cpu", with_(["teams", 1, "deserved"], {"cpu": "-1"}), "teams[1].deserved.cpu"),
    ("not a quantity", with_(["subscription", "memory"], "lots"), "subscription.memory"),
    ("fractional GPU", with_(["teams", 0, "deserved"], {GPU: "0.5"}), f"teams[0].deserved.{GPU}"),
    (
        "deserved above capability",
        with_(["teams", 0], {"name": "algo", "deserved": {GPU: 30}, "capability": {GPU: 20}}),
        f"teams[0].deserved.{GPU}",
    ),
    (
        "teams sum above subscription",
        with_(["teams", 2, "deserved"], {GPU: 11}),
        f"teams[2].deserved.{GPU}",
    ),
    (
        "team capability above subscription",
        with_(["teams", 1, "capability"], {GPU: 41}),
        f"teams[1].capability.{GPU}",
    ),
    (
        "guarantee without subscription guarantee",
        with_(["teams", 1, "guarantee"], {GPU: 2}),
        f"teams[1].guarantee.{GPU}",
    ),
    (
        "guarantee above deserved",
        with_(["teams", 1, "guarantee"], {GPU: 11}),
        f"teams[1].guarantee.{GPU}",
    ),
    ("team named payg", with_(["teams", 1, "name"], "payg"), "teams[1].name"),
    (
        "team named like another tenant's subscription",
        with_(["teams", 1, "name"], "b-subscription"),
        "teams[1].name",
    ),
    ("team named like a spot queue", with_(["teams", 0, "name"], "x-spot"), "teams[0].name"),
    ("duplicate team", with_(["teams", 2, "name"], "algo"), "teams[2].name"),
    ("team name not a DNS label", with_(["teams", 0, "name"], "Algo_1"), "teams[0].name"),
    ("unknown team field", with_(["teams", 0, "weight"], 3), "teams[0].weight"),
    ("over-long tenant name", with_(["name"], "t" * 44), "name"),
    ("tenant name upper case", with_(["name"], "Alpha"), "name"),
    ("unknown resource", with_(["subscription", "amd.com/gpu"], 4), "subscription.amd.com/gpu"),
    (
        "unknown team resource",
        with_(["teams", 0, "capability"], {"gpus": 4}),
        "teams[0].capability.gpus",
    ),
    ("subscription without GPUs", with_(["subscription"], {"cpu": 8}), f"subscription.{GPU}"),
    ("not a CIDR", with_(["egress_cidrs"], ["not-a-cidr"]), "egress_cidrs[0]"),
    ("CIDR with host bits", with_(["egress_cidrs"], ["203.0.113.7/24"]), "egress_cidrs[0]"),
    (
        "CIDR inside pod network",
        with_(["egress_cidrs"], ["0.0.0.0/0", "10.244.3.0/24"]),
        "egress_cidrs[1]",
    ),
    ("bad pod CIDR", with_(["pod_cidr"], "10.244.0.0/33"), "pod_cidr"),
    (
        "bad subject kind",
        with_(["subjects"], [{"kind": "Robot", "name": "r2"}]),
        "subjects[0].kind",
    ),
    ("subject without name", with_(["subjects"], [{"kind": "User"}]), "subjects[0].name"),
    (
        "namespace on a group",
        with_(["subjects"], [{"kind": "Group", "name": "g", "namespace": "x"}]),
        "subjects[0].namespace",
    ),
    ("payg negative", with_(["payg"], {GPU: -1}), f"payg.{GPU}"),
    ("teams not a list", with_(["teams"], "algo"), "teams"),
]


def errors_of(params):
    with pytest.raises(PlatformValidationError) as exc:
        spec = parse_tenant_spec(params)
        plan_tenant(spec, {})
    return exc.value


@pytest.mark.parametrize(("what", "params", "field"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_names_its_field(what, params, field):
    err = errors_of(params)
    assert field in [e.field for e in err.errors], err.messages
    assert any(m.startswith(f"{field}: ") for m in err.messages)


def test_at_least_twenty_distinct_bad_inputs():
    assert len({b[2] for b in BAD}) >= 20


def test_every_error_is_reported_at_once():
    params = good()
    params["name"] = "Bad_Name"
    params["subscription"][GPU] = -1
    params["teams"][0]["name"] = "payg"
    params["egress_cidrs"] = ["nope"]
    err = errors_of(params)
    fields = {e.field for e in err.errors}
    assert {"name", f"subscription.{GPU}", "teams[0].name", "egress_cidrs[0]"} <= fields


def test_tree_rules_of_the_input_are_reported_with_the_other_fields():
    """A team deserving more than the subscription is an input error like a bad
    CIDR: one run reports both, before any request."""
    params = good()
    params["teams"] = [{"name": "algo", "deserved": {GPU: 41}}]
    params["egress_cidrs"] = ["10.244.1.0/24"]
    fields = [e.field for e in errors_of(params).errors]
    assert f"teams[0].deserved.{GPU}" in fields and "egress_cidrs[0]" in fields


def test_subscription_required():
    params = good()
    del params["subscription"]
    assert "subscription" in [e.field for e in errors_of(params).errors]


def test_good_input_builds_three_queues_and_teams():
    spec = parse_tenant_spec(good())
    plan = plan_tenant(spec, {})
    names = [q.name for q in plan.queues]
    assert names[:3] == ["tenant-a-subscription", "tenant-a-payg", "tenant-a-spot"]
    assert set(names[3:]) == {"tenant-a-algo", "tenant-a-eng", "tenant-a-data"}
    sub = plan.queues[0]
    # No vGPU bought: the capability names the vGPU resources at 0 (rule vgpu-queue-capability).
    assert (
        sub.deserved
        == sub.capability
        == {GPU: Decimal(40), "cpu": Decimal(160), "memory": Decimal(640 * 2**30), **NO_VGPU}
    )
    payg = plan.queues[1]
    assert payg.deserved == payg.capability == {GPU: 0, "cpu": 0, "memory": 0, **NO_VGPU}
    spot = plan.queues[2]
    assert spot.deserved == {GPU: 0} and spot.capability == {GPU: 0, **NO_VGPU}
    assert spot.write_capacity and payg.write_capacity
    kinds = [o["kind"] for o in plan.objects]
    assert kinds == [
        "Namespace",
        "Role",
        "RoleBinding",
        "NetworkPolicy",
        "ConfigMap",  # platform-queues: the queue policies' parameter
        "ClusterRole",  # the queue reader and its binding
        "ClusterRoleBinding",
        "ResourceQuota",  # rule tenant-bounds: pods, claims, storage
        "LimitRange",  # and the largest claim
    ]
    assert plan.objects[0]["metadata"]["labels"]["platform.io/tenant"] == "a"


def test_default_subject_is_tenant_group():
    plan = plan_tenant(parse_tenant_spec(good()), {})
    binding = plan.objects[2]
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "tenant:a"}
    ]


def test_service_account_subject_defaults_to_tenant_namespace():
    params = good()
    params["subjects"] = [{"kind": "ServiceAccount", "name": "ci"}]
    binding = plan_tenant(parse_tenant_spec(params), {}).objects[2]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "ci", "namespace": "tenant-a"}
    ]


def test_network_policy_cuts_cluster_cidrs_out_of_egress():
    params = good()
    params["egress_cidrs"] = ["0.0.0.0/0", "10.0.0.0/8", "203.0.113.0/24"]
    policy = plan_tenant(parse_tenant_spec(params), {}).objects[3]
    blocks = [
        to["ipBlock"] for rule in policy["spec"]["egress"] for to in rule["to"] if "ipBlock" in to
    ]
    # in address order; 0.0.0.0/0 also loses the cloud metadata address
    assert blocks == [
        {"cidr": "0.0.0.0/0", "except": ["10.96.0.0/12", "10.244.0.0/16", "169.254.169.254/32"]},
        {"cidr": "10.0.0.0/8", "except": ["10.96.0.0/12", "10.244.0.0/16"]},
        {"cidr": "203.0.113.0/24"},
    ]
    dns = policy["spec"]["egress"][1]
    assert dns["ports"] == [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]
    assert dns["to"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}
    ]
    assert policy["spec"]["ingress"] == [{"from": [{"podSelector": {}}]}]


def test_role_grants_nothing_on_queues():
    role = plan_tenant(parse_tenant_spec(good()), {}).objects[1]
    assert role["metadata"]["namespace"] == "tenant-a"
    assert not any("queues" in r["resources"] for r in role["rules"])
    assert any(
        r["apiGroups"] == ["batch.volcano.sh"] and "create" in r["verbs"] for r in role["rules"]
    )


def live_of(queues):
    return {q.name: q.to_manifest() for q in queues}


def test_spot_capability_is_never_written_after_creation():
    spec = parse_tenant_spec(good())
    first = plan_tenant(spec, {}).queues
    live = live_of(first)
    live["tenant-a-spot"]["spec"]["capability"] = {GPU: 17}
    again = {q.name: q for q in desired_queues(spec, live)[0]}
    assert again["tenant-a-spot"].capability == {GPU: Decimal(17), **NO_VGPU}
    assert not again["tenant-a-spot"].write_capacity


def test_payg_not_given_keeps_live_value():
    spec = parse_tenant_spec(good())
    live = live_of(plan_tenant(spec, {}).queues)
    live["tenant-a-payg"]["spec"]["deserved"] = {GPU: 6}
    live["tenant-a-payg"]["spec"]["capability"] = {GPU: 6}
    payg = {q.name: q for q in desired_queues(spec, live)[0]}["tenant-a-payg"]
    assert payg.capability == {GPU: Decimal(6), **NO_VGPU} and not payg.write_capacity
    params = good()
    params["payg"] = {GPU: 2}
    payg = {q.name: q for q in desired_queues(parse_tenant_spec(params), live)[0]}["tenant-a-payg"]
    assert payg.capability == {GPU: Decimal(2), "cpu": 0, "memory": 0, **NO_VGPU}
    assert payg.write_capacity


def with_status(manifest, **allocated):
    m = copy.deepcopy(manifest)
    m["status"] = {"allocated": allocated}
    return m


def test_capability_below_allocated_refused_with_numbers_unless_forced():
    spec = parse_tenant_spec(good())
    live = live_of(plan_tenant(spec, {}).queues)
    live["tenant-a-algo"] = with_status(live["tenant-a-algo"], **{GPU: "30"})
    params = good()
    params["teams"][0]["capability"] = {GPU: 24}
    with pytest.raises(PlatformValidationError) as exc:
        plan_tenant(parse_tenant_spec(params), live)
    [msg] = exc.value.messages
    assert msg.startswith(f"teams[0].capability.{GPU}: 24 is below the 30")
    plan = plan_tenant(parse_tenant_spec(params), live, force=True)
    assert plan.queues[3].capability == {GPU: Decimal(24), **NO_VGPU}


def test_unchanged_capability_below_allocated_is_not_refused():
    spec = parse_tenant_spec(good())
    live = live_of(plan_tenant(spec, {}).queues)
    live["tenant-a-algo"] = with_status(live["tenant-a-algo"], **{GPU: "50"})
    plan_tenant(spec, live)


def test_removing_a_busy_team_is_refused_unless_forced():
    spec = parse_tenant_spec(good())
    live = live_of(plan_tenant(spec, {}).queues)
    params = good()
    params["teams"] = params["teams"][:2]
    with pytest.raises(PlatformValidationError) as exc:
        plan_tenant(parse_tenant_spec(params), live, busy={"tenant-a-data": 2})
    assert exc.value.errors[0].field == "teams"
    assert "tenant-a-data" in exc.value.messages[0]
    plan = plan_tenant(parse_tenant_spec(params), live, busy={"tenant-a-data": 2}, force=True)
    assert plan.queue_deletes == ["tenant-a-data"]


def test_teams_left_out_keeps_live_teams_and_checks_them():
    spec = parse_tenant_spec(good())
    live = live_of(plan_tenant(spec, {}).queues)
    params = good()
    del params["teams"]
    params["subscription"][GPU] = 30  # teams deserve 40
    with pytest.raises(PlatformValidationError) as exc:
        plan_tenant(parse_tenant_spec(params), live)
    assert any("deserved" in e.field for e in exc.value.errors)
    params["subscription"][GPU] = 40
    plan = plan_tenant(parse_tenant_spec(params), live)
    assert plan.queue_deletes == []
    assert {q.name for q in plan.queues} == set(live)


def test_first_team_on_busy_subscription_is_refused():
    params = good()
    del params["teams"]
    live = live_of(plan_tenant(parse_tenant_spec(params), {}).queues)
    with pytest.raises(PlatformValidationError) as exc:
        plan_team_change(
            "a", TeamSpec(name="ml", source=""), None, live, busy={"tenant-a-subscription": 1}
        )
    assert "leaf queues" in exc.value.messages[0]


def test_team_change_validates_against_live_siblings():
    live = live_of(plan_tenant(parse_tenant_spec(good()), {}).queues)
    team = TeamSpec(name="new", deserved={GPU: Decimal(1)}, source="")
    with pytest.raises(PlatformValidationError) as exc:
        plan_team_change("a", team, None, live)
    assert exc.value.errors[0].field == f"deserved.{GPU}"
    assert "(40 - " in exc.value.messages[0]


def test_team_change_needs_the_tenant():
    with pytest.raises(PlatformValidationError) as exc:
        plan_team_change("zz", TeamSpec(name="x"), None, {})
    assert exc.value.errors[0].field == "tenant"


def test_queue_objects_are_queues():
    plan = plan_tenant(parse_tenant_spec(good()), {})
    assert all(isinstance(q, Queue) for q in plan.queues)


def test_only_the_spot_and_team_queues_are_not_reclaimable():
    """Rules spot-not-reclaimable and team-reclaim-by-platform: Volcano's reclaim actions
    skip the spot and team queues, so only the platform's reclaim (spot: cheapest first;
    teams: the queue arbiter's order) takes their GPUs. Subscription and pay-as-you-go
    queues stay reclaimable: deserved = capability keeps them from being victims."""
    gpus = {"nvidia.com/gpu": Decimal(8)}
    assert spot_queue("a", None).to_manifest()["spec"]["reclaimable"] is False
    assert spot_queue("a", gpus).to_manifest()["spec"]["reclaimable"] is False
    assert subscription_queue("a", gpus, {}).to_manifest()["spec"]["reclaimable"] is True
    assert payg_queue("a", gpus, True).to_manifest()["spec"]["reclaimable"] is True
    team = TeamSpec(name="algo", deserved=dict(gpus))
    assert team_queue("a", team).to_manifest()["spec"]["reclaimable"] is False


# -- vGPU in every queue (rules vgpu-purchase, vgpu-queue-capability) ------------------------

VGPU_NUMBER, VGPU_MEMORY, VGPU_CORES = VGPU_QUEUE_RESOURCES
BOUGHT = {VGPU_NUMBER: Decimal(4), VGPU_MEMORY: Decimal(81920), VGPU_CORES: Decimal(200)}


def test_a_vgpu_purchase_bounds_the_subscription_and_every_team_not_payg_or_spot():
    params = good()
    params["vgpu"] = {"number": 4, "memory_mib": 81920, "cores": 200}
    queues = {q.name: q for q in plan_tenant(parse_tenant_spec(params), {}).queues}
    sub = queues["tenant-a-subscription"]
    assert {k: sub.capability[k] for k in BOUGHT} == BOUGHT == {k: sub.deserved[k] for k in BOUGHT}
    for team in ("algo", "eng", "data"):
        capability = queues[f"tenant-a-{team}"].capability
        assert {k: capability[k] for k in BOUGHT} == BOUGHT
    for other in ("payg", "spot"):
        capability = queues[f"tenant-a-{other}"].capability
        assert {k: capability[k] for k in BOUGHT} == NO_VGPU


def test_a_bad_vgpu_purchase_is_reported_with_the_other_input_errors():
    params = with_(("subscription",), {GPU: -1})
    params["vgpu"] = {"number": "four"}
    fields = [e.field for e in errors_of(params).errors]
    assert "vgpu.number" in fields and f"subscription.{GPU}" in fields


def test_a_queue_without_a_purchase_keeps_the_vgpus_its_pods_hold():
    spec = parse_tenant_spec(good())
    live = live_of(plan_tenant(spec, {}).queues)
    live["tenant-a-spot"] = with_status(live["tenant-a-spot"], **{VGPU_NUMBER: "2"})
    spot = {q.name: q for q in desired_queues(spec, live)[0]}["tenant-a-spot"]
    assert spot.capability[VGPU_NUMBER] == 2 and spot.capability[VGPU_CORES] == 0


def test_a_vgpu_purchase_below_what_runs_is_refused_unless_forced():
    spec = parse_tenant_spec(good())
    live = live_of(plan_tenant(spec, {}).queues)
    live["tenant-a-subscription"] = with_status(live["tenant-a-subscription"], **{VGPU_NUMBER: "3"})
    params = good()
    params["vgpu"] = {"number": 2}
    with pytest.raises(PlatformValidationError) as exc:
        plan_tenant(parse_tenant_spec(params), live)
    assert any(
        m.startswith(f"subscription.capability.{VGPU_NUMBER}: 2 is below the 3")
        for m in exc.value.messages
    )
    assert plan_tenant(parse_tenant_spec(params), live, force=True).queues[0].capability[
        VGPU_NUMBER
    ] == Decimal(2)


def test_a_team_added_later_shares_the_live_purchase():
    params = good()
    params["vgpu"] = {"number": 4, "memory_mib": 81920, "cores": 200}
    live = live_of(plan_tenant(parse_tenant_spec(params), {}).queues)
    queues = plan_team_change("a", TeamSpec(name="new", deserved={}), None, live)
    new = {q.name: q for q in queues}["tenant-a-new"]
    assert {k: new.capability[k] for k in BOUGHT} == BOUGHT


def test_the_vgpu_keys_of_payg_and_spot_are_the_tenant_apply_s_not_the_capacity_manager_s():
    spec = parse_tenant_spec(good())
    queues = {q.name: q for q in plan_tenant(spec, {}).queues}
    for name in ("tenant-a-payg", "tenant-a-spot"):
        queue = queues[name]
        mine = queue.to_manifest()["spec"]["capability"]
        assert set(mine) == set(VGPU_QUEUE_RESOURCES)
        theirs = queue.capacity_manifest()["spec"]["capability"]
        assert not set(theirs) & set(VGPU_QUEUE_RESOURCES) and GPU in theirs
        whole = queue.whole_manifest()["spec"]["capability"]
        assert set(whole) == set(mine) | set(theirs)
