# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules federation-placement and federation-failover-once (hybrid/federation_placement).

The properties are checked against ``karmada_choice``, a model of what Karmada v1.16.0's
scheduler does with the fields this rule writes, read from its source (see the
placement module's docstring): it is a model, not Karmada, and it refuses any placement
shape it does not model."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.federation.members import (
    Member,
    cluster_labels,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid import (
    federation_placement as fp,
)

PLACEMENTS = [None, "local-only", "local-first", "cloud-ok"]


def matches(term: dict[str, Any], labels: dict[str, str]) -> bool:
    """A Kubernetes label selector (the clusterAffinity's labelSelector) on a member."""
    selector = term.get("labelSelector") or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    for field in ("fieldSelector", "clusterNames", "exclude"):
        assert field not in term, f"the model does not read {field}"
    return True


def labels_of(member: Member) -> dict[str, str]:
    return cluster_labels(member.location, member.region, member.compliance_zone)


def terms(placement: dict[str, Any]) -> list[dict[str, Any]]:
    if "clusterAffinities" in placement:
        assert "clusterAffinity" not in placement  # ValidatePlacement refuses both
        return placement["clusterAffinities"]
    return [placement.get("clusterAffinity") or {}]


def selectable(placement: dict[str, Any], members: list[Member]) -> set[str]:
    """Every member any term of the placement may select."""
    return {m.name for t in terms(placement) for m in members if matches(t, labels_of(m))}


def karmada_choice(
    placement: dict[str, Any], members: list[Member], available: dict[str, int], replicas: int
) -> list[str] | None:
    """The members Karmada assigns the job to, or None when scheduling fails.

    scheduleResourceBindingWithClusterAffinities: the terms in order, the next one on any
    error. Per term: the not-ready member is filtered (its NoSchedule taint); with equal
    scores the candidates are ordered by available replicas, then name
    (GroupClustersInfo.generateClustersInfo); selectBestClustersByCluster with maxGroups 1
    takes the first and, short of replicas, the one with the most
    (selectClustersByAvailableResource), failing when none has enough; Duplicated skips
    that check (shouldIgnoreAvailableResource); minGroups more than the candidates fails."""
    (spread,) = placement["spreadConstraints"]
    assert spread["spreadByField"] == "cluster"
    strategy = placement["replicaScheduling"]
    duplicated = strategy["replicaSchedulingType"] == "Duplicated"
    if not duplicated:
        assert strategy["replicaDivisionPreference"] == "Aggregated"
    for term in terms(placement):
        candidates = [m for m in members if m.ready and matches(term, labels_of(m))]
        if len(candidates) < spread.get("minGroups", 1) or not candidates:
            continue
        order = sorted(candidates, key=lambda m: (-available[m.name], m.name))
        chosen = order[: spread["maxGroups"]]
        if duplicated:
            return [m.name for m in chosen]
        if sum(available[m.name] for m in chosen) >= replicas:
            return [m.name for m in chosen]
    return None


member_names = st.from_regex(r"m[0-9]{1,3}", fullmatch=True)


@st.composite
def federations(draw):
    names = draw(st.lists(member_names, min_size=0, max_size=6, unique=True))
    members = []
    for name in names:
        location = draw(st.sampled_from(["idc", "cloud"]))
        zone = draw(st.sampled_from([None, "finance", "health"])) if location == "idc" else None
        members.append(Member(name, location, None, zone, draw(st.booleans())))
    available = {m.name: draw(st.integers(0, 16)) for m in members}
    return members, available


@given(
    fed=federations(),
    placement=st.sampled_from([None, "local-only"]),
    compliance=st.booleans(),
    zone=st.sampled_from([None, "finance", "health"]),
    replicas=st.integers(1, 16),
)
def test_idc_work_never_selects_a_cloud_member(fed, placement, compliance, zone, replicas):
    members, available = fed
    zone = zone if compliance else None
    wanted = fp.federation_placement(placement, compliance, zone)
    cloud = {m.name for m in members if m.cloud}
    assert not selectable(wanted, members) & cloud
    choice = karmada_choice(wanted, members, available, replicas) or []
    assert not set(choice) & cloud
    if zone:
        assert all(
            m.compliance_zone == zone for m in members if m.name in selectable(wanted, members)
        )


@given(
    fed=federations(),
    placement=st.sampled_from(["local-first", "cloud-ok"]),
    replicas=st.integers(1, 16),
)
def test_a_compliance_job_stays_in_the_idc_whatever_placement_it_names(fed, placement, replicas):
    members, available = fed
    wanted = fp.federation_placement(placement, compliance=True)
    assert wanted == fp.federation_placement("local-only")
    assert not set(karmada_choice(wanted, members, available, replicas) or []) & {
        m.name for m in members if m.cloud
    }


@given(fed=federations(), placement=st.sampled_from(PLACEMENTS), replicas=st.integers(1, 16))
def test_a_job_lands_whole_in_one_member_that_can_hold_it(fed, placement, replicas):
    members, available = fed
    wanted = fp.federation_placement(placement)
    choice = karmada_choice(wanted, members, available, replicas)
    if choice is not None:
        (member,) = choice
        assert available[member] >= replicas


@given(fed=federations(), replicas=st.integers(1, 16))
def test_local_first_goes_to_the_cloud_only_when_no_idc_member_can_hold_the_gang(fed, replicas):
    members, available = fed
    choice = karmada_choice(fp.federation_placement("local-first"), members, available, replicas)
    idc_room = [m for m in members if not m.cloud and m.ready and available[m.name] >= replicas]
    cloud_room = [m for m in members if m.cloud and m.ready and available[m.name] >= replicas]
    location = {m.name: m.location for m in members}
    if idc_room:
        assert choice is not None and location[choice[0]] == "idc"
    elif cloud_room:
        assert choice is not None and location[choice[0]] == "cloud"
    else:
        assert choice is None


@given(fed=federations())
def test_cloud_ok_may_select_every_member(fed):
    members, _available = fed
    assert selectable(fp.federation_placement("cloud-ok"), members) == {m.name for m in members}


def test_a_member_without_the_location_label_is_never_selected():
    for placement in PLACEMENTS:
        for term in terms(fp.federation_placement(placement)):
            assert not matches(term, {})


def test_duplicated_would_land_a_gang_where_it_does_not_fit():
    """Why the rule divides: the model, as Karmada, skips the capacity check for Duplicated."""
    members = [Member("small", "idc", ready=True)]
    duplicated = {
        **fp.federation_placement("local-only"),
        "replicaScheduling": {"replicaSchedulingType": "Duplicated"},
    }
    assert karmada_choice(duplicated, members, {"small": 1}, 8) == ["small"]
    assert karmada_choice(fp.federation_placement("local-only"), members, {"small": 1}, 8) is None


def test_the_shape_of_each_placement():
    whole = {
        "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}],
        "replicaScheduling": {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Aggregated",
        },
    }
    idc = {"key": "platform.io/node-location", "operator": "In", "values": ["idc"]}
    assert fp.federation_placement("local-only") == {
        "clusterAffinity": {"labelSelector": {"matchExpressions": [idc]}},
        **whole,
    }
    assert fp.federation_placement(None) == fp.federation_placement("local-only")
    zone = fp.federation_placement("local-only", compliance=True, compliance_zone="finance")
    assert zone["clusterAffinity"]["labelSelector"]["matchExpressions"] == [
        idc,
        {"key": "platform.io/compliance-zone", "operator": "In", "values": ["finance"]},
    ]
    first = fp.federation_placement("local-first")
    assert [t["affinityName"] for t in first["clusterAffinities"]] == ["idc", "cloud"]
    assert first["clusterAffinities"][1]["labelSelector"]["matchExpressions"][0]["values"] == [
        "cloud"
    ]
    assert fp.federation_placement("cloud-ok")["clusterAffinity"]["labelSelector"][
        "matchExpressions"
    ][0]["values"] == ["idc", "cloud"]


def test_the_placements_are_fresh_objects():
    a = fp.federation_placement("local-only")
    a["spreadConstraints"][0]["maxGroups"] = 5
    a["clusterAffinity"]["labelSelector"]["matchExpressions"][0]["values"].append("cloud")
    assert fp.federation_placement("local-only")["spreadConstraints"][0]["maxGroups"] == 1
    assert "cloud" not in str(fp.federation_placement("local-only"))


def test_an_unknown_placement_is_an_error():
    with pytest.raises(ValueError, match="unknown placement"):
        fp.federation_placement("anywhere")


@pytest.mark.parametrize(
    ("placement", "compliance", "spot", "moves"),
    [
        ("cloud-ok", False, False, True),
        ("local-only", False, True, True),
        (None, False, True, True),
        ("local-only", False, False, False),
        ("local-first", False, False, False),
        (None, False, False, False),
        ("local-only", True, False, False),
        ("local-only", True, True, False),
    ],
)
def test_who_may_be_replaced(placement, compliance, spot, moves):
    failover = fp.federation_failover(placement, compliance, spot)
    assert (failover is not None) is moves
    if moves:
        assert failover == {
            "application": {
                "decisionConditions": {"tolerationSeconds": 300},
                "purgeMode": "Directly",
            },
            "cluster": {"purgeMode": "Directly"},
        }


@given(
    placement=st.sampled_from(PLACEMENTS),
    compliance=st.booleans(),
    spot=st.booleans(),
    replaced=st.integers(0, 5),
)
def test_replaced_at_most_once(placement, compliance, spot, replaced):
    failover = fp.federation_failover(placement, compliance, spot, replaced)
    if replaced >= 1 or compliance:
        assert failover is None


def test_the_job_policy_selects_the_job_and_turns_on_dependencies_with_failover():
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "tenant-alpha"},
    }
    policy = fp.job_propagation_policy(job, "cloud-ok")
    assert policy["metadata"] == {
        "name": "train",
        "namespace": "tenant-alpha",
        "labels": {"platform.io/managed-by": "gpucloud-platform"},
    }
    assert policy["spec"]["resourceSelectors"] == [
        {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "train"}
    ]
    assert policy["spec"]["propagateDeps"] is True  # bindingFilter skips the binding without
    assert policy["spec"]["failover"]["application"]["purgeMode"] == "Directly"
    kept = fp.job_propagation_policy(job, "cloud-ok", replaced=1)
    assert "failover" not in kept["spec"] and "propagateDeps" not in kept["spec"]
    assert "failover" not in fp.job_propagation_policy(job, "local-only", compliance=True)["spec"]


JOB = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "train", "namespace": "tenant-alpha"},
}


@given(
    placement=st.sampled_from(PLACEMENTS),
    compliance=st.booleans(),
    spot=st.booleans(),
    replaced=st.integers(0, 3),
)
def test_a_job_is_either_moved_or_held_when_its_member_is_lost(
    placement, compliance, spot, replaced
):
    """Rule federation-failover-once with federation-member-failover: every job either
    has cluster failover (no toleration of the lost-member taint: Karmada evicts it and
    places it again) or tolerates the taint forever (held), never both, never neither."""
    spec = fp.job_propagation_policy(JOB, placement, compliance, spot=spot, replaced=replaced)[
        "spec"
    ]
    tolerations = spec["placement"].get("clusterTolerations") or []
    held = any(
        t["key"] == fp.MEMBER_NOT_READY_TAINT
        and t["effect"] == "NoExecute"
        and t["operator"] == "Exists"
        and "tolerationSeconds" not in t
        for t in tolerations
    )
    moved = "cluster" in (spec.get("failover") or {})
    assert held != moved
    if compliance or replaced >= 1:
        assert held


def test_the_taint_policy_marks_a_member_lost_while_karmada_cannot_reach_it():
    policy = fp.member_failover_taint_policy()
    assert policy["kind"] == "ClusterTaintPolicy"
    assert policy["apiVersion"] == "policy.karmada.io/v1alpha1"
    spec = policy["spec"]
    assert "targetClusters" not in spec  # every member, IDC and cloud
    assert spec["addOnConditions"] == [
        {"conditionType": "Ready", "operator": "In", "statusValues": ["False", "Unknown"]}
    ]
    assert spec["removeOnConditions"] == [
        {"conditionType": "Ready", "operator": "In", "statusValues": ["True"]}
    ]
    assert spec["taints"] == [{"key": fp.MEMBER_NOT_READY_TAINT, "effect": "NoExecute"}]
    # the taint a held job tolerates is the one this policy puts on
    assert {t["key"] for t in fp.HELD} == {t["key"] for t in spec["taints"]}
