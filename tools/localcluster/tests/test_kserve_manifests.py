"""How the local cluster renders KServe's own files: configuration, webhooks,
runtimes and CRDs, on a small stand-in for the module's config/ tree."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest
import yaml

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

import cluster  # noqa: E402
import pins  # noqa: E402

CONFIGMAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "inferenceservice-config", "namespace": "kserve"},
    "data": {
        "_example": "left alone",
        "deploy": '{\n  "defaultDeploymentMode": "Serverless"\n}',
        "ingress": json.dumps(
            {
                "enableGatewayApi": True,
                "ingressDomain": "example.com",
                "disableIngressCreation": False,
                "disableIstioVirtualHost": False,
            }
        ),
    },
}
WEBHOOKS = """---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  creationTimestamp: null
  name: inferenceservice.serving.kserve.io
webhooks:
  - clientConfig:
      service:
        name: $(webhookServiceName)
        namespace: $(kserveNamespace)
        path: /mutate-pods
    name: inferenceservice.kserve-webhook-server.pod-mutator
"""
RUNTIME = {
    "apiVersion": "serving.kserve.io/v1alpha1",
    "kind": "ClusterServingRuntime",
    "metadata": {"name": "NAME"},
    "spec": {"containers": [{"name": "kserve-container", "image": "IMAGE:replace"}]},
}


@pytest.fixture
def module(tmp_path: Path) -> Path:
    (tmp_path / "config/configmap").mkdir(parents=True)
    (tmp_path / "config/configmap/inferenceservice.yaml").write_text(yaml.safe_dump(CONFIGMAP))
    (tmp_path / "config/webhook").mkdir(parents=True)
    (tmp_path / "config/webhook/manifests.yaml").write_text(WEBHOOKS)
    runtimes = tmp_path / "config/runtimes"
    runtimes.mkdir(parents=True)
    images = []
    for name in cluster.KSERVE_RUNTIMES:
        image = name.removeprefix("kserve-")
        doc = json.loads(json.dumps(RUNTIME).replace("NAME", name).replace("IMAGE", image))
        (runtimes / f"{name}.yaml").write_text(yaml.safe_dump(doc))
        images.append({"name": image, "newName": f"kserve/{image}", "newTag": "latest"})
    (runtimes / "kustomization.yaml").write_text(yaml.safe_dump({"images": images}))
    crds = tmp_path / "config/crd/full"
    (crds / "clusterstoragecontainer").mkdir(parents=True)
    (crds / "llmisvc").mkdir()
    for path in (
        "serving.kserve.io_inferenceservices.yaml",
        "clusterstoragecontainer/serving.kserve.io_clusterstoragecontainers.yaml",
        "llmisvc/serving.kserve.io_llminferenceservices.yaml",
        "kustomization.yaml",
    ):
        (crds / path).write_text("")
    return tmp_path


def test_configuration_is_standard_mode_without_ingress(module: Path):
    cm = cluster.kserve_config(module)
    assert cm["metadata"] == {"name": "inferenceservice-config", "namespace": "kserve"}
    assert json.loads(cm["data"]["deploy"]) == {"defaultDeploymentMode": "Standard"}
    ingress = json.loads(cm["data"]["ingress"])
    assert ingress["enableGatewayApi"] is False
    assert ingress["disableIngressCreation"] is True
    assert ingress["disableIstioVirtualHost"] is True
    assert ingress["ingressDomain"] == "example.com"
    assert cm["data"]["_example"] == "left alone"


def test_webhooks_point_at_the_loopback_server_with_the_cluster_ca(module: Path, tmp_path: Path):
    state = tmp_path / "state"
    (state / "pki").mkdir(parents=True)
    (state / "pki/ca.crt").write_bytes(b"CA")
    (doc,) = cluster.render_kserve_webhooks(state, module)
    assert "creationTimestamp" not in doc["metadata"]
    (hook,) = doc["webhooks"]
    port = cluster.PORTS["kserve-webhook"]
    assert hook["clientConfig"] == {
        "url": f"https://127.0.0.1:{port}/mutate-pods",
        "caBundle": base64.b64encode(b"CA").decode(),
    }


def test_runtimes_get_plain_image_references_of_the_release(module: Path):
    runtimes = {r["metadata"]["name"]: r for r in cluster.kserve_runtimes(module)}
    assert set(runtimes) == set(cluster.KSERVE_RUNTIMES)
    image = runtimes["kserve-sklearnserver"]["spec"]["containers"][0]["image"]
    assert image == f"kserve/sklearnserver:{pins.KSERVE}"


def test_crds_are_the_full_set_without_other_controllers_kinds(module: Path):
    names = [p.name for p in cluster.kserve_crd_paths(module)]
    assert names == [
        "serving.kserve.io_inferenceservices.yaml",
        "serving.kserve.io_clusterstoragecontainers.yaml",
    ]


def test_the_controller_is_a_component_with_its_own_ports():
    assert cluster.ORDER.index("kserve-controller") > cluster.ORDER.index("vc-scheduler")
    ports = [cluster.PORTS[p] for p in ("kserve-webhook", "kserve-metrics", "kserve-healthz")]
    assert len(set(cluster.PORTS.values())) == len(cluster.PORTS)
    assert all(p > 0 for p in ports)
    assert "kserve" in cluster.SERVICE_USERS
    assert "kserve-manager" in cluster.build.ALL_BINARIES
