# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""inference/inputs: the inference modules' options checked before the cluster is read,
each refusal naming its field."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.inference import inputs
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.inference.inference_objects import (
    canary,
    model,
    params,
)


def refused_fields(check, given):
    with pytest.raises(PlatformValidationError) as excinfo:
        check(given)
    return [e.field for e in excinfo.value.errors]


def test_a_full_deploy_passes():
    inputs.validate_service(
        params(
            canaries=[canary("v2", 10)],
            autoscaling={"min_replicas": 1, "max_replicas": 4, "gpu_util_target": 70},
        )
    )


@pytest.mark.parametrize(
    ("extra", "fields"),
    [
        ({"queue": None}, ["queue"]),
        ({"queue": ""}, ["queue"]),
        ({"model": None}, ["model"]),
        ({"model": model(storage_uri="nope")}, ["model.storage_uri"]),
        ({"canaries": [canary("v2", 120)]}, ["canaries[0].traffic_percent"]),
        ({"autoscaling": {"gpu_util_target": 70}}, ["autoscaling.max_replicas"]),
        ({"tenant": "Alpha"}, ["tenant"]),
        ({"name": "llm_1"}, ["name"]),
        ({"name": "a" * (inputs.SERVICE_NAME_MAX + 1)}, ["name"]),
        ({"gateway_namespaces": ["platform-serving", "Bad"]}, ["gateway_namespaces[1]"]),
    ],
)
def test_each_deploy_refusal_names_its_field(extra, fields):
    assert refused_fields(inputs.validate_service, params(**extra)) == fields


@pytest.mark.parametrize(
    ("extra", "field", "kind"),
    [
        ({"gateway_namespaces": ["tenant-beta"]}, "gateway_namespaces[0]", "a tenant namespace"),
        (
            {"gateway_namespaces": ["platform-serving", "kube-system"]},
            "gateway_namespaces[1]",
            "a control",
        ),
        ({"monitoring_namespace": "tenant-alpha"}, "monitoring_namespace", "a tenant namespace"),
        ({"monitoring_namespace": "platform-system"}, "monitoring_namespace", "a control"),
    ],
)
def test_a_peer_namespace_is_never_a_tenants_or_a_control_namespace(extra, field, kind):
    """Rule serving-peer-namespace: the NetworkPolicy admits only the gateway and monitoring."""
    with pytest.raises(PlatformValidationError) as excinfo:
        inputs.validate_service(params(**extra))
    assert [e.field for e in excinfo.value.errors] == [field]
    message = excinfo.value.errors[0].message
    assert f"is {kind}" in message and message.endswith("(rule serving-peer-namespace)")


def test_other_gateway_and_monitoring_namespaces_pass():
    """An operator's own gateway namespace (Istio's, say) and no monitoring at all are fine."""
    inputs.validate_service(params(gateway_namespaces=["istio-system"], monitoring_namespace=""))


def test_the_longest_service_name_keeps_its_deployment_a_dns_label():
    longest = "a" * inputs.SERVICE_NAME_MAX
    inputs.validate_service(params(name=longest))
    assert len(f"{longest}-{'v' * 20}-predictor") == 63


def test_every_deploy_error_is_reported_at_once():
    fields = refused_fields(
        inputs.validate_service, params(queue=None, model=model(gpus=-1), tenant="Bad")
    )
    assert sorted(fields) == ["model.gpus", "queue", "tenant"]


@pytest.mark.parametrize(
    ("traffic", "fields"),
    [
        (None, ["traffic"]),
        ({}, ["traffic"]),
        ({"v2": 101}, ["traffic.v2"]),
        ({"v2": -1}, ["traffic.v2"]),
        ({"v2": "40"}, ["traffic.v2"]),
        ({"v2": True}, ["traffic.v2"]),
        ({"v2": 40, "v3": 4.5}, ["traffic.v3"]),
    ],
)
def test_step_needs_whole_percents(traffic, fields):
    given = params(action="step", model=None, queue=None, traffic=traffic)
    assert refused_fields(inputs.validate_service, given) == fields


def test_step_with_traffic_needs_no_model_or_queue():
    inputs.validate_service(params(action="step", model=None, queue=None, traffic={"v2": 40}))


def test_canary_needs_canaries():
    given = params(action="canary", model=None, queue=None, canaries=[])
    assert refused_fields(inputs.validate_service, given) == ["canaries"]


@pytest.mark.parametrize("action", ["promote", "rollback"])
def test_promote_and_rollback_need_nothing_more(action):
    inputs.validate_service(params(action=action, model=None, queue=None))


def test_absent_needs_no_model_or_queue():
    inputs.validate_service(params(state="absent", model=None, queue=None))


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


def test_a_graph_of_two_routes_adding_up_to_100_passes():
    inputs.validate_graph(graph_params())


@pytest.mark.parametrize(
    ("routes", "fields"),
    [
        (
            [{"service": "llm-a", "weight": 70}, {"service": "llm-b", "weight": 20}],
            ["routes[].weight"],
        ),
        (
            [{"service": "llm-a", "weight": 50}, {"service": "llm-a", "weight": 50}],
            ["routes[1].service"],
        ),
        ([{"service": "llm-a", "weight": 100}], ["routes"]),
        (None, ["routes"]),
        (
            [{"service": "llm-a", "weight": 70}, {"service": "Bad", "weight": 30}],
            ["routes[1].service"],
        ),
        (
            [{"service": "llm-a", "weight": 70}, {"service": "llm-b", "weight": "30"}],
            ["routes[1].weight"],
        ),
        (
            [{"service": "llm-a", "weight": 170}, {"service": "llm-b", "weight": -70}],
            ["routes[0].weight", "routes[1].weight"],
        ),
    ],
)
def test_each_graph_refusal_names_its_field(routes, fields):
    assert refused_fields(inputs.validate_graph, graph_params(routes=routes)) == fields


def test_the_weights_message_gives_the_sum():
    routes = [{"service": "llm-a", "weight": 70}, {"service": "llm-b", "weight": 20}]
    with pytest.raises(PlatformValidationError, match="the weights add up to 90, not 100"):
        inputs.validate_graph(graph_params(routes=routes))


def test_a_duplicate_route_says_so():
    routes = [{"service": "llm-a", "weight": 50}, {"service": "llm-a", "weight": 50}]
    with pytest.raises(PlatformValidationError, match="'llm-a' is named twice"):
        inputs.validate_graph(graph_params(routes=routes))


def test_removing_a_graph_needs_no_routes():
    inputs.validate_graph(graph_params(state="absent", routes=None))


@pytest.mark.parametrize(
    ("given", "fields"),
    [
        ({"serving_port": 70000}, ["serving_port"]),
        ({"metrics_port": 0}, ["metrics_port"]),
        ({"serving_port": True, "metrics_port": -1}, ["serving_port", "metrics_port"]),
    ],
)
def test_ports_outside_tcp_are_refused_before_anything_is_read(given, fields):
    """Rule inference-ports: a serving port of 70000 used to write three objects first."""
    assert refused_fields(inputs.validate_service, params(**given)) == fields
    inputs.validate_service(params(serving_port=8080, metrics_port=65535))  # accepted
