# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule federation-member (federation/members)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    LABEL_COMPLIANCE_ZONE,
    LABEL_NODE_LOCATION,
    REGION_LABEL,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.federation import members as mb


def cluster(name="fed-idc", labels=None, ready=True, region=None):
    out = {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {"syncMode": "Push"},
        "status": {
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }
    if region:
        out["spec"]["region"] = region
    return out


def test_the_labels_of_a_node_name_the_member():
    # One label, one meaning: the names come from common/names, as on a node.
    assert (LABEL_NODE_LOCATION, LABEL_COMPLIANCE_ZONE, REGION_LABEL) == (
        "platform.io/node-location",
        "platform.io/compliance-zone",
        "topology.kubernetes.io/region",
    )


def test_an_idc_member_with_a_zone():
    member = mb.read_member(
        cluster(labels={LABEL_NODE_LOCATION: "idc", LABEL_COMPLIANCE_ZONE: "finance"})
    )
    assert member == mb.Member("fed-idc", "idc", None, "finance", True)
    assert not member.cloud


def test_a_cloud_member_takes_its_region_from_the_label_else_the_spec():
    labelled = cluster(
        "fed-cloud", {LABEL_NODE_LOCATION: "cloud", REGION_LABEL: "cn-hangzhou"}, region="x"
    )
    assert mb.read_member(labelled).region == "cn-hangzhou"
    assert mb.read_member(cluster("c", {LABEL_NODE_LOCATION: "cloud"}, region="r1")).region == "r1"
    assert mb.read_member(cluster("c", {LABEL_NODE_LOCATION: "cloud"})).cloud


def test_ready_is_the_ready_condition_true():
    assert not mb.read_member(cluster(labels={LABEL_NODE_LOCATION: "idc"}, ready=False)).ready
    no_status = cluster(labels={LABEL_NODE_LOCATION: "idc"})
    del no_status["status"]
    assert not mb.read_member(no_status).ready


@pytest.mark.parametrize("location", [None, "", "edge", "IDC"])
def test_a_member_without_a_location_is_refused(location):
    labels = {} if location is None else {LABEL_NODE_LOCATION: location}
    with pytest.raises(PlatformValidationError, match="node-location"):
        mb.read_member(cluster(labels=labels))


def test_a_compliance_zone_in_the_cloud_is_refused():
    with pytest.raises(PlatformValidationError, match="compliance zone is in the IDC only"):
        mb.read_member(cluster(labels={LABEL_NODE_LOCATION: "cloud", LABEL_COMPLIANCE_ZONE: "f"}))


def test_a_name_karmada_would_refuse_is_refused():
    errors = mb.member_errors(cluster("x" * 49, {LABEL_NODE_LOCATION: "idc"}))
    assert [e.field for e in errors] == ["clusters[" + "x" * 49 + "].metadata.name"]


def test_read_members_reports_every_cluster_at_once():
    with pytest.raises(PlatformValidationError) as raised:
        mb.read_members([cluster("a"), cluster("b", {LABEL_NODE_LOCATION: "moon"})])
    assert len(raised.value.errors) == 2


@given(
    location=st.sampled_from(["idc", "cloud"]),
    region=st.one_of(st.none(), st.from_regex(r"[a-z]{1,5}-[a-z]{1,5}", fullmatch=True)),
    zone=st.one_of(st.none(), st.from_regex(r"[a-z]{1,8}", fullmatch=True)),
)
def test_the_labels_written_read_back(location, region, zone):
    if location == "cloud":
        zone = None
    member = mb.read_member(cluster("m", mb.cluster_labels(location, region, zone)))
    assert (member.location, member.region, member.compliance_zone) == (location, region, zone)
