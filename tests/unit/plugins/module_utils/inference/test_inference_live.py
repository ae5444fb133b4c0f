# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""inference/live: a live InferenceService read back as the ServiceSpec it was rendered
from, and reported for inference_service_info."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.inference import live, manifests
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.classes import (
    DEFAULT_CLASSES,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.inference.inference_objects import (
    PAYG_QUEUE,
    canary,
    make_spec,
    model,
)

HISTORY = [
    {"version": "v0", "storage_uri": "s3://models/llama/v0", "format": "vllm", "runtime": None},
    {"version": "v1", "storage_uri": "s3://models/llama/v1", "format": "vllm", "runtime": None},
]

STATUS = {
    "conditions": [
        {"type": "Ready", "status": "True"},
        {"type": "CanaryPredictorReady", "status": "False", "reason": "Progressing"},
    ],
    "url": "http://m.tenant-a.example.com",
    "address": {"url": "http://m-v1-predictor.tenant-a.svc.cluster.local"},
    "canaryStatuses": [{"name": "v2", "ready": True, "trafficPercent": 20}],
}


def rendered(spec, billing="subscription", history=None):
    return manifests.inference_service(
        spec, DEFAULT_CLASSES[spec.job_class], billing, HISTORY if history is None else history
    )


ROUND_TRIPS = {
    "plain": make_spec,
    "no-gpus": lambda: make_spec(stable=model("v1", gpus=0)),
    "everything": lambda: make_spec(
        stable=model("v1", gpus=2, runtime="kserve-vllm", cpu="8", memory="64Gi", args=["--x"]),
        canaries=[canary("v2", 20), canary("v3", 5, min_replicas=1, gpus=1)],
        autoscaling={"min_replicas": 2, "max_replicas": 6, "gpu_util_target": 70},
    ),
    "payg-scaling": lambda: make_spec(
        canaries=[canary("v2", 50, storage_uri="gs://bucket/v2")],
        autoscaling={
            "min_replicas": 0,
            "max_replicas": 3,
            "scale_metric": "rps",
            "scale_target": 7,
        },
        queue=PAYG_QUEUE,
        job_class="normal",
    ),
}


@pytest.mark.parametrize("case", sorted(ROUND_TRIPS))
def test_spec_from_live_gives_back_the_rendered_spec(case):
    spec = ROUND_TRIPS[case]()
    obj = rendered(spec, billing="payg" if spec.job_class == "normal" else "subscription")
    assert live.spec_from_live(obj, spec.autoscaling.gpu_util_target) == spec


def test_the_round_trip_keeps_what_rollouts_depend_on():
    spec = ROUND_TRIPS["everything"]()
    back = live.spec_from_live(rendered(spec), 70)
    assert back.stable.version == "v1" and back.stable.storage_uri == "s3://models/llama/v1"
    assert back.stable.gpus == 2
    assert [(c.model.version, c.traffic_percent) for c in back.canaries] == [("v2", 20), ("v3", 5)]
    assert (back.queue, back.job_class) == ("tenant-alpha-research", "critical")


def test_the_hpa_target_is_read_back_from_its_average_value():
    spec = make_spec(autoscaling={"max_replicas": 4, "gpu_util_target": 65})
    assert live.hpa_target(manifests.gpu_util_hpa(spec)) == 65
    assert live.hpa_target(None) is None
    assert live.hpa_target({"spec": {"metrics": [{"type": "Resource"}]}}) is None


def test_report_of_a_standard_service_with_a_canary():
    spec = make_spec(canaries=[canary("v2", 20)])
    obj = {**rendered(spec), "status": STATUS}
    out = live.report(obj)
    assert out["name"] == "llm" and out["namespace"] == "tenant-alpha"
    assert out["mode"] == "standard"
    assert out["ready"] is True
    assert out["conditions"] == {
        "Ready": {"status": "True"},
        "CanaryPredictorReady": {"status": "False", "reason": "Progressing"},
    }
    assert out["url"] == "http://m.tenant-a.example.com"
    assert out["address"] == "http://m-v1-predictor.tenant-a.svc.cluster.local"
    assert out["traffic"] == {"v1": 80, "v2": 20}
    assert out["current_version"] == "v1"
    assert out["versions"] == ["v0", "v1"]
    assert out["previous_version"] == "v0"
    assert out["deployment"] == "llm-v1-predictor"
    assert out["queue"] == "tenant-alpha-research" and out["job_class"] == "critical"
    assert out["autoscaler_class"] == "hpa"
    assert out["gpu_util_target"] is None
    assert out["canaries"] == [
        {
            "version": "v2",
            "storage_uri": "s3://models/llama/v2",
            "traffic_percent": 20,
            "ready": True,
            "deployment": "llm-v2-predictor",
        }
    ]


def test_report_says_not_ready_and_a_canary_without_status_is_not_ready():
    spec = make_spec(canaries=[canary("v2", 20), canary("v3", 10)])
    status = {**STATUS, "conditions": [{"type": "Ready", "status": "False"}]}
    out = live.report({**rendered(spec, history=HISTORY[1:]), "status": status})
    assert out["ready"] is False
    assert [(c["version"], c["ready"]) for c in out["canaries"]] == [("v2", True), ("v3", False)]
    assert out["traffic"] == {"v1": 70, "v2": 20, "v3": 10}
    assert out["previous_version"] is None


def test_report_with_the_platforms_hpa():
    spec = make_spec(autoscaling={"max_replicas": 4, "gpu_util_target": 70})
    out = live.report(rendered(spec), manifests.gpu_util_hpa(spec))
    assert out["autoscaler_class"] == "external"
    assert out["gpu_util_target"] == 70
    assert out["ready"] is False and out["url"] is None and out["address"] is None


def test_report_of_a_knative_service_splits_latest_and_previous():
    spec = make_spec(canaries=[canary("v2", 30)], mode="knative")
    out = live.report(rendered(spec))
    assert out["mode"] == "knative"
    assert out["traffic"] == {"latest": 30, "previous": 70}
    assert out["current_version"] == "v1"
    out = live.report(rendered(make_spec(mode="knative")))
    assert out["traffic"] == {"latest": 100}


def test_graph_report_lists_the_routes():
    graph = manifests.ab_graph("alpha", "chat", [("a", "http://a", 60), ("b", "http://b", 40)])
    graph["status"] = {"conditions": [{"type": "Ready", "status": "True"}], "url": "http://g"}
    out = live.graph_report(graph)
    assert out["ready"] is True and out["router"] == "Splitter" and out["url"] == "http://g"
    assert out["routes"] == [
        {"service": "a", "url": "http://a", "weight": 60},
        {"service": "b", "url": "http://b", "weight": 40},
    ]


def test_spec_from_live_reads_a_knative_service_back():
    """Knative mode names no predictor: the version is on the predictor's
    platform.io/model-version label, so it must come back from there."""
    spec = make_spec(stable=model("v1", gpus=2), mode="knative")
    assert live.spec_from_live(rendered(spec)) == spec


def test_spec_from_live_reads_a_knative_canary_back():
    """With a canary the Knative predictor declares the canary (the latest revision) at
    canaryTrafficPercent; the stable version is the last entry of the history."""
    spec = make_spec(canaries=[canary("v2", 10)], mode="knative")
    assert live.spec_from_live(rendered(spec, history=HISTORY)) == spec


def test_a_service_below_its_minimum_is_not_ready_whatever_kserve_says():
    """Rule inference-replicas-reported: ready/desired per version against the minimum."""
    from ansible_collections.gpucloud.platform.plugins.module_utils.inference import live as livemod
    from ansible_collections.gpucloud.platform.plugins.module_utils.inference.manifests import (
        inference_service,
    )
    from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.classes import (
        DEFAULT_CLASSES,
    )
    from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.inference.inference_objects import (
        make_spec,
        model,
    )

    spec = make_spec(stable=model("v1", gpus=1), autoscaling={"min_replicas": 2, "max_replicas": 4})
    isvc = inference_service(spec, DEFAULT_CLASSES["normal"], "payg", [])
    isvc["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
    deployment = {
        "metadata": {"name": "llm-v1-predictor"},
        "spec": {"replicas": 2},
        "status": {"readyReplicas": 1},
    }
    short = livemod.report(isvc, None, {"llm-v1-predictor": deployment})
    assert short["replicas"] == {"v1": {"ready": 1, "desired": 2, "minimum": 2}}
    assert short["ready"] is False and short["below_minimum"] == ["v1"]
    deployment["status"]["readyReplicas"] = 2
    full = livemod.report(isvc, None, {"llm-v1-predictor": deployment})
    assert full["ready"] is True and "below_minimum" not in full
    # Without the Deployments (the module's wait) the condition alone decides.
    assert "replicas" not in livemod.report(isvc)
