# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The local federation as data (no process, no API call): its ports, its components in
the order `federation.py up` starts them and the tiers `down` stops them in, the
certificates it makes, and the objects it applies: Karmada's CRDs and webhook
configuration (from the module), the APIService of ``cluster.karmada.io``, and for each
member the ServiceAccounts in the member, the join Secrets and the ``Cluster`` object
in Karmada.

A member is joined the way ``karmadactl join`` does it, by the API: in the member a
ServiceAccount with cluster-admin and an impersonator ServiceAccount, each with a token
(TokenRequest: a member without a token controller still joins); in Karmada the two
Secrets in ``karmada-cluster`` and a Push-mode ``Cluster``.
"""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from components import Component

# Rule federation-member-join, one copy: the collection's pure file (standard library only),
# loaded by its path so that the local federation joins a member as the collection does.
_JOIN_FILE = (
    Path(__file__).resolve().parents[2]
    / "plugins"
    / "module_utils"
    / "federation"
    / "member_join.py"
)
_spec = importlib.util.spec_from_file_location("gpucloud_member_join", _JOIN_FILE)
assert _spec is not None and _spec.loader is not None
_join = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_join)

HOST = "127.0.0.1"
DEFAULT_NAME = "fed"
# The federation's name and port offset, as GPUCLOUD_LOCALCLUSTER and
# GPUCLOUD_LOCALCLUSTER_PORT_OFFSET are a local cluster's.
NAME_ENV = "GPUCLOUD_FEDERATION"
OFFSET_ENV = "GPUCLOUD_FEDERATION_PORT_OFFSET"
# A block of its own, below Linux's ephemeral range (32768-) and above every local
# cluster's ports (20257-29701 plus their offsets): a federation and the local
# clusters it joins never meet, whatever offsets either runs at.
BASE_PORTS = {
    "etcd": 31379,
    "etcd-peer": 31380,
    "kube-apiserver": 31443,
    "karmada-aggregated-apiserver": 31444,
    "karmada-webhook": 31445,
    "kube-controller-manager": 31257,
    "karmada-controller-manager-metrics": 31080,
    "karmada-controller-manager-healthz": 31081,
    "karmada-scheduler-metrics": 31082,
    "karmada-scheduler-healthz": 31083,
    "karmada-webhook-metrics": 31084,
    "karmada-webhook-healthz": 31085,
}

KARMADA_SYSTEM = "karmada-system"
KARMADA_CLUSTER = _join.KARMADA_CLUSTER
AGGREGATED_SERVICE = "karmada-aggregated-apiserver"
IMPERSONATOR_SA = _join.IMPERSONATOR_SA
FIELD_MANAGER = "gpucloud-federation"
# docs/conventions.md: a node's location, a cloud node's region, an IDC node's
# compliance zone; here on the member Cluster that holds such nodes.
LOCATION_LABEL = "platform.io/node-location"
REGION_LABEL = "topology.kubernetes.io/region"
COMPLIANCE_ZONE_LABEL = "platform.io/compliance-zone"
MANAGED_BY_LABEL = "platform.io/managed-by"
MANAGED_BY = "gpucloud-localcluster"
LOCATIONS = ("idc", "cloud")
TOKEN_SECONDS = _join.TOKEN_SECONDS
member_sa = _join.member_sa
token_claims = _join.token_claims
token_reusable = _join.token_reusable
secret_value = _join.secret_value
_b64 = _join._b64

# Karmada's kube-controller-manager runs only what Karmada's own deployment runs
# (artifacts/deploy/kube-controller-manager.yaml): no node or workload controller.
KCM_CONTROLLERS = (
    "namespace,garbagecollector,serviceaccount-token,ttl-after-finished,bootstrapsigner,"
    "tokencleaner,csrcleaner,csrsigning,clusterrole-aggregation"
)


def name_from_env() -> str:
    return os.environ.get(NAME_ENV, DEFAULT_NAME)


def ports(offset: int) -> dict[str, int]:
    return {name: port + offset for name, port in BASE_PORTS.items()}


def offset_from_env() -> int:
    return int(os.environ.get(OFFSET_ENV, "0"))


def apiserver_url(port_map: dict[str, int]) -> str:
    return f"https://{HOST}:{port_map['kube-apiserver']}"


# --- members ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Member:
    """One ``--member LOCATION=LOCALCLUSTER[,region=R][,compliance-zone=Z]``: the
    Cluster is named after the local cluster."""

    location: str
    cluster: str
    region: str | None = None
    compliance_zone: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")


def parse_member(text: str) -> Member:
    """``idc=fed-idc`` or ``cloud=fed-cloud,region=cn-hangzhou,compliance-zone=z1``."""
    head, *rest = text.split(",")
    location, sep, cluster = head.partition("=")
    if not sep or location not in LOCATIONS:
        raise ValueError(f"--member {text!r}: starts with idc=NAME or cloud=NAME")
    if not _DNS_LABEL.match(cluster) or len(cluster) > 48:
        raise ValueError(f"--member {text!r}: {cluster!r} is not a local cluster's name")
    extra: dict[str, str] = {}
    for item in rest:
        key, sep, value = item.partition("=")
        if key not in ("region", "compliance-zone") or not sep:
            raise ValueError(f"--member {text!r}: {item!r} is not region=R or compliance-zone=Z")
        if not value or not _LABEL_VALUE.match(value) or len(value) > 63:
            raise ValueError(f"--member {text!r}: {value!r} is not a label value")
        extra[key.replace("-", "_")] = value
    return Member(location, cluster, **extra)


def check_members(members: list[Member]) -> None:
    names = [m.cluster for m in members]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"--member: {', '.join(twice)} named more than once")


def cluster_labels(member: Member) -> dict[str, str]:
    labels = {LOCATION_LABEL: member.location, MANAGED_BY_LABEL: MANAGED_BY}
    if member.region:
        labels[REGION_LABEL] = member.region
    if member.compliance_zone:
        labels[COMPLIANCE_ZONE_LABEL] = member.compliance_zone
    return labels


def cluster_object(member: Member, endpoint: str) -> dict[str, Any]:
    """The Push-mode Cluster (rule federation-member-join)."""
    return _join.cluster_object(member.cluster, endpoint, cluster_labels(member), member.region)


def member_objects(member: Member) -> list[dict[str, Any]]:
    """What the member holds for Karmada (rule federation-member-join)."""
    return _join.member_objects(member.cluster, {MANAGED_BY_LABEL: MANAGED_BY})


def join_secrets(cluster: str, token: str, impersonator_token: str, ca: bytes) -> list[dict]:
    """The two Secrets the Cluster points at, in Karmada's ``karmada-cluster``."""
    return _join.join_secrets(
        cluster, token, impersonator_token, ca, {MANAGED_BY_LABEL: MANAGED_BY}
    )


# --- the control plane --------------------------------------------------------------------


def kubeconfig(server: str, pki: Path, user: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "karmada",
                "cluster": {"server": server, "certificate-authority": str(pki / "ca.crt")},
            }
        ],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate": str(pki / f"{user}.crt"),
                    "client-key": str(pki / f"{user}.key"),
                },
            }
        ],
        "contexts": [{"name": "karmada", "context": {"cluster": "karmada", "user": user}}],
        "current-context": "karmada",
    }


def server_of(kubeconfig_text: str) -> str:
    """The API server of a kubeconfig's current context (a member's admin kubeconfig)."""
    cfg = yaml.safe_load(kubeconfig_text)
    context = next(c for c in cfg["contexts"] if c["name"] == cfg["current-context"])
    name = context["context"]["cluster"]
    return next(c for c in cfg["clusters"] if c["name"] == name)["cluster"]["server"]


# Client identities: each component its own certificate (in system:masters, as the
# local cluster's components: stand-ins whose RBAC is not what this examines).
USERS = (
    "admin",
    "kube-controller-manager",
    "karmada-controller-manager",
    "karmada-scheduler",
    "karmada-webhook",
    "karmada-aggregated-apiserver",
)
# The certificate of each identity: (common name, organizations).
USER_CERTS = {
    "admin": ("admin", ("system:masters",)),
    "kube-controller-manager": ("system:kube-controller-manager", ("system:masters",)),
    **{u: (u, ("system:masters",)) for u in USERS[2:]},
}
# Serving certificates: (file name, common name, names). kube-apiserver checks the
# aggregated API server's certificate for its Service's DNS name, not for the address
# the ExternalName Service leads to.
SERVING_CERTS = (
    (
        "apiserver",
        "kube-apiserver",
        (HOST, "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"),
    ),
    (
        "aggregated-apiserver",
        AGGREGATED_SERVICE,
        (
            HOST,
            "localhost",
            f"{AGGREGATED_SERVICE}.{KARMADA_SYSTEM}.svc",
            f"{AGGREGATED_SERVICE}.{KARMADA_SYSTEM}.svc.cluster.local",
        ),
    ),
    ("webhook", "karmada-webhook", (HOST, "localhost", f"karmada-webhook.{KARMADA_SYSTEM}.svc")),
)
# The client certificate kube-apiserver shows the aggregated API server (requestheader).
FRONT_PROXY = "front-proxy-client"

_COMMON = ("--leader-elect=false", "--v=2")


def components(
    state: Path, core_bins: Path, karmada_bins: Path, port_map: dict[str, int]
) -> list[Component]:
    """The federation's processes, in the order `up` starts them."""
    p = state / "pki"
    kc = {u: str(state / f"{u}.kubeconfig") for u in USERS}
    h = HOST

    def three(user: str) -> list[str]:
        return [
            f"--{flag}={kc[user]}"
            for flag in ("kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig")
        ]

    etcd_url = f"http://{h}:{port_map['etcd']}"
    peer_url = f"http://{h}:{port_map['etcd-peer']}"
    return [
        Component(
            "etcd",
            [
                str(core_bins / "etcd"),
                "--name=karmada",
                f"--data-dir={state / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=karmada={peer_url}",
                "--quota-backend-bytes=2147483648",
                "--unsafe-no-fsync",
            ],
            f"{etcd_url}/health",
            program="etcd",
        ),
        Component(
            "kube-apiserver",
            [
                str(core_bins / "kube-apiserver"),
                f"--etcd-servers={etcd_url}",
                f"--bind-address={h}",
                f"--advertise-address={h}",
                f"--secure-port={port_map['kube-apiserver']}",
                "--authorization-mode=RBAC",
                f"--client-ca-file={p / 'ca.crt'}",
                f"--tls-cert-file={p / 'apiserver.crt'}",
                f"--tls-private-key-file={p / 'apiserver.key'}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={p / 'sa.pub'}",
                f"--service-account-signing-key-file={p / 'sa.key'}",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--allow-privileged=true",
                "--enable-admission-plugins=NamespaceLifecycle,ServiceAccount,ResourceQuota,"
                "MutatingAdmissionWebhook,ValidatingAdmissionWebhook",
                "--profiling=false",
                "--event-ttl=1h",
                # the aggregation layer: cluster.karmada.io is served by
                # karmada-aggregated-apiserver, reached with this client certificate
                f"--proxy-client-cert-file={p / (FRONT_PROXY + '.crt')}",
                f"--proxy-client-key-file={p / (FRONT_PROXY + '.key')}",
                f"--requestheader-client-ca-file={p / 'ca.crt'}",
                f"--requestheader-allowed-names={FRONT_PROXY}",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-username-headers=X-Remote-User",
            ],
            f"{apiserver_url(port_map)}/readyz",
            program="kube-apiserver",
        ),
        Component(
            "karmada-aggregated-apiserver",
            [
                str(karmada_bins / "karmada-aggregated-apiserver"),
                *three("karmada-aggregated-apiserver"),
                f"--etcd-servers={etcd_url}",
                f"--bind-address={h}",
                f"--secure-port={port_map['karmada-aggregated-apiserver']}",
                f"--tls-cert-file={p / 'aggregated-apiserver.crt'}",
                f"--tls-private-key-file={p / 'aggregated-apiserver.key'}",
                f"--cert-dir={state / 'aggregated-apiserver-certs'}",
                "--v=2",
            ],
            f"https://{h}:{port_map['karmada-aggregated-apiserver']}/readyz",
            program="karmada-aggregated-apiserver",
        ),
        Component(
            "karmada-webhook",
            [
                str(karmada_bins / "karmada-webhook"),
                f"--kubeconfig={kc['karmada-webhook']}",
                f"--bind-address={h}",
                f"--secure-port={port_map['karmada-webhook']}",
                # controller-runtime reads tls.crt and tls.key here (webhook_cert_dir)
                f"--cert-dir={webhook_cert_dir(state)}",
                f"--metrics-bind-address={h}:{port_map['karmada-webhook-metrics']}",
                f"--health-probe-bind-address={h}:{port_map['karmada-webhook-healthz']}",
                # the platform's ClusterTaintPolicy puts a NoExecute taint on a lost member
                # (rule federation-member-failover); refused unless allowed here
                "--allow-no-execute-taint-policy=true",
                "--v=2",
            ],
            # the webhook server itself, over TLS: what kube-apiserver calls
            f"https://{h}:{port_map['karmada-webhook']}/readyz/",
            program="karmada-webhook",
        ),
        Component(
            "kube-controller-manager",
            [
                str(core_bins / "kube-controller-manager"),
                *three("kube-controller-manager"),
                f"--bind-address={h}",
                f"--secure-port={port_map['kube-controller-manager']}",
                f"--tls-cert-file={p / 'apiserver.crt'}",
                f"--tls-private-key-file={p / 'apiserver.key'}",
                f"--client-ca-file={p / 'ca.crt'}",
                "--cluster-name=karmada",
                f"--cluster-signing-cert-file={p / 'ca.crt'}",
                f"--cluster-signing-key-file={p / 'ca.key'}",
                f"--controllers={KCM_CONTROLLERS}",
                f"--root-ca-file={p / 'ca.crt'}",
                f"--service-account-private-key-file={p / 'sa.key'}",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--use-service-account-credentials=false",
                *_COMMON,
            ],
            f"https://{h}:{port_map['kube-controller-manager']}/healthz",
            program="kube-controller-manager",
        ),
        Component(
            "karmada-controller-manager",
            [
                str(karmada_bins / "karmada-controller-manager"),
                f"--kubeconfig={kc['karmada-controller-manager']}",
                f"--metrics-bind-address={h}:{port_map['karmada-controller-manager-metrics']}",
                f"--health-probe-bind-address={h}:{port_map['karmada-controller-manager-healthz']}",
                "--cluster-status-update-frequency=10s",
                "--controllers=*",
                # Cluster failover (rule federation-member-failover): the Failover gate (beta,
                # off by default) starts the ClusterTaintPolicy controller and the NoExecute
                # taint manager; eviction by a NoExecute taint is off by default too. A job
                # whose policy says nothing is removed from the lost member before it is placed
                # again (Directly), never run in two members by Karmada's choice.
                "--feature-gates=Failover=true",
                "--enable-no-execute-taint-eviction=true",
                "--no-execute-taint-eviction-purge-mode=Directly",
                *_COMMON,
            ],
            f"http://{h}:{port_map['karmada-controller-manager-healthz']}/healthz",
            program="karmada-controller-manager",
        ),
        Component(
            "karmada-scheduler",
            [
                str(karmada_bins / "karmada-scheduler"),
                f"--kubeconfig={kc['karmada-scheduler']}",
                f"--metrics-bind-address={h}:{port_map['karmada-scheduler-metrics']}",
                f"--health-probe-bind-address={h}:{port_map['karmada-scheduler-healthz']}",
                *_COMMON,
            ],
            f"http://{h}:{port_map['karmada-scheduler-healthz']}/healthz",
            program="karmada-scheduler",
        ),
    ]


ORDER = [
    "etcd",
    "kube-apiserver",
    "karmada-aggregated-apiserver",
    "karmada-webhook",
    "kube-controller-manager",
    "karmada-controller-manager",
    "karmada-scheduler",
]
# `down` stops a tier and waits until all of it is gone before the next: an API server
# whose etcd is gone first takes long to exit, and its port stays taken.
TIERS = (
    (
        "karmada-scheduler",
        "karmada-controller-manager",
        "kube-controller-manager",
        "karmada-webhook",
        "karmada-aggregated-apiserver",
    ),
    ("kube-apiserver",),
    ("etcd",),
)


def webhook_cert_dir(state: Path) -> Path:
    return state / "webhook-certs"


# --- objects from Karmada's module --------------------------------------------------------


def crd_paths(module: Path) -> list[Path]:
    """The CRDs of Karmada's chart (``charts/karmada/_crds/bases``), one per file. The
    chart's kustomization adds a conversion webhook to the two binding CRDs; without
    it they convert with strategy None, enough for the served versions."""
    return sorted((module / "charts/karmada/_crds/bases").rglob("*.yaml"))


_WEBHOOK_SERVICE_URL = re.compile(r"https://karmada-webhook\.karmada-system\.svc(?::443)?/")


def webhook_configuration(text: str, port: int, ca: bytes) -> list[dict[str, Any]]:
    """Karmada's ``artifacts/deploy/webhook-configuration.yaml``, pointed at the
    webhook's loopback address and trusting the federation's CA (the file has a
    ``{{caBundle}}`` placeholder, not YAML until it is filled in)."""
    text = text.replace("{{caBundle}}", _b64(ca))
    text = _WEBHOOK_SERVICE_URL.sub(f"https://{HOST}:{port}/", text)
    docs = [d for d in yaml.safe_load_all(text) if d]
    for doc in docs:
        for hook in doc.get("webhooks") or []:
            url = hook["clientConfig"].get("url", "")
            if not url.startswith(f"https://{HOST}:{port}/"):
                raise ValueError(f"webhook {hook['name']}: unexpected url {url!r}")
    return docs


def aggregated_apiserver_objects(port: int, ca: bytes) -> list[dict[str, Any]]:
    """The Service and the APIService of ``cluster.karmada.io/v1alpha1``: an
    ExternalName Service to localhost, on the aggregated API server's port."""
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": AGGREGATED_SERVICE, "namespace": KARMADA_SYSTEM},
            "spec": {
                "type": "ExternalName",
                "externalName": "localhost",
                "ports": [{"port": port, "protocol": "TCP", "targetPort": port}],
            },
        },
        {
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {
                "name": "v1alpha1.cluster.karmada.io",
                "labels": {"app": AGGREGATED_SERVICE, "apiserver": "true"},
            },
            "spec": {
                "caBundle": _b64(ca),
                "group": "cluster.karmada.io",
                "groupPriorityMinimum": 2000,
                "service": {"name": AGGREGATED_SERVICE, "namespace": KARMADA_SYSTEM, "port": port},
                "version": "v1alpha1",
                "versionPriority": 10,
            },
        },
    ]


def namespaces() -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        for ns in (KARMADA_SYSTEM, KARMADA_CLUSTER)
    ]


def cluster_ready(cluster: dict[str, Any] | None) -> bool:
    conditions = ((cluster or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
