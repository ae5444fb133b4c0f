# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""hybrid.service.run (the node_groups module) against the fake cluster, its nodes
shaped like the local cluster's hybrid topology: kwok IDC nodes and Virtual Kubelet
cloud nodes."""

from __future__ import annotations

import copy

import pytest
from kubernetes.client.rest import ApiException

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PartialWrite,
    PlatformValidationError,
    Refused,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid import service
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.nodegroups import (
    parse_groups,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.queues import (
    elastic_affinity,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_builder import (
    DEFAULT_TIERS,
    render_scheduler_conf,
)
from ansible_collections.gpucloud.platform.plugins.modules import node_groups
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster

GPU = "nvidia.com/gpu"
QUEUE_API = "scheduling.volcano.sh/v1beta1"
VK_TAINT_KEY = "virtual-kubelet.io/provider"
VK_TAINT = {"key": VK_TAINT_KEY, "value": "aliyun", "effect": "NoSchedule"}
NODEGROUP = "volcano.sh/nodegroup-name"
LOCATION = "platform.io/node-location"
PROVIDER = "platform.io/cloud-provider"
REGION = "topology.kubernetes.io/region"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
CONFIGMAP = "volcano-system/volcano-scheduler-configmap"

IDC_NODES = [f"gpu-node-{i}" for i in range(4)]
CLOUD_NODES = ["vk-aliyun-0", "vk-aliyun-1"]
GROUPS = [
    {"name": "idc-h100", "location": "idc", "selector": {"type": "kwok"}},
    {
        "name": "cloud-aliyun-hangzhou",
        "location": "cloud",
        "provider": "aliyun",
        "region": "cn-hangzhou",
        "selector": {"type": "virtual-kubelet"},
    },
]


def kwok_node(name, gpus="8", extra_labels=None):
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"type": "kwok", "kubernetes.io/hostname": name, **(extra_labels or {})},
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "spec": {},
        "status": {
            "allocatable": {GPU: gpus, "cpu": "128", "memory": "1Ti"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def vk_node(name, gpus="8", taints=(VK_TAINT,)):
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "type": "virtual-kubelet",
                "kubernetes.io/role": "agent",
                REGION: "cn-hangzhou",
            },
            "annotations": {"platform.io/idc-latency-ms": "35"},
        },
        "spec": {"taints": [dict(t) for t in taints]},
        "status": {
            "allocatable": {GPU: gpus, "cpu": "128", "memory": "1Ti"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def queue(name, labels=None, **spec):
    return {
        "apiVersion": QUEUE_API,
        "kind": "Queue",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {"weight": 1, **spec},
    }


def scheduler_configmap(text=None):
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
        "data": {"volcano-scheduler.conf": render_scheduler_conf() if text is None else text},
    }


PAYG_LABELS = {
    "platform.io/queue-type": "payg",
    "platform.io/managed-by": "gpucloud-platform",
    "platform.io/tenant": "alpha",
}


def objects(nodes=None, conf=None):
    return [
        *(nodes if nodes is not None else [kwok_node(n) for n in IDC_NODES]),
        *([vk_node(n) for n in CLOUD_NODES] if nodes is None else []),
        queue("root", reclaimable=False),
        queue("tenant-alpha-payg", PAYG_LABELS, parent="root", capability={GPU: "8"}),
        queue(
            "tenant-alpha-algo",
            {**PAYG_LABELS, "platform.io/queue-type": "team"},
            parent="tenant-alpha",
        ),
        scheduler_configmap(conf),
    ]


def params(**given):
    """The module's options with their defaults, as the runner passes them."""
    out = {name: spec.get("default") for name, spec in node_groups.OPTIONS.items()}
    out["groups"] = copy.deepcopy(GROUPS)
    return out | given


def stored(cluster, kind, name, namespace=None):
    return cluster.store[cluster.key(kind, namespace, name)]


def conf_without(plugin_name):
    tiers = copy.deepcopy(list(DEFAULT_TIERS))
    for tier in tiers:
        tier["plugins"] = [p for p in tier["plugins"] if p["name"] != plugin_name]
    return render_scheduler_conf(tiers=tiers)


def conf_with_nodegroup(**options):
    tiers = copy.deepcopy(list(DEFAULT_TIERS))
    for tier in tiers:
        for plugin in tier["plugins"]:
            if plugin["name"] == "nodegroup":
                plugin.pop("enableHierarchy", None)
                plugin.update(options)
    return render_scheduler_conf(tiers=tiers)


EXPECTED_WRITES = [
    *(f"Node/{n}" for n in IDC_NODES),
    *(f"Node/{n}" for n in CLOUD_NODES),
    "Queue/cloud-burst",
    "Queue/tenant-alpha-payg",
    "Queue/root",
]


# --- a first run --------------------------------------------------------------------


def test_first_run_writes_nodes_then_queues_and_root_last():
    cluster = FakeCluster(objects())
    result = service.run(params(), cluster, check_mode=False)
    assert result["changed"] is True
    assert result["writes"] == EXPECTED_WRITES
    assert cluster.real_writes == [
        *(("merge-patch", "Node", n) for n in IDC_NODES + CLOUD_NODES),
        ("create", "Queue", "cloud-burst"),
        ("merge-patch", "Queue", "tenant-alpha-payg"),
        ("merge-patch", "Queue", "root"),
    ]
    assert cluster.lists == ["Node", "Queue"]


def test_first_run_labels_every_node_with_its_group():
    cluster = FakeCluster(objects())
    result = service.run(params(), cluster, check_mode=False)
    for name in IDC_NODES:
        labels = stored(cluster, "Node", name)["metadata"]["labels"]
        assert labels[NODEGROUP] == "idc-h100" and labels[LOCATION] == "idc"
        assert PROVIDER not in labels and labels["type"] == "kwok"
    for name in CLOUD_NODES:
        node = stored(cluster, "Node", name)
        labels = node["metadata"]["labels"]
        assert labels[NODEGROUP] == "cloud-aliyun-hangzhou" and labels[LOCATION] == "cloud"
        assert labels[PROVIDER] == "aliyun" and labels[REGION] == "cn-hangzhou"
        assert labels["type"] == "virtual-kubelet" and labels["kubernetes.io/role"] == "agent"
        # Virtual Kubelet's own taint was there: it is neither doubled nor replaced.
        assert node["spec"]["taints"] == [VK_TAINT]
    assert result["groups"] == {"idc-h100": IDC_NODES, "cloud-aliyun-hangzhou": CLOUD_NODES}
    assert result["nodes"] == {
        **dict.fromkeys(IDC_NODES, "idc-h100"),
        **dict.fromkeys(CLOUD_NODES, "cloud-aliyun-hangzhou"),
    }


def test_first_run_binds_the_queues_to_the_groups():
    cluster = FakeCluster(objects())
    service.run(params(), cluster, check_mode=False)
    root = stored(cluster, "Queue", "root")
    assert root["spec"]["affinity"] == {"nodeGroupAffinity": {REQUIRED: ["idc-h100"]}}
    assert root["spec"]["reclaimable"] is False
    payg = stored(cluster, "Queue", "tenant-alpha-payg")
    assert payg["spec"]["affinity"] == {
        "nodeGroupAffinity": {PREFERRED: ["idc-h100", "cloud-aliyun-hangzhou"]}
    }
    assert payg["spec"]["capability"] == {GPU: "8"} and payg["metadata"]["labels"] == PAYG_LABELS
    # A team queue is not elastic by default: it inherits root's IDC-only affinity.
    assert "affinity" not in stored(cluster, "Queue", "tenant-alpha-algo")["spec"]
    burst = stored(cluster, "Queue", "cloud-burst")
    assert burst["spec"]["affinity"] == {"nodeGroupAffinity": {REQUIRED: ["cloud-aliyun-hangzhou"]}}
    assert burst["spec"]["parent"] == "root" and burst["spec"]["reclaimable"] is False
    assert burst["metadata"]["labels"]["platform.io/queue-type"] == "burst"


def test_the_burst_queue_is_capped_at_the_cloud_nodes_gpus():
    nodes = [kwok_node(n) for n in IDC_NODES] + [
        vk_node("vk-aliyun-0", gpus="8"),
        vk_node("vk-aliyun-1", gpus="4"),
    ]
    cluster = FakeCluster(objects(nodes))
    result = service.run(params(), cluster, check_mode=False)
    assert stored(cluster, "Queue", "cloud-burst")["spec"]["capability"] == {GPU: "12"}
    assert result["diff"]["after"]["Queue/cloud-burst"]["capability"] == {GPU: "12"}
    # The provider's quota grows: the cap follows, and only the cap is written.
    stored(cluster, "Node", "vk-aliyun-1")["status"]["allocatable"][GPU] = "16"
    again = service.run(params(), cluster, check_mode=False)
    assert stored(cluster, "Queue", "cloud-burst")["spec"]["capability"] == {GPU: "24"}
    assert again["writes"] == ["Queue/cloud-burst"]
    assert again["diff"]["before"]["Queue/cloud-burst"]["capability"] == {GPU: "12"}


def test_elastic_team_queues_prefer_the_idc_first():
    cluster = FakeCluster(objects())
    result = service.run(params(elastic_queue_types=["payg", "team"]), cluster, False)
    assert result["writes"][-3:] == [
        "Queue/tenant-alpha-algo",
        "Queue/tenant-alpha-payg",
        "Queue/root",
    ]
    wanted = elastic_affinity(parse_groups(GROUPS))
    assert stored(cluster, "Queue", "tenant-alpha-algo")["spec"]["affinity"] == wanted


def test_no_burst_queue_when_its_name_is_empty():
    cluster = FakeCluster(objects())
    result = service.run(params(burst_queue=""), cluster, check_mode=False)
    assert "Queue/cloud-burst" not in result["writes"]
    assert cluster.get(QUEUE_API, "Queue", "cloud-burst") is None


# --- idempotence and check mode -----------------------------------------------------


def test_second_run_writes_nothing():
    cluster = FakeCluster(objects())
    first = service.run(params(), cluster, check_mode=False)
    writes_before = list(cluster.writes)
    second = service.run(params(), cluster, check_mode=False)
    assert second["changed"] is False and second["writes"] == []
    assert cluster.writes == writes_before
    assert second["diff"]["before"] == second["diff"]["after"] == first["diff"]["after"]


def test_check_mode_writes_nothing_and_reports_the_same_diff():
    real = service.run(params(), FakeCluster(objects()), check_mode=False)
    cluster = FakeCluster(objects(), dry_run=True)
    snapshot = copy.deepcopy(cluster.store)
    checked = service.run(params(), cluster, check_mode=True)
    assert cluster.real_writes == []
    assert [w[0] for w in cluster.writes] == ["dry-run"] * len(EXPECTED_WRITES)
    assert cluster.store == snapshot
    assert checked["changed"] is True and checked["writes"] == real["writes"]
    assert checked["diff"] == real["diff"]
    assert checked["nodes"] == real["nodes"] and checked["groups"] == real["groups"]


def test_the_diff_before_a_first_run():
    result = service.run(params(), FakeCluster(objects()), check_mode=False)
    before, after = result["diff"]["before"], result["diff"]["after"]
    assert before["Node/gpu-node-0"] == {"labels": {}, "taints": []}
    assert after["Node/gpu-node-0"] == {
        "labels": {NODEGROUP: "idc-h100", LOCATION: "idc"},
        "taints": [],
    }
    assert before["Node/vk-aliyun-0"]["taints"] == [VK_TAINT]
    assert before["Queue/root"] == {"affinity": None}
    assert before["Queue/cloud-burst"] == {"capability": None, "affinity": None}
    assert after["Queue/cloud-burst"]["capability"] == {GPU: "16"}


# --- nodes that change group --------------------------------------------------------


def test_a_node_moved_out_of_every_group_loses_the_owned_labels():
    nodes = [kwok_node(n) for n in IDC_NODES] + [
        kwok_node("cpu-node-0", gpus="0", extra_labels={"role": "cpu", "keep": "me"}),
        *(vk_node(n) for n in CLOUD_NODES),
    ]
    groups = [
        {"name": "idc-h100", "location": "idc", "nodes": IDC_NODES},
        copy.deepcopy(GROUPS[1]),
        {
            "name": "idc-cpu",
            "location": "idc",
            "compliance_zone": "finance",
            "nodes": ["cpu-node-0"],
        },
    ]
    cluster = FakeCluster(objects(nodes))
    service.run(params(groups=groups), cluster, check_mode=False)
    labels = stored(cluster, "Node", "cpu-node-0")["metadata"]["labels"]
    assert labels[NODEGROUP] == "idc-cpu" and labels["platform.io/compliance-zone"] == "finance"
    result = service.run(params(groups=groups[:2]), cluster, check_mode=False)
    labels = stored(cluster, "Node", "cpu-node-0")["metadata"]["labels"]
    for owned in (NODEGROUP, LOCATION, "platform.io/compliance-zone"):
        assert owned not in labels
    assert labels == {
        "type": "kwok",
        "kubernetes.io/hostname": "cpu-node-0",
        "role": "cpu",
        "keep": "me",
    }
    # The group is gone from root's and the elastic queues' affinities too.
    assert result["writes"] == ["Node/cpu-node-0", "Queue/tenant-alpha-payg", "Queue/root"]
    root = stored(cluster, "Queue", "root")
    assert root["spec"]["affinity"] == {"nodeGroupAffinity": {REQUIRED: ["idc-h100"]}}
    assert result["nodes"]["cpu-node-0"] is None
    assert result["diff"]["after"]["Node/cpu-node-0"]["labels"] == {}
    assert "idc-cpu" not in result["groups"]


def test_a_gpu_node_in_no_group_is_refused_before_any_write():
    groups = copy.deepcopy(GROUPS)
    groups[0] = {"name": "idc-h100", "location": "idc", "nodes": IDC_NODES[:3]}
    cluster = FakeCluster(objects())
    with pytest.raises(PlatformValidationError) as info:
        service.run(params(groups=groups), cluster, check_mode=False)
    assert "gpu-node-3" in str(info.value) and "every-gpu-node-grouped" in str(info.value)
    assert cluster.writes == []


def test_a_node_in_two_groups_is_refused_before_any_write():
    groups = copy.deepcopy(GROUPS)
    groups.append({"name": "idc-finance", "location": "idc", "nodes": ["gpu-node-1"]})
    cluster = FakeCluster(objects())
    with pytest.raises(PlatformValidationError, match=r"node 'gpu-node-1' is selected by"):
        service.run(params(groups=groups), cluster, check_mode=False)
    assert cluster.writes == []


def test_a_listed_node_that_does_not_exist_is_refused():
    groups = copy.deepcopy(GROUPS)
    groups.append({"name": "idc-finance", "location": "idc", "nodes": ["gpu-node-9"]})
    cluster = FakeCluster(objects())
    with pytest.raises(PlatformValidationError, match=r"gpu-node-9 are listed but do not exist"):
        service.run(params(groups=groups), cluster, check_mode=False)
    assert cluster.writes == []


# --- the scheduler configuration ----------------------------------------------------


def test_a_scheduler_conf_without_nodegroup_is_refused_naming_the_configmap():
    cluster = FakeCluster(objects(conf=conf_without("nodegroup")))
    with pytest.raises(Refused) as info:
        service.run(params(), cluster, check_mode=False)
    assert CONFIGMAP in str(info.value) and "nodegroup" in str(info.value)
    assert info.value.extra["errors"] and CONFIGMAP in info.value.extra["errors"][0]
    assert cluster.writes == [] and cluster.lists == []


@pytest.mark.parametrize("options", [{}, {"enableHierarchy": False}, {"enableHierarchy": "true"}])
def test_a_nodegroup_plugin_without_hierarchy_is_refused(options):
    cluster = FakeCluster(objects(conf=conf_with_nodegroup(**options)))
    with pytest.raises(Refused) as info:
        service.run(params(), cluster, check_mode=False)
    assert f"{CONFIGMAP}.tiers[" in str(info.value) and "(nodegroup).enableHierarchy" in str(
        info.value
    )
    assert cluster.writes == []


def test_a_missing_scheduler_configmap_is_refused():
    cluster = FakeCluster([o for o in objects() if o["kind"] != "ConfigMap"])
    with pytest.raises(
        Refused, match=r"volcano-system/volcano-scheduler-configmap: does not exist"
    ):
        service.run(params(), cluster, check_mode=False)
    assert cluster.writes == []


def test_an_unreadable_scheduler_conf_is_refused():
    cluster = FakeCluster(objects(conf="tiers: [unclosed"))
    with pytest.raises(Refused, match="not valid YAML"):
        service.run(params(), cluster, check_mode=False)
    assert cluster.writes == []


# --- rule cloud-taint ---------------------------------------------------------------


def test_the_cloud_taint_is_appended_to_existing_taints():
    own = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    other_effect = {"key": VK_TAINT_KEY, "value": "aliyun", "effect": "NoExecute"}
    nodes = [kwok_node(n) for n in IDC_NODES] + [
        vk_node("vk-aliyun-0", taints=(own,)),
        vk_node("vk-aliyun-1", taints=(other_effect,)),
    ]
    cluster = FakeCluster(objects(nodes))
    service.run(params(), cluster, check_mode=False)
    added = {"key": VK_TAINT_KEY, "value": "aliyun", "effect": "NoSchedule"}
    assert stored(cluster, "Node", "vk-aliyun-0")["spec"]["taints"] == [own, added]
    assert stored(cluster, "Node", "vk-aliyun-1")["spec"]["taints"] == [other_effect, added]
    assert service.run(params(), cluster, check_mode=False)["writes"] == []


def test_an_untainted_cloud_node_gets_the_taint_and_idc_taints_are_left_alone():
    idc_taint = {"key": "maintenance", "effect": "NoSchedule"}
    tainted = kwok_node("gpu-node-0")
    tainted["spec"]["taints"] = [idc_taint]
    nodes = [tainted, *(kwok_node(n) for n in IDC_NODES[1:]), vk_node("vk-aliyun-0", taints=())]
    cluster = FakeCluster(objects(nodes))
    result = service.run(params(), cluster, check_mode=False)
    assert stored(cluster, "Node", "vk-aliyun-0")["spec"]["taints"] == [VK_TAINT]
    assert stored(cluster, "Node", "gpu-node-0")["spec"]["taints"] == [idc_taint]
    assert result["diff"]["after"]["Node/vk-aliyun-0"]["taints"] == [VK_TAINT]


# --- a write refused part-way -------------------------------------------------------


class RefusingCluster(FakeCluster):
    def __init__(self, items, refuse):
        super().__init__(items)
        self.refuse = refuse

    def merge_patch(self, api_version, kind, name, body, namespace=None):
        if (kind, name) == self.refuse:
            self.requests += 1
            raise ApiException(status=422, reason="Invalid")
        return super().merge_patch(api_version, kind, name, body, namespace)


def test_a_refused_write_reports_what_was_done():
    cluster = RefusingCluster(objects(), ("Queue", "tenant-alpha-payg"))
    with pytest.raises(PartialWrite) as info:
        service.run(params(), cluster, check_mode=False)
    assert info.value.what == "grouping nodes"
    assert info.value.done == EXPECTED_WRITES[:-2]
    assert info.value.report["nodes"]["vk-aliyun-0"] == "cloud-aliyun-hangzhou"
    # Root's IDC-only affinity is never written before the queues ahead of it.
    assert "affinity" not in stored(cluster, "Queue", "root")["spec"]


def test_a_node_that_keeps_changing_is_a_partial_write():
    class Racing(FakeCluster):
        def merge_patch(self, api_version, kind, name, body, namespace=None):
            if name == "gpu-node-2":
                self.put(stored(self, "Node", name))  # someone else wrote the node
            return super().merge_patch(api_version, kind, name, body, namespace)

    cluster = Racing(objects())
    with pytest.raises(PartialWrite) as info:
        service.run(params(), cluster, check_mode=False)
    # Each of its attempts meets a newer node; the nodes are patched side by side, so
    # every other node is written; no queue is.
    nodes = [w for w in EXPECTED_WRITES if w.startswith("Node/")]
    assert info.value.done == [n for n in nodes if n != "Node/gpu-node-2"]
    assert "affinity" not in stored(cluster, "Queue", "root")["spec"]


def test_a_node_changed_once_between_read_and_write_is_read_again_and_written():
    class RacingOnce(FakeCluster):
        raced = False

        def merge_patch(self, api_version, kind, name, body, namespace=None):
            if name == "vk-aliyun-1" and not self.raced:
                self.raced = True
                node = stored(self, "Node", name)  # its kubelet adds a taint meanwhile
                node["spec"]["taints"].append({"key": "maintenance", "effect": "NoSchedule"})
                self.put(node)
            return super().merge_patch(api_version, kind, name, body, namespace)

    cluster = RacingOnce(objects())
    result = service.run(params(), cluster, check_mode=False)
    assert cluster.raced and result["writes"] == EXPECTED_WRITES
    taints = stored(cluster, "Node", "vk-aliyun-1")["spec"]["taints"]
    # Planned again from the fresh read: the taint added meanwhile is kept.
    assert {"key": "maintenance", "effect": "NoSchedule"} in taints
    # The diff says what the fresh plan wrote, not what the first read planned.
    assert result["diff"]["after"]["Node/vk-aliyun-1"]["taints"] == taints
    assert service.run(params(), cluster, check_mode=False)["writes"] == []


def test_a_node_someone_else_grouped_meanwhile_is_not_reported_as_written():
    class GroupedMeanwhile(FakeCluster):
        def merge_patch(self, api_version, kind, name, body, namespace=None):
            if name == "gpu-node-1" and body.get("metadata", {}).get("resourceVersion"):
                node = stored(self, "Node", name)
                # Another run of the module labelled it first.
                node["metadata"]["labels"].update(
                    {k: v for k, v in body["metadata"]["labels"].items() if v is not None}
                )
                self.put(node)
            return super().merge_patch(api_version, kind, name, body, namespace)

    cluster = GroupedMeanwhile(objects())
    result = service.run(params(), cluster, check_mode=False)
    assert result["writes"] == [w for w in EXPECTED_WRITES if w != "Node/gpu-node-1"]
    assert stored(cluster, "Node", "gpu-node-1")["metadata"]["labels"][NODEGROUP] == "idc-h100"


# --- a bug found while writing these tests ------------------------------------------


def test_a_payg_queue_with_a_required_affinity_ends_with_the_elastic_affinity():
    items = objects()
    for item in items:
        if item["metadata"]["name"] == "tenant-alpha-payg":
            item["spec"]["affinity"] = {"nodeGroupAffinity": {REQUIRED: ["idc-old"]}}
    cluster = FakeCluster(items)
    service.run(params(), cluster, check_mode=False)
    affinity = stored(cluster, "Queue", "tenant-alpha-payg")["spec"]["affinity"]
    assert affinity == {"nodeGroupAffinity": {PREFERRED: ["idc-h100", "cloud-aliyun-hangzhou"]}}
    assert service.run(params(), cluster, check_mode=False)["writes"] == []


# --- the module -----------------------------------------------------------------------


def test_the_module_runs_the_service(run_module):
    cluster = FakeCluster(objects())
    result = run_module(node_groups, cluster, groups=GROUPS)
    assert result["changed"] is True and result["writes"] == EXPECTED_WRITES
    assert result["requests"] > 0 and "diff" in result


def test_the_module_refuses_a_bad_group_before_reading_the_cluster(run_module):
    cluster = FakeCluster(objects())
    result = run_module(
        node_groups, cluster, groups=[{"name": "x", "location": "edge", "nodes": ["a"]}]
    )
    assert result.get("failed") is True and "groups[0].location" in result["msg"]
    assert cluster.writes == [] and cluster.lists == []
