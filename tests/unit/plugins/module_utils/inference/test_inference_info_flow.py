# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``inference_service_info`` through the flow contract: the report as a table of
cases over facts (no cluster, no fake), and ``parsed`` of ``gathered`` against the normal
run on the fake cluster."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.inference import info, service
from ansible_collections.gpucloud.platform.plugins.module_utils.inference.service import (
    INFO_FLOW,
)
from ansible_collections.gpucloud.platform.plugins.modules import inference_service_info
from ansible_collections.gpucloud.platform.tests.unit.flow_checks import assert_parsed_is_the_run
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.inference.inference_objects import (
    NS,
    PAYG_QUEUE,
    canary,
    model,
    params,
    tenant_cluster,
)

MANAGED = {"platform.io/managed-by": "gpucloud-platform"}


def options(**given):
    return {n: s.get("default") for n, s in inference_service_info.OPTIONS.items()} | given


def isvc(name, tenant="alpha", version="v1"):
    return {
        "metadata": {
            "name": name,
            "namespace": f"tenant-{tenant}",
            "labels": {"platform.io/tenant": tenant, **MANAGED},
        },
        "spec": {"predictor": {"name": version, "model": {"storageUri": f"s3://m/{version}"}}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def predictor(service_name, version, ready, tenant="alpha"):
    return {
        "metadata": {
            "name": f"{service_name}-{version}-predictor",
            "namespace": f"tenant-{tenant}",
        },
        "spec": {"replicas": 1},
        "status": {"readyReplicas": ready},
    }


def graph(name, tenant="alpha", rollout_of=None, namespace="platform-serving"):
    labels = {"platform.io/tenant": tenant, **MANAGED}
    if rollout_of:
        labels["platform.io/rollout-of"] = rollout_of
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"nodes": {"root": {"routerType": "Splitter", "steps": []}}},
    }


FACTS = info.InfoFacts(
    services=(isvc("llm"), isvc("chat"), isvc("llm", tenant="beta", version="v4")),
    predictors=(predictor("llm", "v1", 1), predictor("chat", "v1", 0)),
    graphs=(
        graph("alpha-ab"),
        graph("alpha-llm-canary", rollout_of="llm"),
        graph("beta-ab", tenant="beta"),
        graph("elsewhere", namespace="other"),
    ),
)

# (case, options, facts, [(namespace, name, ready, has a router)], [graph names])
CASES = [
    (
        "every tenant",
        {},
        FACTS,
        [
            ("tenant-alpha", "chat", False, False),
            ("tenant-alpha", "llm", True, True),
            ("tenant-beta", "llm", False, False),
        ],
        ["alpha-ab", "beta-ab"],
    ),
    (
        "one tenant of facts that hold more",
        {"tenant": "beta"},
        FACTS,
        [("tenant-beta", "llm", False, False)],
        ["beta-ab"],
    ),
    (
        "one service",
        {"tenant": "alpha", "name": "llm"},
        FACTS,
        [("tenant-alpha", "llm", True, True)],
        ["alpha-ab"],
    ),
    ("a service the facts do not hold", {"name": "nobody"}, FACTS, [], ["alpha-ab", "beta-ab"]),
    (
        "graphs of another serving namespace",
        {"serving_namespace": "other"},
        FACTS,
        [
            ("tenant-alpha", "chat", False, False),
            ("tenant-alpha", "llm", True, False),
            ("tenant-beta", "llm", False, False),
        ],
        ["elsewhere"],
    ),
    ("nothing", {}, info.InfoFacts(), [], []),
]


@pytest.mark.parametrize(
    "given,facts,services,graphs", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_report_over_facts(given, facts, services, graphs):
    request = info.parse_info(options(**given))
    said = info.report_info(request, info.plan_info(request, facts))
    assert [
        (s["namespace"], s["name"], s["ready"], s["router"] is not None) for s in said["services"]
    ] == services
    assert [g["name"] for g in said["graphs"]] == graphs


def test_gathered_keeps_only_what_the_report_reads():
    deployment = predictor("llm", "v1", 1)
    deployment["metadata"]["managedFields"] = [{"manager": "kserve"}]
    deployment["spec"]["template"] = {"spec": {"containers": []}}
    data = info.facts_out(info.InfoFacts(predictors=(deployment,)))
    assert data["predictors"] == [predictor("llm", "v1", 1)]
    assert data["services"] == data["hpas"] == data["graphs"] == []


def test_parsed_needs_facts_that_are_lists():
    with pytest.raises(PlatformValidationError, match=r"facts\.services"):
        INFO_FLOW.offline(options(state="parsed", facts={"services": {}}))


def serving_cluster():
    """Two services of tenant alpha, one with its GPU-utilisation HPA, one with a canary
    (and so its canary router), and an A/B graph between them."""
    cluster = tenant_cluster()
    autoscaling = {"min_replicas": 1, "max_replicas": 4, "gpu_util_target": 70}
    service.run_service(params(name="llm-a", autoscaling=autoscaling), cluster, False)
    service.run_service(
        params(name="llm-b", queue=PAYG_QUEUE, model=model("v3"), canaries=[canary("v4", 10)]),
        cluster,
        False,
    )
    for name in ("llm-a", "llm-b"):
        cluster.store[cluster.key("InferenceService", NS, name)]["status"] = {
            "conditions": [{"type": "Ready", "status": "True"}],
            "address": {"url": f"http://{name}.{NS}.svc.cluster.local"},
        }
    routes = [{"service": "llm-a", "weight": 70}, {"service": "llm-b", "weight": 30}]
    graph_params = {"name": "chat", "tenant": "alpha", "state": "present"}
    service.run_graph(
        {**graph_params, "namespace": "platform-serving", "routes": routes}, cluster, False
    )
    return cluster


@pytest.mark.parametrize(
    "given",
    [{}, {"tenant": "alpha"}, {"tenant": "alpha", "name": "llm-b"}, {"tenant": "beta"}],
    ids=["every tenant", "one tenant", "one service", "a tenant without services"],
)
def test_parsed_of_gathered_is_the_normal_run(given):
    cluster = serving_cluster()
    gathered = INFO_FLOW.run(options(state="gathered", **given), cluster, False)
    assert set(gathered) == {"changed", "gathered"} and gathered["changed"] is False
    assert_parsed_is_the_run(
        INFO_FLOW,
        lambda: INFO_FLOW.run(options(**given), serving_cluster(), False),
        options(state="parsed", facts=gathered["gathered"], **given),
    )


def test_parsed_of_every_tenants_facts_is_one_tenants_run():
    gathered = INFO_FLOW.run(options(state="gathered"), serving_cluster(), False)["gathered"]
    assert_parsed_is_the_run(
        INFO_FLOW,
        lambda: INFO_FLOW.run(options(tenant="alpha", name="llm-a"), serving_cluster(), False),
        options(state="parsed", facts=gathered, tenant="alpha", name="llm-a"),
    )
