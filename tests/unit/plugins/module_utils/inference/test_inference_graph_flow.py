# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module inference_graph through its flow (``inference/graph.py``,
``service.GRAPH_FLOW``): plan tables over facts with no cluster, and the contract's
promise on the fake cluster: ``parsed`` of what ``gathered`` returned answers as the
check-mode run does."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.inference import graph, service
from ansible_collections.gpucloud.platform.plugins.module_utils.inference.manifests import (
    ab_graph,
    inference_service,
    serving_network_policy,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.classes import (
    DEFAULT_CLASSES,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.inference.inference_objects import (
    GRAPH_API,
    ISVC_API,
    NS,
    make_spec,
    params,
    tenant_cluster,
)

GATEWAY = "platform-serving"


def graph_params(**extra):
    out = {
        "name": "chat",
        "tenant": "alpha",
        "state": "present",
        "namespace": GATEWAY,
        "routes": [{"service": "llm-a", "weight": 70}, {"service": "llm-b", "weight": 30}],
        "facts": None,
    }
    out.update(extra)
    return out


def isvc(name, ready=True):
    spec = make_spec(name=name)
    obj = inference_service(spec, DEFAULT_CLASSES["critical"], "subscription", [])
    if ready:
        url = f"http://{name}-v1-predictor.{NS}.svc.cluster.local"
        obj["status"] = {"address": {"url": url}}
    return obj


def policy(name, gateways=(GATEWAY,)):
    return serving_network_policy(make_spec(name=name), list(gateways), None)


def live_graph(tenant="alpha", weights=(70, 30)):
    services = (isvc("llm-a"), isvc("llm-b"))
    found = graph.routed(
        "alpha", [("llm-a", weights[0]), ("llm-b", weights[1])], graph.by_name(services)
    )[0]
    out = ab_graph("alpha", "chat", found, GATEWAY)
    out["metadata"]["labels"]["platform.io/tenant"] = tenant
    return out


BOTH = (isvc("llm-a"), isvc("llm-b"))
POLICIES = (policy("llm-a"), policy("llm-b"))


@pytest.mark.parametrize(
    ("options", "facts", "action", "writes"),
    [
        (graph_params(), graph.GraphFacts(None, BOTH, POLICIES), "write", 1),
        (graph_params(), graph.GraphFacts(live_graph(), BOTH, POLICIES), "none", 0),
        (
            graph_params(),
            graph.GraphFacts(live_graph(weights=(50, 50)), BOTH, POLICIES),
            "write",
            1,
        ),
        (graph_params(state="absent"), graph.GraphFacts(live_graph()), "delete", 1),
        (graph_params(state="absent"), graph.GraphFacts(None), "none", 0),
    ],
)
def test_the_plan_over_facts(options, facts, action, writes):
    request = graph.parse_graph(options)
    planned = graph.plan(request, facts)
    assert planned.action == action
    assert len(graph.report(request, planned)["writes"]) == writes


@pytest.mark.parametrize(
    ("options", "facts", "field", "words"),
    [
        (
            graph_params(),
            graph.GraphFacts(live_graph(tenant="alpha-b")),
            "name",
            "rule graph-of-own-tenant",
        ),
        (
            graph_params(),
            graph.GraphFacts(None, BOTH[:1], POLICIES),
            "routes[1].service",
            "llm-b is not a model service of tenant alpha",
        ),
        (
            graph_params(),
            graph.GraphFacts(None, (BOTH[0], isvc("llm-b", ready=False)), POLICIES),
            "routes[1].service",
            "no address yet",
        ),
        (
            graph_params(),
            graph.GraphFacts(None, BOTH, (POLICIES[0], policy("llm-b", ["elsewhere"]))),
            None,
            GATEWAY,
        ),
    ],
)
def test_the_plan_refuses(options, facts, field, words):
    with pytest.raises(PlatformValidationError) as excinfo:
        graph.plan(graph.parse_graph(options), facts)
    assert words in str(excinfo.value)
    if field is not None:
        assert [e.field for e in excinfo.value.errors] == [field]


def test_parsed_checks_the_routes_before_planning():
    with pytest.raises(PlatformValidationError, match="not 100"):
        graph.parse_graph(
            graph_params(
                state="parsed",
                routes=[{"service": "a", "weight": 1}, {"service": "b", "weight": 2}],
            )
        )
    assert graph.parse_graph(graph_params(state="gathered", routes=None)).routes == ()


def services_cluster(ready=("llm-a", "llm-b"), live=None):
    cluster = tenant_cluster()
    for name in ("llm-a", "llm-b"):
        service.run_service(params(name=name), cluster, False)
    for name in ready:
        key = cluster.key("InferenceService", NS, name)
        cluster.store[key]["status"] = {
            "conditions": [{"type": "Ready", "status": "True"}],
            "address": {"url": f"http://{name}-v1-predictor.{NS}.svc.cluster.local"},
        }
    if live is not None:
        cluster.apply(live)
    return cluster


CASES = [
    ({}, {}),
    ({"ready": ("llm-a",)}, {}),
    ({"live": "alpha"}, {}),
    (
        {"live": "alpha"},
        {"routes": [{"service": "llm-a", "weight": 50}, {"service": "llm-b", "weight": 50}]},
    ),
    ({"live": "alpha-b"}, {}),
    ({}, {"namespace": "elsewhere"}),
]


@pytest.mark.parametrize(("world", "options"), CASES)
def test_parsed_of_gathered_is_the_check_mode_run(world, options):
    def cluster():
        tenant = world.get("live")
        live = live_graph(tenant=tenant) if tenant else None
        if live is not None:
            live["metadata"]["namespace"] = options.get("namespace", GATEWAY)
        return services_cluster(world.get("ready", ("llm-a", "llm-b")), copy.deepcopy(live))

    gathered = service.GRAPH_FLOW.run(
        graph_params(**{**options, "state": "gathered", "routes": None}), cluster(), False
    )["gathered"]
    parsed_params = graph_params(**{**options, "state": "parsed", "facts": gathered})
    try:
        check = service.run_graph(graph_params(**options), cluster(), True)
    except PlatformValidationError as exc:
        with pytest.raises(PlatformValidationError) as again:
            service.GRAPH_FLOW.offline(parsed_params)
        assert str(again.value) == str(exc)
        return
    parsed = service.GRAPH_FLOW.offline(parsed_params)
    assert parsed is not None and parsed.pop("state") == "parsed" and parsed.pop("changed") is False
    check.pop("changed")
    assert parsed == check


def test_gathered_reads_and_writes_nothing():
    cluster = services_cluster()
    before = len(cluster.real_writes)
    out = service.GRAPH_FLOW.run(graph_params(state="gathered", routes=None), cluster, False)
    assert out["changed"] is False and len(cluster.real_writes) == before
    gathered = out["gathered"]
    assert gathered["inferencegraphs"] == []
    assert [s["metadata"]["name"] for s in gathered["inferenceservices"]] == ["llm-a", "llm-b"]
    assert cluster.get(GRAPH_API, "InferenceGraph", "alpha-chat", namespace=GATEWAY) is None
    assert cluster.get(ISVC_API, "InferenceService", "llm-a", namespace=NS) is not None
    assert service.GRAPH_FLOW.offline(graph_params()) is None  # present connects
