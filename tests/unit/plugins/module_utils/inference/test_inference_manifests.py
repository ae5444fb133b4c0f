# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""inference/manifests: the InferenceService in Standard and Knative mode (rule
inference-placement), the GPU-utilisation HPA, the predictors' NetworkPolicy (rule
inference-reachable) and the A/B InferenceGraph (rule inference-ab-test)."""

from __future__ import annotations

import json

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.inference import manifests
from ansible_collections.gpucloud.platform.plugins.module_utils.inference.versions import (
    ANNOTATION_VERSIONS,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.classes import (
    DEFAULT_CLASSES,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.inference.inference_objects import (
    GPU,
    canary,
    make_spec,
    model,
)

HISTORY = [{"version": "v1", "storage_uri": "s3://models/llama/v1", "format": "vllm"}]


def isvc(spec, job_class=None, billing="subscription", history=None):
    return manifests.inference_service(
        spec,
        DEFAULT_CLASSES[job_class or spec.job_class],
        billing,
        HISTORY if history is None else history,
    )


def standard_spec(**kwargs):
    return make_spec(
        stable=model("v1", gpus=2, runtime="kserve-vllm", cpu="8", memory="64Gi", args=["--x"]),
        canaries=[canary("v2", 20), canary("v3", 10, min_replicas=1)],
        autoscaling={"min_replicas": 2, "max_replicas": 4},
        **kwargs,
    )


def test_the_standard_inference_service_places_its_stable_predictor():
    obj = isvc(standard_spec())
    assert obj["apiVersion"] == "serving.kserve.io/v1beta1"
    assert obj["kind"] == "InferenceService"
    meta = obj["metadata"]
    assert (meta["name"], meta["namespace"]) == ("llm", "tenant-alpha")
    assert meta["labels"] == {
        "platform.io/tenant": "alpha",
        "platform.io/managed-by": "gpucloud-platform",
        "platform.io/job-class": "critical",
        "platform.io/billing-type": "subscription",
    }
    assert meta["annotations"]["serving.kserve.io/deploymentMode"] == "Standard"
    assert json.loads(meta["annotations"][ANNOTATION_VERSIONS]) == HISTORY
    assert "serving.kserve.io/autoscalerClass" not in meta["annotations"]
    predictor = obj["spec"]["predictor"]
    assert predictor["name"] == "v1"
    assert predictor["schedulerName"] == "volcano"
    assert predictor["priorityClassName"] == "critical-job"
    assert predictor["annotations"] == {
        "scheduling.volcano.sh/queue-name": "tenant-alpha-research",
        "volcano.sh/preemptable": "false",
    }
    assert predictor["labels"] == {
        "platform.io/tenant": "alpha",
        "platform.io/managed-by": "gpucloud-platform",
        "platform.io/job-class": "critical",
        "platform.io/billing-type": "subscription",
        "platform.io/model-version": "v1",
    }
    assert predictor["model"] == {
        "modelFormat": {"name": "vllm"},
        "storageUri": "s3://models/llama/v1",
        "runtime": "kserve-vllm",
        "args": ["--x"],
        "resources": {
            "requests": {GPU: 2, "cpu": "8", "memory": "64Gi"},
            "limits": {GPU: 2, "memory": "64Gi"},
        },
    }
    assert (predictor["minReplicas"], predictor["maxReplicas"]) == (2, 4)
    assert "canaryTrafficPercent" not in predictor
    # KServe's webhook refuses a name on the stable predictor's model
    assert "name" not in predictor["model"]
    # rule inference-placement: no network-topology constraint on a model service
    assert "networkTopology" not in json.dumps(obj)


def test_each_canary_has_its_own_predictor_name_labels_and_traffic():
    obj = isvc(standard_spec())
    entries = obj["spec"]["canary"]
    assert [(c["predictor"]["name"], c["trafficPercent"]) for c in entries] == [
        ("v2", 20),
        ("v3", 10),
    ]
    for entry, version in zip(entries, ["v2", "v3"], strict=True):
        predictor = entry["predictor"]
        assert predictor["labels"]["platform.io/model-version"] == version
        assert predictor["labels"]["platform.io/tenant"] == "alpha"
        assert predictor["schedulerName"] == "volcano"
        assert predictor["priorityClassName"] == "critical-job"
        assert predictor["annotations"]["scheduling.volcano.sh/queue-name"] == (
            "tenant-alpha-research"
        )
        assert predictor["model"]["storageUri"] == f"s3://models/llama/{version}"
        # KServe's CRD requires the canary model's container name: the runtime's container
        assert predictor["model"]["name"] == "kserve-container"
        # the canary inherited the stable's GPUs and runtime
        assert predictor["model"]["resources"]["requests"][GPU] == 2
        assert predictor["model"]["runtime"] == "kserve-vllm"
        # KServe refuses autoscaling on a canary (fixed replicas)
        assert not {"maxReplicas", "scaleMetric", "scaleTarget", "autoScaling"} & set(predictor)
    assert "minReplicas" not in entries[0]["predictor"]
    assert entries[1]["predictor"]["minReplicas"] == 1


def test_normal_is_preemptable_and_its_own_priority_class():
    spec = standard_spec(queue="tenant-alpha-payg", job_class="normal")
    obj = isvc(spec, billing="payg")
    predictor = obj["spec"]["predictor"]
    assert predictor["priorityClassName"] == "normal-job"
    assert predictor["annotations"] == {"scheduling.volcano.sh/queue-name": "tenant-alpha-payg"}
    for entry in obj["spec"]["canary"]:
        assert "volcano.sh/preemptable" not in entry["predictor"]["annotations"]
    assert predictor["labels"]["platform.io/billing-type"] == "payg"
    assert predictor["labels"]["platform.io/job-class"] == "normal"


def test_a_model_without_gpus_asks_for_none():
    obj = isvc(make_spec(stable=model("v1", gpus=0)))
    assert "resources" not in obj["spec"]["predictor"]["model"]
    assert "canary" not in obj["spec"]


def test_gpu_util_target_hands_scaling_to_an_external_autoscaler():
    spec = make_spec(autoscaling={"max_replicas": 4, "gpu_util_target": 70})
    annotations = isvc(spec)["metadata"]["annotations"]
    assert annotations["serving.kserve.io/autoscalerClass"] == "external"
    spec = make_spec(autoscaling={"max_replicas": 4, "scale_metric": "rps", "scale_target": 9})
    obj = isvc(spec)
    assert "serving.kserve.io/autoscalerClass" not in obj["metadata"]["annotations"]
    assert obj["spec"]["predictor"]["scaleMetric"] == "rps"
    assert obj["spec"]["predictor"]["scaleTarget"] == 9


def test_the_knative_rendering_declares_the_canary_as_the_latest_revision():
    spec = make_spec(
        stable=model("v1", gpus=1),
        canaries=[canary("v2", 25)],
        autoscaling={"max_replicas": 3, "scale_metric": "concurrency", "scale_target": 4},
        mode="knative",
    )
    obj = isvc(spec)
    assert obj["metadata"]["annotations"]["serving.kserve.io/deploymentMode"] == "Knative"
    assert "canary" not in obj["spec"]
    predictor = obj["spec"]["predictor"]
    assert predictor["canaryTrafficPercent"] == 25
    assert predictor["model"]["storageUri"] == "s3://models/llama/v2"
    assert predictor["labels"]["platform.io/model-version"] == "v2"
    assert predictor["schedulerName"] == "volcano"
    assert predictor["annotations"]["scheduling.volcano.sh/queue-name"] == "tenant-alpha-research"
    assert (predictor["scaleMetric"], predictor["scaleTarget"]) == ("concurrency", 4)


def test_the_knative_rendering_without_a_canary_serves_the_stable_version():
    predictor = isvc(make_spec(mode="knative"))["spec"]["predictor"]
    assert "canaryTrafficPercent" not in predictor
    assert predictor["model"]["storageUri"] == "s3://models/llama/v1"


def test_the_hpa_scales_the_stable_deployment_on_gpu_utilisation():
    spec = make_spec(
        stable=model("v3"),
        canaries=[canary("v4", 10)],
        autoscaling={"min_replicas": 2, "max_replicas": 6, "gpu_util_target": 70},
    )
    hpa = manifests.gpu_util_hpa(spec)
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["kind"] == "HorizontalPodAutoscaler"
    assert (hpa["metadata"]["name"], hpa["metadata"]["namespace"]) == (
        "llm-gpu-util",
        "tenant-alpha",
    )
    assert hpa["metadata"]["labels"]["platform.io/tenant"] == "alpha"
    body = hpa["spec"]
    assert body["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "llm-v3-predictor",
    }
    assert (body["minReplicas"], body["maxReplicas"]) == (2, 6)
    assert body["metrics"] == [
        {
            "type": "Pods",
            "pods": {
                "metric": {"name": "DCGM_FI_DEV_GPU_UTIL"},
                "target": {"type": "AverageValue", "averageValue": "70"},
            },
        }
    ]
    assert body["behavior"] == {
        "scaleUp": {
            "stabilizationWindowSeconds": 60,
            "policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}],
        },
        "scaleDown": {
            "stabilizationWindowSeconds": 300,
            "policies": [{"type": "Pods", "value": 1, "periodSeconds": 120}],
        },
    }


def test_the_hpa_never_goes_below_one_replica():
    spec = make_spec(autoscaling={"min_replicas": 0, "max_replicas": 2, "gpu_util_target": 50})
    assert manifests.gpu_util_hpa(spec)["spec"]["minReplicas"] == 1


def test_no_hpa_without_gpu_util_target_or_in_knative_mode():
    assert manifests.gpu_util_hpa(make_spec(autoscaling={"max_replicas": 4})) is None
    knative = make_spec(autoscaling={"max_replicas": 4, "gpu_util_target": 70}, mode="knative")
    assert manifests.gpu_util_hpa(knative) is None


def test_the_network_policy_admits_the_gateway_and_monitoring_to_the_predictors_only():
    policy = manifests.serving_network_policy(
        make_spec(),
        ["platform-serving", "istio-system", "platform-serving"],
        "monitoring",
        8080,
        9090,
    )
    assert policy["apiVersion"] == "networking.k8s.io/v1"
    assert policy["kind"] == "NetworkPolicy"
    assert (policy["metadata"]["name"], policy["metadata"]["namespace"]) == (
        "inference-llm",
        "tenant-alpha",
    )
    body = policy["spec"]
    assert body["podSelector"] == {
        "matchLabels": {"serving.kserve.io/inferenceservice": "llm", "component": "predictor"}
    }
    assert body["policyTypes"] == ["Ingress"]

    def namespaces(rule):
        (peer,) = rule["from"]
        (expression,) = peer["namespaceSelector"]["matchExpressions"]
        assert (expression["key"], expression["operator"]) == ("kubernetes.io/metadata.name", "In")
        assert set(peer) == {"namespaceSelector"}
        return expression["values"]

    gateway, monitoring = body["ingress"]
    assert namespaces(gateway) == ["istio-system", "platform-serving"]
    assert gateway["ports"] == [{"protocol": "TCP", "port": 8080}]
    assert namespaces(monitoring) == ["monitoring"]
    assert monitoring["ports"] == [{"protocol": "TCP", "port": 9090}]


def test_the_network_policy_without_gateway_or_monitoring_admits_nothing():
    policy = manifests.serving_network_policy(make_spec(), [], None)
    assert policy["spec"]["ingress"] == []
    assert policy["spec"]["policyTypes"] == ["Ingress"]


def test_the_ab_graph_splits_by_weight_in_the_serving_namespace():
    graph = manifests.ab_graph(
        "alpha",
        "chat",
        [
            ("llm-a", "http://llm-a-v1-predictor.tenant-alpha.svc.cluster.local", 70),
            ("llm-b", "http://llm-b-v1-predictor.tenant-alpha.svc.cluster.local", 30),
        ],
    )
    assert graph["apiVersion"] == "serving.kserve.io/v1alpha1"
    assert graph["kind"] == "InferenceGraph"
    assert graph["metadata"]["name"] == "alpha-chat"
    assert graph["metadata"]["namespace"] == "platform-serving"
    assert graph["metadata"]["labels"]["platform.io/tenant"] == "alpha"
    assert graph["spec"] == {
        "nodes": {
            "root": {
                "routerType": "Splitter",
                "steps": [
                    {
                        "name": "llm-a",
                        "serviceUrl": "http://llm-a-v1-predictor.tenant-alpha.svc.cluster.local",
                        "weight": 70,
                    },
                    {
                        "name": "llm-b",
                        "serviceUrl": "http://llm-b-v1-predictor.tenant-alpha.svc.cluster.local",
                        "weight": 30,
                    },
                ],
            }
        }
    }


@pytest.mark.parametrize(
    ("stable_min", "traffic", "expected"),
    [(1, 10, {"v1": 1, "v2": 1}), (4, 25, {"v1": 3, "v2": 1}), (3, 50, {"v1": 1, "v2": 2})],
)
def test_replicas_by_version(stable_min, traffic, expected):
    spec = make_spec(canaries=[canary("v2", traffic)], autoscaling={"min_replicas": stable_min})
    assert manifests.replicas_by_version(spec) == expected


def test_an_ab_graph_follows_the_stable_version_of_each_service_it_routes_to():
    """Rule inference-routes-follow-versions: only the steps to the service move, only
    when their address is another; a canary router is left to its own service."""
    old = "http://chat-v2-predictor.tenant-alpha.svc.cluster.local/v1/models/chat:predict"
    new = "http://chat-v1-predictor.tenant-alpha.svc.cluster.local/v1/models/chat:predict"
    other = "http://small-v1-predictor.tenant-alpha.svc.cluster.local/v1/models/small:predict"
    graph = manifests.ab_graph("alpha", "ab", [("chat", old, 70), ("small", other, 30)])
    graph["metadata"]["resourceVersion"] = "7"
    (moved,) = manifests.rerouted_graphs([graph], "chat", new)
    steps = moved["spec"]["nodes"]["root"]["steps"]
    assert steps == [
        {"name": "chat", "serviceUrl": new, "weight": 70},
        {"name": "small", "serviceUrl": other, "weight": 30},
    ]
    assert moved["metadata"]["name"] == "alpha-ab" and "resourceVersion" not in moved["metadata"]
    assert manifests.rerouted_graphs([moved], "chat", new) == []
    assert manifests.rerouted_graphs([graph], "nobody", new) == []
    router = manifests.ab_graph("alpha", "chat-canary", [("chat", old, 100)])
    router["metadata"]["labels"][manifests.LABEL_ROLLOUT_OF] = "chat"
    assert manifests.rerouted_graphs([router], "chat", new) == []
