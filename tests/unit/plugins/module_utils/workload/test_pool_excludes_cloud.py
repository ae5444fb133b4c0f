# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule pool-excludes-cloud: cloud GPUs are the provider's quota, never part of the pool
that subscriptions, pay-as-you-go and spot are sold from (workload/pool)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.workload.pool import (
    is_cloud_node,
    node_in_pool,
    pool_from_nodes,
    pool_node_resources,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import node

GPU = "nvidia.com/gpu"
LOCATION = "platform.io/node-location"
VK = {"type": "virtual-kubelet", "kubernetes.io/role": "agent"}


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({}, False),
        ({"type": "kwok"}, False),
        ({LOCATION: "idc"}, False),
        ({LOCATION: "cloud"}, True),
        (VK, True),
        ({**VK, LOCATION: "cloud"}, True),
        ({"type": "virtual-kubelet-like"}, False),
        ({LOCATION: "Cloud"}, False),
    ],
)
def test_is_cloud_node(labels, expected):
    assert is_cloud_node(node("n", labels=labels)) is expected


def test_a_node_without_metadata_is_not_a_cloud_node():
    assert is_cloud_node({}) is False
    assert is_cloud_node({"metadata": {"labels": None}}) is False


def test_an_ungrouped_virtual_kubelet_node_is_never_in_a_pool():
    vk = node("vk-0", labels=VK)
    assert node_in_pool(vk) is False
    assert node_in_pool(vk, {"type": "virtual-kubelet"}) is False
    # It has no location label yet, so a selector asking for cloud nodes does not match it.
    assert node_in_pool(vk, {LOCATION: "cloud"}) is False


def test_a_grouped_cloud_node_is_in_a_pool_only_when_asked_for():
    cloud = node("vk-0", labels={**VK, LOCATION: "cloud"})
    assert node_in_pool(cloud) is False
    assert node_in_pool(cloud, {"type": "virtual-kubelet"}) is False
    assert node_in_pool(cloud, {LOCATION: "cloud"}) is True
    assert node_in_pool(cloud, {LOCATION: "cloud", "type": "virtual-kubelet"}) is True


def test_a_cloud_node_asked_for_must_still_be_ready_and_schedulable():
    labels = {**VK, LOCATION: "cloud"}
    assert node_in_pool(node("a", labels=labels, ready=False), {LOCATION: "cloud"}) is False
    assert node_in_pool(node("b", labels=labels, unschedulable=True), {LOCATION: "cloud"}) is False


def test_idc_nodes_stay_in_the_pool():
    assert node_in_pool(node("n0", labels={"type": "kwok", LOCATION: "idc"})) is True
    assert node_in_pool(node("n1", labels={"type": "kwok"})) is True
    assert node_in_pool(node("n0", labels={LOCATION: "idc"}), {LOCATION: "idc"}) is True


def test_the_pool_counts_the_idc_gpus_only():
    nodes = [
        node("gpu-node-0", labels={"type": "kwok", LOCATION: "idc"}),
        node("gpu-node-1", labels={"type": "kwok"}),
        node("vk-aliyun-0", labels=VK),
        node("vk-aliyun-1", gpus=16, labels={**VK, LOCATION: "cloud"}),
    ]
    pool, members = pool_from_nodes(nodes)
    assert members == ["gpu-node-0", "gpu-node-1"]
    assert pool[GPU] == Decimal(16)
    cloud, cloud_members = pool_from_nodes(nodes, {LOCATION: "cloud"})
    assert cloud_members == ["vk-aliyun-1"] and cloud[GPU] == Decimal(16)
    assert list(pool_node_resources(nodes)) == ["gpu-node-0", "gpu-node-1"]
    assert pool_node_resources(nodes, {LOCATION: "cloud"})["vk-aliyun-1"][GPU] == 16


labels_strategy = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["kwok", "virtual-kubelet", "gpu"]),
        LOCATION: st.sampled_from(["idc", "cloud"]),
        "pool": st.sampled_from(["main", "burst"]),
    },
)


@given(labels=labels_strategy, selector=labels_strategy)
def test_a_cloud_node_is_in_a_pool_only_under_a_cloud_selector(labels, selector):
    candidate = node("n", labels=labels)
    inside = node_in_pool(candidate, selector)
    if inside and is_cloud_node(candidate):
        assert selector.get(LOCATION) == "cloud"
    if inside:
        assert all(labels.get(k) == v for k, v in selector.items())
    if not is_cloud_node(candidate) and all(labels.get(k) == v for k, v in selector.items()):
        assert inside


@given(st.lists(st.tuples(labels_strategy, st.integers(0, 16)), max_size=6))
def test_the_default_pool_never_holds_a_cloud_gpu(specs):
    nodes = [node(f"n{i}", gpus=g, labels=labels) for i, (labels, g) in enumerate(specs)]
    pool, members = pool_from_nodes(nodes)
    idc = [n for n in nodes if not is_cloud_node(n)]
    assert members == [n["metadata"]["name"] for n in idc]
    assert pool[GPU] == sum(Decimal(n["status"]["allocatable"][GPU]) for n in idc)
