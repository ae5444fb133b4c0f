# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The objects `up` puts in the local cluster: the base namespaces and the
Volcano scheduler ConfigMap, Volcano's and KServe's CRDs, Volcano's admission
webhooks (rendered from its chart), KServe's configuration, webhooks and
serving runtimes (from its config/ tree), and the fake nodes of the topology."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

import pins
import topology
from kube_client import REQUEST_TIMEOUT, Kube
from processes import wait_for
from settings import (
    ENABLED_ADMISSIONS,
    HOST,
    KSERVE_CONFIGMAP,
    KSERVE_NS,
    KSERVE_RUNTIMES,
    PORTS,
    SCHEDULER_CONF_KEY,
    SCHEDULER_CONFIGMAP,
    VOLCANO_NS,
    log,
)
from upstream import default_scheduler_conf, kserve_module, volcano_chart

YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# --- CRDs --------------------------------------------------------------------------------

CRD_DIGEST = "gpucloud.localcluster/source-digest"
_CRD_NAME = re.compile(r"^metadata:\n(?:  .*\n)*?  name: (\S+)$", re.M)
CRD_KIND = ("apiextensions.k8s.io/v1", "CustomResourceDefinition")


def _crds_established(kube: Kube, names: list[str]) -> bool:
    for name in names:
        crd = kube.get(*CRD_KIND, name)
        conds = {
            c["type"]: c["status"]
            for c in ((crd or {}).get("status") or {}).get("conditions") or []
        }
        if conds.get("Established") != "True":
            return False
    return True


def apply_crd_files(kube: Kube, paths: list[Path], what: str, skip_unchanged: bool = False) -> None:
    """Apply every CRD in these files and wait until all are Established.

    With skip_unchanged (one CRD per file), a CRD whose stored copy carries
    the file's digest is not parsed or applied again: KServe's
    InferenceService CRD is 1.9 MB of YAML, seconds to parse on every `up`.
    """
    names = []
    for path in paths:
        text = path.read_text()
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        if skip_unchanged and (match := _CRD_NAME.search(text)):
            stored = kube.get(*CRD_KIND, match.group(1))
            if ((stored or {}).get("metadata", {}).get("annotations") or {}).get(
                CRD_DIGEST
            ) == digest:
                names.append(match.group(1))
                continue
        for doc in yaml.load_all(text, Loader=YAML_LOADER):
            if doc:
                doc["metadata"].pop("creationTimestamp", None)
                if skip_unchanged:
                    doc["metadata"].setdefault("annotations", {})[CRD_DIGEST] = digest
                kube.apply(doc)
                names.append(doc["metadata"]["name"])
    wait_for(f"{what} CRDs to be established", lambda: _crds_established(kube, names), 60)


def apply_crds(kube: Kube) -> None:
    chart = volcano_chart()
    # Volcano's own CRDs and its jobflow sub-chart's: vc-controller-manager
    # waits for every controller's informers, the jobflow ones included.
    paths = sorted(chart.glob("crd/bases/*.yaml")) + sorted(
        chart.glob("charts/jobflow/crd/bases/*.yaml")
    )
    apply_crd_files(kube, paths, "Volcano")


# --- KServe ------------------------------------------------------------------------------


def kserve_crd_paths(module: Path) -> list[Path]:
    """KServe's config/crd/full: what its kustomization installs (the v1beta1
    and v1alpha1 kinds and ClusterStorageContainer, which the pod mutator lists
    for a storageUri); not the LLMInferenceService and LocalModel CRDs, whose
    controllers are other binaries."""
    full = module / "config/crd/full"
    return sorted(full.glob("serving.kserve.io_*.yaml")) + sorted(
        full.glob("clusterstoragecontainer/serving.kserve.io_*.yaml")
    )


def kserve_config(module: Path) -> dict[str, Any]:
    """KServe's inferenceservice-config, in Standard mode and without ingress:
    raw Deployments and Services, no Knative, Istio, Ingress or HTTPRoute."""
    cm = yaml.safe_load((module / "config/configmap/inferenceservice.yaml").read_text())
    data = cm["data"]
    deploy = json.loads(data["deploy"])
    deploy["defaultDeploymentMode"] = "Standard"
    ingress = json.loads(data["ingress"])
    ingress.update(
        enableGatewayApi=False, disableIngressCreation=True, disableIstioVirtualHost=True
    )
    data["deploy"] = json.dumps(deploy, indent=2)
    data["ingress"] = json.dumps(ingress, indent=2)
    cm["metadata"] = {"name": KSERVE_CONFIGMAP, "namespace": KSERVE_NS}
    return cm


def _to_loopback(docs: list[dict[str, Any]], port: int, ca: bytes) -> None:
    """Point webhook configurations at a server on this host's port instead of their
    Service (there is no Service network here), trusting the cluster's CA."""
    bundle = base64.b64encode(ca).decode()
    for doc in docs:
        for hook in doc.get("webhooks") or []:
            svc = hook["clientConfig"].pop("service")
            hook["clientConfig"]["url"] = f"https://{HOST}:{port}{svc.get('path', '/')}"
            hook["clientConfig"]["caBundle"] = bundle


def render_kserve_webhooks(state: Path, module: Path) -> list[dict[str, Any]]:
    """KServe's webhook configurations (config/webhook/manifests.yaml), pointed
    at kserve-controller's loopback address instead of its Service."""
    docs = [
        d for d in yaml.safe_load_all((module / "config/webhook/manifests.yaml").read_text()) if d
    ]
    for doc in docs:
        doc["metadata"].pop("creationTimestamp", None)
    _to_loopback(docs, PORTS["kserve-webhook"], (state / "pki" / "ca.crt").read_bytes())
    return docs


def kserve_runtimes(module: Path) -> list[dict[str, Any]]:
    """KSERVE_RUNTIMES from config/runtimes, with the kustomization's image
    names and KServe's release as the tag in place of the `name:replace`
    placeholders (kwok never pulls an image)."""
    runtimes = module / "config/runtimes"
    images = {
        i["name"]: i["newName"]
        for i in yaml.safe_load((runtimes / "kustomization.yaml").read_text())["images"]
    }
    out = []
    for name in KSERVE_RUNTIMES:
        doc = yaml.safe_load((runtimes / f"{name}.yaml").read_text())
        for container in doc["spec"]["containers"]:
            image, _, tag = container["image"].partition(":")
            if tag == "replace":
                container["image"] = f"{images[image]}:{pins.KSERVE}"
        out.append(doc)
    return out


def apply_kserve_crds(kube: Kube) -> None:
    """KServe's namespace and CRDs, Established. `up` runs this beside the
    Volcano components' start: the API server takes seconds over the 1.9 MB
    InferenceService CRD."""
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KSERVE_NS}})
    apply_crd_files(kube, kserve_crd_paths(kserve_module()), "KServe", skip_unchanged=True)


def kserve_tmpdir(state: Path) -> Path:
    """TMPDIR of kserve-controller. controller-runtime's webhook server reads
    tls.crt and tls.key from $TMPDIR/k8s-webhook-server/serving-certs (the
    manager has no flag for it), so the serving certificate is copied there."""
    tmp = state / "kserve-tmp"
    certs = tmp / "k8s-webhook-server" / "serving-certs"
    certs.mkdir(parents=True, exist_ok=True)
    for src, dest in (("kserve-webhook.crt", "tls.crt"), ("kserve-webhook.key", "tls.key")):
        data = (state / "pki" / src).read_bytes()
        if not (certs / dest).exists() or (certs / dest).read_bytes() != data:
            (certs / dest).write_bytes(data)
            (certs / dest).chmod(0o600)
    return tmp


def ensure_kserve_objects(kube: Kube, state: Path) -> None:
    """What kserve-controller needs besides its CRDs before it starts: its
    configuration, webhook configurations and serving certificate."""
    module = kserve_module()
    kube.apply(kserve_config(module))
    for doc in render_kserve_webhooks(state, module):
        kube.apply(doc)
    kserve_tmpdir(state)


# --- Volcano -----------------------------------------------------------------------------


def _helm_template_webhooks(state: Path, bins: Path) -> str:
    """`helm template` of Volcano's chart, its webhooks.yaml only, with the
    admissions ENABLED_ADMISSIONS names; helm's own files stay in the state directory."""
    env = dict(
        os.environ,
        HELM_CACHE_HOME=str(state / "helm/cache"),
        HELM_CONFIG_HOME=str(state / "helm/config"),
        HELM_DATA_HOME=str(state / "helm/data"),
    )
    values = state / "volcano-values.yaml"
    values.write_text(yaml.safe_dump({"custom": {"enabled_admissions": ENABLED_ADMISSIONS}}))
    out = subprocess.run(
        [
            str(bins / "helm"),
            "template",
            "volcano",
            str(volcano_chart()),
            "--namespace",
            VOLCANO_NS,
            "--kube-version",
            pins.KUBERNETES,
            "--values",
            str(values),
            "--show-only",
            "templates/webhooks.yaml",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    if out.returncode != 0:
        raise SystemExit(
            f"localcluster: helm template of Volcano's chart failed: {out.stderr.strip()}"
        )
    return out.stdout


def render_volcano_admission(state: Path, bins: Path) -> list[dict[str, Any]]:
    """Volcano's own webhook configurations and admission policies, from its chart,
    pointed at the webhook server's loopback address instead of a Service."""
    docs = [d for d in yaml.safe_load_all(_helm_template_webhooks(state, bins)) if d]
    _to_loopback(docs, PORTS["vc-webhook-manager"], (state / "pki" / "ca.crt").read_bytes())
    return docs


def root_queue_open(kube: Kube) -> bool:
    """The queue controller opens queues only once all its informers synced."""
    root = kube.get("scheduling.volcano.sh/v1beta1", "Queue", "root") or {}
    return (root.get("status") or {}).get("state") == "Open"


def ensure_base_objects(kube: Kube) -> None:
    for ns in (VOLCANO_NS, "platform-system"):
        kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    if kube.get("v1", "ConfigMap", SCHEDULER_CONFIGMAP, VOLCANO_NS) is None:
        kube.apply(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": SCHEDULER_CONFIGMAP, "namespace": VOLCANO_NS},
                "data": {SCHEDULER_CONF_KEY: default_scheduler_conf()},
            }
        )


# --- the fake nodes ----------------------------------------------------------------------


def fake_nodes(kube: Kube) -> list[Any]:
    return kube.core.list_node(
        label_selector=f"{topology.LABEL_LOCAL}=true", _request_timeout=REQUEST_TIMEOUT
    ).items


def sync_nodes(kube: Kube, nodes: list[topology.FakeNode]) -> None:
    wanted = {n.name for n in nodes}
    for item in fake_nodes(kube):
        if item.metadata.name not in wanted:
            log(f"removing node {item.metadata.name} (not in the topology file)")
            kube.core.delete_node(item.metadata.name, _request_timeout=REQUEST_TIMEOUT)
    for node in nodes:
        manifest = node.manifest()
        status = manifest.pop("status")
        kube.apply(manifest)
        # Capacity lives in status, which apply to the main resource ignores.
        kube.apply(
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node.name}, "status": status},
            subresource="status",
        )


def nodes_ready(kube: Kube, names: set[str]) -> bool:
    ready = {
        i.metadata.name
        for i in fake_nodes(kube)
        if any(
            c.type == "Ready" and c.status == "True"
            for c in (i.status and i.status.conditions) or []
        )
    }
    return names <= ready
