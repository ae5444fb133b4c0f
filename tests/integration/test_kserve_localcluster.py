# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""KServe v0.20.0's real controller on the local cluster, in Standard mode.

InferenceServices become Ready with their predictor pods (and a canary's) placed
by Volcano, in a queue of the test's own, onto kwok GPU nodes; an
InferenceGraph's router comes up beside them. No Knative, Istio or Ingress:
``status.url`` names a host nothing serves (docs/design-differences.md).
The namespace is a plain one, not a platform tenant's.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    wait_until,
)

pytestmark = pytest.mark.integration

SERVING = ("serving.kserve.io", "v1beta1", "inferenceservices")
GRAPHS = ("serving.kserve.io", "v1alpha1", "inferencegraphs")
QUEUES = ("scheduling.volcano.sh", "v1beta1", "queues")
PODGROUPS = ("scheduling.volcano.sh", "v1beta1", "podgroups")
ISVC_LABEL = "serving.kserve.io/inferenceservice"
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
FAKE_NODE_LABEL = "gpucloud.localcluster/fake-node"
# KServe's ingress domain and template (inferenceservice-config, left as shipped)
DOMAIN = "example.com"


@pytest.fixture
def custom(api_client):
    from kubernetes import client

    return client.CustomObjectsApi(api_client)


@pytest.fixture
def kserve_queue(custom) -> Any:
    """A Volcano queue of the test's own, Open; deleted after the test's InferenceServices."""
    name = f"kserve-{uuid.uuid4().hex[:6]}"
    custom.create_cluster_custom_object(
        *QUEUES,
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": {"parent": "root", "reclaimable": True, "weight": 1},
        },
    )
    wait_until(
        lambda: (
            (custom.get_cluster_custom_object(*QUEUES, name).get("status") or {}).get("state")
            == "Open"
        ),
        60,
        0.5,
        f"queue {name} to be Open",
    )
    yield name
    wait_until(lambda: _delete_queue(custom, name), 120, 2, f"queue {name} to be deleted")


def _delete_queue(custom, name: str) -> bool:
    from kubernetes.client.exceptions import ApiException

    try:
        custom.delete_cluster_custom_object(*QUEUES, name)
    except ApiException as exc:
        return exc.status == 404
    return False


@pytest.fixture
def kserve(api_client, custom, namespace: str, kserve_queue: str) -> Any:
    """Creates InferenceServices and graphs in the test's namespace; deletes them,
    and waits for their pods to go, before the queue is deleted."""
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    made: list[tuple[tuple[str, str, str], str]] = []

    class Kserve:
        ns = namespace
        queue = kserve_queue

        def create(self, kind: tuple[str, str, str], body: dict[str, Any]) -> dict[str, Any]:
            made.append((kind, body["metadata"]["name"]))
            return custom.create_namespaced_custom_object(*kind[:2], namespace, kind[2], body)

        def get(self, kind: tuple[str, str, str], name: str) -> dict[str, Any]:
            return custom.get_namespaced_custom_object(*kind[:2], namespace, kind[2], name)

    yield Kserve()
    for kind, name in reversed(made):
        custom.delete_namespaced_custom_object(*kind[:2], namespace, kind[2], name)
    wait_until(
        lambda: not core.list_namespaced_pod(namespace).items,
        120,
        1,
        f"the pods in {namespace} to be deleted",
    )


def _predictor(queue: str, storage_uri: str, **extra: Any) -> dict[str, Any]:
    return {
        "schedulerName": "volcano",
        "annotations": {QUEUE_ANNOTATION: queue},
        "labels": {"gpucloud.test/predictor": "yes"},
        "model": {
            "modelFormat": {"name": "sklearn"},
            "storageUri": storage_uri,
            "resources": {
                "requests": {"nvidia.com/gpu": 1},
                "limits": {"nvidia.com/gpu": 1},
            },
        },
        **extra,
    }


def _isvc(name: str, ns: str, queue: str, canary: list[dict] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"predictor": _predictor(queue, "s3://models/iris/v1")}
    if canary:
        spec["canary"] = canary
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {
            "name": name,
            "namespace": ns,
            "annotations": {"serving.kserve.io/deploymentMode": "Standard"},
        },
        "spec": spec,
    }


def _conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions", [])}


def _wait_ready(kserve, kind: tuple[str, str, str], name: str) -> dict[str, Any]:
    def ready() -> dict[str, Any] | None:
        obj = kserve.get(kind, name)
        return obj if _conditions(obj).get("Ready", {}).get("status") == "True" else None

    return wait_until(ready, 120, 0.5, f"{kind[2]} {name} to be Ready")


def _running_pods(api_client, ns: str, deployment: str) -> list:
    """The Running, bound pods of one of KServe's Deployments (selector app=isvc.<name>)."""
    from kubernetes import client

    pods = (
        client.CoreV1Api(api_client)
        .list_namespaced_pod(ns, label_selector=f"app=isvc.{deployment}")
        .items
    )
    if pods and all(p.status.phase == "Running" and p.spec.node_name for p in pods):
        return pods
    return []


def _assert_placed_by_volcano(api_client, custom, pod, queue: str) -> None:
    """On a kwok GPU node, by vc-scheduler, in its PodGroup in the test's queue."""
    from kubernetes import client

    assert pod.spec.scheduler_name == "volcano"
    node = client.CoreV1Api(api_client).read_node(pod.spec.node_name)
    assert node.metadata.labels.get(FAKE_NODE_LABEL) == "true"
    assert int(node.status.capacity.get("nvidia.com/gpu", "0")) > 0
    group = pod.metadata.annotations["scheduling.k8s.io/group-name"]

    def podgroup() -> dict[str, Any]:
        return custom.get_namespaced_custom_object(
            *PODGROUPS[:2], pod.metadata.namespace, PODGROUPS[2], group
        )

    assert podgroup()["spec"]["queue"] == queue
    # vc-scheduler records the phase in a later session than the binding.
    wait_until(
        lambda: (podgroup().get("status") or {}).get("phase") == "Running",
        30,
        0.5,
        f"PodGroup {group} to be Running",
    )


def test_an_inference_service_becomes_ready_on_a_gpu_node_placed_by_volcano(
    kserve, api_client, custom
):
    from kubernetes import client

    ns, queue = kserve.ns, kserve.queue
    started = time.monotonic()
    kserve.create(SERVING, _isvc("iris", ns, queue))
    isvc = _wait_ready(kserve, SERVING, "iris")
    took = time.monotonic() - started

    status = isvc["status"]
    conditions = _conditions(isvc)
    assert {t: c["status"] for t, c in conditions.items()} == {
        "IngressReady": "True",
        "PredictorReady": "True",
        "Ready": "True",
        "Stopped": "False",
    }, f"conditions after {took:.1f}s: {conditions}"
    assert status["deploymentMode"] == "Standard"
    assert status["clusterServingRuntimeName"] == "kserve-sklearnserver"
    # The in-cluster address is the predictor's Service; the URL is built from the
    # ingress domain, but no Ingress (nor HTTPRoute, nor VirtualService) serves it.
    assert status["address"]["url"] == f"http://iris-predictor.{ns}.svc.cluster.local"
    assert status["url"] == f"http://iris-{ns}.{DOMAIN}"
    assert status["components"]["predictor"]["url"] == f"http://iris-predictor-{ns}.{DOMAIN}"
    assert status["modelStatus"]["states"] == {
        "activeModelState": "Loaded",
        "targetModelState": "Loaded",
    }
    assert not client.NetworkingV1Api(api_client).list_namespaced_ingress(ns).items

    deployment = client.AppsV1Api(api_client).read_namespaced_deployment("iris-predictor", ns)
    assert deployment.spec.template.spec.scheduler_name == "volcano"
    client.CoreV1Api(api_client).read_namespaced_service("iris-predictor", ns)

    pods = wait_until(
        lambda: _running_pods(api_client, ns, "iris-predictor"), 60, 0.5, "iris's predictor pod"
    )
    assert len(pods) == 1
    pod = pods[0]
    _assert_placed_by_volcano(api_client, custom, pod, queue)
    # The predictor's labels and annotations land on the pod, beside KServe's own.
    assert pod.metadata.labels["gpucloud.test/predictor"] == "yes"
    assert pod.metadata.labels[ISVC_LABEL] == "iris"
    assert pod.metadata.labels["component"] == "predictor"
    assert pod.metadata.annotations[QUEUE_ANNOTATION] == queue
    container = next(c for c in pod.spec.containers if c.name == "kserve-container")
    assert container.resources.limits["nvidia.com/gpu"] == "1"
    # KServe's pod webhook added the storage initializer for the storageUri.
    assert [c.name for c in pod.spec.init_containers] == ["storage-initializer"]
    assert pod.spec.init_containers[0].args[0] == "s3://models/iris/v1"


def test_a_canary_gets_its_own_deployment_in_the_same_queue(kserve, api_client, custom):
    from kubernetes import client

    ns, queue = kserve.ns, kserve.queue
    canary = {
        "trafficPercent": 20,
        "predictor": {
            "name": "v2",
            "model": {"modelFormat": {"name": "sklearn"}, "storageUri": "s3://models/iris/v2"},
        },
    }
    kserve.create(SERVING, _isvc("iris-canary", ns, queue, canary=[canary]))
    _wait_ready(kserve, SERVING, "iris-canary")

    # CanaryPredictorReady has severity Info: Ready does not wait for it, and the
    # InferenceService can be Ready while its canary is not yet (CanariesNotReady).
    def canary_ready() -> dict[str, Any] | None:
        obj = kserve.get(SERVING, "iris-canary")
        canary = _conditions(obj).get("CanaryPredictorReady", {})
        return obj if canary.get("status") == "True" else None

    isvc = wait_until(canary_ready, 60, 0.5, "CanaryPredictorReady")
    conditions = _conditions(isvc)
    assert conditions["CanaryPredictorReady"]["severity"] == "Info"
    assert conditions["Ready"]["status"] == "True"
    assert conditions["CanaryPredictorReady"]["reason"] == "AllCanariesReady"
    assert [
        {k: s[k] for k in ("name", "ready", "trafficPercent")}
        for s in isvc["status"]["canaryStatuses"]
    ] == [{"name": "v2", "ready": True, "trafficPercent": 20}]
    # The ISVC's address stays the stable predictor's Service.
    assert (
        isvc["status"]["address"]["url"] == f"http://iris-canary-predictor.{ns}.svc.cluster.local"
    )

    apps, core = client.AppsV1Api(api_client), client.CoreV1Api(api_client)
    names = {d.metadata.name for d in apps.list_namespaced_deployment(ns).items}
    assert names == {"iris-canary-predictor", "iris-canary-v2-predictor"}
    assert {s.metadata.name for s in core.list_namespaced_service(ns).items} == names

    pods = wait_until(
        lambda: _running_pods(api_client, ns, "iris-canary-v2-predictor"),
        60,
        0.5,
        "the canary's predictor pod",
    )
    # The canary inherits the stable predictor's scheduler, queue, labels and GPUs;
    # its own model replaces the stable one's.
    pod = pods[0]
    _assert_placed_by_volcano(api_client, custom, pod, queue)
    assert pod.metadata.labels[ISVC_LABEL] == "iris-canary"
    assert pod.metadata.labels["gpucloud.test/predictor"] == "yes"
    assert pod.spec.init_containers[0].args[0] == "s3://models/iris/v2"
    container = next(c for c in pod.spec.containers if c.name == "kserve-container")
    assert container.resources.limits["nvidia.com/gpu"] == "1"
    stable = _running_pods(api_client, ns, "iris-canary-predictor")
    assert len(stable) == 1 and stable[0].metadata.annotations[QUEUE_ANNOTATION] == queue


def test_an_inference_graph_splitter_gets_a_router_deployment(kserve, api_client):
    from kubernetes import client

    ns, queue = kserve.ns, kserve.queue
    for name in ("model-a", "model-b"):
        kserve.create(SERVING, _isvc(name, ns, queue))
    for name in ("model-a", "model-b"):
        _wait_ready(kserve, SERVING, name)
    kserve.create(
        GRAPHS,
        {
            "apiVersion": "serving.kserve.io/v1alpha1",
            "kind": "InferenceGraph",
            "metadata": {"name": "split", "namespace": ns},
            "spec": {
                "nodes": {
                    "root": {
                        "routerType": "Splitter",
                        "steps": [
                            {"serviceName": "model-a", "weight": 80},
                            {"serviceName": "model-b", "weight": 20},
                        ],
                    }
                }
            },
        },
    )
    graph = _wait_ready(kserve, GRAPHS, "split")
    assert {t: c["status"] for t, c in _conditions(graph).items()} == {
        "Ready": "True",
        "Stopped": "False",
    }
    assert graph["status"]["url"] == f"http://split-{ns}.{DOMAIN}"

    router = client.AppsV1Api(api_client).read_namespaced_deployment("split", ns)
    container = router.spec.template.spec.containers[0]
    assert container.image.startswith("kserve/router:")
    # The router is handed the graph with each step's in-cluster predictor address.
    graph_json = " ".join([*(container.args or []), *(e.value or "" for e in container.env or [])])
    for name in ("model-a", "model-b"):
        assert f"{name}-predictor.{ns}.svc.cluster.local" in graph_json
    pods = wait_until(lambda: _running_pods(api_client, ns, "split"), 60, 0.5, "the router pod")
    # Not a GPU workload: the default scheduler places it.
    assert pods[0].spec.scheduler_name == "default-scheduler"
