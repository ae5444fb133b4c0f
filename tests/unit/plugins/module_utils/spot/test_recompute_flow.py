# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``spot_capacity`` through the flow contract: what-ifs planned over facts with no
cluster, and ``parsed`` of what ``gathered`` returned equal to the check-mode run."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot import recompute
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.service import (
    RECOMPUTE_FLOW,
)
from ansible_collections.gpucloud.platform.plugins.modules import spot_capacity
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import (
    node,
    spot_objects,
)

GPU = "nvidia.com/gpu"


def params(**given):
    return {n: s.get("default") for n, s in spot_capacity.OPTIONS.items()} | given


def gathered_from(objects):
    return RECOMPUTE_FLOW.run(params(state="gathered"), FakeCluster(objects), False)["gathered"]


def spot_gpus(answer):
    return {q: a["capability"][GPU] for q, a in answer["diff"]["after"].items()}


# (case, how the facts change, the spot capabilities that change)
WHAT_IFS = [
    # 64 GPUs, 40 + 8 subscribed, 4 PAYG: 12 idle, shared 40:8 (largest remainder).
    ("as it is", lambda f: f, {"tenant-alpha-spot": 10, "tenant-beta-spot": 2}),
    (
        "two nodes drained",
        lambda f: {
            **f,
            "nodes": [n for n in f["nodes"] if n["metadata"]["name"] not in ("n6", "n7")],
        },
        # 48 GPUs: nothing idle. Written anyway: the fixture's spot queues name GPUs only,
        # and the platform writes every pool resource.
        {"tenant-alpha-spot": 0, "tenant-beta-spot": 0},
    ),
    (
        "two more nodes",
        lambda f: {**f, "nodes": f["nodes"] + [node("n8"), node("n9")]},
        {"tenant-alpha-spot": 23, "tenant-beta-spot": 5},  # 28 idle
    ),
]


@pytest.mark.parametrize("change,expected", [w[1:] for w in WHAT_IFS], ids=[w[0] for w in WHAT_IFS])
def test_what_ifs_are_planned_over_facts_without_a_cluster(change, expected):
    facts = change(copy.deepcopy(gathered_from(spot_objects())))
    answer = RECOMPUTE_FLOW.offline(params(state="parsed", facts=facts))
    assert answer is not None and answer["changed"] is False and answer["state"] == "parsed"
    assert spot_gpus(answer) == expected


def test_parsed_facts_that_are_not_lists_are_refused_naming_the_key():
    with pytest.raises(PlatformValidationError, match=r"facts\.queues: must be a list"):
        RECOMPUTE_FLOW.offline(params(state="parsed", facts={"nodes": [], "queues": {}}))


@settings(max_examples=40, deadline=None)
@given(
    subscription=st.integers(0, 64),
    drained=st.sets(st.sampled_from([f"n{i}" for i in range(8)])),
    allow_empty=st.booleans(),
)
def test_parsed_of_gathered_is_the_check_mode_run(subscription, drained, allow_empty):
    objects = spot_objects(alpha_subscription=subscription)
    for obj in objects:
        if obj["kind"] == "Node" and obj["metadata"]["name"] in drained:
            obj.setdefault("spec", {})["unschedulable"] = True
    given_params = params(allow_empty_pool=allow_empty, report="all")
    try:
        check = RECOMPUTE_FLOW.run(given_params, FakeCluster(copy.deepcopy(objects)), True)
    except PlatformValidationError as exc:
        with pytest.raises(PlatformValidationError) as again:
            RECOMPUTE_FLOW.offline(
                {**given_params, "state": "parsed", "facts": gathered_from(objects)}
            )
        assert str(again.value) == str(exc)
        return
    parsed = RECOMPUTE_FLOW.offline(
        {**given_params, "state": "parsed", "facts": gathered_from(objects)}
    )
    assert parsed is not None and parsed.pop("state") == "parsed" and parsed.pop("changed") is False
    check.pop("changed")
    assert parsed == check


def test_gathered_keeps_only_what_the_rules_read():
    facts = gathered_from(spot_objects())
    assert sorted(facts) == ["nodes", "queues"]
    first = facts["nodes"][0]
    assert sorted(first) == ["metadata", "spec", "status"]
    assert sorted(first["status"]) == ["allocatable", "conditions"]
    assert all(sorted(q["status"]) == ["allocated"] for q in facts["queues"])


def test_the_module_plans_parsed_facts_with_no_request(run_module):
    facts = gathered_from(spot_objects())
    offline = FakeCluster([])
    out = run_module(spot_capacity, offline, state="parsed", facts=facts)
    assert out["requests"] == 0 and offline.lists == [] and out["changed"] is False
    assert out["updated"] == ["tenant-alpha-spot", "tenant-beta-spot"]
    assert recompute.parse_recompute(params()).report == "changed"
