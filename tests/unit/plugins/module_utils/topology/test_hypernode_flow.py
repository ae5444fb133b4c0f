# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``hypernode`` through the flow contract: its plan as a table of cases over
facts (no cluster), ``rendered`` as a run on an empty cluster, and ``parsed`` of
``gathered`` as the check-mode run."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology import hypernode
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.service import (
    HYPERNODE_FLOW,
)
from ansible_collections.gpucloud.platform.plugins.modules import hypernode as hypernode_module
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster

MANAGED = {"platform.io/managed-by": "gpucloud-platform"}


def node_member(name):
    return {"type": "Node", "selector": {"exactMatch": {"name": name}}}


def hn_member(name):
    return {"type": "HyperNode", "selector": {"exactMatch": {"name": name}}}


def params(**over):
    out = {"name": "tor-0", "state": "present", "tier": 1, "tier_name": None, "facts": None}
    out["members"] = [node_member("n0"), node_member("n1")]
    return out | over


def live(name, tier, members, labels=None):
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name, "labels": dict(MANAGED if labels is None else labels)},
        "spec": {"tier": tier, "members": members},
    }


# (case, options, live HyperNodes, action)
CASES = [
    ("new", {}, [], "created"),
    ("the same", {}, [live("tor-0", 1, [node_member("n0"), node_member("n1")])], "none"),
    ("one more node", {}, [live("tor-0", 1, [node_member("n0")])], "updated"),
    ("absent and there", {"state": "absent"}, [live("tor-0", 1, [node_member("n0")])], "deleted"),
    ("absent and gone", {"state": "absent"}, [], "none"),
]


@pytest.mark.parametrize(
    "options,hypernodes,action", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_plan_over_facts(options, hypernodes, action):
    request = hypernode.parse_hypernode(params(**options))
    change = hypernode.plan(request, hypernode.HyperNodeFacts(tuple(hypernodes)))
    said = hypernode.report(request, change)
    assert said["action"] == action and said["changed"] is (action != "none")


def test_an_unmanaged_hypernode_of_the_name_is_refused_in_the_plan():
    request = hypernode.parse_hypernode(params())
    facts = hypernode.HyperNodeFacts((live("tor-0", 1, [], labels={}),))
    with pytest.raises(PlatformValidationError, match="tor-0"):
        hypernode.plan(request, facts)


def test_deleting_a_member_another_lists_is_refused_in_the_plan():
    request = hypernode.parse_hypernode(params(state="absent"))
    facts = hypernode.HyperNodeFacts(
        (live("tor-0", 1, [node_member("n0")]), live("spine-0", 2, [hn_member("tor-0")]))
    )
    with pytest.raises(PlatformValidationError, match="tor-0"):
        hypernode.plan(request, facts)


def test_rendered_is_the_manifest_a_run_on_an_empty_cluster_writes():
    rendered = HYPERNODE_FLOW.offline(params(state="rendered"))
    run = HYPERNODE_FLOW.run(params(), FakeCluster([]), check_mode=True)
    assert rendered is not None and rendered["action"] == "created" == run["action"]
    assert rendered["changed"] is False and rendered["state"] == "rendered"
    assert rendered["hypernode"]["spec"] == run["hypernode"]["spec"]
    assert rendered["diff"] == run["diff"]


LIVE = st.lists(
    st.builds(
        live,
        st.sampled_from(["tor-0", "tor-1"]),
        st.just(1),
        st.lists(st.sampled_from([node_member("n0"), node_member("n2")]), max_size=2),
    ),
    max_size=2,
    unique_by=lambda h: h["metadata"]["name"],
)


@settings(max_examples=60, deadline=None)
@given(hypernodes=LIVE, pattern=st.booleans())
def test_parsed_of_gathered_is_the_check_mode_run(hypernodes, pattern):
    members = (
        [{"type": "Node", "selector": {"regexMatch": {"pattern": "^n[01]$"}}}] if pattern else None
    )
    given_params = params(**({"members": members} if members else {}))
    objects = [copy.deepcopy(h) for h in hypernodes] + [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": {}}}
        for i in range(3)
    ]
    gathered = HYPERNODE_FLOW.run(
        params(state="gathered", **({"members": members} if members else {})),
        FakeCluster(copy.deepcopy(objects)),
        False,
    )["gathered"]
    assert (gathered["nodes"] is not None) is pattern
    parsed_params = {**given_params, "state": "parsed", "facts": gathered}
    try:
        check = HYPERNODE_FLOW.run(given_params, FakeCluster(copy.deepcopy(objects)), True)
    except PlatformValidationError as exc:
        with pytest.raises(PlatformValidationError) as again:
            HYPERNODE_FLOW.offline(parsed_params)
        assert str(again.value) == str(exc)
        return
    parsed = HYPERNODE_FLOW.offline(parsed_params)
    assert parsed is not None and parsed.pop("state") == "parsed" and parsed.pop("changed") is False
    check.pop("changed")
    # A write's answer is the server's object; the plan's is the manifest it sends.
    for said in (parsed, check):
        if said.get("hypernode"):
            said["hypernode"] = said["hypernode"]["spec"]
    assert parsed == check


def test_the_module_renders_without_connecting(run_module):
    cluster = FakeCluster([])
    out = run_module(
        hypernode_module,
        cluster,
        name="tor-9",
        state="rendered",
        tier=1,
        members=[node_member("gpu-0")],
    )
    assert out["requests"] == 0 and cluster.lists == [] and out["changed"] is False
    assert out["hypernode"]["metadata"]["name"] == "tor-9"
    assert out["hypernode"]["metadata"]["labels"]["platform.io/managed-by"] == "gpucloud-platform"
