# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""inference/versions: the version history on the InferenceService and the rollout
actions (deploy, canary, step, promote, rollback) that move a service between versions."""

from __future__ import annotations

import json

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.inference import versions
from ansible_collections.gpucloud.platform.plugins.module_utils.inference.spec import (
    parse_canaries,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.inference.inference_objects import (
    canary,
    make_spec,
    model,
)


def entry(version):
    return {
        "version": version,
        "storage_uri": f"s3://models/llama/{version}",
        "format": "vllm",
        "runtime": None,
    }


def refusal(excinfo):
    return [(e.field, e.message) for e in excinfo.value.errors]


# -- deploy -----------------------------------------------------------------------------


def test_a_first_deploy_starts_the_history():
    spec = make_spec()
    desired, history = versions.plan("deploy", spec, None, [])
    assert desired is spec
    assert history == [entry("v1")]


def test_a_deploy_of_the_same_stable_version_keeps_the_history():
    live = make_spec(canaries=[canary("v2", 10)])
    requested = make_spec(canaries=[canary("v2", 30)], autoscaling={"min_replicas": 2})
    history = [entry("v0"), entry("v1")]
    desired, after = versions.plan("deploy", requested, live, history)
    assert desired is requested
    assert after == history


def test_a_deploy_of_a_new_stable_version_appends_it():
    live = make_spec()
    requested = make_spec(stable=model("v2"))
    after = versions.plan("deploy", requested, live, [entry("v1")])[1]
    assert after == [entry("v1"), entry("v2")]


def test_a_deploy_needs_a_model():
    with pytest.raises(PlatformValidationError) as excinfo:
        versions.plan("deploy", None, None, [])
    assert refusal(excinfo)[0][0] == "model"


@pytest.mark.parametrize("action", ["canary", "step", "promote", "rollback"])
def test_every_other_action_needs_a_live_service(action):
    with pytest.raises(PlatformValidationError) as excinfo:
        versions.plan(action, None, None, [], traffic={"v2": 10})
    field, message = refusal(excinfo)[0]
    assert field == "action" and "deploy it first" in message


def test_an_unknown_action_is_refused():
    with pytest.raises(PlatformValidationError, match="'undo' is not one of deploy, canary"):
        versions.plan("undo", None, make_spec(), [entry("v1")])


def test_the_history_is_capped_at_ten_dropping_the_oldest():
    history = [entry(f"v{i}") for i in range(10)]
    after = versions.plan("deploy", make_spec(stable=model("v10")), make_spec(), history)[1]
    assert len(after) == versions.HISTORY_MAX == 10
    assert [e["version"] for e in after] == [f"v{i}" for i in range(1, 11)]


# -- canary -----------------------------------------------------------------------------


def test_canary_adds_to_what_runs_and_replaces_a_canary_of_the_same_version():
    live = make_spec(canaries=[canary("v2", 10), canary("v3", 5)])
    added, errors = parse_canaries([canary("v3", 15), canary("v4", 5)], live.stable)
    assert errors == []
    desired, history = versions.plan("canary", None, live, [entry("v1")], canaries=added)
    assert [(c.model.version, c.traffic_percent) for c in desired.canaries] == [
        ("v2", 10),
        ("v3", 15),
        ("v4", 5),
    ]
    assert desired.stable == live.stable
    assert history == [entry("v1")]


def test_canary_needs_canaries():
    with pytest.raises(PlatformValidationError) as excinfo:
        versions.plan("canary", None, make_spec(), [entry("v1")])
    assert refusal(excinfo)[0][0] == "canaries"


# -- step -------------------------------------------------------------------------------


def test_step_changes_only_the_traffic():
    live = make_spec(
        canaries=[canary("v2", 10, min_replicas=1), canary("v3", 5)],
        autoscaling={"min_replicas": 2, "max_replicas": 4},
    )
    history = [entry("v1")]
    desired, after = versions.plan("step", None, live, history, traffic={"v2": 40})
    assert [(c.model.version, c.traffic_percent) for c in desired.canaries] == [
        ("v2", 40),
        ("v3", 5),
    ]
    assert desired.stable == live.stable and desired.autoscaling == live.autoscaling
    assert [(c.model, c.min_replicas) for c in desired.canaries] == [
        (c.model, c.min_replicas) for c in live.canaries
    ]
    assert after is history


def test_step_refuses_an_unknown_version_naming_the_canaries():
    live = make_spec(canaries=[canary("v2", 10), canary("v3", 5)])
    with pytest.raises(PlatformValidationError) as excinfo:
        versions.plan("step", None, live, [entry("v1")], traffic={"v9": 40})
    field, message = refusal(excinfo)[0]
    assert field == "traffic.v9"
    assert "v9 is not a canary of llm; its canaries: v2, v3" in message


def test_step_refuses_the_stable_version_and_an_empty_traffic():
    live = make_spec(canaries=[canary("v2", 10)])
    with pytest.raises(PlatformValidationError, match=r"traffic\.v1: v1 is not a canary"):
        versions.plan("step", None, live, [entry("v1")], traffic={"v1": 40})
    with pytest.raises(PlatformValidationError) as excinfo:
        versions.plan("step", None, live, [entry("v1")], traffic={})
    assert refusal(excinfo)[0][0] == "traffic"


# -- promote ----------------------------------------------------------------------------


def test_promote_with_one_canary_needs_no_version():
    live = make_spec(canaries=[canary("v2", 30, gpus=2)])
    desired, history = versions.plan("promote", None, live, [entry("v1")])
    assert desired.stable == live.canaries[0].model
    assert desired.stable.gpus == 2
    assert desired.canaries == ()
    assert history == [entry("v1"), entry("v2")]


def test_promote_with_two_canaries_needs_the_version():
    live = make_spec(canaries=[canary("v2", 10), canary("v3", 20)])
    with pytest.raises(PlatformValidationError) as excinfo:
        versions.plan("promote", None, live, [entry("v1")])
    field, message = refusal(excinfo)[0]
    assert field == "version"
    assert "when there are 2 (canaries: v2, v3)" in message
    desired, history = versions.plan("promote", None, live, [entry("v1")], version="v3")
    assert desired.stable.version == "v3"
    assert [c.model.version for c in desired.canaries] == ["v2"]
    assert history[-1] == entry("v3")


def test_promote_refuses_a_version_that_is_no_canary():
    live = make_spec(canaries=[canary("v2", 10)])
    with pytest.raises(PlatformValidationError) as excinfo:
        versions.plan("promote", None, live, [entry("v1")], version="v7")
    field, message = refusal(excinfo)[0]
    assert field == "version" and "its canaries: v2" in message


def test_promote_without_canaries_is_refused():
    with pytest.raises(PlatformValidationError, match=r"canaries: none"):
        versions.plan("promote", None, make_spec(), [entry("v1")])


# -- rollback ---------------------------------------------------------------------------


def test_rollback_with_canaries_drops_them_all_and_keeps_the_history():
    live = make_spec(canaries=[canary("v2", 10), canary("v3", 20)])
    history = [entry("v0"), entry("v1")]
    desired, after = versions.plan("rollback", None, live, history)
    assert desired.canaries == () and desired.stable == live.stable
    assert after == history


def test_rollback_of_a_named_canary_drops_only_that_one():
    live = make_spec(canaries=[canary("v2", 10), canary("v3", 20)])
    desired = versions.plan("rollback", None, live, [entry("v1")], version="v2")[0]
    assert [c.model.version for c in desired.canaries] == ["v3"]
    with pytest.raises(PlatformValidationError, match="v8 is not a canary"):
        versions.plan("rollback", None, live, [entry("v1")], version="v8")


def test_rollback_without_canaries_returns_to_the_previous_version_and_back():
    live = make_spec(stable=model("v2", gpus=2, memory="64Gi"))
    history = [entry("v1"), entry("v2")]
    first, after_first = versions.plan("rollback", None, live, history)
    assert first.stable.version == "v1"
    assert first.stable.storage_uri == "s3://models/llama/v1"
    # what the history does not say is kept from the live version
    assert (first.stable.gpus, first.stable.memory) == (2, "64Gi")
    assert after_first == [entry("v1"), entry("v2"), entry("v1")]
    assert versions.previous(after_first) == entry("v2")
    second, after_second = versions.plan("rollback", None, first, after_first)
    assert second.stable.version == "v2"
    assert second.stable.storage_uri == "s3://models/llama/v2"
    assert [e["version"] for e in after_second] == ["v1", "v2", "v1", "v2"]


def test_rollback_with_no_previous_version_is_refused():
    with pytest.raises(PlatformValidationError) as excinfo:
        versions.plan("rollback", None, make_spec(), [entry("v1")])
    field, message = refusal(excinfo)[0]
    assert field == "action"
    assert "no canary and no previous version (history: v1)" in message
    with pytest.raises(PlatformValidationError, match=r"history: empty"):
        versions.plan("rollback", None, make_spec(), [])


# -- the history annotation -------------------------------------------------------------


def test_read_history_reads_the_annotation():
    raw = json.dumps([entry("v1"), entry("v2")])
    assert versions.read_history({versions.ANNOTATION_VERSIONS: raw}) == [entry("v1"), entry("v2")]


@pytest.mark.parametrize(
    "annotations",
    [
        None,
        {},
        {versions.ANNOTATION_VERSIONS: ""},
        {versions.ANNOTATION_VERSIONS: "not json"},
        {versions.ANNOTATION_VERSIONS: "{unclosed"},
        {versions.ANNOTATION_VERSIONS: "[1, 2, null]"},
        {versions.ANNOTATION_VERSIONS: '[{"version": 3}]'},
    ],
)
def test_read_history_on_garbage_is_empty(annotations):
    assert versions.read_history(annotations) == []


def test_read_history_keeps_the_readable_entries():
    raw = json.dumps(["junk", {"version": 2}, entry("v1")])
    assert versions.read_history({versions.ANNOTATION_VERSIONS: raw}) == [entry("v1")]


@pytest.mark.parametrize("raw", ['{"version": "v1"}', '"v1"', "7", "true"])
def test_read_history_on_a_json_value_that_is_not_a_list_is_empty(raw):
    assert versions.read_history({versions.ANNOTATION_VERSIONS: raw}) == []


def test_known_versions_joins_the_history_and_the_live_spec():
    live = make_spec(canaries=[canary("v2", 10)])
    known = versions.known_versions([entry("v0"), entry("v1")], live)
    assert known == {
        "v0": "s3://models/llama/v0",
        "v1": "s3://models/llama/v1",
        "v2": "s3://models/llama/v2",
    }
