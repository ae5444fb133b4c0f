# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The flow contract (``kube.flow``): a run parses, gathers, plans and applies in that
order; ``gathered`` reads and never plans or writes; ``rendered`` and ``parsed`` plan
without a cluster and answer with ``changed: false``."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.flow import Flow


def recording_flow(calls, offline=True):
    def parse(params):
        calls.append("parse")
        return dict(params)

    def gather(request, cluster):
        calls.append("gather")
        return cluster

    def plan(request, facts):
        calls.append("plan")
        return sorted(set(request["want"]) - set(facts))

    def apply(request, planned, cluster, check_mode):
        calls.append("apply")
        if not check_mode:
            cluster.extend(planned)
        return {"changed": bool(planned), "made": planned}

    def report(request, planned):
        return {"changed": bool(planned), "made": planned}

    if not offline:
        return Flow(parse, gather, plan, apply, report)
    return Flow(
        parse,
        gather,
        plan,
        apply,
        report,
        empty=lambda request: [],
        facts_out=lambda facts: {"have": list(facts)},
        facts_in=lambda request, data: list(data["have"]),
    )


def test_a_run_parses_gathers_plans_and_applies_in_that_order():
    calls, cluster = [], ["a"]
    result = recording_flow(calls).run({"want": ["a", "b"]}, cluster, check_mode=False)
    assert calls == ["parse", "gather", "plan", "apply"]
    assert result == {"changed": True, "made": ["b"]} and cluster == ["a", "b"]


def test_gathered_reads_and_neither_plans_nor_writes():
    calls, cluster = [], ["a"]
    result = recording_flow(calls).run({"want": ["b"], "state": "gathered"}, cluster, False)
    assert calls == ["parse", "gather"]
    assert result == {"changed": False, "gathered": {"have": ["a"]}} and cluster == ["a"]


def test_rendered_plans_from_an_empty_cluster_and_parsed_from_given_facts():
    calls = []
    flow = recording_flow(calls)
    rendered = flow.offline({"want": ["a", "b"], "state": "rendered"})
    assert rendered == {"changed": False, "made": ["a", "b"], "state": "rendered"}
    parsed = flow.offline({"want": ["a", "b"], "state": "parsed", "facts": {"have": ["a"]}})
    assert parsed == {"changed": False, "made": ["b"], "state": "parsed"}
    assert "gather" not in calls and "apply" not in calls
    assert flow.offline({"want": ["a"], "state": "present"}) is None
    assert flow.states() == ["rendered", "gathered", "parsed"]


def test_parsed_without_facts_is_refused_naming_the_option():
    with pytest.raises(PlatformValidationError, match="facts: is required with state: parsed"):
        recording_flow([]).offline({"want": [], "state": "parsed", "facts": None})


def test_a_flow_without_offline_steps_answers_none_of_them():
    flow = recording_flow([], offline=False)
    assert flow.states() == []
    assert flow.offline({"want": ["a"], "state": "rendered"}) is None
    # gathered without facts_out is an ordinary run
    assert flow.run({"want": ["a"], "state": "gathered"}, [], True)["made"] == ["a"]
