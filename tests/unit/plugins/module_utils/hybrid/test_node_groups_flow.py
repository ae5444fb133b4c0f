# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``node_groups`` through the flow contract: its plan as a table of cases over
facts (no cluster), and ``parsed`` of ``gathered`` as the check-mode run."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
    Refused,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid import grouping
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.service import GROUPS_FLOW
from ansible_collections.gpucloud.platform.plugins.modules import node_groups
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster
from ansible_collections.gpucloud.platform.tests.unit.flow_checks import (
    assert_parsed_is_the_check_run,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.hybrid.test_node_groups_service import (
    CLOUD_NODES,
    EXPECTED_WRITES,
    GROUPS,
    IDC_NODES,
    conf_without,
    kwok_node,
    objects,
    params,
    queue,
    scheduler_configmap,
    vk_node,
)


def facts(items, burst=()):
    """Facts as a run reads them from ``items`` (every read made)."""
    kinds = {
        kind: tuple(o for o in items if o["kind"] == kind)
        for kind in ("Node", "Queue", "ConfigMap")
    }
    return grouping.GroupsFacts(tuple(burst), kinds["ConfigMap"], kinds["Node"], kinds["Queue"])


def unready(name):
    node = kwok_node(name)
    node["metadata"]["labels"]["type"] = "other"
    return node


# (case, options, facts, the writes planned or the refusal's type and words)
CASES = [
    ("a first run", {}, facts(objects()), EXPECTED_WRITES),
    (
        "no burst queue",
        {"burst_queue": ""},
        facts(objects()),
        [w for w in EXPECTED_WRITES if w != "Queue/cloud-burst"],
    ),
    (
        "root as the burst queue",
        {"burst_queue": "root"},
        grouping.GroupsFacts(),
        (PlatformValidationError, "Volcano's own"),
    ),
    (
        "another tenant's queue as the burst queue",
        {},
        facts(objects(), burst=[queue("cloud-burst", {"platform.io/tenant": "x"})]),
        (PlatformValidationError, "tenant x's"),
    ),
    (
        "no scheduler ConfigMap",
        {},
        facts([o for o in objects() if o["kind"] != "ConfigMap"]),
        (Refused, "scheduling_policy role first"),
    ),
    (
        "no nodegroup plugin",
        {},
        facts(objects(conf=conf_without("nodegroup"))),
        (Refused, "nodegroup"),
    ),
    (
        "a GPU node in no group",
        {},
        facts([*objects(), unready("gpu-other")]),
        (PlatformValidationError, "gpu-other are in no group"),
    ),
    (
        "a listed node that is not there",
        {"groups": [*GROUPS, {"name": "x", "location": "idc", "nodes": ["gone"]}]},
        facts(objects()),
        (PlatformValidationError, "gone are listed"),
    ),
]


@pytest.mark.parametrize(
    "options,given_facts,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_plan_over_facts(options, given_facts, expected):
    request = grouping.parse_groups_request(params(**options))
    if isinstance(expected, tuple):
        kind, words = expected
        with pytest.raises(kind, match=words):
            grouping.plan(request, given_facts)
        return
    said = grouping.report(request, grouping.plan(request, given_facts))
    assert said["writes"] == expected and said["changed"] is bool(expected)


def test_an_ungrouped_node_is_a_warning_of_the_plan():
    node = kwok_node("cpu-0", gpus="0")
    node["metadata"]["labels"]["type"] = "cpu"
    request = grouping.parse_groups_request(params())
    planned = grouping.plan(request, facts([*objects(), node]))
    assert grouping.warnings_of(planned) == [
        "nodes cpu-0 are in no group: Volcano jobs do not run on them once root's affinity "
        "names the IDC groups"
    ]


def cluster_of(idc, cloud, conf):
    items = [kwok_node(n) for n in IDC_NODES[:idc]] + [vk_node(n) for n in CLOUD_NODES[:cloud]]
    items = [o for o in objects(nodes=items) if o["kind"] != "ConfigMap" or conf == "default"]
    if conf == "without nodegroup":
        items.append(scheduler_configmap(conf_without("nodegroup")))
    return items


@settings(max_examples=40, deadline=None)
@given(
    idc=st.integers(0, 4),
    cloud=st.integers(0, 2),
    conf=st.sampled_from(["default", "without nodegroup", "none"]),
    burst_name=st.sampled_from(["cloud-burst", "", "default"]),
    elastic=st.sampled_from([["payg"], ["payg", "team"]]),
    twice=st.booleans(),
)
def test_parsed_of_gathered_is_the_check_mode_run(idc, cloud, conf, burst_name, elastic, twice):
    objects_given = cluster_of(idc, cloud, conf)
    options = {"burst_queue": burst_name, "elastic_queue_types": elastic}
    if twice:  # the nodes and queues as a first run left them
        first = FakeCluster(copy.deepcopy(objects_given))
        try:
            GROUPS_FLOW.run(params(**options), first, False)
            objects_given = list(first.store.values())
        except (PlatformValidationError, Refused):
            pass
    gathered = GROUPS_FLOW.run(
        params(state="gathered", **options), FakeCluster(copy.deepcopy(objects_given)), False
    )["gathered"]
    assert_parsed_is_the_check_run(
        GROUPS_FLOW,
        lambda: GROUPS_FLOW.run(
            params(**options), FakeCluster(copy.deepcopy(objects_given), dry_run=True), True
        ),
        params(state="parsed", facts=gathered, **options),
    )


def test_gathered_reads_as_a_run_does_and_parsed_connects_to_nothing(run_module):
    cluster = FakeCluster(objects())
    out = run_module(node_groups, cluster, groups=GROUPS, state="gathered")
    assert out["changed"] is False and cluster.writes == []
    assert cluster.lists == ["Node", "Queue"] and out["requests"] == 4  # two GETs, two lists
    assert out["summary"] == [
        "gathered burst_queue, nodes, queues, scheduler_configmap from the cluster; "
        "nothing was written"
    ]
    offline = FakeCluster([])
    parsed = run_module(node_groups, offline, groups=GROUPS, state="parsed", facts=out["gathered"])
    assert parsed["requests"] == 0 and offline.requests == 0 and parsed["changed"] is False
    assert parsed["writes"] == EXPECTED_WRITES
    assert (
        parsed["summary"][-1] == "would write 9 objects (node labels and taints, queue affinities)"
    )
