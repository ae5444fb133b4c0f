# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules idc-by-default, elastic-local-first, burst-cloud-only (hybrid/queues), rule
node-groups-order (hybrid/plan) and the node_groups module's options (hybrid/inputs)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid import inputs
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid import queues as hq
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.nodegroups import (
    NodeGroup,
    membership,
    parse_groups,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.plan import (
    Write,
    plan_node_groups,
)
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster

GPU = "nvidia.com/gpu"
QUEUE_API = "scheduling.volcano.sh/v1beta1"
VK_TAINT = "virtual-kubelet.io/provider"
NODEGROUP = "volcano.sh/nodegroup-name"
LOCATION = "platform.io/node-location"
PROVIDER = "platform.io/cloud-provider"
REGION = "topology.kubernetes.io/region"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"

RAW_GROUPS = [
    {"name": "idc-b", "location": "idc", "selector": {"type": "kwok", "rack": "b"}},
    {"name": "idc-a", "location": "idc", "selector": {"type": "kwok", "rack": "a"}},
    {
        "name": "cloud-z",
        "location": "cloud",
        "provider": "aliyun",
        "region": "cn-hangzhou",
        "selector": {"type": "virtual-kubelet"},
    },
    {
        "name": "cloud-y",
        "location": "cloud",
        "provider": "aws",
        "region": "us-east-1",
        "nodes": ["aws-0"],
    },
]
GROUPS = parse_groups(RAW_GROUPS)


def node(name, labels=None, gpus="8", taints=None):
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels or {}), "resourceVersion": "7"},
        "spec": {"taints": list(taints)} if taints else {},
        "status": {"allocatable": {GPU: gpus} if gpus is not None else {}},
    }


def queue(name, queue_type=None, affinity=None, **spec):
    labels = {"platform.io/queue-type": queue_type} if queue_type else {}
    body = dict(spec)
    if affinity is not None:
        body["affinity"] = affinity
    return {
        "apiVersion": QUEUE_API,
        "kind": "Queue",
        "metadata": {"name": name, "labels": labels},
        "spec": body,
    }


def group(name):
    return next(g for g in GROUPS if g.name == name)


# --- rules idc-by-default, elastic-local-first, burst-cloud-only --------------------


def test_root_requires_the_idc_groups_only():
    assert hq.root_affinity(GROUPS) == {"nodeGroupAffinity": {REQUIRED: ["idc-a", "idc-b"]}}


def test_elastic_queues_prefer_the_idc_then_the_cloud():
    assert hq.elastic_affinity(GROUPS) == {
        "nodeGroupAffinity": {PREFERRED: ["idc-a", "idc-b", "cloud-y", "cloud-z"]}
    }


def test_elastic_affinity_has_no_required_groups():
    assert REQUIRED not in hq.elastic_affinity(GROUPS)["nodeGroupAffinity"]


@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c", "d", "e"]), st.booleans()),
        unique_by=lambda t: t[0],
        min_size=1,
    )
)
def test_every_idc_group_comes_before_every_cloud_group(spec):
    groups = [NodeGroup(n, "cloud" if c else "idc", "p", "r", nodes=(n,)) for n, c in spec]
    order = hq.elastic_affinity(groups)["nodeGroupAffinity"][PREFERRED]
    clouds = {g.name for g in groups if g.cloud}
    assert sorted(order) == sorted(g.name for g in groups)
    flags = [name in clouds for name in order]
    assert flags == sorted(flags)
    assert set(hq.root_affinity(groups)["nodeGroupAffinity"][REQUIRED]).isdisjoint(clouds)


def test_cloud_gpus_counts_only_the_cloud_members():
    nodes = [
        node("n0", gpus="8"),
        node("vk-0", gpus="8"),
        node("aws-0", gpus="4"),
        node("vk-stray", gpus="16"),
        node("vk-cpu", gpus=None),
    ]
    members = {
        "n0": group("idc-a"),
        "vk-0": group("cloud-z"),
        "aws-0": group("cloud-y"),
        "vk-cpu": group("cloud-z"),
    }
    assert hq.cloud_gpus(members, nodes) == 12
    assert hq.cloud_gpus({}, nodes) == 0


def test_a_malformed_cloud_gpu_count_is_refused_with_the_path():
    with pytest.raises(PlatformValidationError, match=r"nodes/vk-0\.status\.allocatable"):
        hq.cloud_gpus({"vk-0": group("cloud-z")}, [node("vk-0", gpus="many")])


def test_the_burst_queue_requires_the_cloud_and_is_capped_at_its_gpus():
    assert hq.burst_queue(GROUPS, 16) == {
        "apiVersion": QUEUE_API,
        "kind": "Queue",
        "metadata": {
            "name": "cloud-burst",
            "labels": {
                "platform.io/managed-by": "gpucloud-platform",
                "platform.io/queue-type": "burst",
            },
        },
        "spec": {
            "parent": "root",
            "weight": 1,
            "reclaimable": False,
            "capability": {GPU: "16"},
            "affinity": {"nodeGroupAffinity": {REQUIRED: ["cloud-y", "cloud-z"]}},
        },
    }
    assert hq.burst_queue(GROUPS, 0, "burst-2")["metadata"]["name"] == "burst-2"


def test_affinity_patch_and_affinity_of():
    affinity = hq.root_affinity(GROUPS)
    patch = hq.affinity_patch("root", affinity)
    assert patch == {
        "apiVersion": QUEUE_API,
        "kind": "Queue",
        "metadata": {"name": "root"},
        "spec": {"affinity": affinity},
    }
    assert hq.affinity_of(patch) == affinity
    assert hq.affinity_of(queue("q")) == {}
    assert hq.affinity_of({"metadata": {"name": "q"}}) == {}


# --- rule node-groups-order ---------------------------------------------------------


def cluster_objects():
    return [
        node("n0", {"type": "kwok", "rack": "a"}),
        node("n1", {"type": "kwok", "rack": "b"}),
        node("vk-0", {"type": "virtual-kubelet", REGION: "cn-hangzhou"}),
        node("aws-0", {"type": "virtual-kubelet-aws"}, gpus="4"),
        node("cpu-0", {"type": "cpu"}, gpus=None),
        queue("root"),
        queue("tenant-a-payg", "payg"),
        queue("tenant-a-algo", "team"),
        queue("tenant-a-spot", "spot"),
    ]


def plan_for(objects, elastic=("payg",), burst="cloud-burst", groups=GROUPS):
    nodes = [o for o in objects if o["kind"] == "Node"]
    queues = [o for o in objects if o["kind"] == "Queue"]
    members, errors = membership(groups, nodes)
    assert errors == []
    return plan_node_groups(groups, members, nodes, queues, list(elastic), burst)


def test_nodes_first_then_burst_then_elastic_then_root():
    plan = plan_for(cluster_objects())
    assert [w.key() for w in plan.writes] == [
        "Node/aws-0",
        "Node/n0",
        "Node/n1",
        "Node/vk-0",
        "Queue/cloud-burst",
        "Queue/tenant-a-payg",
        "Queue/root",
    ]
    assert [w.create for w in plan.writes] == [False] * 4 + [True, False, False]


def test_node_writes_carry_labels_taint_and_resource_version():
    plan = plan_for(cluster_objects())
    writes = {w.name: w for w in plan.writes}
    assert writes["n0"].body == {
        "metadata": {
            "labels": {NODEGROUP: "idc-a", LOCATION: "idc"},
            "resourceVersion": "7",
        }
    }
    vk = writes["vk-0"].body
    # The region Virtual Kubelet already set is not written again.
    assert vk["metadata"]["labels"] == {
        NODEGROUP: "cloud-z",
        LOCATION: "cloud",
        PROVIDER: "aliyun",
    }
    assert vk["spec"] == {"taints": [{"key": VK_TAINT, "value": "aliyun", "effect": "NoSchedule"}]}
    assert writes["aws-0"].body["metadata"]["labels"][REGION] == "us-east-1"
    assert all(w.api_version == "v1" and w.kind == "Node" for w in plan.writes[:4])


def test_the_cpu_node_is_neither_written_nor_reported():
    plan = plan_for(cluster_objects())
    assert "cpu-0" not in {w.name for w in plan.writes}
    assert "cpu-0" not in plan.nodes and "Node/cpu-0" not in plan.before
    assert plan.warnings == [
        "nodes cpu-0 are in no group: Volcano jobs do not run on them once root's affinity "
        "names the IDC groups"
    ]


def test_queue_writes_set_only_the_affinity():
    plan = plan_for(cluster_objects())
    writes = {w.name: w for w in plan.writes}
    assert writes["root"].body == {"spec": {"affinity": hq.root_affinity(GROUPS)}}
    assert writes["tenant-a-payg"].body == {"spec": {"affinity": hq.elastic_affinity(GROUPS)}}
    assert writes["cloud-burst"].body == hq.burst_queue(GROUPS, 12)


def test_team_and_spot_queues_inherit_root():
    plan = plan_for(cluster_objects())
    assert {"tenant-a-algo", "tenant-a-spot"}.isdisjoint(w.name for w in plan.writes)
    assert "Queue/tenant-a-algo" not in plan.after


def test_team_queues_burst_when_asked():
    plan = plan_for(cluster_objects(), elastic=("payg", "team"))
    names = [w.name for w in plan.writes]
    assert names.index("tenant-a-algo") < names.index("tenant-a-payg") < names.index("root")
    assert plan.after["Queue/tenant-a-algo"] == {"affinity": hq.elastic_affinity(GROUPS)}


def test_a_type_that_no_longer_bursts_goes_back_to_the_idc():
    """Team queues burst, then the option drops them: their elastic affinity is removed
    (they inherit root's IDC-only one again); an affinity of another shape is left alone."""
    objects = [o for o in cluster_objects() if o["metadata"]["name"] not in ("tenant-a-algo",)]
    objects.append(queue("tenant-a-algo", "team", hq.elastic_affinity(GROUPS)))
    objects.append(queue("tenant-b-algo", "team", {"nodeGroupAffinity": {REQUIRED: ["idc-a"]}}))
    plan = plan_for(objects, elastic=("payg",))
    writes = {w.name: w for w in plan.writes}
    assert writes["tenant-a-algo"].body == {"spec": {"affinity": None}}
    assert plan.after["Queue/tenant-a-algo"] == {"affinity": None}
    assert "tenant-b-algo" not in writes


def test_no_burst_queue_when_it_has_no_name():
    plan = plan_for(cluster_objects(), burst="")
    assert "Queue/cloud-burst" not in plan.before
    assert "cloud-burst" not in [w.name for w in plan.writes]


def test_an_existing_burst_queue_gets_only_what_differs():
    objects = [
        *cluster_objects(),
        queue(
            "cloud-burst",
            "burst",
            affinity={"nodeGroupAffinity": {REQUIRED: ["cloud-y", "cloud-z"]}},
            capability={GPU: "4"},
            parent="root",
        ),
    ]
    plan = plan_for(objects)
    (burst,) = [w for w in plan.writes if w.name == "cloud-burst"]
    assert burst.create is False and burst.body == {"spec": {"capability": {GPU: "12"}}}
    assert plan.before["Queue/cloud-burst"]["capability"] == {GPU: "4"}
    assert plan.after["Queue/cloud-burst"]["capability"] == {GPU: "12"}


def test_a_missing_root_is_not_written():
    objects = [o for o in cluster_objects() if o["metadata"]["name"] != "root"]
    plan = plan_for(objects)
    assert "root" not in [w.name for w in plan.writes]
    assert plan.before["Queue/root"] == {"affinity": None}


def test_the_diff_shows_owned_labels_and_taints_before_and_after():
    plan = plan_for(cluster_objects())
    assert plan.before["Node/vk-0"] == {"labels": {}, "taints": []}
    assert plan.after["Node/vk-0"]["labels"][NODEGROUP] == "cloud-z"
    assert plan.after["Node/vk-0"]["taints"][-1]["key"] == VK_TAINT
    assert plan.before["Queue/root"] == {"affinity": None}
    assert plan.after["Queue/root"] == {"affinity": hq.root_affinity(GROUPS)}
    assert plan.nodes == {"aws-0": "cloud-y", "n0": "idc-a", "n1": "idc-b", "vk-0": "cloud-z"}


def test_a_node_that_left_every_group_loses_the_owned_labels():
    was_cloud = node(
        "cpu-0",
        {
            "type": "cpu",
            NODEGROUP: "cloud-old",
            LOCATION: "cloud",
            PROVIDER: "aliyun",
            REGION: "cn-hangzhou",
            "platform.io/compliance-zone": "x",
            "keep": "me",
        },
        gpus=None,
        taints=[{"key": VK_TAINT, "value": "aliyun", "effect": "NoSchedule"}],
    )
    objects = [o for o in cluster_objects() if o["metadata"]["name"] != "cpu-0"] + [was_cloud]
    plan = plan_for(objects)
    (write,) = [w for w in plan.writes if w.name == "cpu-0"]
    assert write.body == {
        "metadata": {
            "labels": {
                NODEGROUP: None,
                LOCATION: None,
                PROVIDER: None,
                REGION: None,
                "platform.io/compliance-zone": None,
            },
            "resourceVersion": "7",
        }
    }
    assert plan.nodes["cpu-0"] is None
    assert plan.after["Node/cpu-0"] == {"labels": {}, "taints": was_cloud["spec"]["taints"]}


def test_an_idc_node_keeps_a_region_label_it_did_not_get_from_a_group():
    objects = cluster_objects()
    objects[0]["metadata"]["labels"][REGION] = "dc-1"
    plan = plan_for(objects)
    (write,) = [w for w in plan.writes if w.name == "n0"]
    assert REGION not in write.body["metadata"]["labels"]


def test_a_node_moved_from_the_cloud_to_the_idc_loses_the_cloud_labels():
    objects = cluster_objects()
    objects[0]["metadata"]["labels"].update(
        {NODEGROUP: "cloud-z", LOCATION: "cloud", PROVIDER: "aliyun", REGION: "cn-hangzhou"}
    )
    plan = plan_for(objects)
    (write,) = [w for w in plan.writes if w.name == "n0"]
    assert write.body["metadata"]["labels"] == {
        NODEGROUP: "idc-a",
        LOCATION: "idc",
        PROVIDER: None,
        REGION: None,
    }
    assert "spec" not in write.body


def test_the_write_key():
    assert Write("v1", "Node", "n0", {}).key() == "Node/n0"


# --- the plan converges -------------------------------------------------------------

owned_values = st.fixed_dictionaries(
    {},
    optional={
        NODEGROUP: st.sampled_from(["idc-a", "idc-b", "cloud-z", "old"]),
        LOCATION: st.sampled_from(["idc", "cloud"]),
        PROVIDER: st.sampled_from(["aliyun", "aws"]),
        REGION: st.sampled_from(["cn-hangzhou", "dc-1"]),
        "platform.io/compliance-zone": st.just("finance"),
    },
)
taint_lists = st.lists(
    st.fixed_dictionaries(
        {
            "key": st.sampled_from(["gpu", VK_TAINT]),
            "value": st.sampled_from(["aliyun", "x"]),
            "effect": st.sampled_from(["NoSchedule", "NoExecute"]),
        }
    ),
    max_size=2,
)
node_kinds = st.sampled_from(
    [{"type": "kwok", "rack": "a"}, {"type": "kwok", "rack": "b"}, {"type": "virtual-kubelet"}]
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(node_kinds, owned_values, taint_lists), min_size=1, max_size=5),
    st.lists(st.booleans(), min_size=1, max_size=3),
)
def test_applying_the_plan_leaves_nothing_to_write(specs, elastic_has_affinity):
    objects = [
        node(f"n{i}", {**kind, **owned}, taints=taints)
        for i, (kind, owned, taints) in enumerate(specs)
    ]
    objects.append(queue("root"))
    for i, has in enumerate(elastic_has_affinity):
        objects.append(
            queue(
                f"tenant-t{i}-payg",
                "payg",
                affinity={"nodeGroupAffinity": {PREFERRED: ["old"]}} if has else None,
            )
        )
    groups = GROUPS[:3]
    cluster = FakeCluster(objects)
    first = plan_for(cluster.objects("Node") + cluster.objects("Queue"), groups=groups)
    kinds = [w.kind for w in first.writes]
    assert kinds == sorted(kinds)  # every Node write before every Queue write
    assert first.writes[-1].name == "root"
    for write in first.writes:
        if write.create:
            cluster.create(write.body)
        else:
            cluster.merge_patch(write.api_version, write.kind, write.name, write.body)
    second = plan_for(cluster.objects("Node") + cluster.objects("Queue"), groups=groups)
    assert second.writes == []
    assert second.after == first.after
    for obj in cluster.objects("Node"):
        taints = (obj.get("spec") or {}).get("taints") or []
        labels = obj["metadata"]["labels"]
        if labels["type"] == "virtual-kubelet":
            assert any(t["key"] == VK_TAINT and t["effect"] == "NoSchedule" for t in taints)
            assert labels[LOCATION] == "cloud" and labels[NODEGROUP] == "cloud-z"
        else:
            assert labels[LOCATION] == "idc" and PROVIDER not in labels


def test_a_queue_with_an_affinity_of_another_shape_converges():
    objects = cluster_objects()
    objects[5] = queue("root", affinity={"nodeGroupAffinity": {PREFERRED: ["old"]}})
    cluster = FakeCluster(objects)
    first = plan_for(cluster.objects("Node") + cluster.objects("Queue"))
    for write in first.writes:
        if write.create:
            cluster.create(write.body)
        else:
            cluster.merge_patch(write.api_version, write.kind, write.name, write.body)
    root = cluster.get(QUEUE_API, "Queue", "root")
    assert root["spec"]["affinity"] == hq.root_affinity(GROUPS)
    second = plan_for(cluster.objects("Node") + cluster.objects("Queue"))
    assert second.writes == []


# --- the module's options -----------------------------------------------------------


def test_the_options():
    assert inputs.ELASTIC_TYPES == ("payg", "team")
    assert inputs.OPTIONS["elastic_queue_types"]["default"] == ["payg"]
    assert inputs.OPTIONS["elastic_queue_types"]["choices"] == ["payg", "team"]
    assert inputs.OPTIONS["burst_queue"]["default"] == "cloud-burst"
    assert inputs.OPTIONS["groups"]["required"] is True


def test_valid_options_pass():
    inputs.validate({"groups": RAW_GROUPS, "burst_queue": "cloud-burst"})
    inputs.validate({"groups": RAW_GROUPS, "burst_queue": ""})
    inputs.validate({"groups": RAW_GROUPS, "burst_queue": None})


def test_a_bad_group_is_refused_naming_its_field():
    with pytest.raises(PlatformValidationError) as info:
        inputs.validate({"groups": [{**RAW_GROUPS[0], "location": "edge"}]})
    assert [e.field for e in info.value.errors] == ["groups[0].location"]


def test_a_bad_burst_queue_name_is_refused_with_the_groups():
    with pytest.raises(PlatformValidationError) as info:
        inputs.validate({"groups": [], "burst_queue": "Cloud_Burst"})
    assert [e.field for e in info.value.errors] == ["groups", "burst_queue"]
