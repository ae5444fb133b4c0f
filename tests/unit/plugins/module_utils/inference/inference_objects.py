# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the inference tests start from: model and canary inputs, a ServiceSpec built
through the domain's own parsers, and tenant alpha's queues on the fake cluster."""

from __future__ import annotations

from typing import Any

from ansible_collections.gpucloud.platform.plugins.module_utils.inference import inputs
from ansible_collections.gpucloud.platform.plugins.module_utils.inference.spec import (
    ServiceSpec,
    parse_autoscaling,
    parse_canaries,
    parse_model,
)
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster

QUEUE_API = "scheduling.volcano.sh/v1beta1"
ISVC_API = "serving.kserve.io/v1beta1"
GRAPH_API = "serving.kserve.io/v1alpha1"
HPA_API = "autoscaling/v2"
NETPOL_API = "networking.k8s.io/v1"
GPU = "nvidia.com/gpu"
NS = "tenant-alpha"
TEAM_QUEUE = "tenant-alpha-research"
PAYG_QUEUE = "tenant-alpha-payg"


def model(version: str = "v1", **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "version": version,
        "format": "vllm",
        "storage_uri": f"s3://models/llama/{version}",
        "gpus": 1,
    }
    out.update(extra)
    return out


def canary(version: str = "v2", traffic: int = 20, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "version": version,
        "storage_uri": f"s3://models/llama/{version}",
        "traffic_percent": traffic,
    }
    out.update(extra)
    return out


def make_spec(
    stable: dict[str, Any] | None = None,
    canaries: list[dict[str, Any]] | None = None,
    autoscaling: dict[str, Any] | None = None,
    *,
    name: str = "llm",
    tenant: str = "alpha",
    queue: str = TEAM_QUEUE,
    job_class: str = "critical",
    mode: str = "standard",
) -> ServiceSpec:
    """A ServiceSpec parsed by spec.py; any parse error fails the test that asked."""
    parsed, errors = parse_model("model", stable or model())
    assert not errors, errors
    assert parsed is not None
    parsed_canaries, errors = parse_canaries(canaries or [], parsed)
    assert not errors, errors
    auto, errors = parse_autoscaling(autoscaling)
    assert not errors, errors
    return ServiceSpec(
        name=name,
        tenant=tenant,
        queue=queue,
        job_class=job_class,
        stable=parsed,
        canaries=parsed_canaries,
        autoscaling=auto,
        mode=mode,
    )


def params(**extra: Any) -> dict[str, Any]:
    """The inference_service module's parameters as AnsibleModule hands them over: every
    option with its default, then ``extra``."""
    out: dict[str, Any] = {k: v.get("default") for k, v in inputs.SERVICE_OPTIONS.items()}
    out.update(name="llm", tenant="alpha", queue=TEAM_QUEUE, model=model())
    out.update(extra)
    return out


def queue_obj(name: str, gpus: int | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"parent": "tenant-alpha-subscription"}
    if gpus is not None:
        spec["capability"] = {GPU: str(gpus)}
    return {"apiVersion": QUEUE_API, "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def tenant_objects(
    critical_allowed: bool = True, team_gpus: int | None = 8, payg_gpus: int | None = 16
) -> list[dict[str, Any]]:
    labels = {"platform.io/tenant": "alpha"}
    if critical_allowed:
        labels["platform.io/allow-critical"] = "true"
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS, "labels": labels}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "platform-queues", "namespace": NS},
            "data": {TEAM_QUEUE: "team", PAYG_QUEUE: "payg"},
        },
        queue_obj(TEAM_QUEUE, team_gpus),
        queue_obj(PAYG_QUEUE, payg_gpus),
    ]


def tenant_cluster(**kwargs: Any) -> FakeCluster:
    return FakeCluster(tenant_objects(**kwargs))
