# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The manifests inference/manifests renders, validated against KServe 0.20.0's own CRD
schemas (``config/crd/full`` of the kserve module, from the Go module cache), so a field
KServe does not know or a value of the wrong type fails here, not on the API server.

Two checks each: the schema as the API server reads it (types, enums, bounds, required
fields), and a strict reading in which an object with ``properties`` admits no other
key. The API server would prune such a key silently (the CRDs do not preserve unknown
fields), so a misspelt field would be lost without a word; strict catches it."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from ansible_collections.gpucloud.platform.plugins.module_utils.inference import manifests
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.classes import (
    DEFAULT_CLASSES,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.inference.inference_objects import (
    canary,
    make_spec,
    model,
)

KSERVE_MODULE = "github.com/kserve/kserve@v0.20.0"
CRD_DIR = "config/crd/full"


def _kserve_dir() -> Path:
    if shutil.which("go") is None:
        pytest.fail(
            "go is not on PATH: the KServe CRD schema tests read KServe 0.20.0's CRDs from the "
            f"Go module cache (go mod download {KSERVE_MODULE}); install Go (CI's unit stage has it)"
        )
    proc = subprocess.run(
        ["go", "mod", "download", "-json", KSERVE_MODULE],
        cwd="/",
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        pytest.fail(f"go mod download {KSERVE_MODULE} failed: {proc.stdout}{proc.stderr}")
    return Path(json.loads(proc.stdout)["Dir"])


def _schema(path: Path, version: str) -> dict[str, Any]:
    crd = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    assert crd["kind"] == "CustomResourceDefinition", path
    (entry,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    return entry["schema"]["openAPIV3Schema"]


def strict(schema: Any) -> Any:
    """``schema`` with ``additionalProperties: false`` on every object that lists its
    properties and does not preserve unknown fields."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict(v) if k != "properties" else v for k, v in schema.items()}
    if "properties" in schema:
        out["properties"] = {k: strict(v) for k, v in schema["properties"].items()}
        if "additionalProperties" not in schema and not schema.get(
            "x-kubernetes-preserve-unknown-fields"
        ):
            out["additionalProperties"] = False
    return out


@pytest.fixture(scope="module")
def crds() -> dict[str, dict[str, Any]]:
    root = _kserve_dir() / CRD_DIR
    isvc = _schema(root / "serving.kserve.io_inferenceservices.yaml", "v1beta1")
    graph = _schema(root / "serving.kserve.io_inferencegraphs.yaml", "v1alpha1")
    out = {
        "isvc": isvc["properties"]["spec"],
        "graph": graph["properties"]["spec"],
    }
    for name in list(out):
        jsonschema.Draft7Validator.check_schema(out[name])
        out[f"{name}-strict"] = strict(out[name])
    return out


def errors(schema: dict[str, Any], instance: Any) -> list[str]:
    validator = jsonschema.Draft7Validator(schema)
    return [
        f"{'.'.join(str(p) for p in e.absolute_path)}: {e.message}"
        for e in validator.iter_errors(instance)
    ]


def isvc(spec, billing="subscription"):
    history = [{"version": spec.stable.version, "storage_uri": spec.stable.storage_uri}]
    return manifests.inference_service(spec, DEFAULT_CLASSES[spec.job_class], billing, history)


SPECS = {
    "standard": make_spec,
    "standard-canaries": lambda: make_spec(
        stable=model("v1", gpus=2, runtime="kserve-vllm", cpu="8", memory="64Gi", args=["--x"]),
        canaries=[canary("v2", 20), canary("v3", 10, min_replicas=1, gpus=1)],
        autoscaling={"min_replicas": 2, "max_replicas": 4, "gpu_util_target": 70},
    ),
    "standard-scaling": lambda: make_spec(
        autoscaling={
            "min_replicas": 1,
            "max_replicas": 3,
            "scale_metric": "rps",
            "scale_target": 9,
        },
        queue="tenant-alpha-payg",
        job_class="normal",
    ),
    "standard-identity": lambda: replace(
        make_spec(canaries=[canary("v2", 20)]),
        service_account="model-reader",
        image_pull_secrets=("alpha-registry", "mirror"),
    ),
    "knative": lambda: make_spec(mode="knative"),
    "knative-identity": lambda: replace(
        make_spec(canaries=[canary("v2", 10)], mode="knative"),
        service_account="model-reader",
        image_pull_secrets=("alpha-registry",),
    ),
    "knative-canary": lambda: make_spec(
        stable=model("v1", gpus=1, memory="16Gi"),
        canaries=[canary("v2", 10)],
        autoscaling={"max_replicas": 5, "scale_metric": "concurrency", "scale_target": 4},
        mode="knative",
    ),
}


@pytest.mark.parametrize("strictness", ["", "-strict"])
@pytest.mark.parametrize("case", sorted(SPECS))
def test_the_inference_service_is_valid_for_kserve(crds, case, strictness):
    manifest = isvc(SPECS[case]())
    assert errors(crds["isvc" + strictness], manifest["spec"]) == []


def test_the_knative_rendering_uses_kserves_canary_traffic_field(crds):
    manifest = isvc(SPECS["knative-canary"]())
    predictor_schema = crds["isvc"]["properties"]["predictor"]["properties"]
    assert predictor_schema["canaryTrafficPercent"]["type"] == "integer"
    assert manifest["spec"]["predictor"]["canaryTrafficPercent"] == 10


@pytest.mark.parametrize(
    ("case", "change", "where"),
    [
        (
            "knative-canary",
            ("predictor", "canaryTrafficPercent", "ten"),
            "predictor.canaryTrafficPercent",
        ),
        ("standard", ("predictor", "minReplicas", "two"), "predictor.minReplicas"),
        ("standard", ("predictor", "labels", {"a": 1}), "predictor.labels.a"),
        ("standard", ("predictor", "model", "vllm"), "predictor.model"),
        ("standard-canaries", ("canary", 0, "trafficPercent", 120), "canary.0.trafficPercent"),
        ("standard-canaries", ("canary", 1, "trafficPercent", "10"), "canary.1.trafficPercent"),
    ],
)
def test_a_value_of_the_wrong_type_fails_the_schema(crds, case, change, where):
    body = copy.deepcopy(isvc(SPECS[case]())["spec"])
    *path, key, value = change
    node = body
    for part in path:
        node = node[part]
    node[key] = value
    found = errors(crds["isvc"], body)
    assert found and all(f.startswith(where) for f in found), found
    assert errors(crds["isvc-strict"], body), "strict is at least as strict"


def test_a_spec_without_a_predictor_or_a_canary_without_traffic_fails(crds):
    assert errors(crds["isvc"], {}) == [": 'predictor' is a required property"]
    body = copy.deepcopy(isvc(SPECS["standard-canaries"]())["spec"])
    del body["canary"][0]["trafficPercent"]
    assert errors(crds["isvc"], body) == ["canary.0: 'trafficPercent' is a required property"]


def test_kserve_requires_the_canary_model_container_name(crds):
    """The canary's predictor.model is a corev1.Container whose name the CRD requires
    (KServe's webhook refuses it on the stable predictor instead)."""
    body = copy.deepcopy(isvc(SPECS["standard-canaries"]())["spec"])
    assert "name" not in body["predictor"]["model"]
    for entry in body["canary"]:
        del entry["predictor"]["model"]["name"]
    assert errors(crds["isvc"], body) == [
        "canary.0.predictor.model: 'name' is a required property",
        "canary.1.predictor.model: 'name' is a required property",
    ]


def test_an_unknown_field_fails_only_the_strict_schema(crds):
    body = copy.deepcopy(isvc(SPECS["knative-canary"]())["spec"])
    body["predictor"]["canaryTraffic"] = 10
    assert errors(crds["isvc"], body) == []
    assert errors(crds["isvc-strict"], body)


def graph():
    return manifests.ab_graph(
        "alpha",
        "chat",
        [
            ("llm-a", "http://llm-a-v1-predictor.tenant-alpha.svc.cluster.local", 70),
            ("llm-b", "http://llm-b-v1-predictor.tenant-alpha.svc.cluster.local", 30),
        ],
    )


@pytest.mark.parametrize("strictness", ["", "-strict"])
def test_the_inference_graph_is_valid_for_kserve(crds, strictness):
    assert errors(crds["graph" + strictness], graph()["spec"]) == []


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (("routerType", "RoundRobin"), "nodes.root.routerType"),
        (("steps", 0, "weight", "half"), "nodes.root.steps.0.weight"),
        (("steps", 1, "serviceUrl", 8080), "nodes.root.steps.1.serviceUrl"),
    ],
)
def test_a_broken_inference_graph_fails_the_schema(crds, change, where):
    body = copy.deepcopy(graph()["spec"])
    *path, key, value = change
    node = body["nodes"]["root"]
    for part in path:
        node = node[part]
    node[key] = value
    found = errors(crds["graph"], body)
    assert found and all(f.startswith(where) for f in found), found
    assert errors(crds["graph"], {"nodes": {"root": {"steps": []}}})
    assert errors(crds["graph"], {})
