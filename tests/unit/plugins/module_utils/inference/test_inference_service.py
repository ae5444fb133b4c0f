# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""inference/service against the fake cluster: run_service (the inference_service
module) from deploy through canary, step, promote, rollback and removal, every refusal
before the first write; run_graph and INFO_FLOW (inference_service_info)."""

from __future__ import annotations

import json

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
    Refused,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.inference import service
from ansible_collections.gpucloud.platform.plugins.module_utils.inference.versions import (
    ANNOTATION_VERSIONS,
)
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.inference.inference_objects import (
    GPU,
    GRAPH_API,
    HPA_API,
    ISVC_API,
    NETPOL_API,
    NS,
    PAYG_QUEUE,
    TEAM_QUEUE,
    canary,
    model,
    params,
    queue_obj,
    tenant_cluster,
    tenant_objects,
)
from ansible_collections.kubernetes.core.plugins.module_utils.k8s import waiter as k8s_waiter

WRITES = [
    "InferenceService/tenant-alpha/llm",
    "NetworkPolicy/tenant-alpha/inference-llm",
]
HPA_WRITE = "HorizontalPodAutoscaler/tenant-alpha/llm-gpu-util"
GPU_SCALING = {"min_replicas": 1, "max_replicas": 4, "gpu_util_target": 70}


def run(cluster, check_mode=False, **extra):
    return service.run_service(params(**extra), cluster, check_mode)


def stored_isvc(cluster, name="llm"):
    return cluster.get(ISVC_API, "InferenceService", name, namespace=NS)


def history_of(obj):
    return [e["version"] for e in json.loads(obj["metadata"]["annotations"][ANNOTATION_VERSIONS])]


def refusal(excinfo):
    return [e.field for e in excinfo.value.errors]


# -- deploy -----------------------------------------------------------------------------


def test_deploy_writes_the_inference_service_and_its_network_policy():
    cluster = tenant_cluster()
    out = run(cluster)
    assert out["changed"] is True
    assert out["writes"] == WRITES
    assert [w[1] for w in cluster.real_writes] == ["InferenceService", "NetworkPolicy"]
    obj = stored_isvc(cluster)
    predictor = obj["spec"]["predictor"]
    assert predictor["name"] == "v1"
    assert predictor["annotations"]["scheduling.volcano.sh/queue-name"] == TEAM_QUEUE
    assert predictor["priorityClassName"] == "critical-job"
    assert history_of(obj) == ["v1"]
    policy = cluster.get(NETPOL_API, "NetworkPolicy", "inference-llm", namespace=NS)
    assert (
        policy["spec"]["podSelector"]["matchLabels"]["serving.kserve.io/inferenceservice"] == "llm"
    )
    assert cluster.get(HPA_API, "HorizontalPodAutoscaler", "llm-gpu-util", namespace=NS) is None
    assert out["service"] == {
        "name": "llm",
        "namespace": NS,
        "queue": TEAM_QUEUE,
        "job_class": "critical",
        "billing_type": "subscription",
        "current_version": "v1",
        "deployment": "llm-v1-predictor",
        "traffic": {"v1": 100},
        "router": None,
    }
    assert out["diff"]["before"] is None
    assert out["diff"]["after"]["stable"]["version"] == "v1"


def test_deploy_with_gpu_util_target_adds_the_hpa_last():
    cluster = tenant_cluster()
    out = run(cluster, autoscaling=GPU_SCALING)
    assert out["writes"] == [*WRITES, HPA_WRITE]
    hpa = cluster.get(HPA_API, "HorizontalPodAutoscaler", "llm-gpu-util", namespace=NS)
    assert hpa["spec"]["scaleTargetRef"]["name"] == "llm-v1-predictor"
    obj = stored_isvc(cluster)
    assert obj["metadata"]["annotations"]["serving.kserve.io/autoscalerClass"] == "external"


@pytest.mark.parametrize("autoscaling", [None, GPU_SCALING])
def test_a_second_identical_deploy_writes_nothing(autoscaling):
    cluster = tenant_cluster()
    extra = {"canaries": [canary("v2", 20)], "autoscaling": autoscaling}
    run(cluster, **extra)
    writes = len(cluster.writes)
    again = run(cluster, **extra)
    assert again["changed"] is False
    assert again["writes"] == []
    assert len(cluster.writes) == writes
    assert again["diff"]["before"] == again["diff"]["after"]


def test_a_second_identical_knative_deploy_writes_nothing():
    """Knative mode names no predictor (the version is the predictor's model-version
    label), so reading the live service back must not make every run a change."""
    cluster = tenant_cluster()
    run(cluster, mode="knative")
    writes = len(cluster.writes)
    again = run(cluster, mode="knative")
    assert again["diff"]["before"] == again["diff"]["after"]
    assert again["changed"] is False and len(cluster.writes) == writes


def test_a_second_identical_knative_deploy_with_a_canary_writes_nothing():
    cluster = tenant_cluster()
    run(cluster, mode="knative", canaries=[canary("v2", 10)])
    writes = len(cluster.writes)
    again = run(cluster, mode="knative", canaries=[canary("v2", 10)])
    assert again["diff"]["before"] == again["diff"]["after"]
    assert again["changed"] is False and len(cluster.writes) == writes


def test_check_mode_says_changed_and_stores_nothing():
    cluster = FakeCluster(tenant_objects(), dry_run=True)
    out = run(cluster, check_mode=True, autoscaling=GPU_SCALING)
    assert out["changed"] is True and out["writes"] == [*WRITES, HPA_WRITE]
    assert cluster.real_writes == []
    assert {w[0] for w in cluster.writes} == {"dry-run"}
    assert stored_isvc(cluster) is None


def test_normal_is_the_default_in_a_payg_queue():
    cluster = tenant_cluster()
    out = run(cluster, queue=PAYG_QUEUE)
    assert (out["service"]["job_class"], out["service"]["billing_type"]) == ("normal", "payg")
    predictor = stored_isvc(cluster)["spec"]["predictor"]
    assert predictor["priorityClassName"] == "normal-job"
    assert "volcano.sh/preemptable" not in predictor["annotations"]
    assert predictor["labels"]["platform.io/billing-type"] == "payg"


def test_critical_is_the_default_in_a_team_queue_only_where_it_is_allowed():
    cluster = tenant_cluster(critical_allowed=False)
    out = run(cluster)
    assert out["service"]["job_class"] == "normal"
    with pytest.raises(PlatformValidationError) as excinfo:
        run(tenant_cluster(critical_allowed=False), job_class="critical")
    assert refusal(excinfo) == ["job_class"]


def test_a_queue_of_another_tenant_is_refused_before_any_write():
    cluster = tenant_cluster()
    with pytest.raises(PlatformValidationError) as excinfo:
        run(cluster, queue="tenant-beta-research")
    assert refusal(excinfo) == ["queue"]
    assert "'tenant-beta-research' is another tenant's queue name" in str(excinfo.value)
    assert "leaf queues (tenant-alpha-payg, tenant-alpha-research)" in str(excinfo.value)
    assert cluster.writes == []


def test_volcanos_root_queue_is_refused_as_what_it_is():
    cluster = tenant_cluster()
    with pytest.raises(PlatformValidationError) as excinfo:
        run(cluster, queue="root")
    assert refusal(excinfo) == ["queue"]
    assert "'root' is Volcano's root queue" in str(excinfo.value)
    assert "(rule leaf-queue-of-tenant)" in str(excinfo.value)
    assert cluster.writes == []


def test_a_tenant_without_its_queue_list_is_refused():
    cluster = tenant_cluster()
    with pytest.raises(PlatformValidationError) as excinfo:
        run(cluster, tenant="beta")
    assert refusal(excinfo) == ["tenant"]
    assert cluster.writes == []


def test_critical_in_a_payg_queue_is_refused_before_any_write():
    cluster = tenant_cluster()
    with pytest.raises(PlatformValidationError, match="payg queue; use normal") as excinfo:
        run(cluster, queue=PAYG_QUEUE, job_class="critical")
    assert refusal(excinfo) == ["job_class"]
    assert cluster.writes == []


def test_more_gpus_than_the_queue_holds_is_refused_before_any_write():
    cluster = tenant_cluster(team_gpus=8)
    with pytest.raises(PlatformValidationError) as excinfo:
        run(cluster, model=model(gpus=3), autoscaling={"min_replicas": 3})
    assert refusal(excinfo) == ["model.gpus"]
    assert "needs 9 GPUs at its minimum" in str(excinfo.value)
    assert cluster.writes == []
    # the payg queue holds 16
    assert run(cluster, queue=PAYG_QUEUE, model=model(gpus=3), autoscaling={"min_replicas": 3})[
        "changed"
    ]


def test_more_gpus_at_the_maximum_than_the_queue_holds_is_refused_before_any_write():
    """Rule inference-replicas-bounded (replicas that could never run: once a warning)."""
    cluster = tenant_cluster(team_gpus=8)
    with pytest.raises(PlatformValidationError) as excinfo:
        run(cluster, model=model(gpus=2), autoscaling={"max_replicas": 6})
    assert "autoscaling.max_replicas: 6 replicas would hold 12 GPUs" in str(excinfo.value)
    assert cluster.real_writes == []
    assert run(cluster, model=model(gpus=2), autoscaling={"max_replicas": 4})["changed"] is True


def test_a_team_queue_without_a_capability_is_bound_by_its_subscription():
    """Rule inference-gpus-within-capability on the way to root: a team queue without a
    capability of its own borrows up to its parent's."""
    cluster = tenant_cluster(team_gpus=None)
    subscription = queue_obj("tenant-alpha-subscription", 4)
    subscription["spec"]["parent"] = "root"
    cluster.put(subscription)
    with pytest.raises(PlatformValidationError) as excinfo:
        run(cluster, model=model(gpus=3), autoscaling={"min_replicas": 2})
    assert "above the capability of queue" in str(excinfo.value) and "(4)" in str(excinfo.value)


def test_a_queue_without_capability_takes_any_footprint():
    cluster = tenant_cluster(team_gpus=None)
    assert run(cluster, model=model(gpus=64))["changed"] is True


def test_canary_rules_are_checked_before_any_write():
    cluster = tenant_cluster()
    with pytest.raises(PlatformValidationError) as excinfo:
        run(cluster, canaries=[canary("v2", 20), canary("v3", 90)])
    assert refusal(excinfo) == ["canaries[].traffic_percent"]
    with pytest.raises(PlatformValidationError) as excinfo:
        run(cluster, canaries=[canary("v1", 20, storage_uri="s3://models/llama/v1")])
    assert refusal(excinfo) == ["canaries[0].version"]
    assert cluster.writes == []


def test_a_version_name_keeps_its_storage_uri_across_deploys():
    cluster = tenant_cluster()
    run(cluster)
    writes = len(cluster.writes)
    with pytest.raises(PlatformValidationError) as excinfo:
        run(cluster, model=model("v1", storage_uri="s3://models/llama/v1-retrained"))
    assert refusal(excinfo) == ["model.storage_uri"]
    assert len(cluster.writes) == writes


# -- canary, step, promote, rollback ----------------------------------------------------


def test_the_canary_action_adds_a_canary_to_what_runs():
    cluster = tenant_cluster()
    run(cluster, autoscaling={"min_replicas": 2})
    out = run(cluster, action="canary", model=None, queue=None, canaries=[canary("v2", 20)])
    assert out["changed"] is True
    assert out["service"]["traffic"] == {"v1": 80, "v2": 20}
    spec = stored_isvc(cluster)["spec"]
    assert spec["predictor"]["name"] == "v1" and spec["predictor"]["minReplicas"] == 2
    assert [(c["predictor"]["name"], c["trafficPercent"]) for c in spec["canary"]] == [("v2", 20)]


def test_step_moves_only_the_traffic():
    cluster = tenant_cluster()
    run(cluster, canaries=[canary("v2", 20)])
    before = stored_isvc(cluster)
    out = run(cluster, action="step", model=None, queue=None, traffic={"v2": 50})
    assert out["changed"] is True and out["writes"] == [
        "InferenceService/tenant-alpha/llm",
        "InferenceGraph/platform-serving/alpha-llm-canary",
    ]
    router = cluster.get(
        GRAPH_API, "InferenceGraph", "alpha-llm-canary", namespace="platform-serving"
    )
    steps = router["spec"]["nodes"]["root"]["steps"]
    assert [(s["name"], s["weight"]) for s in steps] == [("v1", 50), ("v2", 50)]
    assert steps[1]["serviceUrl"] == (
        "http://llm-v2-predictor.tenant-alpha.svc.cluster.local/v1/models/llm:predict"
    )
    after = stored_isvc(cluster)
    assert after["spec"]["canary"][0]["trafficPercent"] == 50
    assert after["spec"]["predictor"] == before["spec"]["predictor"]
    assert history_of(after) == ["v1"]
    with pytest.raises(PlatformValidationError) as excinfo:
        run(cluster, action="step", model=None, queue=None, traffic={"v9": 10})
    assert refusal(excinfo) == ["traffic.v9"]


def test_step_over_100_is_refused():
    cluster = tenant_cluster()
    run(cluster, canaries=[canary("v2", 20), canary("v3", 30)])
    with pytest.raises(PlatformValidationError, match=r"90 \+ 30 = 120"):
        run(cluster, action="step", model=None, queue=None, traffic={"v2": 90})


def test_promote_after_a_deploy_with_a_canary():
    cluster = tenant_cluster()
    run(cluster, canaries=[canary("v2", 20)], autoscaling=GPU_SCALING)
    out = run(cluster, action="promote", model=None, queue=None)
    assert out["changed"] is True
    assert out["service"]["current_version"] == "v2"
    assert out["service"]["deployment"] == "llm-v2-predictor"
    assert out["service"]["traffic"] == {"v2": 100}
    obj = stored_isvc(cluster)
    assert obj["spec"]["predictor"]["name"] == "v2"
    assert obj["spec"]["predictor"]["model"]["storageUri"] == "s3://models/llama/v2"
    assert obj["spec"]["predictor"]["labels"]["platform.io/model-version"] == "v2"
    assert "canary" not in obj["spec"]
    assert history_of(obj) == ["v1", "v2"]
    # the job class and queue of the live service are kept
    assert obj["spec"]["predictor"]["priorityClassName"] == "critical-job"
    hpa = cluster.get(HPA_API, "HorizontalPodAutoscaler", "llm-gpu-util", namespace=NS)
    assert hpa["spec"]["scaleTargetRef"]["name"] == "llm-v2-predictor"
    assert out["diff"]["before"]["versions"] == ["v1"]
    assert out["diff"]["after"]["versions"] == ["v1", "v2"]


def test_rollback_after_a_promote_returns_to_the_previous_version():
    cluster = tenant_cluster()
    run(cluster, canaries=[canary("v2", 20)])
    run(cluster, action="promote", model=None, queue=None)
    out = run(cluster, action="rollback", model=None, queue=None)
    assert out["service"]["current_version"] == "v1"
    obj = stored_isvc(cluster)
    assert obj["spec"]["predictor"]["name"] == "v1"
    assert obj["spec"]["predictor"]["model"]["storageUri"] == "s3://models/llama/v1"
    assert history_of(obj) == ["v1", "v2", "v1"]


def test_rollback_drops_the_canaries():
    cluster = tenant_cluster()
    run(cluster, canaries=[canary("v2", 20)])
    out = run(cluster, action="rollback", model=None, queue=None)
    assert out["changed"] is True
    obj = stored_isvc(cluster)
    assert "canary" not in obj["spec"]
    assert obj["spec"]["predictor"]["name"] == "v1"
    assert out["service"]["traffic"] == {"v1": 100}


def test_rollouts_need_a_live_service():
    cluster = tenant_cluster()
    with pytest.raises(PlatformValidationError) as excinfo:
        run(cluster, action="promote", model=None)
    assert refusal(excinfo) == ["action"]
    assert cluster.writes == []


def test_dropping_gpu_util_target_removes_the_hpa():
    cluster = tenant_cluster()
    run(cluster, autoscaling=GPU_SCALING)
    out = run(cluster, autoscaling={"min_replicas": 1, "max_replicas": 4})
    assert HPA_WRITE in out["writes"]
    assert cluster.get(HPA_API, "HorizontalPodAutoscaler", "llm-gpu-util", namespace=NS) is None
    annotations = stored_isvc(cluster)["metadata"]["annotations"]
    assert "serving.kserve.io/autoscalerClass" not in annotations


def test_wait_returns_the_report_once_ready():
    cluster = tenant_cluster()
    run(cluster)
    key = cluster.key("InferenceService", NS, "llm")
    cluster.store[key]["status"] = {
        "conditions": [{"type": "Ready", "status": "True"}],
        "address": {"url": "http://llm-v1-predictor.tenant-alpha.svc.cluster.local"},
    }
    out = run(cluster, wait=True, wait_sleep=0, wait_timeout=5)
    assert out["changed"] is False
    assert out["status"]["ready"] is True and out["status"]["current_version"] == "v1"


def test_wait_gives_up_after_its_timeout():
    cluster = tenant_cluster()
    with pytest.raises(Refused, match="not Ready after 0s"):
        run(cluster, wait=True, wait_sleep=0, wait_timeout=0)


class Clock:
    """The ``time`` of the service and of kubernetes.core's Waiter: sleeping moves it on."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


READY = {
    "conditions": [{"type": "Ready", "status": "True"}],
    "address": {"url": "http://llm-v1-predictor.tenant-alpha.svc.cluster.local"},
}


def waiting_cluster(monkeypatch, ready_at=None):
    """A deployed service that turns Ready when read at ``ready_at`` seconds (None: never);
    returns the cluster and the times it was read while waited on."""
    clock = Clock()
    monkeypatch.setattr(service, "time", clock)
    monkeypatch.setattr(k8s_waiter, "time", clock)
    cluster = tenant_cluster()
    run(cluster)
    key = cluster.key("InferenceService", NS, "llm")
    original, reads = cluster.get, []

    def get(api_version, kind, name, namespace=None):
        if kind == "InferenceService" and clock.now > 0:
            reads.append(clock.now)
        if kind == "InferenceService" and ready_at is not None and clock.now >= ready_at:
            cluster.store[key]["status"] = READY
        return original(api_version, kind, name, namespace=namespace)

    cluster.get = get
    return cluster, reads


def test_wait_reads_the_service_once_a_poll_and_reports_the_seconds_waited(monkeypatch):
    cluster, reads = waiting_cluster(monkeypatch, ready_at=4)
    out = run(cluster, wait=True, wait_sleep=2, wait_timeout=10)
    assert reads == [2.0, 4.0]
    assert out["status"]["ready"] is True and out["status"]["waited_seconds"] == 4.0
    assert isinstance(out["status"]["waited_seconds"], float)


def test_wait_that_times_out_refuses_with_the_last_status(monkeypatch):
    cluster, reads = waiting_cluster(monkeypatch)
    with pytest.raises(Refused, match="llm is not Ready after 5s") as info:
        run(cluster, wait=True, wait_sleep=2, wait_timeout=5)
    assert reads == [2.0, 4.0, 6.0]  # the first look after the timeout is the last
    assert info.value.extra["status"]["name"] == "llm"
    assert info.value.extra["status"]["ready"] is False


# -- absent -----------------------------------------------------------------------------


def test_absent_deletes_everything_the_service_has():
    cluster = tenant_cluster()
    run(cluster, autoscaling=GPU_SCALING)
    out = run(cluster, state="absent", model=None, queue=None)
    assert out["changed"] is True
    assert sorted(out["writes"]) == sorted([*WRITES, HPA_WRITE])
    assert [w[0] for w in cluster.writes[-3:]] == ["delete"] * 3
    assert stored_isvc(cluster) is None
    assert cluster.get(NETPOL_API, "NetworkPolicy", "inference-llm", namespace=NS) is None
    assert cluster.get(HPA_API, "HorizontalPodAutoscaler", "llm-gpu-util", namespace=NS) is None
    assert out["diff"]["after"] is None and out["diff"]["before"]["stable"]["version"] == "v1"
    again = run(cluster, state="absent", model=None, queue=None)
    assert again["changed"] is False and again["writes"] == []


# -- run_graph and INFO_FLOW -------------------------------------------------------------


def graph_params(**extra):
    out = {
        "name": "chat",
        "tenant": "alpha",
        "state": "present",
        "namespace": "platform-serving",
        "routes": [{"service": "llm-a", "weight": 70}, {"service": "llm-b", "weight": 30}],
    }
    out.update(extra)
    return out


def ready(cluster, name):
    key = cluster.key("InferenceService", NS, name)
    cluster.store[key]["status"] = {
        "conditions": [{"type": "Ready", "status": "True"}],
        "address": {"url": f"http://{name}-v1-predictor.{NS}.svc.cluster.local"},
    }


def test_the_graph_routes_to_the_tenants_ready_services():
    cluster = tenant_cluster()
    for name in ("llm-a", "llm-b"):
        run(cluster, name=name)
    ready(cluster, "llm-a")
    with pytest.raises(PlatformValidationError) as excinfo:
        service.run_graph(graph_params(), cluster, False)
    assert refusal(excinfo) == ["routes[1].service"]
    assert "no address yet" in str(excinfo.value)
    ready(cluster, "llm-b")
    out = service.run_graph(graph_params(), cluster, False)
    assert out["changed"] is True and out["writes"] == [
        "InferenceGraph/platform-serving/alpha-chat"
    ]
    graph = cluster.get(GRAPH_API, "InferenceGraph", "alpha-chat", namespace="platform-serving")
    steps = graph["spec"]["nodes"]["root"]["steps"]
    assert [(s["name"], s["weight"]) for s in steps] == [("llm-a", 70), ("llm-b", 30)]
    assert steps[0]["serviceUrl"] == (
        "http://llm-a-v1-predictor.tenant-alpha.svc.cluster.local/v1/models/llm-a:predict"
    )
    assert service.run_graph(graph_params(), cluster, False)["changed"] is False
    gone = service.run_graph(graph_params(state="absent"), cluster, False)
    assert gone["changed"] is True
    assert (
        cluster.get(GRAPH_API, "InferenceGraph", "alpha-chat", namespace="platform-serving") is None
    )


def test_the_graph_refuses_a_service_the_tenant_does_not_have():
    cluster = tenant_cluster()
    run(cluster, name="llm-a")
    ready(cluster, "llm-a")
    with pytest.raises(
        PlatformValidationError, match="llm-b is not a model service of tenant alpha"
    ):
        service.run_graph(graph_params(), cluster, False)
    assert cluster.kinds("InferenceGraph") == {}


def test_info_reports_each_service_with_its_hpa():
    cluster = tenant_cluster()
    run(cluster, name="llm-a", autoscaling=GPU_SCALING)
    run(cluster, name="llm-b", queue=PAYG_QUEUE, model=model("v3", gpus=2))
    out = service.INFO_FLOW.run(
        {"tenant": "alpha", "name": None, "serving_namespace": "platform-serving"}, cluster, False
    )
    assert out["changed"] is False
    assert [(s["name"], s["current_version"], s["gpu_util_target"]) for s in out["services"]] == [
        ("llm-a", "v1", 70),
        ("llm-b", "v3", None),
    ]
    assert out["services"][1]["job_class"] == "normal"
    assert out["graphs"] == []
    one = service.INFO_FLOW.run(
        {"tenant": "alpha", "name": "llm-b", "serving_namespace": "platform-serving"},
        cluster,
        False,
    )
    assert [s["name"] for s in one["services"]] == ["llm-b"]


def test_the_queue_capability_is_read_as_a_quantity():
    cluster = tenant_cluster()
    key = cluster.key("Queue", None, TEAM_QUEUE)
    cluster.store[key]["spec"]["capability"] = {GPU: "2"}
    with pytest.raises(PlatformValidationError) as excinfo:
        run(cluster, model=model(gpus=3))
    assert refusal(excinfo) == ["model.gpus"]


def test_the_canary_router_follows_the_canaries_and_goes_with_the_last():
    """Rule canary-traffic-routed: a Splitter of the versions while a canary runs, removed
    on promotion (and not made in check mode's real store)."""
    cluster = tenant_cluster()
    run(cluster, canaries=[canary("v2", 20)])
    router = cluster.get(
        GRAPH_API, "InferenceGraph", "alpha-llm-canary", namespace="platform-serving"
    )
    assert [(s["name"], s["weight"]) for s in router["spec"]["nodes"]["root"]["steps"]] == [
        ("v1", 80),
        ("v2", 20),
    ]
    assert router["metadata"]["labels"]["platform.io/rollout-of"] == "llm"
    out = run(cluster, action="promote", model=None, queue=None)
    assert "InferenceGraph/platform-serving/alpha-llm-canary" in out["writes"]
    assert (
        cluster.get(GRAPH_API, "InferenceGraph", "alpha-llm-canary", namespace="platform-serving")
        is None
    )
    assert out["service"]["router"] is None


def test_a_rollout_step_on_a_service_that_does_not_exist_says_so_first():
    """Said before the queue is looked up, naming the action, and nothing is written."""
    cluster = tenant_cluster()
    with pytest.raises(PlatformValidationError) as excinfo:
        run(cluster, action="step", model=None, queue=None, traffic={"v2": 50})
    assert refusal(excinfo) == ["action"] and "deploy it first" in str(excinfo.value)
    assert cluster.writes == []


@pytest.mark.parametrize("namespace", ["kube-system", "tenant-beta"])
def test_the_graph_runs_only_where_the_services_admit_the_gateway(namespace):
    """Rule graph-in-gateway-namespace: refused before any write, naming the gateways."""
    cluster = tenant_cluster()
    for name in ("llm-a", "llm-b"):
        run(cluster, name=name)
        ready(cluster, name)
    with pytest.raises(PlatformValidationError) as excinfo:
        service.run_graph(graph_params(namespace=namespace), cluster, False)
    assert refusal(excinfo) == ["namespace"]
    assert (
        f"{namespace} is not a gateway namespace of llm-a, llm-b (they admit platform-serving)"
        in str(excinfo.value)
    )
    assert cluster.kinds("InferenceGraph") == {}


def test_the_admitted_namespaces_are_read_from_the_serving_policy():
    from ansible_collections.gpucloud.platform.plugins.module_utils.inference import rules

    cluster = tenant_cluster()
    run(cluster, name="llm-a")
    (policy,) = cluster.kinds("NetworkPolicy").values()
    assert rules.admitted_namespaces(policy) == {"platform-serving"}
    assert rules.admitted_namespaces(None) == set()
    assert rules.graph_namespace_errors("platform-serving", {"llm-a": {"platform-serving"}}) == []


@pytest.mark.parametrize("state", ["present", "absent"])
def test_a_graph_name_that_addresses_another_tenants_graph_is_refused(state):
    """Rule graph-of-own-tenant: tenant alpha's graph "b-chat" and tenant alpha-b's graph
    "chat" are both alpha-b-chat; the live graph's labels say whose it is, and it is
    neither replaced nor deleted."""
    cluster = tenant_cluster()
    for name in ("llm-a", "llm-b"):
        run(cluster, name=name)
        ready(cluster, name)
    theirs = {
        "apiVersion": GRAPH_API,
        "kind": "InferenceGraph",
        "metadata": {
            "name": "alpha-b-chat",
            "namespace": "platform-serving",
            "labels": {
                "platform.io/tenant": "alpha-b",
                "platform.io/managed-by": "gpucloud-platform",
            },
        },
        "spec": {"nodes": {}},
    }
    cluster.put(theirs)
    writes = len(cluster.writes)
    with pytest.raises(PlatformValidationError) as excinfo:
        service.run_graph(graph_params(name="b-chat", state=state), cluster, False)
    assert refusal(excinfo) == ["name"]
    assert str(excinfo.value) == (
        "name: 'b-chat' addresses InferenceGraph alpha-b-chat, which is tenant alpha-b's graph; "
        "expected a graph of tenant alpha or none (rule graph-of-own-tenant)"
    )
    assert len(cluster.writes) == writes
    live = cluster.get(GRAPH_API, "InferenceGraph", "alpha-b-chat", namespace="platform-serving")
    assert live["spec"] == {"nodes": {}}


def test_a_service_whose_canary_router_name_is_another_tenants_is_refused():
    """Rule graph-of-own-tenant for the canary router <tenant>-<service>-canary."""
    cluster = tenant_cluster()
    labels = {"platform.io/tenant": "alpha-b", "platform.io/managed-by": "gpucloud-platform"}
    cluster.put(
        {
            "apiVersion": GRAPH_API,
            "kind": "InferenceGraph",
            "metadata": {
                "name": "alpha-b-llm-canary",
                "namespace": "platform-serving",
                "labels": labels,
            },
            "spec": {"nodes": {}},
        }
    )
    writes = len(cluster.writes)
    with pytest.raises(PlatformValidationError) as excinfo:
        run(cluster, name="b-llm")
    assert refusal(excinfo) == ["name"]
    assert "InferenceGraph alpha-b-llm-canary, which is tenant alpha-b's graph" in str(
        excinfo.value
    )
    assert len(cluster.writes) == writes
