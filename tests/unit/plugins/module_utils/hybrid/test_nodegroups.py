# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules node-group-spec, one-group-per-node, every-gpu-node-grouped, node-group-labels
and cloud-taint (hybrid/nodegroups)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid import nodegroups as ng

GPU = "nvidia.com/gpu"
VK_TAINT = "virtual-kubelet.io/provider"

IDC = {"name": "idc-h100", "location": "idc", "selector": {"type": "kwok"}}
CLOUD = {
    "name": "cloud-aliyun",
    "location": "cloud",
    "provider": "aliyun",
    "region": "cn-hangzhou",
    "selector": {"type": "virtual-kubelet"},
}
ZONE = {"name": "idc-finance", "location": "idc", "compliance_zone": "finance", "nodes": ["n6"]}


def node(name, labels=None, gpus="8", taints=None, resource=GPU, annotations=None):
    meta = {"name": name, "labels": dict(labels or {})}
    if annotations:
        meta["annotations"] = annotations
    allocatable = {"cpu": "64"}
    if gpus is not None:
        allocatable[resource] = gpus
    return {
        "metadata": meta,
        "spec": {"taints": list(taints)} if taints else {},
        "status": {"allocatable": allocatable},
    }


def fields(errors):
    return [e.field for e in errors]


def text(errors):
    return " | ".join(str(e) for e in errors)


# --- rule node-group-spec -----------------------------------------------------------


def test_a_valid_set_of_groups_has_no_errors():
    assert ng.group_errors([IDC, CLOUD, ZONE]) == []


@pytest.mark.parametrize("value", [None, [], {}, "idc", 3])
def test_groups_must_be_a_non_empty_list(value):
    errors = ng.group_errors(value)
    assert fields(errors) == ["groups"] and "non-empty list" in errors[0].message


def test_the_field_name_is_the_caller_s():
    assert fields(ng.group_errors(None, "node_groups")) == ["node_groups"]
    assert fields(ng.group_errors(["x"], "node_groups")) == ["node_groups[0]"]


def test_a_group_that_is_not_a_mapping_is_named_by_index():
    errors = ng.group_errors([IDC, "cloud"])
    assert fields(errors) == ["groups[1]"] and "must be a mapping" in errors[0].message


def test_unknown_keys_are_named():
    errors = ng.group_errors([{**IDC, "zone": "x", "labels": {}}])
    assert fields(errors) == ["groups[0]"]
    assert "['labels', 'zone']" in errors[0].message


@pytest.mark.parametrize("name", [None, "", "IDC", "idc_h100", "-idc", "a" * 64])
def test_the_name_is_a_dns_label(name):
    errors = ng.group_errors([{**IDC, "name": name}])
    assert "groups[0].name" in fields(errors)


@pytest.mark.parametrize("location", [None, "edge", "IDC", "Cloud"])
def test_the_location_is_idc_or_cloud(location):
    errors = ng.group_errors([{**IDC, "location": location}])
    assert fields(errors) == ["groups[0].location"]
    assert "idc, cloud" in errors[0].message


@pytest.mark.parametrize("missing", ["provider", "region"])
def test_a_cloud_group_needs_a_provider_and_a_region(missing):
    group = {k: v for k, v in CLOUD.items() if k != missing}
    assert fields(ng.group_errors([group])) == [f"groups[0].{missing}"]


@pytest.mark.parametrize("key", ["provider", "region"])
def test_only_a_cloud_group_has_a_provider_or_region(key):
    errors = ng.group_errors([{**IDC, key: "aliyun"}])
    assert fields(errors) == [f"groups[0].{key}"]
    assert f"only a cloud group has a {key}" in errors[0].message


def test_a_compliance_zone_is_only_in_the_idc():
    errors = ng.group_errors([{**CLOUD, "compliance_zone": "finance"}])
    assert fields(errors) == ["groups[0].compliance_zone"]
    assert "node-group-spec" in errors[0].message and "cloud" in errors[0].message


def test_a_compliance_zone_is_a_dns_label():
    errors = ng.group_errors([{**ZONE, "compliance_zone": "Finance Zone"}])
    assert fields(errors) == ["groups[0].compliance_zone"]


@pytest.mark.parametrize(
    "select",
    [
        {},
        {"nodes": ["n1"], "selector": {"type": "kwok"}},
        {"nodes": [], "selector": {}},
    ],
)
def test_a_group_selects_its_nodes_exactly_one_way(select):
    group = {"name": "g", "location": "idc", **select}
    errors = ng.group_errors([group])
    assert fields(errors) == ["groups[0]"] and "exactly one of" in errors[0].message


@pytest.mark.parametrize("nodes", ["n1", ["n1", 3], ["n1", ""], {"n1": 1}])
def test_nodes_is_a_list_of_names(nodes):
    errors = ng.group_errors([{"name": "g", "location": "idc", "nodes": nodes}])
    assert fields(errors) == ["groups[0].nodes"]


def test_a_bad_selector_label_is_named_by_its_key():
    errors = ng.group_errors([{"name": "g", "location": "idc", "selector": {"type": 3}}])
    assert fields(errors) == ["groups[0].selector.type"]


def test_a_name_used_twice_names_the_first_group():
    errors = ng.group_errors([IDC, CLOUD, {**ZONE, "name": IDC["name"]}])
    assert fields(errors) == ["groups[2].name"]
    assert "groups[0]" in errors[0].message


def test_every_broken_group_is_reported_at_once():
    errors = ng.group_errors([{**IDC, "location": "edge"}, {**CLOUD, "region": None}])
    assert fields(errors) == ["groups[0].location", "groups[1].region"]


# --- parse_groups and selects -------------------------------------------------------


def test_parse_groups_keeps_every_field():
    idc, cloud, zone = ng.parse_groups([IDC, CLOUD, ZONE])
    assert idc == ng.NodeGroup("idc-h100", "idc", selector={"type": "kwok"})
    assert cloud.cloud and cloud.provider == "aliyun" and cloud.region == "cn-hangzhou"
    assert not idc.cloud and not zone.cloud
    assert zone.nodes == ("n6",) and zone.compliance_zone == "finance" and zone.selector == {}


def test_a_group_selects_by_names_or_by_every_label():
    by_name = ng.NodeGroup("a", "idc", nodes=("n1", "n2"))
    by_label = ng.NodeGroup("b", "idc", selector={"type": "kwok", "rack": "r1"})
    assert by_name.selects(node("n1")) and not by_name.selects(node("n3"))
    assert by_label.selects(node("x", {"type": "kwok", "rack": "r1", "more": "y"}))
    assert not by_label.selects(node("x", {"type": "kwok"}))
    assert not by_label.selects(node("x", {"type": "kwok", "rack": "r2"}))


def test_a_named_group_ignores_labels():
    group = ng.NodeGroup("a", "idc", nodes=("n1",), selector={"type": "kwok"})
    assert not group.selects(node("n2", {"type": "kwok"}))


# --- GPU nodes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gpus", "resource", "expected"),
    [
        ("8", GPU, True),
        (8, GPU, True),
        ("0", GPU, False),
        (0, GPU, False),
        ("", GPU, False),
        (None, GPU, False),
        ("4", "volcano.sh/vgpu-number", True),
        ("4", "example.com/fpga", False),
    ],
)
def test_a_gpu_node_declares_whole_gpus_or_vgpus(gpus, resource, expected):
    assert ng.is_gpu_node(node("n", gpus=gpus, resource=resource)) is expected


def test_a_node_without_status_is_not_a_gpu_node():
    assert ng.is_gpu_node({"metadata": {"name": "n"}}) is False


# --- rules one-group-per-node and every-gpu-node-grouped ----------------------------


def test_membership_maps_each_node_to_its_group():
    groups = ng.parse_groups([IDC, CLOUD, ZONE])
    nodes = [
        node("n0", {"type": "kwok"}),
        node("n6", {"type": "other"}),
        node("vk-0", {"type": "virtual-kubelet"}),
        node("cpu-0", {"type": "cpu"}, gpus=None),
    ]
    members, errors = ng.membership(groups, nodes)
    assert errors == []
    assert {n: g.name for n, g in members.items()} == {
        "n0": "idc-h100",
        "n6": "idc-finance",
        "vk-0": "cloud-aliyun",
    }


def test_a_node_in_two_groups_is_refused_naming_both():
    groups = ng.parse_groups([IDC, {**ZONE, "nodes": ["n0"]}])
    members, errors = ng.membership(groups, [node("n0", {"type": "kwok"})])
    assert "n0" not in members
    assert len(errors) == 1
    message = errors[0].message
    assert "'n0'" in message and "'idc-h100'" in message and "'idc-finance'" in message
    assert "one-group-per-node" in message


def test_a_gpu_node_in_no_group_is_refused_by_name():
    groups = ng.parse_groups([IDC])
    nodes = [node("n0", {"type": "kwok"}), node("gpu-9", {}), node("gpu-8", {})]
    members, errors = ng.membership(groups, nodes)
    assert list(members) == ["n0"]
    assert len(errors) == 1
    assert "gpu-8, gpu-9" in errors[0].message
    assert "every-gpu-node-grouped" in errors[0].message


def test_a_vgpu_node_in_no_group_is_refused_too():
    groups = ng.parse_groups([IDC])
    nodes = [node("vgpu-0", {}, gpus="4", resource="volcano.sh/vgpu-number")]
    assert "vgpu-0" in text(ng.membership(groups, nodes)[1])


def test_a_cpu_node_in_no_group_is_left_alone():
    groups = ng.parse_groups([IDC])
    members, errors = ng.membership(groups, [node("cpu-0", gpus=None), node("z", gpus="0")])
    assert members == {} and errors == []


def test_listed_nodes_that_do_not_exist_are_named():
    groups = ng.parse_groups([{**ZONE, "nodes": ["n6", "ghost-1", "ghost-0"]}])
    members, errors = ng.membership(groups, [node("n6")])
    assert list(members) == ["n6"]
    assert len(errors) == 1 and "ghost-0, ghost-1" in errors[0].message
    assert "do not exist" in errors[0].message


NAMES = [f"n{i}" for i in range(6)]


@given(
    assignment=st.lists(st.sets(st.sampled_from(NAMES), min_size=1), min_size=1, max_size=4),
    gpu_nodes=st.sets(st.sampled_from(NAMES)),
)
def test_every_node_is_in_at_most_one_group_or_an_error_names_it(assignment, gpu_nodes):
    groups = [
        ng.NodeGroup(f"g{i}", "idc", nodes=tuple(sorted(chosen)))
        for i, chosen in enumerate(assignment)
    ]
    nodes = [node(n, gpus="8" if n in gpu_nodes else None) for n in NAMES]
    members, errors = ng.membership(groups, nodes)
    messages = text(errors)
    for name in NAMES:
        listed_in = [g for g in groups if name in g.nodes]
        if len(listed_in) > 1:
            assert name not in members
            assert f"node {name!r} is selected by" in messages
            for group in listed_in:
                assert repr(group.name) in messages
        elif listed_in:
            assert members[name] is listed_in[0]
        else:
            assert name not in members
            if name in gpu_nodes:
                assert name in messages.split("are in no group", maxsplit=1)[0]
    if not errors:
        assert all(sum(g.selects(n) for g in groups) == 1 for n in nodes if ng.is_gpu_node(n))


# --- rules node-group-labels and cloud-taint ----------------------------------------


def test_labels_of_an_idc_node():
    (idc,) = ng.parse_groups([IDC])
    assert ng.node_labels(idc) == {
        "volcano.sh/nodegroup-name": "idc-h100",
        "platform.io/node-location": "idc",
    }


def test_labels_of_a_cloud_node():
    (cloud,) = ng.parse_groups([CLOUD])
    assert ng.node_labels(cloud) == {
        "volcano.sh/nodegroup-name": "cloud-aliyun",
        "platform.io/node-location": "cloud",
        "platform.io/cloud-provider": "aliyun",
        "topology.kubernetes.io/region": "cn-hangzhou",
    }


def test_labels_of_a_compliance_zone_node():
    (zone,) = ng.parse_groups([ZONE])
    labels = ng.node_labels(zone)
    assert labels["platform.io/compliance-zone"] == "finance"
    assert labels["platform.io/node-location"] == "idc"
    assert "platform.io/cloud-provider" not in labels


def test_a_node_in_no_group_carries_no_group_labels():
    assert ng.node_labels(None) == {}


def test_the_owned_labels_are_the_ones_a_group_sets():
    for group in ng.parse_groups([IDC, CLOUD, ZONE]):
        owned = set(ng.node_labels(group)) - {"topology.kubernetes.io/region"}
        assert owned <= set(ng.OWNED_LABELS)


def test_the_cloud_taint_is_virtual_kubelet_s_with_the_provider():
    (cloud,) = ng.parse_groups([CLOUD])
    assert ng.cloud_taint(cloud) == {"key": VK_TAINT, "value": "aliyun", "effect": "NoSchedule"}


def test_an_untainted_cloud_node_gets_the_taint_after_its_own():
    (cloud,) = ng.parse_groups([CLOUD])
    own = [{"key": "gpu", "value": "h100", "effect": "NoExecute"}]
    taints = ng.node_taints(node("vk-0", taints=own), cloud)
    assert taints == [*own, {"key": VK_TAINT, "value": "aliyun", "effect": "NoSchedule"}]


def test_a_cloud_node_with_the_taint_of_any_value_is_left_alone():
    (cloud,) = ng.parse_groups([CLOUD])
    taint = {"key": VK_TAINT, "value": "someone-else", "effect": "NoSchedule"}
    assert ng.node_taints(node("vk-0", taints=[taint]), cloud) is None


def test_the_taint_with_another_effect_does_not_count():
    (cloud,) = ng.parse_groups([CLOUD])
    other = {"key": VK_TAINT, "value": "aliyun", "effect": "NoExecute"}
    taints = ng.node_taints(node("vk-0", taints=[other]), cloud)
    assert taints is not None and taints[0] == other and len(taints) == 2
    assert taints[1]["effect"] == "NoSchedule"


def test_idc_and_ungrouped_nodes_keep_their_taints():
    (idc,) = ng.parse_groups([IDC])
    tainted = node("n0", taints=[{"key": "x", "effect": "NoSchedule"}])
    assert ng.node_taints(tainted, idc) is None
    assert ng.node_taints(node("n0"), idc) is None
    assert ng.node_taints(node("vk-0"), None) is None


@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "key": st.sampled_from(["a", "b", VK_TAINT]),
                "effect": st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"]),
            }
        ),
        max_size=4,
    )
)
def test_the_cloud_taint_never_drops_a_taint(existing):
    (cloud,) = ng.parse_groups([CLOUD])
    taints = ng.node_taints(node("vk-0", taints=existing), cloud)
    final = existing if taints is None else taints
    assert final[: len(existing)] == existing
    assert any(t["key"] == VK_TAINT and t["effect"] == "NoSchedule" for t in final)
    assert len(final) <= len(existing) + 1


def test_latency_is_read_from_the_annotation():
    annotated = node("vk-0", annotations={"platform.io/idc-latency-ms": "35"})
    assert ng.latency_ms(annotated) == "35"
    assert ng.latency_ms(node("vk-1")) is None
