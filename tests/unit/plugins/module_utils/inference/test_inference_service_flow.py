# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module inference_service through its flow (``inference/rollout.py``,
``service.SERVICE_FLOW``): plan tables over facts with no cluster, the reads in the order
the decision needs them, and the contract's promise on the fake cluster: ``parsed`` of what
``gathered`` returned answers as the check-mode run does."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.inference import rollout, service
from ansible_collections.gpucloud.platform.plugins.module_utils.inference.manifests import ab_graph
from ansible_collections.gpucloud.platform.plugins.modules import inference_service
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster
from ansible_collections.gpucloud.platform.tests.unit.flow_checks import (
    assert_parsed_is_the_check_run,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.inference.inference_objects import (
    GRAPH_API,
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

GATEWAY = "platform-serving"
OBJECTS = {(o["kind"], o["metadata"]["name"]): o for o in tenant_objects(critical_allowed=True)}
QUEUE_LIST = OBJECTS[("ConfigMap", "platform-queues")]
NAMESPACE = OBJECTS[("Namespace", NS)]
GPU_SCALING = {"min_replicas": 1, "max_replicas": 4, "gpu_util_target": 70}


def facts(live=(), **extra):
    """The facts of a tenant with no service yet (``live``: the service's objects)."""
    by_kind = {o["kind"]: o for o in live}
    out = {
        "service": tuple(o for o in live if o["kind"] == "InferenceService"),
        "hpa": tuple(o for o in live if o["kind"] == "HorizontalPodAutoscaler"),
        "policy": tuple(o for o in live if o["kind"] == "NetworkPolicy"),
        "router": (by_kind["InferenceGraph"],) if "InferenceGraph" in by_kind else (),
        "queue_list": (QUEUE_LIST,),
        "namespace": (NAMESPACE,),
        "queues": ((TEAM_QUEUE, queue_obj(TEAM_QUEUE, 8)), ("tenant-alpha-subscription", None)),
    }
    out.update(extra)
    return rollout.ServiceFacts(**out)


def request(**extra):
    return rollout.parse_service(params(**extra))


def deployed(**extra):
    """The live objects of a service deployed with ``extra`` (run on the fake cluster)."""
    cluster = tenant_cluster()
    service.run_service(params(**extra), cluster, False)
    kinds = ("InferenceService", "HorizontalPodAutoscaler", "NetworkPolicy", "InferenceGraph")
    return [copy.deepcopy(o) for kind in kinds for o in cluster.objects(kind)]


def written(planned):
    return rollout.report(request(), planned)["writes"]


# -- the plan over facts ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "live", "writes"),
    [
        ({}, (), ["InferenceService/tenant-alpha/llm", "NetworkPolicy/tenant-alpha/inference-llm"]),
        (
            {"autoscaling": GPU_SCALING, "canaries": [canary("v2", 20)]},
            (),
            [
                "InferenceService/tenant-alpha/llm",
                "NetworkPolicy/tenant-alpha/inference-llm",
                "HorizontalPodAutoscaler/tenant-alpha/llm-gpu-util",
                "InferenceGraph/platform-serving/alpha-llm-canary",
            ],
        ),
        ({}, deployed(), []),
        (
            {"action": "step", "model": None, "queue": None, "traffic": {"v2": 50}},
            deployed(canaries=[canary("v2", 20)]),
            [
                "InferenceService/tenant-alpha/llm",
                "InferenceGraph/platform-serving/alpha-llm-canary",
            ],
        ),
        (
            {"action": "promote", "model": None, "queue": None},
            deployed(canaries=[canary("v2", 20)], autoscaling=GPU_SCALING),
            [
                "InferenceService/tenant-alpha/llm",
                "HorizontalPodAutoscaler/tenant-alpha/llm-gpu-util",
                "InferenceGraph/platform-serving/alpha-llm-canary",  # removed
            ],
        ),
        (
            {"state": "absent"},
            deployed(canaries=[canary("v2", 20)]),
            [
                "InferenceGraph/platform-serving/alpha-llm-canary",
                "NetworkPolicy/tenant-alpha/inference-llm",
                "InferenceService/tenant-alpha/llm",
            ],
        ),
        ({"state": "absent"}, (), []),
    ],
)
def test_the_plan_over_facts(options, live, writes):
    ask = request(**options)
    planned = rollout.plan_service(ask, facts(live, graphs=()))
    assert rollout.report(ask, planned)["writes"] == writes


def test_the_ab_graphs_follow_the_stable_version_when_the_facts_hold_them():
    """Rule inference-routes-follow-versions: a graph to the service at another address is
    re-routed; a run's facts hold no graphs (None), and the run lists them after its
    writes."""
    ab = ab_graph("alpha", "chat", [("llm", "http://old", 50), ("x", "http://x", 50)], GATEWAY)
    planned = rollout.plan_service(request(), facts(graphs=(ab,)))
    assert [g["metadata"]["name"] for g in planned.reroutes] == ["alpha-chat"]
    steps = planned.reroutes[0]["spec"]["nodes"]["root"]["steps"]
    assert steps[0]["serviceUrl"].startswith("http://llm-v1-predictor.tenant-alpha.svc")
    assert written(planned)[-1] == "InferenceGraph/platform-serving/alpha-chat"
    assert rollout.plan_service(request(), facts()).reroutes is None
    no_gateway = request(gateway_namespaces=[])
    assert rollout.plan_service(no_gateway, facts(router=None)).reroutes == ()


@pytest.mark.parametrize(
    ("options", "changed", "field", "words"),
    [
        ({}, {"queue_list": ()}, "tenant", "'alpha' has no queue list"),
        ({"queue": "tenant-beta-research"}, {}, "queue", "another tenant's queue name"),
        ({"queue": PAYG_QUEUE, "job_class": "critical"}, {}, "job_class", "payg queue"),
        ({"job_class": "critical"}, {"namespace": ()}, "job_class", "critical is not enabled"),
        ({"model": model(gpus=9)}, {}, "model.gpus", "needs 9 GPUs at its minimum"),
        ({"action": "promote", "model": None}, {}, "action", "deploy it first"),
        (
            {},
            {
                "router": (
                    {
                        "metadata": {
                            "name": "alpha-llm-canary",
                            "labels": {"platform.io/tenant": "other"},
                        }
                    },
                )
            },
            "name",
            "rule graph-of-own-tenant",
        ),
    ],
)
def test_the_plan_refuses(options, changed, field, words):
    with pytest.raises(PlatformValidationError) as excinfo:
        rollout.plan_service(request(**options), facts(**changed))
    assert [e.field for e in excinfo.value.errors] == [field]
    assert words in str(excinfo.value)


# -- the reads, in the order the decision needs them ---------------------------------------


def reads_of(ask, cluster):
    """The kinds ``gather`` reads, in order (and the Queues by name)."""
    order, facts_now = [], rollout.ServiceFacts()
    while (needed := rollout.next_read(ask, facts_now)) is not None:
        order.append(needed)
        facts_now = service._read(cluster, ask, facts_now, *needed)
    return order


def test_the_reads_in_order_and_none_after_a_refusal():
    single = [(kind, None) for kind in ("service", "hpa", "policy", "router")]
    chain = [("queues", TEAM_QUEUE), ("queues", "tenant-alpha-subscription")]
    # the models are in S3: the tenant's object-store account is looked up (rule
    # model-store-account)
    placement = [("queue_list", None), ("namespace", None), ("store_account", None)]
    assert reads_of(request(), tenant_cluster()) == single + placement + chain
    gathering = request(state="gathered")
    assert reads_of(gathering, tenant_cluster()) == [*single, *placement, *chain, ("graphs", None)]
    # given an account, or with no model in S3, there is nothing to look up
    assert ("store_account", None) not in reads_of(
        request(service_account="models-reader"), tenant_cluster()
    )
    on_pvc = request(model=model(storage_uri="pvc://models/llama/v1"))
    assert ("store_account", None) not in reads_of(on_pvc, tenant_cluster())
    assert reads_of(request(state="absent"), tenant_cluster()) == single
    assert reads_of(request(gateway_namespaces=[]), tenant_cluster())[:3] == single[:3]
    refused = request(action="promote", model=None)
    assert reads_of(refused, tenant_cluster()) == single
    assert reads_of(request(tenant="beta"), tenant_cluster()) == [*single, ("queue_list", None)]


# -- the promise on the fake cluster ------------------------------------------------------


def world(*runs, graph=None):
    """The objects of tenant alpha's cluster after ``runs`` (options of inference_service)
    and, with ``graph``, an A/B graph to llm at an old address."""
    cluster = tenant_cluster()
    for options in runs:
        service.run_service(params(**options), cluster, False)
    if graph is not None:
        cluster.put(
            ab_graph("alpha", graph, [("llm", "http://old", 50), ("x", "http://x", 50)], GATEWAY)
        )
    return [copy.deepcopy(o) for o in cluster.store.values()]


WITH_CANARY = {"canaries": [canary("v2", 20)], "autoscaling": GPU_SCALING}
ROLLOUT = {"model": None, "queue": None}
CASES = [
    ("a first deploy", world(), {}),
    ("a first deploy with a canary", world(), WITH_CANARY),
    ("the same deploy again", world(WITH_CANARY), WITH_CANARY),
    ("a step", world(WITH_CANARY), {**ROLLOUT, "action": "step", "traffic": {"v2": 50}}),
    (
        "a canary added",
        world(WITH_CANARY),
        {**ROLLOUT, "action": "canary", "canaries": [canary("v3", 10)]},
    ),
    ("a promotion re-routes", world(WITH_CANARY, graph="chat"), {**ROLLOUT, "action": "promote"}),
    ("a rollback", world(WITH_CANARY), {**ROLLOUT, "action": "rollback"}),
    ("no gateway", world(), {"gateway_namespaces": []}),
    ("a step refused", world(WITH_CANARY), {**ROLLOUT, "action": "step", "traffic": {"v9": 5}}),
    ("no service to promote", world(), {**ROLLOUT, "action": "promote"}),
    ("another tenant's queue", world(), {"queue": "tenant-beta-x"}),
    ("too big for the queue", world(), {"model": model(gpus=9)}),
    ("critical in payg", world(), {"queue": PAYG_QUEUE, "job_class": "critical"}),
    ("a tenant without a queue list", world(), {"tenant": "beta"}),
]


@pytest.mark.parametrize(("case", "objects", "options"), CASES, ids=[c[0] for c in CASES])
def test_parsed_of_gathered_is_the_check_mode_run(case, objects, options):
    cluster = FakeCluster(copy.deepcopy(objects))
    out = service.SERVICE_FLOW.run(params(**options, state="gathered"), cluster, False)
    assert out["changed"] is False and cluster.writes == []
    parsed = params(**options, state="parsed", facts=out["gathered"])

    def check_run():
        checked = FakeCluster(copy.deepcopy(objects), dry_run=True)
        return service.run_service(params(**options), checked, True)

    assert_parsed_is_the_check_run(service.SERVICE_FLOW, check_run, parsed)


def test_gathered_returns_what_was_read():
    objects = world(WITH_CANARY, graph="chat")
    out = service.SERVICE_FLOW.run(params(state="gathered"), FakeCluster(objects), False)
    gathered = out["gathered"]
    assert sorted(gathered) == [
        "configmaps",
        "graphs",
        "horizontalpodautoscalers",
        "inferencegraphs",
        "inferenceservices",
        "namespaces",
        "networkpolicies",
        "queues",
        "serviceaccounts",
    ]
    assert [q["metadata"]["name"] for q in gathered["queues"]] == [TEAM_QUEUE]
    assert sorted(g["metadata"]["name"] for g in gathered["graphs"]) == [
        "alpha-chat",
        "alpha-llm-canary",
    ]
    refused = service.SERVICE_FLOW.run(
        params(tenant="beta", state="gathered"), FakeCluster(objects), False
    )
    assert "queues" not in refused["gathered"] and refused["gathered"]["configmaps"] == []


def _predictor_account(cluster: FakeCluster, **options) -> str | None:
    out = service.run_service(params(**options), cluster, False)
    assert out["changed"], out
    isvc = cluster.get(
        "serving.kserve.io/v1beta1", "InferenceService", "llm", namespace="tenant-alpha"
    )
    return isvc["spec"]["predictor"].get("serviceAccountName")


def test_a_model_in_s3_runs_as_the_tenants_object_store_account_when_it_has_one():
    """Rule model-store-account: derived, never demanded; a given account wins."""
    assert _predictor_account(tenant_cluster()) is None  # no object store: KServe's default
    with_store = tenant_cluster()
    with_store.put(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "platform-object-store", "namespace": "tenant-alpha"},
        }
    )
    assert _predictor_account(copy.deepcopy(with_store)) == "platform-object-store"
    assert _predictor_account(with_store, service_account="models-reader") == "models-reader"
    on_pvc = tenant_cluster()
    on_pvc.put(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "platform-object-store", "namespace": "tenant-alpha"},
        }
    )
    assert _predictor_account(on_pvc, model=model(storage_uri="pvc://models/llama/v1")) is None


def test_parsed_needs_its_facts_and_present_connects():
    with pytest.raises(PlatformValidationError, match="is required with state: parsed"):
        service.SERVICE_FLOW.offline(params(state="parsed"))
    with pytest.raises(PlatformValidationError, match=r"facts\.queues"):
        service.SERVICE_FLOW.offline(params(state="parsed", facts={"queues": {}}))
    assert service.SERVICE_FLOW.offline(params()) is None
    assert service.SERVICE_FLOW.states() == ["gathered", "parsed"]


def test_gathered_and_parsed_check_the_options_as_present():
    with pytest.raises(PlatformValidationError, match="is required with action: deploy"):
        rollout.parse_service(params(state="gathered", model=None))
    with pytest.raises(PlatformValidationError, match="is required with action: deploy"):
        service.SERVICE_FLOW.offline(params(state="parsed", queue=None, facts={}))
    cluster = FakeCluster(world())
    service.SERVICE_FLOW.run(params(state="gathered"), cluster, False)
    assert cluster.get(GRAPH_API, "InferenceGraph", "alpha-llm-canary", namespace=GATEWAY) is None


# -- the module -----------------------------------------------------------------------------


def test_the_module_answers_gathered_and_then_parsed_without_connecting(run_module):
    objects = world(WITH_CANARY)
    step = {"name": "llm", "tenant": "alpha", "action": "step", "traffic": {"v2": 50}}
    cluster = FakeCluster(copy.deepcopy(objects))
    out = run_module(inference_service, cluster, state="gathered", **step)
    assert out["changed"] is False and out["requests"] == 9 and cluster.writes == []
    assert out["summary"] == [
        "gathered configmaps, graphs, horizontalpodautoscalers, inferencegraphs, inferenceservices, "
        "namespaces, networkpolicies, queues from the cluster; nothing was written"
    ]
    unused = FakeCluster([])
    parsed = run_module(inference_service, unused, state="parsed", facts=out["gathered"], **step)
    assert parsed["requests"] == 0 and unused.requests == 0
    assert parsed["changed"] is False and parsed["state"] == "parsed"
    assert parsed["writes"] == [
        "InferenceService/tenant-alpha/llm",
        "InferenceGraph/platform-serving/alpha-llm-canary",
    ]
    checked = run_module(
        inference_service,
        FakeCluster(copy.deepcopy(objects), dry_run=True),
        _ansible_check_mode=True,
        **step,
    )
    assert checked["writes"] == parsed["writes"] and checked["diff"] == parsed["diff"]
    assert parsed["summary"] == checked["summary"]
    assert parsed["summary"][0].startswith(
        "model service tenant-alpha/llm: traffic would be stepped"
    )
