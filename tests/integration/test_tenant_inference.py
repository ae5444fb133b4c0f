# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A tenant's model on the real KServe 0.20.0 controller, from its first version
through a canary, a traffic step, promotion and rollback, and an A/B test.

Everything real: the KServe controller and its webhooks (Standard mode, no
Ingress), kube-controller-manager's Deployments and ReplicaSets, Volcano's
PodGroups and scheduler, kwok GPU nodes, the collection's admission policies
and a tenant identity signed by the local cluster's CA. The tests run in order
and share one service, as a platform team would roll one model out.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    apply_admission,
    apply_object_store_connection,
    identity,
    object_store_connection,
    other_cluster,
    wait_until,
)

pytestmark = pytest.mark.integration

GPU = "nvidia.com/gpu"
ISVC = ("serving.kserve.io/v1beta1", "InferenceService")
GRAPH = ("serving.kserve.io/v1alpha1", "InferenceGraph")
TENANT, OTHER = "inf", "inf-b"
NS = f"tenant-{TENANT}"
TEAM_QUEUE, PAYG_QUEUE = f"{NS}-serve", f"{NS}-payg"
SERVING_NS = "platform-serving"
SERVICE = "chat"
SPOT_SERVICE = "chat-spot"
SPOT_QUEUE = f"{NS}-spot"
V1 = {
    "version": "v1",
    "format": "sklearn",
    "runtime": "kserve-sklearnserver",
    "storage_uri": "s3://models/chat/v1",
    "gpus": 1,
}
DENIED = (400, 403, 422)


def tenant_args(name: str, team: str) -> dict[str, Any]:
    return {
        "name": name,
        "subscription": {GPU: 8, "cpu": 32, "memory": "64Gi"},
        "teams": [{"name": team, "deserved": {GPU: 8}}],
        "payg": {GPU: 4, "cpu": 16, "memory": "32Gi"},
        "allow_critical": True,
        "oversell_check": False,
    }


def deploy_args(**extra: Any) -> dict[str, Any]:
    args = {
        "name": SERVICE,
        "tenant": TENANT,
        "queue": TEAM_QUEUE,
        "model": V1,
        "autoscaling": {"min_replicas": 2, "max_replicas": 4},
        "wait": True,
        "wait_timeout": 240,
    }
    args.update(extra)
    return args


@pytest.fixture(scope="module")
def dyn(api_client):
    from kubernetes import dynamic

    return dynamic.DynamicClient(api_client)


def res(client, api_kind: tuple[str, str]):
    return client.resources.get(api_version=api_kind[0], kind=api_kind[1])


@pytest.fixture(scope="module")
def platform(dyn, priority_classes) -> Iterator[None]:
    """The collection's admission policies (as the scheduling_policy role installs them,
    left installed like the role leaves them) and the serving gateway's namespace."""
    if other_cluster():
        pytest.skip("needs the local cluster's KServe controller and CA")
    apply_admission(dyn.client)
    res(dyn, ("v1", "Namespace")).server_side_apply(
        body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SERVING_NS}},
        field_manager="gpucloud-platform-test",
    )
    yield


@pytest.fixture(scope="module")
def tenants(run_module, platform, dyn) -> Iterator[None]:
    for name, team in ((TENANT, "serve"), (OTHER, "x")):
        made = run_module("tenant", tenant_args(name, team))
        assert not made.get("failed"), made.get("msg")
    # The tenant's object store: its models run as its store account (rule
    # model-store-account) without the deploys naming it.
    apply_object_store_connection(dyn.client)
    stored = run_module("tenant_object_store", {"tenant": TENANT, "buckets": ["models"]})
    assert not stored.get("failed"), stored.get("msg")
    yield
    run_module("inference_graph", {"name": "ab", "tenant": TENANT, "state": "absent"})
    for svc in (SERVICE, "chat-small", "chat-huge", SPOT_SERVICE):
        run_module("inference_service", {"name": svc, "tenant": TENANT, "state": "absent"})
    for name in (TENANT, OTHER):
        run_module("tenant", {"name": name, "state": "absent", "force": True, "wait": True})


def info(run_module, name: str = SERVICE) -> dict[str, Any]:
    out = run_module("inference_service_info", {"tenant": TENANT, "name": name})
    assert not out.get("failed"), out.get("msg")
    assert len(out["services"]) == 1, out["services"]
    return out["services"][0]


def predictor_pods(dyn, version: str) -> list[dict[str, Any]]:
    pods = res(dyn, ("v1", "Pod")).get(
        namespace=NS,
        label_selector=f"serving.kserve.io/inferenceservice={SERVICE},platform.io/model-version={version}",
    )
    return [p.to_dict() for p in pods.items if not p.metadata.deletionTimestamp]


def deployments(dyn) -> set[str]:
    items = (
        res(dyn, ("apps/v1", "Deployment"))
        .get(namespace=NS, label_selector=f"serving.kserve.io/inferenceservice={SERVICE}")
        .items
    )
    return {d.metadata.name for d in items if not d.metadata.deletionTimestamp}


def check_then_apply(run_module, args: dict[str, Any]) -> dict[str, Any]:
    """Check mode first, then the real run: the check predicts exactly the real writes."""
    predicted = run_module("inference_service", args, check=True, diff=True)
    assert not predicted.get("failed"), predicted.get("msg")
    done = run_module("inference_service", args, diff=True)
    assert not done.get("failed"), done.get("msg")
    assert predicted["changed"] == done["changed"]
    assert predicted["writes"] == done["writes"]
    assert predicted["diff"] == done["diff"]
    return done


def test_a_tenant_deploys_a_model_that_runs_in_its_queue_at_critical(run_module, dyn, tenants):
    done = check_then_apply(run_module, deploy_args())
    assert done["changed"] and done["writes"] == [
        f"InferenceService/{NS}/{SERVICE}",
        f"NetworkPolicy/{NS}/inference-{SERVICE}",
    ]
    assert done["service"]["job_class"] == "critical"  # team queue: design 5.3
    assert done["status"]["ready"] and done["status"]["current_version"] == "v1"
    pods = wait_until(
        lambda: (
            [p for p in predictor_pods(dyn, "v1") if p["status"]["phase"] == "Running"][:2]
            if len([p for p in predictor_pods(dyn, "v1") if p["status"]["phase"] == "Running"]) >= 2
            else None
        ),
        120,
        1,
        "two Running v1 predictor pods",
    )
    for pod in pods:
        spec, meta = pod["spec"], pod["metadata"]
        assert spec["schedulerName"] == "volcano"
        assert spec["priorityClassName"] == "critical-job"
        assert meta["annotations"]["volcano.sh/preemptable"] == "false"
        assert meta["labels"]["platform.io/billing-type"] == "subscription"
        node = res(dyn, ("v1", "Node")).get(name=spec["nodeName"]).to_dict()
        assert int(node["status"]["allocatable"][GPU]) >= 1
        group = meta["annotations"]["scheduling.k8s.io/group-name"]
        podgroup = (
            res(dyn, ("scheduling.volcano.sh/v1beta1", "PodGroup"))
            .get(name=group, namespace=NS)
            .to_dict()
        )
        assert podgroup["spec"]["queue"] == TEAM_QUEUE
        assert podgroup["spec"]["priorityClassName"] == "critical-job"
        assert "networkTopology" not in podgroup["spec"]  # 8.5: no topology constraint
        # The model is in S3: the pod runs as the tenant's store account, and KServe's
        # storage initializer reads the tenant's keys and endpoint through it.
        assert spec["serviceAccountName"] == "platform-object-store"
        init = next(c for c in spec["initContainers"] if c["name"] == "storage-initializer")
        env = {e["name"]: e for e in init.get("env") or []}
        key = env["AWS_ACCESS_KEY_ID"]["valueFrom"]["secretKeyRef"]
        assert key == {"name": "platform-object-store", "key": "AWS_ACCESS_KEY_ID"}
        store = object_store_connection()["endpoint"]
        assert env["S3_ENDPOINT"]["value"] == store.split("://", 1)[1]


def test_a_second_run_changes_nothing(run_module, tenants):
    again = run_module("inference_service", deploy_args(wait=False))
    assert not again.get("failed"), again.get("msg")
    assert again["changed"] is False and again["writes"] == []


def test_only_the_gateway_and_monitoring_reach_the_predictors(dyn, tenants):
    policy = (
        res(dyn, ("networking.k8s.io/v1", "NetworkPolicy"))
        .get(name=f"inference-{SERVICE}", namespace=NS)
        .to_dict()
    )
    assert policy["spec"]["podSelector"]["matchLabels"] == {
        "serving.kserve.io/inferenceservice": SERVICE,
        "component": "predictor",
    }
    admitted = [
        (r["from"][0]["namespaceSelector"]["matchExpressions"][0]["values"], r["ports"][0]["port"])
        for r in policy["spec"]["ingress"]
    ]
    assert admitted == [([SERVING_NS], 8080), (["monitoring"], 8080)]


def test_a_canary_at_20_percent_gets_its_own_deployment(run_module, dyn, tenants):
    done = check_then_apply(
        run_module,
        {
            "name": SERVICE,
            "tenant": TENANT,
            "action": "canary",
            "canaries": [
                {"version": "v2", "storage_uri": "s3://models/chat/v2", "traffic_percent": 20}
            ],
            "wait": True,
            "wait_timeout": 240,
        },
    )
    router = f"{TENANT}-{SERVICE}-canary"
    assert done["writes"] == [
        f"InferenceService/{NS}/{SERVICE}",
        f"InferenceGraph/{SERVING_NS}/{router}",
    ]
    assert done["service"]["traffic"] == {"v1": 80, "v2": 20}
    assert done["service"]["router"] == router
    assert f"{SERVICE}-v2-predictor" in deployments(dyn)
    report = info(run_module)
    assert report["canaries"][0]["version"] == "v2" and report["canaries"][0]["ready"] is True
    assert report["traffic"] == {"v1": 80, "v2": 20}
    assert report["conditions"]["CanaryPredictorReady"]["status"] == "True"
    # KServe's Standard mode only sizes the canary by its share; the platform's router
    # splits the requests (rule canary-traffic-routed).
    steps = report["router"] and {r["service"]: r["weight"] for r in report["router"]["routes"]}
    assert steps == {"v1": 80, "v2": 20}
    assert wait_until(
        lambda: info(run_module)["router"]["ready"], 60, 1, "the canary router to be Ready"
    )
    canary_pods = predictor_pods(dyn, "v2")
    assert canary_pods and all(p["spec"]["schedulerName"] == "volcano" for p in canary_pods)


def test_stepping_the_canary_moves_only_the_traffic(run_module, tenants):
    done = check_then_apply(
        run_module, {"name": SERVICE, "tenant": TENANT, "action": "step", "traffic": {"v2": 50}}
    )
    assert done["diff"]["before"]["canaries"][0]["traffic_percent"] == 20
    assert done["diff"]["after"]["canaries"][0]["traffic_percent"] == 50
    assert done["diff"]["before"]["stable"] == done["diff"]["after"]["stable"]
    assert wait_until(lambda: info(run_module)["traffic"] == {"v1": 50, "v2": 50}, 60, 1, "50/50")
    routes = info(run_module)["router"]["routes"]
    assert [(r["service"], r["weight"]) for r in routes] == [("v1", 50), ("v2", 50)]


def test_bad_rollouts_are_refused_before_any_write(run_module, dyn, tenants):
    before = res(dyn, ISVC).get(name=SERVICE, namespace=NS).metadata.resourceVersion
    cases = {
        "canaries[].traffic_percent": {
            "action": "canary",
            "canaries": [
                {"version": "v3", "storage_uri": "s3://models/chat/v3", "traffic_percent": 60}
            ],
        },
        "model.storage_uri": {
            **deploy_args(wait=False),
            "model": {**V1, "storage_uri": "s3://other/v1"},
        },
        "job_class": {**deploy_args(wait=False), "job_class": "spot"},
        "queue": {**deploy_args(wait=False), "queue": f"tenant-{OTHER}-x"},
        # the canaries as they would be: the live v2 first, then v3
        "canaries[1].min_replicas": {
            "action": "canary",
            "canaries": [
                {
                    "version": "v3",
                    "storage_uri": "s3://models/chat/v3",
                    "traffic_percent": 5,
                    "min_replicas": 3,
                }
            ],
        },
    }
    for field, extra in cases.items():
        args = {"name": SERVICE, "tenant": TENANT, **extra}
        out = run_module("inference_service", args)
        assert out.get("failed"), f"{field}: accepted"
        assert any(e.startswith(field) for e in out.get("errors", [])), (field, out.get("msg"))
    too_big = deploy_args(
        wait=False, name="chat-huge", model={**V1, "gpus": 8}, autoscaling={"min_replicas": 2}
    )
    out = run_module("inference_service", too_big)
    assert out.get("failed") and any(e.startswith("model.gpus") for e in out["errors"]), out
    assert "capability of queue" in out["msg"]
    # Rule inference-replicas-bounded: replicas the queue could never run (the red team's
    # min_replicas 100000 made KServe create 3,577 pods).
    runaway = deploy_args(wait=False, name="chat-huge", autoscaling={"min_replicas": 100000})
    out = run_module("inference_service", runaway)
    assert out.get("failed") and any(e.startswith("model.gpus") for e in out["errors"]), out
    runaway["autoscaling"] = {"min_replicas": 1, "max_replicas": 100000}
    out = run_module("inference_service", runaway)
    assert out.get("failed"), out
    assert "autoscaling.max_replicas: 100000 replicas would hold 100000 GPUs" in out["msg"]
    assert not res(dyn, ISVC).get(namespace=NS, field_selector="metadata.name=chat-huge").items
    assert res(dyn, ISVC).get(name=SERVICE, namespace=NS).metadata.resourceVersion == before


def test_the_report_gives_each_versions_replicas(run_module, tenants):
    """Rule inference-replicas-reported, on the real Deployments: ready and desired per
    version against the service's minimum."""
    report = info(run_module)
    assert set(report["replicas"]) == {"v1", "v2"}
    for counts in report["replicas"].values():
        assert counts["desired"] >= counts["minimum"] >= 1
        assert counts["ready"] <= counts["desired"]
    assert report["ready"] == all(r["ready"] >= r["minimum"] for r in report["replicas"].values())


def test_promote_leaves_one_version(run_module, dyn, tenants):
    done = check_then_apply(
        run_module, {"name": SERVICE, "tenant": TENANT, "action": "promote", "wait": True}
    )
    assert done["service"]["current_version"] == "v2" and done["service"]["traffic"] == {"v2": 100}
    wait_until(
        lambda: deployments(dyn) == {f"{SERVICE}-v2-predictor"}, 120, 1, "only v2's Deployment"
    )
    report = info(run_module)
    assert report["current_version"] == "v2" and report["previous_version"] == "v1"
    assert report["canaries"] == [] and report["traffic"] == {"v2": 100}
    assert report["router"] is None
    assert f"InferenceGraph/{SERVING_NS}/{TENANT}-{SERVICE}-canary" in done["writes"]
    # v2 ran one canary replica: it is ready once it has the stable minimum of 2
    # (rule inference-replicas-reported), not at KServe's first Ready.
    wait_until(lambda: info(run_module)["ready"], 120, 1, "v2 at its minimum of replicas")
    assert info(run_module)["replicas"]["v2"]["ready"] >= 2


def test_rollback_returns_to_the_previous_version(run_module, dyn, tenants):
    done = check_then_apply(
        run_module, {"name": SERVICE, "tenant": TENANT, "action": "rollback", "wait": True}
    )
    assert done["service"]["current_version"] == "v1"
    wait_until(
        lambda: deployments(dyn) == {f"{SERVICE}-v1-predictor"}, 120, 1, "only v1's Deployment"
    )
    report = info(run_module)
    assert report["current_version"] == "v1" and report["previous_version"] == "v2"
    assert report["versions"] == ["v1", "v2", "v1"]
    assert report["storage_uri"] == V1["storage_uri"]


def test_an_ab_test_splits_between_two_services(run_module, dyn, tenants):
    small = run_module(
        "inference_service",
        deploy_args(
            name="chat-small",
            queue=PAYG_QUEUE,
            model={**V1, "storage_uri": "s3://models/chat-small/v1"},
            autoscaling={"min_replicas": 1, "max_replicas": 3, "gpu_util_target": 70},
        ),
    )
    assert not small.get("failed"), small.get("msg")
    assert small["service"]["job_class"] == "normal" and small["service"]["billing_type"] == "payg"
    # Design 10.3's HPA on the GPU utilisation, and none of KServe's own (autoscalerClass external).
    hpas = res(dyn, ("autoscaling/v2", "HorizontalPodAutoscaler")).get(namespace=NS).items
    by_name = {h.metadata.name: h.to_dict() for h in hpas}
    hpa = by_name["chat-small-gpu-util"]
    assert hpa["spec"]["scaleTargetRef"]["name"] == "chat-small-v1-predictor"
    assert hpa["spec"]["metrics"][0]["pods"]["metric"]["name"] == "DCGM_FI_DEV_GPU_UTIL"
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 3)
    assert not [
        h
        for h in by_name.values()
        if h["spec"]["scaleTargetRef"]["name"] == "chat-small-v1-predictor"
        and h["metadata"]["name"] != "chat-small-gpu-util"
    ]
    routes = [{"service": SERVICE, "weight": 70}, {"service": "chat-small", "weight": 30}]
    made = run_module("inference_graph", {"name": "ab", "tenant": TENANT, "routes": routes})
    assert not made.get("failed"), made.get("msg")
    assert made["changed"] and made["graph"] == f"{TENANT}-ab"
    again = run_module("inference_graph", {"name": "ab", "tenant": TENANT, "routes": routes})
    assert again["changed"] is False
    graph = res(dyn, GRAPH).get(name=f"{TENANT}-ab", namespace=SERVING_NS).to_dict()
    root = graph["spec"]["nodes"]["root"]
    assert root["routerType"] == "Splitter"
    assert [(s["name"], s["weight"]) for s in root["steps"]] == [(SERVICE, 70), ("chat-small", 30)]
    out = run_module("inference_service_info", {"tenant": TENANT})
    reported = {g["name"]: g for g in out["graphs"]}[f"{TENANT}-ab"]
    assert [(r["service"], r["weight"]) for r in reported["routes"]] == [
        (SERVICE, 70),
        ("chat-small", 30),
    ]
    bad = run_module(
        "inference_graph",
        {
            "name": "ab",
            "tenant": TENANT,
            "routes": [{"service": SERVICE, "weight": 70}, {"service": "nope", "weight": 30}],
        },
    )
    assert bad.get("failed") and any(e.startswith("routes[1].service") for e in bad["errors"])
    # The graph runs where the gateway runs: never kube-system or another tenant's
    # namespace (rule graph-in-gateway-namespace), and nothing is written there.
    for elsewhere in ("kube-system", f"tenant-{OTHER}"):
        out = run_module(
            "inference_graph",
            {"name": "ab", "tenant": TENANT, "routes": routes, "namespace": elsewhere},
        )
        assert out.get("failed") and "(rule graph-in-gateway-namespace)" in out["msg"], out
        assert f"(they admit {SERVING_NS})" in out["msg"]
        assert not res(dyn, GRAPH).get(namespace=elsewhere).items


def test_the_ab_test_follows_a_rollout_of_its_service(run_module, dyn, tenants):
    """Rule inference-routes-follow-versions: the rollback back to v2 rewrites the A/B
    graph's route to chat, so no route names a Service that is gone."""
    done = run_module(
        "inference_service", {"name": SERVICE, "tenant": TENANT, "action": "rollback", "wait": True}
    )
    assert not done.get("failed"), done.get("msg")
    assert done["service"]["current_version"] == "v2"
    assert f"InferenceGraph/{SERVING_NS}/{TENANT}-ab" in done["writes"]
    wait_until(
        lambda: deployments(dyn) == {f"{SERVICE}-v2-predictor"}, 120, 1, "only v2's Deployment"
    )
    graph = res(dyn, GRAPH).get(name=f"{TENANT}-ab", namespace=SERVING_NS).to_dict()
    steps = {s["name"]: s for s in graph["spec"]["nodes"]["root"]["steps"]}
    assert f"//{SERVICE}-v2-predictor.{NS}." in steps[SERVICE]["serviceUrl"]
    assert (
        steps[SERVICE]["weight"] == 70
        and "chat-small-v1-predictor" in steps["chat-small"]["serviceUrl"]
    )
    services = {s.metadata.name for s in res(dyn, ("v1", "Service")).get(namespace=NS).items}
    for step in steps.values():
        host = step["serviceUrl"].split("//", 1)[1].split(".", 1)[0]
        assert host in services, (host, sorted(services))


def test_another_tenants_user_cannot_touch_the_service(dyn, tenants):
    from kubernetes.dynamic.exceptions import ApiException

    mallory = identity("mallory", OTHER)
    for attempt in (
        lambda: res(mallory, ISVC).get(name=SERVICE, namespace=NS),
        lambda: res(mallory, ISVC).patch(
            name=SERVICE,
            namespace=NS,
            body={"spec": {"predictor": {"minReplicas": 0}}},
            content_type="application/merge-patch+json",
        ),
        lambda: res(mallory, ISVC).delete(name=SERVICE, namespace=NS),
    ):
        with pytest.raises(ApiException) as denied:
            attempt()
        assert denied.value.status == 403
    # The tenant's own user may deploy, but not into another tenant's queue.
    alice = identity("alice", TENANT)
    manifest = res(dyn, ISVC).get(name=SERVICE, namespace=NS).to_dict()
    body = {
        "apiVersion": ISVC[0],
        "kind": ISVC[1],
        "metadata": {"name": "stolen", "namespace": NS},
        "spec": {"predictor": {**manifest["spec"]["predictor"], "name": "v9"}},
    }
    body["spec"]["predictor"]["annotations"] = {
        "scheduling.volcano.sh/queue-name": f"tenant-{OTHER}-x"
    }
    with pytest.raises(ApiException) as refused:
        res(alice, ISVC).create(body=body, namespace=NS, query_params=[("dryRun", "All")])
    assert refused.value.status in DENIED
    assert "is not a queue of tenant inf" in str(refused.value.body)
    own = {
        **body,
        "spec": {
            "predictor": {
                **body["spec"]["predictor"],
                "annotations": {
                    "scheduling.volcano.sh/queue-name": TEAM_QUEUE,
                    "volcano.sh/preemptable": "false",
                },
            }
        },
    }
    res(alice, ISVC).create(body=own, namespace=NS, query_params=[("dryRun", "All")])


def test_a_spot_service_is_priced_and_its_pods_are_reclaimed_cheapest_first(
    run_module, dyn, tenants
):
    """Spot means reclaimable, whatever the workload. ``inference_service`` never defaults
    to spot (rule inference-default-class) and a spot service names its price (rule
    inference-spot-priced); spot reclaim takes its predictor pod like a spot job, by
    price (rule spot-candidate-pod), and the Deployment makes the pod again."""
    spot = {
        "name": SPOT_SERVICE,
        "tenant": TENANT,
        "queue": SPOT_QUEUE,
        "model": {**V1, "storage_uri": "s3://models/chat-spot/v1"},
        "autoscaling": {"min_replicas": 1, "max_replicas": 1},
    }
    defaulted = run_module("inference_service", spot)
    assert defaulted.get("failed") and "say job_class: spot and give spot_price" in defaulted["msg"]
    unpriced = run_module("inference_service", {**spot, "job_class": "spot"})
    assert unpriced.get("failed") and unpriced["errors"][0].startswith("spot_price:"), unpriced
    assert (
        not res(dyn, ISVC).get(namespace=NS, field_selector=f"metadata.name={SPOT_SERVICE}").items
    )

    # The spot queue gets its share of the idle GPUs, then the service runs in it.
    recomputed = run_module("spot_capacity", {})
    assert not recomputed.get("failed"), recomputed.get("msg")
    made = run_module(
        "inference_service",
        {**spot, "job_class": "spot", "spot_price": "0.2", "wait": True, "wait_timeout": 240},
    )
    assert not made.get("failed"), made.get("msg")
    assert made["service"]["job_class"] == "spot" and made["service"]["billing_type"] == "spot"
    pods = [
        p.to_dict()
        for p in res(dyn, ("v1", "Pod"))
        .get(namespace=NS, label_selector=f"serving.kserve.io/inferenceservice={SPOT_SERVICE}")
        .items
    ]
    (pod,) = [p for p in pods if p["status"]["phase"] == "Running"]
    assert pod["metadata"]["annotations"]["platform.io/spot-price"] == "0.2"

    # What a reclaim of every spot GPU would take: the pod is among the victims.
    preview = run_module("spot_reclaim", {"need": 0}, check=True)
    free = preview["free"]
    everything = run_module("spot_reclaim", {"need": free + 64, "allow_partial": True}, check=True)
    victims = everything["victims"]
    names = [v["name"] for v in victims]
    assert pod["metadata"]["name"] in names, victims
    ours = names.index(pod["metadata"]["name"])
    assert victims[ours]["kind"] == "Pod" and victims[ours]["price"] == "0.2"
    assert victims[ours]["queue"] == SPOT_QUEUE and victims[ours]["gpus"] == 1
    # Cheapest first: every victim before it bids no more.
    assert all(float(v["price"]) <= 0.2 for v in victims[:ours])

    # Reclaim exactly up to it: it goes, and its Deployment makes it again.
    # A cheaper victim may end on its own between the preview and the run (a job of an
    # earlier test that reaches its duration), so the reclaim may come up short of
    # ``need``: it is allowed to, and the pod must still be taken.
    need = free + sum(v["gpus"] for v in victims[: ours + 1])
    done = run_module(
        "spot_reclaim", {"need": need, "demand_reason": "test", "allow_partial": True}
    )
    assert not done.get("failed"), done.get("msg")
    assert pod["metadata"]["name"] in [v["name"] for v in done["victims"]]
    old_uid = pod["metadata"]["uid"]

    def replaced() -> bool:
        now = res(dyn, ("v1", "Pod")).get(
            namespace=NS, label_selector=f"serving.kserve.io/inferenceservice={SPOT_SERVICE}"
        )
        uids = {p.metadata.uid for p in now.items if not p.metadata.deletionTimestamp}
        return bool(uids) and old_uid not in uids

    wait_until(replaced, 60, 1, "the reclaimed predictor pod made again")
    events = res(dyn, ("v1", "Event")).get(
        namespace=NS, field_selector=f"involvedObject.name={pod['metadata']['name']}"
    )
    reclaimed = [e for e in events.items if e.reason == "SpotReclaimed"]
    assert reclaimed and reclaimed[0].involvedObject.kind == "Pod"
    assert reclaimed[0].message.startswith(f"spot pod {NS}/{pod['metadata']['name']} (price 0.2")


def test_deleting_the_tenant_takes_its_routers_in_the_gateway(run_module, dyn, tenants):
    """A deleted tenant leaves nothing in the gateway routing to it (the A/B graph once
    survived tenant_delete)."""
    assert (
        res(dyn, GRAPH)
        .get(namespace=SERVING_NS, label_selector=f"platform.io/tenant={TENANT}")
        .items
    )
    gone = run_module("tenant", {"name": TENANT, "state": "absent", "force": True, "wait": True})
    assert not gone.get("failed"), gone.get("msg")
    assert {
        "kind": "InferenceGraph",
        "name": f"{TENANT}-ab",
        "namespace": SERVING_NS,
        "action": "delete",
    } in gone["objects"]
    left = res(dyn, GRAPH).get(namespace=SERVING_NS, label_selector=f"platform.io/tenant={TENANT}")
    assert not left.items
