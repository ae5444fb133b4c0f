# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule federation-ledger (``federation/ledger``): members' readings merged into one
ledger's facts, billed by ``metering``'s pure plan; and the members asked for, read from
Karmada's Clusters."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.federation.ledger import (
    MemberUsage,
    asked_members,
    merge_member_usage,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.federation.members import (
    Member,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.metering.period import (
    parse_period,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.metering.report import (
    UsageFacts,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.metering.usage import (
    subscription_seconds,
    tenant_usage,
)

PERIOD = parse_period("2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z", 60)
T0 = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
FIVE = Decimal(5)
IDC_1, IDC_2, CLOUD_1 = (
    Member("idc-1", "idc"),
    Member("idc-2", "idc"),
    Member("cloud-1", "cloud"),
)


def series(points: list[tuple[int, str]], **labels: str) -> dict:
    """A query_range series: points at T0 + minute x 60."""
    return {"metric": labels, "values": [[T0 + 60 * m, v] for m, v in points]}


def reading(member: Member, resolution: Decimal = FIVE, **matrices) -> MemberUsage:
    return MemberUsage(
        member, UsageFacts(period=PERIOD, resolution=resolution, queries=5, **matrices)
    )


def usage(facts: UsageFacts) -> dict:
    return tenant_usage(facts.tenant_billing, PERIOD, facts.resolution)[0]


def sizes(facts: UsageFacts) -> dict:
    return subscription_seconds(facts.subscription_sizes, PERIOD, facts.resolution)[0]


def test_a_cloud_members_seconds_are_cloud_whatever_its_nodes_say():
    """The cloud member's nodes carry no location label: its series say idc."""
    payg = series([(1, "12"), (2, "12")], tenant="a", billing_type="payg", location="idc")
    merged = merge_member_usage(
        [reading(IDC_1, tenant_billing=(payg,)), reading(CLOUD_1, tenant_billing=(payg,))], []
    )
    assert usage(merged) == {("a", "payg"): Decimal(120), ("a", "cloud"): Decimal(120)}
    assert [s["metric"]["member"] for s in merged.tenant_billing] == ["cloud-1", "idc-1"]
    assert merged.queries == 10 and merged.resolution == FIVE


def test_a_spot_job_in_the_cloud_member_is_not_a_spot_line():
    job = series([(1, "12")], tenant="a", billing_type="spot", job_name="j", spot_price="0.5")
    merged = merge_member_usage([reading(CLOUD_1, spot_jobs=(job,))], [])
    assert merged.spot_jobs[0]["metric"]["location"] == "cloud"


def test_a_subscription_is_counted_once_and_from_the_idc_only():
    size = series([(m, "12") for m in range(1, 61)], tenant="a", gpus="8")
    merged = merge_member_usage(
        [
            reading(IDC_1, subscription_sizes=(size,)),
            reading(IDC_2, subscription_sizes=(size,)),
            reading(CLOUD_1, subscription_sizes=(size,)),
        ],
        [],
    )
    assert sizes(merged) == {"a": {Decimal(8): Decimal(3600)}}
    # one member's points, all of them (the first by name on a tie)
    assert {s["metric"]["member"] for s in merged.subscription_sizes} == {"idc-1"}


def test_at_each_point_the_member_that_saw_the_subscription_longest_counts():
    """idc-2 got the Queue a step late (propagation); idc-1 was resized at minute 30 and
    idc-2 a step later: each point counts one member's sizes, never both."""
    one = (
        series([(m, "12") for m in range(1, 31)], tenant="a", gpus="8"),
        series([(m, "12") for m in range(31, 61)], tenant="a", gpus="16"),
    )
    two = (
        series([(m, "12") for m in range(2, 32)], tenant="a", gpus="8"),
        series([(m, "12") for m in range(32, 61)], tenant="a", gpus="16"),
    )
    merged = merge_member_usage(
        [reading(IDC_1, subscription_sizes=one), reading(IDC_2, subscription_sizes=two)], []
    )
    assert sizes(merged) == {"a": {Decimal(8): Decimal(1800), Decimal(16): Decimal(1800)}}


def test_the_tenants_are_karmadas_namespaces():
    ns = {"metadata": {"name": "tenant-a", "labels": {"platform.io/tenant": "a"}}}
    assert merge_member_usage([reading(IDC_1)], [ns]).namespaces == (ns,)


def test_members_evaluated_at_another_interval_are_refused_naming_them():
    with pytest.raises(PlatformValidationError) as caught:
        merge_member_usage(
            [reading(IDC_1), reading(CLOUD_1, Decimal(30)), reading(IDC_2, Decimal(30))], []
        )
    assert caught.value.messages == [
        "members.idc-1: its metering rules are evaluated every 5 s and cloud-1's every 30 s: "
        "one ledger has one resolution; give every member the same "
        "monitoring_metering_interval (rule federation-ledger)"
    ]


def cluster(name: str, location: str | None) -> dict:
    labels = {} if location is None else {"platform.io/node-location": location}
    return {"metadata": {"name": name, "labels": labels}}


def test_asked_members_are_karmadas_clusters_by_name():
    clusters = [cluster("idc-1", "idc"), cluster("cloud-1", "cloud"), cluster("idc-2", "idc")]
    found = asked_members(clusters, ["idc-2", "cloud-1"])
    assert [c["metadata"]["name"] for c in found] == ["cloud-1", "idc-2"]


def test_a_member_karmada_does_not_have_is_refused_naming_it():
    with pytest.raises(PlatformValidationError) as caught:
        asked_members([cluster("idc-1", "idc")], ["idc-1", "edge-9"])
    assert caught.value.messages == [
        "members.edge-9: is not a member of the federation: Karmada has no Cluster 'edge-9' "
        "(its members: idc-1) (rule federation-ledger)"
    ]


def test_a_member_without_a_location_is_refused_naming_it():
    with pytest.raises(PlatformValidationError) as caught:
        asked_members([cluster("idc-1", "idc"), cluster("lab", None)], ["idc-1", "lab"])
    assert [m.split(":")[0] for m in caught.value.messages] == [
        "clusters[lab].metadata.labels.platform.io/node-location"
    ]


points = st.lists(
    st.tuples(st.integers(1, 60), st.integers(0, 12).map(str)), max_size=8, unique_by=lambda p: p[0]
)
labels = st.fixed_dictionaries(
    {
        "tenant": st.sampled_from(["a", "b"]),
        "billing_type": st.sampled_from(["subscription", "payg", "spot"]),
        "location": st.sampled_from(["idc", "cloud", ""]),
    }
)
members = st.lists(
    st.tuples(st.sampled_from(["idc", "cloud"]), st.lists(st.tuples(labels, points), max_size=4)),
    min_size=1,
    max_size=3,
)


@settings(max_examples=60, deadline=None)
@given(members)
def test_every_gpu_second_lands_once_on_its_members_line(given_members):
    """Nothing is lost or counted twice: the merged ledger's GPU-seconds are the members'
    sum, and a member's location alone says whether they are the cloud line's."""
    readings = [
        reading(
            Member(f"m{i}", location),
            tenant_billing=tuple(series(p, **lab) for lab, p in found),
        )
        for i, (location, found) in enumerate(given_members)
    ]
    merged = usage(merge_member_usage(readings, []))
    cloud = idc = Decimal(0)
    for r in readings:
        seconds = sum(usage(r.facts).values(), Decimal(0))
        if r.member.location == "cloud":
            cloud += seconds
        else:
            idc += seconds
    assert sum((v for (_t, line), v in merged.items() if line == "cloud"), Decimal(0)) == cloud
    assert sum((v for (_t, line), v in merged.items() if line != "cloud"), Decimal(0)) == idc


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["8", "16"]), points), max_size=3), st.integers(1, 4))
def test_a_subscription_read_by_many_idc_members_is_billed_as_by_one(found, copies):
    """Rule federation-ledger: every IDC member holding the same Queue bills it once."""
    matrix = tuple(series(p, tenant="a", gpus=g) for g, p in found)
    alone = merge_member_usage([reading(IDC_1, subscription_sizes=matrix)], [])
    many = merge_member_usage(
        [reading(Member(f"idc-{i}", "idc"), subscription_sizes=matrix) for i in range(copies)],
        [],
    )
    assert sizes(many) == sizes(alone)
