# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""inference/spec: a model service's input parsed into typed values, every refusal
naming the field it is about."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.inference.spec import (
    Autoscaling,
    Canary,
    ModelVersion,
    parse_autoscaling,
    parse_canaries,
    parse_model,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.inference.inference_objects import (
    canary,
    model,
)


def fields(errors):
    return [e.field for e in errors]


def stable(**extra):
    parsed, errors = parse_model("model", model(**extra))
    assert errors == []
    return parsed


def test_a_full_model_parses_into_its_values():
    parsed, errors = parse_model(
        "model",
        model(runtime="kserve-vllm", gpus=2, cpu=8, memory="64Gi", args=["--max-model-len=8192"]),
    )
    assert errors == []
    assert parsed == ModelVersion(
        version="v1",
        format="vllm",
        storage_uri="s3://models/llama/v1",
        runtime="kserve-vllm",
        gpus=2,
        cpu="8",
        memory="64Gi",
        args=("--max-model-len=8192",),
    )


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({"format": "vllm", "storage_uri": "s3://m/v1"}, "model.version"),
        (model(version="V1"), "model.version"),
        (model(version="v" + "1" * 20), "model.version"),
        (model(storage_uri="models/llama/v1"), "model.storage_uri"),
        (model(storage_uri=None), "model.storage_uri"),
        (model(format=""), "model.format"),
        ({"version": "v1", "storage_uri": "s3://m/v1"}, "model.format"),
        (model(gpus=-1), "model.gpus"),
        (model(gpus=True), "model.gpus"),
        (model(gpus="1"), "model.gpus"),
        (model(args="--a"), "model.args"),
        (model(args=["--a", 3]), "model.args"),
        # traffic_percent and min_replicas belong to a canary, not to the stable model
        (model(traffic_percent=10), "model"),
        (model(replicas=2), "model"),
    ],
)
def test_each_model_refusal_names_its_field(value, field):
    parsed, errors = parse_model("model", value)
    assert parsed is None
    assert fields(errors) == [field]


def test_an_unknown_key_is_named_with_the_known_ones():
    errors = parse_model("model", model(storage="s3://x"))[1]
    assert fields(errors) == ["model"]
    assert "unknown key(s) storage" in errors[0].message
    assert "storage_uri" in errors[0].message


def test_a_model_that_is_not_a_mapping_is_refused_at_its_path():
    parsed, errors = parse_model("model", "s3://models/llama/v1")
    assert parsed is None and fields(errors) == ["model"]


def test_every_model_error_is_reported_at_once():
    errors = parse_model("model", {"version": "Bad", "storage_uri": "nope", "gpus": -2})[1]
    assert sorted(fields(errors)) == [
        "model.format",
        "model.gpus",
        "model.storage_uri",
        "model.version",
    ]


def test_a_canary_inherits_format_runtime_gpus_and_resources_from_the_stable_model():
    base = stable(runtime="kserve-vllm", gpus=2, cpu="8", memory="64Gi", args=["--x"])
    canaries, errors = parse_canaries([canary("v2", 10)], base)
    assert errors == []
    assert canaries == (
        Canary(
            ModelVersion(
                version="v2",
                format="vllm",
                storage_uri="s3://models/llama/v2",
                runtime="kserve-vllm",
                gpus=2,
                cpu="8",
                memory="64Gi",
                args=("--x",),
            ),
            10,
            None,
        ),
    )


def test_a_canary_overrides_what_it_gives():
    base = stable(runtime="kserve-vllm", gpus=2)
    canaries, errors = parse_canaries(
        [canary("v2", 10, gpus=4, format="sglang", runtime="kserve-sglang", min_replicas=1)],
        base,
    )
    assert errors == []
    got = canaries[0]
    assert (got.model.gpus, got.model.format, got.model.runtime) == (4, "sglang", "kserve-sglang")
    assert got.min_replicas == 1


def test_a_canary_never_inherits_its_version_or_storage_uri():
    base = stable()
    canaries, errors = parse_canaries([{"traffic_percent": 10}], base)
    assert canaries == ()
    assert sorted(fields(errors)) == ["canaries[0].storage_uri", "canaries[0].version"]


@pytest.mark.parametrize(
    ("second", "field"),
    [
        (canary("v3", 101), "canaries[1].traffic_percent"),
        (canary("v3", -1), "canaries[1].traffic_percent"),
        (canary("v3", "10"), "canaries[1].traffic_percent"),
        ({"version": "v3", "storage_uri": "s3://m/v3"}, "canaries[1].traffic_percent"),
        (canary("v3", 10, min_replicas=-1), "canaries[1].min_replicas"),
        (canary("v3", 10, gpus=-1), "canaries[1].gpus"),
        (canary("V3", 10), "canaries[1].version"),
        (canary("v3", 10, color="blue"), "canaries[1]"),
    ],
)
def test_each_canary_refusal_names_its_index_and_field(second, field):
    canaries, errors = parse_canaries([canary("v2", 10), second], stable())
    assert fields(errors) == [field]
    # the good canary is still parsed: every error of the list is found in one pass
    assert canaries[0].model.version == "v2"


def test_canaries_that_are_not_a_list_are_refused():
    canaries, errors = parse_canaries({"version": "v2"}, stable())
    assert canaries == () and fields(errors) == ["canaries"]
    assert parse_canaries(None, stable()) == ((), [])
    assert parse_canaries([], stable()) == ((), [])


def test_autoscaling_defaults_to_one_replica_without_a_maximum():
    assert parse_autoscaling(None) == (Autoscaling(1, None, None, None, None), [])


def test_autoscaling_parses_its_values():
    auto, errors = parse_autoscaling(
        {"min_replicas": 2, "max_replicas": 6, "scale_metric": "rps", "scale_target": 50}
    )
    assert errors == []
    assert auto == Autoscaling(2, 6, "rps", 50, None)


@pytest.mark.parametrize(
    ("value", "field", "says"),
    [
        (
            {"min_replicas": 3, "max_replicas": 2},
            "autoscaling.max_replicas",
            "below min_replicas (3)",
        ),
        ({"max_replicas": 0}, "autoscaling.max_replicas", ">= 1"),
        ({"min_replicas": -1}, "autoscaling.min_replicas", ">= 0"),
        ({"min_replicas": True}, "autoscaling.min_replicas", ">= 0"),
        ({"scale_metric": "gpu"}, "autoscaling.scale_metric", "cpu, memory, concurrency, rps"),
        ({"scale_target": 0}, "autoscaling.scale_target", ">= 1"),
        ({"max": 3}, "autoscaling", "unknown key(s) max"),
        ({"gpu_util_target": 0, "max_replicas": 4}, "autoscaling.gpu_util_target", ">= 1"),
        ({"gpu_util_target": 101, "max_replicas": 4}, "autoscaling.gpu_util_target", "at most 100"),
    ],
)
def test_each_autoscaling_refusal_names_its_field(value, field, says):
    auto, errors = parse_autoscaling(value)
    assert auto == Autoscaling()
    assert fields(errors) == [field]
    assert says in errors[0].message


def test_autoscaling_that_is_not_a_mapping_is_refused():
    assert fields(parse_autoscaling(3)[1]) == ["autoscaling"]


def test_gpu_util_target_with_a_maximum_parses():
    auto, errors = parse_autoscaling({"min_replicas": 1, "max_replicas": 4, "gpu_util_target": 70})
    assert errors == []
    assert auto == Autoscaling(1, 4, None, None, 70)


@pytest.mark.parametrize(
    "extra",
    [{"scale_metric": "cpu"}, {"scale_target": 80}, {"scale_metric": "rps", "scale_target": 5}],
)
def test_gpu_util_target_refuses_kserves_own_scaling(extra):
    errors = parse_autoscaling({"max_replicas": 4, "gpu_util_target": 70, **extra})[1]
    assert fields(errors) == ["autoscaling.gpu_util_target"]
    assert "leave scale_metric and scale_target out" in errors[0].message


def test_gpu_util_target_requires_max_replicas():
    errors = parse_autoscaling({"gpu_util_target": 70})[1]
    assert fields(errors) == ["autoscaling.max_replicas"]
    assert "required with gpu_util_target" in errors[0].message
