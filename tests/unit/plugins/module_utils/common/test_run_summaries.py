# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule run-summary: each module's summary says what the run did in a few lines, and in
check mode only what it would do."""

from __future__ import annotations

import re

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.arbiter.summary import (
    arbiter_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.summary import (
    node_groups_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.inference.summary import (
    graph_summary,
    service_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.summary import (
    job_summary,
    throttle_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.summary import (
    capacity_summary,
    reclaim_summary_lines,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.summary import (
    team_queue_summary,
    tenant_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.summary import (
    hypernode_summary,
    render_summary,
    sync_summary,
)

GPU = "nvidia.com/gpu"
# A past tense that says something was applied: never in a check-mode summary unless "would".
APPLIED = re.compile(
    r"\b(created|updated|deleted|evicted|wrote|changed|applied|submitted|reclaimed)\b"
)

TENANT = {
    "name": "acme",
    "state": "present",
    "subscription": {GPU: 16, "cpu": "128", "memory": "1Ti"},
    "teams": [{"name": "algo", "deserved": {GPU: 8}, "capability": {GPU: 16}}],
}
TENANT_RESULT = {
    "changed": True,
    "objects": [
        {"kind": "Namespace", "name": "tenant-acme", "action": "create"},
        {"kind": "Queue", "name": "tenant-acme-subscription", "action": "create"},
        {"kind": "Queue", "name": "tenant-acme-algo", "action": "create"},
    ],
}
ARBITER = {
    "job": "tenant-acme/big",
    "decision": "reclaim",
    "need": 8,
    "freed": 8,
    "victims": [
        {
            "namespace": "tenant-acme",
            "name": "small",
            "queue": "tenant-acme-b",
            "priority_class": "normal-job",
            "gpus": 8,
        }
    ],
    "reason": "team a is below its deserved 16 GPUs; team b borrowed 8",
    "waiting": [],
}
RECLAIM = {
    "victims": [
        {
            "kind": "Job",
            "namespace": "tenant-beta",
            "name": "spot-a",
            "queue": "tenant-beta-spot",
            "price": "0.1",
            "gpus": 4,
        }
    ],
    "freed": 4,
    "shortfall": 4,
    "free": 0,
}
CAPACITY = {
    "pool": {GPU: 64},
    "idle": {GPU: 40},
    "counts": {"tenants": 2, "spot_queues": 2, "changed": 1, "unchanged": 1},
    "tenants": [
        {
            "tenant": "alpha",
            "queue": "tenant-alpha-spot",
            "old": {GPU: 20},
            "new": {GPU: 26},
            "changed": True,
        }
    ],
}
JOB = {
    "tenant": "acme",
    "name": "ddp-1",
    "queue": "tenant-acme-algo",
    "kind": "single",
    "job_class": "normal",
    "replicas": 2,
    "gpus_per_pod": 4,
    "state": "present",
}
JOB_RESULT = {
    "changed": True,
    "queue": {"name": "tenant-acme-algo", "type": "team"},
    "phase": "Pending",
    "held_seconds": 0,
    "throttle_engaged": False,
}
THROTTLE = {
    "engaged": ["tenant-acme/big"],
    "released": [],
    "expired": [],
    "not_engaged": [],
    "throttles": {"tenant-acme": {"queues": ["tenant-acme-algo"], "until": "2026-01-01T12:05:00Z"}},
}
SERVICE = {
    "changed": True,
    "service": {
        "current_version": "v1",
        "queue": "tenant-acme-algo",
        "billing_type": "team",
        "traffic": {"v1": 80, "v2": 20},
    },
}
TOPOLOGY = {
    "created": ["tor-0"],
    "updated": [],
    "deleted": ["ck-stale"],
    "unchanged": ["spine-0"],
    "unplaced_nodes": ["gpu-9"],
}
GROUPS = {
    "groups": {"idc": ["gpu-0", "gpu-1"]},
    "writes": ["Node/gpu-0", "Node/gpu-1", "Queue/root"],
}

AB = {
    "tenant": "alpha",
    "name": "llm-ab",
    "routes": [{"service": "llm", "weight": 50}, {"service": "llm-distilled", "weight": 50}],
}
AB_GRAPH = "InferenceGraph/platform-serving/alpha-llm-ab"

LEAF = {
    "name": "tor-0",
    "state": "present",
    "tier": 1,
    "members": [
        {"type": "Node", "selector": {"exactMatch": {"name": "gpu-0"}}},
        {"type": "Node", "selector": {"exactMatch": {"name": "gpu-1"}}},
    ],
}

CASES = [
    (tenant_summary, TENANT, TENANT_RESULT),
    (
        tenant_summary,
        {"name": "acme", "state": "absent"},
        TENANT_RESULT | {"running": {"jobs": 1, "pods": 2}},
    ),
    (team_queue_summary, {"tenant": "acme", "name": "algo", "deserved": {GPU: 8}}, TENANT_RESULT),
    (arbiter_summary, {}, ARBITER),
    (reclaim_summary_lines, {"demand_reason": "subscription of tenant acme"}, RECLAIM),
    (capacity_summary, {}, CAPACITY),
    (job_summary, JOB, JOB_RESULT),
    (
        job_summary,
        {"tenant": "acme", "name": "ddp-1", "state": "absent"},
        {"changed": True, "phase": "Absent", "throttle_released": ["tenant-acme-algo"]},
    ),
    (throttle_summary, {}, THROTTLE),
    (service_summary, {"tenant": "acme", "name": "llm", "action": "canary"}, SERVICE),
    (sync_summary, {}, TOPOLOGY),
    (hypernode_summary, LEAF, {"action": "created"}),
    (graph_summary, AB, {"graph": "alpha-llm-ab", "writes": [AB_GRAPH]}),
    (graph_summary, {"state": "absent"}, {"graph": "alpha-llm-ab", "writes": [AB_GRAPH]}),
    (hypernode_summary, {"name": "tor-7", "state": "absent"}, {"action": "deleted"}),
    (node_groups_summary, {}, GROUPS),
]


@pytest.mark.parametrize(("summary", "params", "result"), CASES)
def test_check_mode_says_only_what_would_happen(summary, params, result):
    applied = summary(params, result, False)
    would = summary(params, result, True)
    assert applied and all(isinstance(line, str) for line in applied)
    assert len(applied) == len(would)
    for line in would:
        assert not APPLIED.search(re.sub(r"would (be )?\w+", "", line)), line
    assert any("would" in line for line in would)


def test_tenant_says_its_queues_and_sizes():
    assert tenant_summary(TENANT, TENANT_RESULT, False) == [
        "tenant acme: created 3 objects (namespace tenant-acme)",
        "subscription 16 GPUs (cpu 128, memory 1Ti), teams: algo deserves 8, at most 16 GPUs",
        "queues tenant-acme-subscription (created), tenant-acme-algo (created)",
    ]
    assert (
        tenant_summary(TENANT, {"objects": []}, True)[0]
        == "tenant acme: unchanged (namespace tenant-acme)"
    )


def test_arbiter_says_its_decision_the_victims_and_why():
    assert arbiter_summary({}, ARBITER, True) == [
        "queue arbiter: would reclaim from sibling teams for tenant-acme/big (needs 8 GPUs): "
        "would evict 1 job holding 8 GPUs",
        "  tenant-acme/small (8 GPUs, normal-job, queue tenant-acme-b)",
        "why: team a is below its deserved 16 GPUs; team b borrowed 8",
    ]
    assert arbiter_summary({}, {"job": None, "decision": "none"}, False) == [
        "queue arbiter: no job is held back by a queue's capability; nothing to do"
    ]


def test_reclaim_names_each_victim_with_its_bid_and_gpus():
    assert reclaim_summary_lines(
        {"demand_reason": "subscription of tenant acme"}, RECLAIM, False
    ) == [
        "spot reclaim for subscription of tenant acme: deleted 1 spot job, freeing 4 GPUs (shortfall 4), "
        "cheapest first:",
        "  tenant-beta/spot-a (4 GPUs, bid 0.1/GPU-hour, queue tenant-beta-spot)",
    ]


def test_spot_capacity_says_old_and_new_per_tenant():
    assert capacity_summary({}, CAPACITY, True) == [
        "spot capacity: 40 idle GPUs of 64 shared by 2 spot queues; 1 would change:",
        "  alpha: 20 -> 26 GPUs (tenant-alpha-spot)",
    ]
    same = capacity_summary({}, CAPACITY | {"tenants": []}, False)
    assert same == [
        "spot capacity: 40 idle GPUs of 64 shared by 2 spot queues; every spot capacity stays as it is"
    ]


def test_job_says_its_phase_and_queue():
    assert job_summary(JOB, JOB_RESULT, False) == [
        "job tenant-acme/ddp-1: submitted (single, class normal, 2 pods x 4 GPUs, queue tenant-acme-algo (team)); "
        "phase Pending"
    ]
    held = job_summary(JOB, JOB_RESULT | {"phase": "Held"}, True)
    assert held[0].endswith("would be held by the large-job throttle")


def test_throttle_names_the_throttled_queues():
    assert throttle_summary({}, THROTTLE, False)[-1] == (
        "throttled queues: tenant-acme-algo until 2026-01-01T12:05:00Z"
    )
    assert throttle_summary({}, {"throttles": {}}, False) == ["throttled queues: none"]


def test_hypernode_says_its_tier_members_and_action():
    assert hypernode_summary(LEAF, {"action": "created"}, False) == [
        "HyperNode tor-0: created (tier 1, 2 members of type Node)"
    ]
    assert hypernode_summary(LEAF, {"action": "updated"}, True) == [
        "HyperNode tor-0: would update (tier 1, 2 members of type Node)"
    ]
    assert hypernode_summary(LEAF, {"action": "none"}, False) == [
        "HyperNode tor-0: as asked already; nothing to change"
    ]
    assert hypernode_summary({"name": "tor-7", "state": "absent"}, {"action": "none"}, True) == [
        "HyperNode tor-7: not in the cluster; nothing to delete"
    ]


def test_an_ab_graph_says_its_routes():
    assert graph_summary(AB, {"graph": "alpha-llm-ab", "writes": [AB_GRAPH]}, False) == [
        "A/B graph alpha-llm-ab: written; routes llm 50%, llm-distilled 50%"
    ]
    assert graph_summary(AB, {"graph": "alpha-llm-ab", "writes": []}, True) == [
        "A/B graph alpha-llm-ab: routes as asked already; nothing to change"
    ]
    assert graph_summary({"state": "absent"}, {"graph": "alpha-llm-ab", "writes": []}, False) == [
        "A/B graph alpha-llm-ab: not in the cluster; nothing to delete"
    ]


def test_a_drawing_says_its_tree_and_files():
    drawn = {
        "hypernodes": [{"name": "spine-0"}, {"name": "tor-0"}],
        "errors": [],
        "unplaced_nodes": ["gpu-9"],
        "files": ["/tmp/topo/topology.md"],
        "changed": True,
    }
    assert render_summary({}, drawn, False) == [
        "topology drawn: 2 HyperNodes; keeps every topology rule",
        "nodes in no leaf HyperNode: gpu-9",
        "files written: /tmp/topo/topology.md",
    ]
    assert render_summary({}, drawn | {"changed": False}, False)[-1] == (
        "files already as drawn: /tmp/topo/topology.md"
    )
    assert render_summary({}, drawn | {"errors": ["x"]}, True)[::2] == [
        "topology drawn: 2 HyperNodes; breaks 1 rule",
        "would write: /tmp/topo/topology.md",
    ]
