# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""k8s_objects' flow (``kube/writes``, ``kube/writes_io``): the plan and the result as tables
with no cluster; apply with kubernetes.core's ``perform_action`` answering as it does; the
contract's promise, which for this flow is that it offers no offline state."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.kube import writes, writes_io

PARAMS = {"definition": [], "state": "present", "continue_on_error": False, "apply": False}
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node-7"}}
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}}


@pytest.mark.parametrize(
    ("definition", "index", "name"),
    [
        (NODE, 0, "Node/gpu-node-7"),
        (CM, 1, "ConfigMap/ns/c"),
        ({}, 3, "object 3"),
    ],
)
def test_an_object_is_named_kind_namespace_name(definition, index, name):
    assert writes.header(definition, index) == name


def test_parse_gives_kubernetes_core_its_defaults_and_the_definition():
    request = writes.parse_writes({**PARAMS, "definition": "kind: Node"})
    assert request.k8s_params["resource_definition"] == "kind: Node"
    assert request.k8s_params["delete_all"] is False and request.k8s_params["src"] is None
    assert request.k8s_params["state"] == "present" and request.continue_on_error is False


def test_the_plan_is_one_write_per_object_in_the_order_given():
    planned = writes.plan_writes(writes.parse_writes(PARAMS), [CM, NODE])
    assert [(w.index, w.name) for w in planned] == [(0, "ConfigMap/ns/c"), (1, "Node/gpu-node-7")]
    assert writes.plan_writes(writes.parse_writes(PARAMS), []) == ()
    # what the plan says is those objects, in that order
    request = writes.parse_writes(PARAMS)
    assert writes.report_writes(request, planned) == {
        "writes": ["ConfigMap/ns/c", "Node/gpu-node-7"]
    }


LABELLED = {**NODE, "metadata": {"name": "gpu-node-7", "labels": {"tor": "tor-2"}}}
ENTRIES = [
    # (kubernetes.core's result, changed after, has an entry)
    ({"method": "apply", "changed": True, "diff": {"before": NODE, "after": NODE}}, False, False),
    ({"method": "patch", "changed": True, "diff": {"before": NODE, "after": LABELLED}}, True, True),
    ({"method": "create", "changed": True, "result": NODE}, True, True),
    ({"method": "delete", "changed": True, "result": {}}, True, True),
    ({"method": "delete", "changed": False, "result": {}}, False, False),
]


@pytest.mark.parametrize(("result", "changed", "entry"), ENTRIES)
def test_an_object_changes_only_when_something_it_says_changes(result, changed, entry):
    result = dict(result)
    got = writes.entry_of(NODE, 0, result)
    assert result["changed"] is changed and (got is not None) is entry


def test_one_object_is_its_result_several_are_results():
    one = writes.result_of([{"changed": True, "method": "create", "result": NODE}], [])
    assert one == {"changed": True, "method": "create", "result": NODE, "diff": []}
    two = writes.result_of([{"changed": False}, {"changed": True}], [{"x": 1}])
    assert two == {
        "changed": True,
        "result": {"results": [{"changed": False}, {"changed": True}]},
        "diff": [{"x": 1}],
    }


def test_a_failed_object_is_named_in_its_error():
    write = writes.Write(index=0, name="Node/gpu-node-7", definition=NODE)
    error = writes.error_of(write, {"status": 422}, "Invalid", "rejected")
    assert error == {"status": 422, "reason": "Invalid", "msg": "Node/gpu-node-7: rejected"}
    assert writes.failed_entry(error) == {"changed": False, "result": {}, "error": error}


class Rejected(Exception):
    result = {"status": 422}


def fake_core(monkeypatch, answers: dict[str, Any]) -> list[tuple[str, bool]]:
    """kubernetes.core's perform_action answering per object name; records the calls."""
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s import runner

    calls: list[tuple[str, bool]] = []

    def perform_action(svc, definition, params):
        name = definition["metadata"]["name"]
        calls.append((name, svc.module.check_mode))
        answer = answers[name]
        if isinstance(answer, BaseException):
            raise answer
        return dict(answer)

    monkeypatch.setattr(runner, "perform_action", perform_action)
    return calls


def svc(check_mode: bool = True, **params: Any) -> Any:
    module_params = writes.parse_writes({**PARAMS, **params}).k8s_params
    return SimpleNamespace(module=SimpleNamespace(params=module_params, check_mode=check_mode))


def test_apply_writes_in_the_plans_order_and_says_each_change(monkeypatch):
    calls = fake_core(
        monkeypatch,
        {
            "c": {"method": "create", "changed": True, "result": CM},
            "gpu-node-7": {
                "method": "apply",
                "changed": True,
                "diff": {"before": NODE, "after": NODE},
            },
        },
    )
    request = writes.parse_writes(PARAMS)
    out = writes_io.apply_writes(request, writes.plan_writes(request, [CM, NODE]), svc(), True)
    assert calls == [("c", True), ("gpu-node-7", True)]
    assert out["changed"] is True
    assert [r["changed"] for r in out["result"]["results"]] == [True, False]
    assert len(out["diff"]) == 1 and "c" in str(out["diff"][0])
    assert all("diff" not in r for r in out["result"]["results"])


def test_a_failed_object_stops_the_run_unless_told_to_go_on(monkeypatch):
    answers = {
        "c": Rejected("ConfigMap is invalid"),
        "gpu-node-7": {"method": "apply", "changed": False},
    }
    calls = fake_core(monkeypatch, answers)
    stop = writes.parse_writes(PARAMS)
    with pytest.raises(writes_io.WriteFailed) as failed:
        writes_io.apply_writes(stop, writes.plan_writes(stop, [CM, NODE]), svc(), True)
    assert failed.value.error == {"status": 422, "msg": "ConfigMap/ns/c: ConfigMap is invalid"}
    assert calls == [("c", True)]
    go_on = writes.parse_writes({**PARAMS, "continue_on_error": True})
    out = writes_io.apply_writes(go_on, writes.plan_writes(go_on, [CM, NODE]), svc(), True)
    assert out["result"]["results"][0]["error"]["msg"] == "ConfigMap/ns/c: ConfigMap is invalid"
    assert out["changed"] is False and len(calls) == 3


def test_an_unreachable_server_is_not_an_object_error(monkeypatch):
    fake_core(monkeypatch, {"c": ConnectionRefusedError(111, "Connection refused")})
    request = writes.parse_writes({**PARAMS, "continue_on_error": True})
    with pytest.raises(ConnectionRefusedError):
        writes_io.apply_writes(request, writes.plan_writes(request, [CM]), svc(), False)


def test_the_promise_the_flow_offers_no_offline_state():
    # What an apply or a dry run makes of a live object is the API server's decision:
    # no plan without it, so no rendered, gathered or parsed (docs/development.md).
    assert writes_io.WRITES_FLOW.states() == []
    for state in ("rendered", "gathered", "parsed"):
        assert writes_io.WRITES_FLOW.offline({**PARAMS, "state": state, "facts": {}}) is None


def test_gather_is_the_definition_as_kubernetes_core_reads_it():
    service = svc(
        definition="kind: Node\nmetadata: {name: a}\n---\nkind: Node\nmetadata: {name: b}\n"
    )
    request = writes.parse_writes(service.module.params)
    got = writes_io.gather_writes(request, service)
    assert [d["metadata"]["name"] for d in got] == ["a", "b"]
