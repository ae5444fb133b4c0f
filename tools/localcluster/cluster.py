#!/usr/bin/env python3
"""The local GPU cluster: real kube-apiserver, etcd, controllers, Volcano
1.15.1 and KServe's controller as processes on 127.0.0.1, with GPU nodes
simulated by kwok.

    cluster.py up [--topology FILE] [--name NAME]   start (idempotent); prints the kubeconfig path
    cluster.py down [--wipe]                         stop what `up` started; --wipe removes all state
    cluster.py status                                one line per component
    cluster.py kubeconfig [--user U --group G ...]   admin kubeconfig, or one for a given identity
    cluster.py logs COMPONENT [-n LINES]             tail a component's log
    cluster.py stop COMPONENT                        stop one component (a fault); `up` starts it again

State (certificates, etcd data, logs, pids) lives in
``$XDG_STATE_HOME/gpucloud-localcluster/<name>`` (default ``~/.local/state``).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import kubernetes.client  # noqa: E402
import urllib3  # noqa: E402
import yaml  # noqa: E402
from kubernetes.dynamic import DynamicClient  # noqa: E402
from kubernetes.dynamic.exceptions import (  # noqa: E402
    DynamicApiError,
    NotFoundError,
    ResourceNotFoundError,
)

YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

import build  # noqa: E402
import pins  # noqa: E402
import pki  # noqa: E402
import topology  # noqa: E402


def _load_rules_module() -> Any:
    """The collection's rules builder (stdlib only), so the local Prometheus
    evaluates exactly the groups the monitoring role applies."""
    path = HERE.parents[1] / "plugins" / "module_utils" / "observability" / "rules.py"
    spec = importlib.util.spec_from_file_location("gpucloud_platform_rules", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


RULES = _load_rules_module()

HOST = "127.0.0.1"
_BASE_PORTS = {
    "etcd": 23790,
    "etcd-peer": 23800,
    "kube-apiserver": 26443,
    "kube-controller-manager": 20257,
    "kube-scheduler": 20259,
    "kwok": 20270,
    "vc-webhook-manager": 28443,
    "vc-webhook-manager-healthz": 28444,
    "vc-controller-manager": 28081,
    "vc-controller-manager-healthz": 28082,
    "vc-scheduler": 28083,
    "vc-scheduler-healthz": 28084,
    "kube-state-metrics": 28090,
    "kube-state-metrics-telemetry": 28091,
    "prometheus": 29090,
    "kserve-webhook": 29443,
    "kserve-metrics": 28085,
    "kserve-healthz": 28086,
}
# A second cluster beside the default one (its own --name) needs its own
# ports: GPUCLOUD_LOCALCLUSTER_PORT_OFFSET shifts every port by that much.
PORT_OFFSET = int(os.environ.get("GPUCLOUD_LOCALCLUSTER_PORT_OFFSET", "0"))
PORTS = {name: port + PORT_OFFSET for name, port in _BASE_PORTS.items()}
APISERVER = f"https://{HOST}:{PORTS['kube-apiserver']}"
SERVICE_CIDR = "10.96.0.0/12"
# Pods get their IPs here (kwok hands them out); the controller-manager gives
# each node a /24 of it as spec.podCIDR, as a real cluster's IPAM does, so
# the tenant flows can discover the pod network instead of guessing it.
POD_CIDR = "10.128.0.0/12"
VOLCANO_NS = "volcano-system"
SCHEDULER_CONFIGMAP = "volcano-scheduler-configmap"
SCHEDULER_CONF_KEY = "volcano-scheduler.conf"
# The admissions Volcano's chart enables by default; the webhook server and
# the webhook configurations must agree on this list.
ENABLED_ADMISSIONS = "/jobs/mutate,/jobs/validate,/podgroups/validate,/queues/mutate,/queues/validate,/hypernodes/validate,/cronjobs/validate"
FIELD_MANAGER = "gpucloud-localcluster"
ORDER = [
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "vc-webhook-manager",
    "vc-controller-manager",
    "vc-scheduler",
    "kserve-controller",
    "scheduler-conf-sync",
    "kube-state-metrics",
    "prometheus",
]
PROMETHEUS = f"http://{HOST}:{PORTS['prometheus']}"
# Short intervals so a test sees a job's GPU-hours within seconds; production
# keeps the monitoring role's 30 s (monitoring_scrape_interval). A fleet-scale
# benchmark sets the production value: over 30,000 queues a 5 s scrape keeps
# Prometheus and kube-state-metrics on more than half a core.
SCRAPE_INTERVAL_SECONDS = int(os.environ.get("GPUCLOUD_LOCALCLUSTER_SCRAPE_INTERVAL", "5"))
KSERVE_NS = "kserve"
KSERVE_CONFIGMAP = "inferenceservice-config"
KSERVE_WEBHOOK_SERVICE = "kserve-webhook-server-service"
# The ClusterServingRuntimes installed from KServe's config/runtimes.
KSERVE_RUNTIMES = ("kserve-sklearnserver", "kserve-huggingfaceserver")


def log(msg: str) -> None:
    print(f"localcluster: {msg}", flush=True)


def state_dir(name: str) -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "gpucloud-localcluster" / name


# --- the Kubernetes API (the kubernetes client, admin certificate) ---------------------

REQUEST_TIMEOUT = 30  # seconds, per request


def _as_dict(_client: Any, data: Any) -> Any:
    """The dynamic client's serializer for plain dicts: its ResourceInstance
    wraps every field, slow on the 1.9 MB InferenceService CRD."""
    return data


class Kube:
    """The kubernetes client as the admin. Kinds are found by discovery
    (DynamicClient), made on first use: `up` makes this before the API server runs."""

    def __init__(self, state: Path):
        p = state / "pki"
        cfg = kubernetes.client.Configuration()
        cfg.host = APISERVER
        cfg.ssl_ca_cert = str(p / "ca.crt")
        cfg.cert_file = str(p / "admin.crt")
        cfg.key_file = str(p / "admin.key")
        cfg.retries = False  # as before: a failed request fails; the callers poll or stop
        self.client = kubernetes.client.ApiClient(cfg)
        self.core = kubernetes.client.CoreV1Api(self.client)
        self._discovery_cache = state / "discovery.json"
        self._dynamic: DynamicClient | None = None
        # `up` applies KServe's CRDs from a second thread; discovery is not thread-safe.
        self._lock = threading.Lock()

    def resource(self, api_version: str, kind: str) -> Any:
        with self._lock:
            if self._dynamic is None:
                self._dynamic = DynamicClient(self.client, cache_file=str(self._discovery_cache))
            # On a kind it has not cached (a CRD applied since), the lazy
            # discoverer discovers afresh before it gives up.
            return self._dynamic.resources.get(api_version=api_version, kind=kind)

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        """The object as a dict, or None when it does not exist."""
        try:
            resource = self.resource(api_version, kind)
            return resource.get(
                name=name,
                namespace=namespace,
                serializer=_as_dict,
                _request_timeout=REQUEST_TIMEOUT,
            )
        except (ResourceNotFoundError, NotFoundError):
            return None

    def apply(self, obj: dict[str, Any], subresource: str | None = None) -> Any:
        """Server-side apply (CRDs are too large for client-side apply)."""
        kind, name = obj["kind"], obj["metadata"]["name"]
        try:
            resource = self.resource(obj["apiVersion"], kind)
            if subresource:
                resource = resource.subresources[subresource]
            return resource.server_side_apply(
                body=obj,
                field_manager=FIELD_MANAGER,
                force_conflicts=True,
                serializer=_as_dict,
                _request_timeout=REQUEST_TIMEOUT,
            )
        except ResourceNotFoundError:
            message = f"the API server serves no {obj['apiVersion']} {kind}"
        except DynamicApiError as exc:
            message = exc.summary()
        raise SystemExit(f"localcluster: applying {kind} {name}: {message}")


# --- processes -----------------------------------------------------------------------


@dataclass
class Component:
    name: str
    argv: list[str]
    health: str | None  # https URL checked with the admin certificate, or None
    env: dict[str, str] | None = None  # added to the launcher's environment


def kubeconfig_for(state: Path, user: str) -> Path:
    path = state / f"{user}.kubeconfig"
    if not path.exists():
        p = state / "pki"
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "local",
                    "cluster": {"server": APISERVER, "certificate-authority": str(p / "ca.crt")},
                }
            ],
            "users": [
                {
                    "name": user,
                    "user": {
                        "client-certificate": str(p / f"{user}.crt"),
                        "client-key": str(p / f"{user}.key"),
                    },
                }
            ],
            "contexts": [{"name": "local", "context": {"cluster": "local", "user": user}}],
            "current-context": "local",
        }
        path.write_text(yaml.safe_dump(cfg))
        path.chmod(0o600)
    return path


SERVICE_USERS = (
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "volcano",
    "kube-state-metrics",
    "prometheus",
    "kserve",
)


def ensure_pki(state: Path) -> None:
    p = state / "pki"
    pki.ensure_ca(p)
    pki.ensure_service_account_keys(p)
    pki.ensure_cert(
        p,
        "apiserver",
        "kube-apiserver",
        server_names=(
            HOST,
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "10.96.0.1",
        ),
        client=False,
    )
    pki.ensure_cert(
        p,
        "webhook",
        "volcano-admission-service",
        server_names=(HOST, "localhost", "volcano-admission-service.volcano-system.svc"),
        client=False,
    )
    pki.ensure_cert(
        p,
        "kserve-webhook",
        KSERVE_WEBHOOK_SERVICE,
        server_names=(HOST, "localhost", f"{KSERVE_WEBHOOK_SERVICE}.{KSERVE_NS}.svc"),
        client=False,
    )
    pki.ensure_cert(p, "admin", "admin", ("system:masters",))
    # The components run with cluster-admin rights: they are stand-ins for
    # in-cluster deployments whose RBAC is not what these tests examine.
    for user in SERVICE_USERS:
        pki.ensure_cert(
            p,
            user,
            f"system:{user}" if user in ("kube-controller-manager", "kube-scheduler") else user,
            ("system:masters",),
        )
    for user in ("admin", *SERVICE_USERS):
        kubeconfig_for(state, user)


def kwok_stages(state: Path) -> Path:
    """kwok's own stages, minus pod-complete: pods stay Running until deleted, except a pod
    that carries kwok's delay annotation, which completes after it (stages/, the trace
    replay's jobs)."""
    module = module_dir("sigs.k8s.io/kwok", pins.KWOK)
    parts = [
        module / "kustomize/stage/node/fast/node-initialize.yaml",
        module / "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
        module / "kustomize/stage/pod/fast/pod-ready.yaml",
        module / "kustomize/stage/pod/fast/pod-delete.yaml",
        HERE / "stages/pod-complete-after-delay.yaml",
    ]
    out = state / "kwok-stages.yaml"
    out.write_text("\n---\n".join(part.read_text().strip() for part in parts) + "\n")
    return out


def module_dir(module: str, version: str) -> Path:
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
        check=True,
        capture_output=True,
        text=True,
        cwd="/",
    )
    return Path(json.loads(out.stdout)["Dir"])


def volcano_chart() -> Path:
    return module_dir("volcano.sh/volcano", pins.VOLCANO) / "installer/helm/chart/volcano"


@functools.cache
def kserve_module() -> Path:
    return module_dir("github.com/kserve/kserve", pins.KSERVE)


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


def components(state: Path, bins: Path) -> list[Component]:
    p = state / "pki"
    k = {u: str(kubeconfig_for(state, u)) for u in SERVICE_USERS}
    h = HOST
    # kcm and kube-scheduler serve /healthz with a certificate of our CA, and
    # skip the front-proxy lookup (there is no aggregation layer here).
    serving = [
        f"--tls-cert-file={p / 'apiserver.crt'}",
        f"--tls-private-key-file={p / 'apiserver.key'}",
        "--authentication-skip-lookup=true",
    ]
    return [
        Component(
            "etcd",
            [
                str(bins / "etcd"),
                "--name=local",
                f"--data-dir={state / 'etcd'}",
                f"--listen-client-urls=http://{h}:{PORTS['etcd']}",
                f"--advertise-client-urls=http://{h}:{PORTS['etcd']}",
                f"--listen-peer-urls=http://{h}:{PORTS['etcd-peer']}",
                f"--initial-advertise-peer-urls=http://{h}:{PORTS['etcd-peer']}",
                f"--initial-cluster=local=http://{h}:{PORTS['etcd-peer']}",
                "--quota-backend-bytes=4294967296",
                "--unsafe-no-fsync",
            ],
            f"http://{h}:{PORTS['etcd']}/health",
        ),
        Component(
            "kube-apiserver",
            [
                str(bins / "kube-apiserver"),
                f"--etcd-servers=http://{h}:{PORTS['etcd']}",
                f"--bind-address={h}",
                f"--advertise-address={h}",
                f"--secure-port={PORTS['kube-apiserver']}",
                "--authorization-mode=RBAC",
                f"--client-ca-file={p / 'ca.crt'}",
                f"--tls-cert-file={p / 'apiserver.crt'}",
                f"--tls-private-key-file={p / 'apiserver.key'}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={p / 'sa.pub'}",
                f"--service-account-signing-key-file={p / 'sa.key'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--allow-privileged=true",
                "--enable-admission-plugins=NamespaceLifecycle,ServiceAccount,DefaultStorageClass,ResourceQuota,"
                "Priority,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ValidatingAdmissionPolicy",
                "--profiling=false",
                "--event-ttl=1h",
            ],
            f"{APISERVER}/readyz",
        ),
        Component(
            "kube-controller-manager",
            [
                str(bins / "kube-controller-manager"),
                f"--kubeconfig={k['kube-controller-manager']}",
                f"--authentication-kubeconfig={k['kube-controller-manager']}",
                f"--authorization-kubeconfig={k['kube-controller-manager']}",
                f"--bind-address={h}",
                f"--secure-port={PORTS['kube-controller-manager']}",
                *serving,
                "--leader-elect=false",
                f"--service-account-private-key-file={p / 'sa.key'}",
                f"--root-ca-file={p / 'ca.crt'}",
                "--use-service-account-credentials=false",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--allocate-node-cidrs=true",
                f"--cluster-cidr={POD_CIDR}",
                "--node-cidr-mask-size=24",
                "--concurrent-gc-syncs=5",
                "--node-monitor-grace-period=60s",
            ],
            f"https://{h}:{PORTS['kube-controller-manager']}/healthz",
        ),
        Component(
            "kube-scheduler",
            [
                str(bins / "kube-scheduler"),
                f"--kubeconfig={k['kube-scheduler']}",
                f"--authentication-kubeconfig={k['kube-scheduler']}",
                f"--authorization-kubeconfig={k['kube-scheduler']}",
                f"--bind-address={h}",
                f"--secure-port={PORTS['kube-scheduler']}",
                "--leader-elect=false",
                *serving,
            ],
            f"https://{h}:{PORTS['kube-scheduler']}/healthz",
        ),
        Component(
            "kwok",
            [
                str(bins / "kwok"),
                f"--kubeconfig={k['kwok']}",
                f"--config={kwok_stages(state)}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={topology.KWOK_ANNOTATION}=fake",
                f"--cidr={POD_CIDR.replace('.0/', '.1/', 1)}",
                f"--node-ip={h}",
                f"--server-address={h}:{PORTS['kwok']}",
                "--node-lease-duration-seconds=40",
            ],
            None,
        ),
        Component(
            "vc-webhook-manager",
            [
                str(bins / "vc-webhook-manager"),
                f"--kubeconfig={k['volcano']}",
                f"--enabled-admission={ENABLED_ADMISSIONS}",
                f"--tls-cert-file={p / 'webhook.crt'}",
                f"--tls-private-key-file={p / 'webhook.key'}",
                f"--ca-cert-file={p / 'ca.crt'}",
                f"--listen-address={h}",
                f"--port={PORTS['vc-webhook-manager']}",
                f"--webhook-namespace={VOLCANO_NS}",
                "--webhook-service-name=volcano-admission-service",
                "--enable-healthz=true",
                f"--healthz-address={h}:{PORTS['vc-webhook-manager-healthz']}",
                "--logtostderr",
                "-v=2",
            ],
            f"https://{h}:{PORTS['vc-webhook-manager-healthz']}/healthz",
        ),
        Component(
            "vc-controller-manager",
            [
                str(bins / "vc-controller-manager"),
                f"--kubeconfig={k['volcano']}",
                "--leader-elect=false",
                f"--listen-address={h}:{PORTS['vc-controller-manager']}",
                "--enable-metrics=true",
                "--enable-healthz=true",
                f"--healthz-address={h}:{PORTS['vc-controller-manager-healthz']}",
                "--logtostderr",
                "-v=2",
            ],
            f"http://{h}:{PORTS['vc-controller-manager-healthz']}/healthz",
        ),
        Component(
            "vc-scheduler",
            [
                str(bins / "vc-scheduler"),
                f"--kubeconfig={k['volcano']}",
                "--leader-elect=false",
                f"--scheduler-conf={state / 'volcano-scheduler.conf'}",
                "--schedule-period=1s",
                f"--listen-address={h}:{PORTS['vc-scheduler']}",
                "--enable-healthz=true",
                "--enable-metrics=true",
                f"--healthz-address={h}:{PORTS['vc-scheduler-healthz']}",
                "--logtostderr",
                "-v=3",
            ],
            f"http://{h}:{PORTS['vc-scheduler-healthz']}/healthz",
        ),
        Component(
            "kserve-controller",
            [
                str(bins / "kserve-manager"),
                f"--kubeconfig={k['kserve']}",
                "--leader-elect=false",
                f"--webhook-port={PORTS['kserve-webhook']}",
                f"--metrics-addr={h}:{PORTS['kserve-metrics']}",
                f"--health-probe-addr={h}:{PORTS['kserve-healthz']}",
            ],
            f"http://{h}:{PORTS['kserve-healthz']}/readyz",
            # constants.KServeNamespace: where it reads inferenceservice-config
            {"POD_NAMESPACE": KSERVE_NS, "TMPDIR": str(state / "kserve-tmp")},
        ),
        Component(
            "kube-state-metrics",
            [
                str(bins / "kube-state-metrics"),
                f"--kubeconfig={k['kube-state-metrics']}",
                f"--host={h}",
                f"--port={PORTS['kube-state-metrics']}",
                f"--telemetry-host={h}",
                f"--telemetry-port={PORTS['kube-state-metrics-telemetry']}",
                # only what the platform's rules read, to keep it light
                "--resources=pods,nodes,namespaces",
                f"--metric-labels-allowlist={RULES.ksm_labels_allowlist()}",
                f"--metric-annotations-allowlist={RULES.ksm_annotations_allowlist()}",
                # the Queues' tenants, types and sizes, the Volcano Jobs' bids (rule
                # billing-follows-queue) and the spot queues' reclaim counts
                f"--custom-resource-state-config-file={state / KSM_CUSTOM_RESOURCE_STATE}",
            ],
            f"http://{h}:{PORTS['kube-state-metrics']}/healthz",
        ),
        Component(
            "prometheus",
            [
                str(bins / "prometheus"),
                f"--config.file={state / 'prometheus.yml'}",
                f"--storage.tsdb.path={state / 'prometheus'}",
                "--storage.tsdb.retention.time=1d",
                f"--web.listen-address={h}:{PORTS['prometheus']}",
                "--web.enable-lifecycle",
                "--log.level=warn",
            ],
            f"{PROMETHEUS}/-/ready",
        ),
        Component(
            "scheduler-conf-sync",
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "sync-scheduler-conf",
                "--name",
                state.name,
            ],
            None,
        ),
    ]


def read_pids(state: Path) -> dict[str, int]:
    try:
        return json.loads((state / "pids.json").read_text())
    except (OSError, ValueError):
        return {}


def write_pids(state: Path, pids: dict[str, int]) -> None:
    (state / "pids.json").write_text(json.dumps(pids, indent=2, sort_keys=True))


def alive(pid: int, argv0: str | None = None) -> bool:
    """True when pid runs and, if given, runs the expected program (pids are reused)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        status = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    if status == "Z":
        return False
    return argv0 is None or any(argv0.encode() in part for part in cmdline[:3])


@functools.cache
def health_tls(state: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """TLS for the https health URLs: with the admin certificate for the API
    server's, without one for the others (vc-webhook-manager's health server
    refuses ours)."""
    ca = str(state / "pki" / "ca.crt")
    admin = ssl.create_default_context(cafile=ca)
    admin.load_cert_chain(str(state / "pki" / "admin.crt"), str(state / "pki" / "admin.key"))
    return admin, ssl.create_default_context(cafile=ca)


def healthy(state: Path, comp: Component) -> bool:
    if comp.health is None:
        return True
    # Health endpoints, not the Kubernetes API: the kubernetes client would add nothing.
    try:
        ctx = None
        if comp.health.startswith("https"):
            admin, anonymous = health_tls(state)
            ctx = admin if comp.health.startswith(APISERVER) else anonymous
        with urllib.request.urlopen(comp.health, context=ctx, timeout=5) as resp:
            return resp.status == 200
    except (OSError, urllib.error.URLError, ssl.SSLError):
        return False


def start(state: Path, comp: Component) -> int:
    logs = state / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    out = open(logs / f"{comp.name}.log", "ab")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(
        comp.argv,
        env=dict(os.environ, **comp.env) if comp.env else None,
        stdout=out,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        cwd=state,
    )
    out.close()
    return proc.pid


def wait_for(
    what: str, check, timeout: float, state: Path | None = None, component: str | None = None
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    hint = f"; see {state / 'logs' / (component + '.log')}" if state and component else ""
    raise SystemExit(f"localcluster: timed out after {timeout:.0f}s waiting for {what}{hint}")


# --- cluster objects ---------------------------------------------------------------------


CRD_DIGEST = "gpucloud.localcluster/source-digest"
_CRD_NAME = re.compile(r"^metadata:\n(?:  .*\n)*?  name: (\S+)$", re.M)


CRD_KIND = ("apiextensions.k8s.io/v1", "CustomResourceDefinition")


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

    def established() -> bool:
        for name in names:
            crd = kube.get(*CRD_KIND, name)
            conds = {
                c["type"]: c["status"]
                for c in ((crd or {}).get("status") or {}).get("conditions") or []
            }
            if conds.get("Established") != "True":
                return False
        return True

    wait_for(f"{what} CRDs to be established", established, 60)


def apply_crds(kube: Kube) -> None:
    chart = volcano_chart()
    # Volcano's own CRDs and its jobflow sub-chart's: vc-controller-manager
    # waits for every controller's informers, the jobflow ones included.
    paths = sorted(chart.glob("crd/bases/*.yaml")) + sorted(
        chart.glob("charts/jobflow/crd/bases/*.yaml")
    )
    apply_crd_files(kube, paths, "Volcano")


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


def render_kserve_webhooks(state: Path, module: Path) -> list[dict[str, Any]]:
    """KServe's webhook configurations (config/webhook/manifests.yaml), pointed
    at kserve-controller's loopback address instead of its Service."""
    import base64

    bundle = base64.b64encode((state / "pki" / "ca.crt").read_bytes()).decode()
    docs = [
        d for d in yaml.safe_load_all((module / "config/webhook/manifests.yaml").read_text()) if d
    ]
    for doc in docs:
        doc["metadata"].pop("creationTimestamp", None)
        for hook in doc.get("webhooks") or []:
            svc = hook["clientConfig"].pop("service")
            hook["clientConfig"]["url"] = (
                f"https://{HOST}:{PORTS['kserve-webhook']}{svc.get('path', '/')}"
            )
            hook["clientConfig"]["caBundle"] = bundle
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


def ensure_kserve_objects(kube: Kube, state: Path) -> None:
    """What kserve-controller needs besides its CRDs before it starts: its
    configuration, webhook configurations and serving certificate."""
    module = kserve_module()
    kube.apply(kserve_config(module))
    for doc in render_kserve_webhooks(state, module):
        kube.apply(doc)
    kserve_tmpdir(state)


def render_volcano_admission(state: Path, bins: Path) -> list[dict[str, Any]]:
    """Volcano's own webhook configurations and admission policies, from its chart,
    pointed at the webhook server's loopback address instead of a Service."""
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
    ca = (state / "pki" / "ca.crt").read_bytes()
    import base64

    bundle = base64.b64encode(ca).decode()
    docs = [d for d in yaml.safe_load_all(out.stdout) if d]
    for doc in docs:
        for hook in doc.get("webhooks") or []:
            svc = hook["clientConfig"].pop("service")
            hook["clientConfig"]["url"] = (
                f"https://{HOST}:{PORTS['vc-webhook-manager']}{svc.get('path', '/')}"
            )
            hook["clientConfig"]["caBundle"] = bundle
    return docs


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


def root_queue_open(kube: Kube) -> bool:
    """The queue controller opens queues only once all its informers synced."""
    root = kube.get("scheduling.volcano.sh/v1beta1", "Queue", "root") or {}
    return (root.get("status") or {}).get("state") == "Open"


def default_scheduler_conf() -> str:
    return (volcano_chart() / "config/volcano-scheduler.conf").read_text()


def prometheus_config(state: Path) -> dict[str, Any]:
    """Scrapes kube-state-metrics, the API server and Volcano's two metrics servers."""
    p = state / "pki"
    every = f"{SCRAPE_INTERVAL_SECONDS}s"

    def static(job: str, port: str) -> dict[str, Any]:
        return {"job_name": job, "static_configs": [{"targets": [f"{HOST}:{PORTS[port]}"]}]}

    return {
        "global": {"scrape_interval": every, "evaluation_interval": every},
        "rule_files": [str(state / "prometheus-rules.yml")],
        "scrape_configs": [
            # honor_labels: the pods' namespace and pod, not the exporter's
            {**static("kube-state-metrics", "kube-state-metrics"), "honor_labels": True},
            static("volcano-scheduler", "vc-scheduler"),
            static("volcano-controllers", "vc-controller-manager"),
            {
                **static("kube-apiserver", "kube-apiserver"),
                "scheme": "https",
                "tls_config": {
                    "ca_file": str(p / "ca.crt"),
                    "cert_file": str(p / "prometheus.crt"),
                    "key_file": str(p / "prometheus.key"),
                },
            },
        ],
    }


KSM_CUSTOM_RESOURCE_STATE = "ksm-custom-resource-state.yml"


def write_ksm_files(state: Path) -> bool:
    """kube-state-metrics' custom resource state configuration; True when it changed."""
    path = state / KSM_CUSTOM_RESOURCE_STATE
    text = yaml.safe_dump(RULES.ksm_custom_resource_state(), sort_keys=False)
    if path.exists() and path.read_text() == text:
        return False
    path.write_text(text)
    return True


def write_prometheus_files(state: Path) -> bool:
    """prometheus.yml and the platform's rules; True when either changed."""
    files = {
        state / "prometheus.yml": yaml.safe_dump(prometheus_config(state), sort_keys=False),
        state / "prometheus-rules.yml": yaml.safe_dump(
            {"groups": RULES.rule_groups(metering_interval=f"{SCRAPE_INTERVAL_SECONDS}s")},
            sort_keys=False,
        ),
        # where tests and tools find this cluster's Prometheus (ports shift per cluster)
        state / "prometheus-url": PROMETHEUS + "\n",
    }
    changed = False
    for path, text in files.items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            changed = True
    return changed


def reload_prometheus() -> None:
    # Prometheus's lifecycle API, not Kubernetes: the kubernetes client would add nothing.
    req = urllib.request.Request(f"{PROMETHEUS}/-/reload", method="POST")
    with urllib.request.urlopen(req, timeout=10):
        pass


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


# --- commands ----------------------------------------------------------------------------


def cmd_up(args: argparse.Namespace) -> int:
    state = state_dir(args.name)
    # Without --topology, `up` keeps the topology the cluster last ran with.
    remembered = state / "topology.yaml"
    if args.topology:
        topo_path = Path(args.topology)
    elif remembered.exists():
        topo_path = remembered
    else:
        topo_path = HERE / "topologies" / "default.yaml"
    try:
        nodes = topology.load(topo_path)
    except topology.TopologyError as exc:
        print(f"localcluster: {exc}", file=sys.stderr)
        return 2
    bins = build.bin_dir()
    missing = [b for b in build.ALL_BINARIES if not (bins / b).exists()]
    if missing:
        log(f"binaries missing ({', '.join(missing)}); building them first")
        build.build(build.Budget(None))
    state.mkdir(parents=True, exist_ok=True)
    ensure_pki(state)
    conf = state / "volcano-scheduler.conf"
    if not conf.exists():
        conf.write_text(default_scheduler_conf())
    comps = {c.name: c for c in components(state, bins)}
    pids = read_pids(state)
    kube = Kube(state)
    started: list[str] = []
    background = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    for name in ORDER:
        comp = comps[name]
        pid = pids.get(name)
        program = Path(comp.argv[0]).name if name != "scheduler-conf-sync" else "cluster.py"
        running = bool(pid and alive(pid, program))
        # Objects the next components need are applied on every `up`
        # (server-side apply: a no-op when nothing changed).
        if name == "kwok":
            ensure_base_objects(kube)
            kserve_crds = background.submit(apply_kserve_crds, kube)
        if name == "vc-webhook-manager":
            apply_crds(kube)
            # The webhook server only serves once its configurations exist.
            for doc in render_volcano_admission(state, bins):
                kube.apply(doc)
        if name == "kserve-controller":
            kserve_crds.result()
            ensure_kserve_objects(kube, state)
        if name == "kube-state-metrics" and write_ksm_files(state) and running:
            # It reads the file only when it starts.
            log("kube-state-metrics: custom resource state changed; restarting")
            stop_pid(pid)
            running = False
        if name == "prometheus" and write_prometheus_files(state) and running:
            log("prometheus: configuration or rules changed; reloading")
            reload_prometheus()
        if running:
            continue
        log(f"starting {name}")
        pids[name] = start(state, comp)
        write_pids(state, pids)
        started.append(name)
        wait_for(
            f"{name} to become healthy",
            lambda c=comp: healthy(state, c) and alive(pids[c.name]),
            120,
            state,
            name,
        )
    background.shutdown()
    # Validated by kserve-controller's own webhook, so applied once it serves.
    for doc in kserve_runtimes(kserve_module()):
        kube.apply(doc)
    sync_nodes(kube, nodes)
    if topo_path != remembered:
        remembered.write_text(topo_path.read_text())
    wait_for(
        f"{len(nodes)} kwok nodes to be Ready",
        lambda: nodes_ready(kube, {n.name for n in nodes}),
        120,
        state,
        "kwok",
    )
    wait_for(
        "Volcano's root queue to be Open",
        lambda: root_queue_open(kube),
        120,
        state,
        "vc-controller-manager",
    )
    log(
        "up: "
        + (f"started {', '.join(started)}" if started else "already running, nothing to start")
    )
    log(
        f"{len(nodes)} nodes, {sum(n.gpus for n in nodes)} nvidia.com/gpu; Prometheus at {PROMETHEUS}"
    )
    print(state / "admin.kubeconfig")
    return 0


def stop_pid(pid: int, timeout: float = 15) -> None:
    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and alive(pid):
        time.sleep(0.2)
    if alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


def cmd_down(args: argparse.Namespace) -> int:
    state = state_dir(args.name)
    pids = read_pids(state)
    for name in reversed(ORDER):
        pid = pids.pop(name, None)
        if pid and alive(pid):
            log(f"stopping {name} (pid {pid})")
            stop_pid(pid)
    if state.exists():
        write_pids(state, pids)
    if args.wipe and state.exists():
        import shutil

        shutil.rmtree(state)
        log(f"removed {state}")
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    """Stop one component and leave the rest running: the fault tests stop the API
    server in the middle of a module's run. ``up`` starts what is stopped again."""
    state = state_dir(args.name)
    pids = read_pids(state)
    pid = pids.pop(args.component, None)
    if pid and alive(pid):
        log(f"stopping {args.component} (pid {pid})")
        stop_pid(pid, timeout=args.timeout)
    else:
        log(f"{args.component} is not running")
    write_pids(state, pids)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    state = state_dir(args.name)
    pids = read_pids(state)
    if not pids:
        print("not running")
        return 3
    comps = {c.name: c for c in components(state, build.bin_dir())}
    ok = True
    for name in ORDER:
        pid = pids.get(name)
        up = bool(pid and alive(pid))
        good = up and healthy(state, comps[name])
        ok &= good
        print(
            f"{name:26} {'running' if up else 'stopped':8} pid={pid or '-':<8} {'healthy' if good else 'UNHEALTHY'}"
        )
    return 0 if ok else 1


def cmd_kubeconfig(args: argparse.Namespace) -> int:
    state = state_dir(args.name)
    if not (state / "pki" / "ca.crt").exists():
        print("localcluster: not set up; run `cluster.py up` first", file=sys.stderr)
        return 1
    if not args.user:
        print(state / "admin.kubeconfig")
        return 0
    ident = "user-" + "-".join([args.user, *args.group]).replace(":", "_").replace("/", "_")
    pki.ensure_cert(state / "pki", ident, args.user, tuple(args.group))
    print(kubeconfig_for(state, ident))
    return 0


def cmd_logs(args: argparse.Namespace) -> int:
    path = state_dir(args.name) / "logs" / f"{args.component}.log"
    if not path.exists():
        print(
            f"localcluster: no log for {args.component}; components: {', '.join(ORDER)}",
            file=sys.stderr,
        )
        return 1
    lines = path.read_text(errors="replace").splitlines()[-args.lines :]
    print("\n".join(lines))
    return 0


def cmd_sync_scheduler_conf(args: argparse.Namespace) -> int:
    """Keep vc-scheduler's --scheduler-conf file equal to the ConfigMap (Volcano hot-reloads it)."""
    state = state_dir(args.name)
    kube = Kube(state)
    target = state / "volcano-scheduler.conf"
    while True:
        try:
            cm = kube.core.read_namespaced_config_map(
                SCHEDULER_CONFIGMAP, VOLCANO_NS, _request_timeout=REQUEST_TIMEOUT
            )
            text = (cm.data or {}).get(SCHEDULER_CONF_KEY)
            if text and (not target.exists() or target.read_text() != text):
                tmp = target.with_suffix(".tmp")
                tmp.write_text(text)
                tmp.replace(target)
                print(
                    f"{time.strftime('%H:%M:%S')} wrote {target} from {SCHEDULER_CONFIGMAP}",
                    flush=True,
                )
        except kubernetes.client.ApiException as exc:
            if exc.status != 404:  # no ConfigMap yet: nothing to copy
                print(
                    f"{time.strftime('%H:%M:%S')} sync failed: {exc.status} {exc.reason}",
                    flush=True,
                )
        except (OSError, urllib3.exceptions.HTTPError, ValueError) as exc:
            print(f"{time.strftime('%H:%M:%S')} sync failed: {exc}", flush=True)
        time.sleep(1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--name",
        default=os.environ.get("GPUCLOUD_LOCALCLUSTER", "default"),
        help="cluster name (state directory)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start the cluster (idempotent)")
    up.add_argument("--topology", help="topology file (default: topologies/default.yaml)")
    down = sub.add_parser("down", help="stop the processes `up` started")
    down.add_argument(
        "--wipe", action="store_true", help="also remove certificates, etcd data and logs"
    )
    sub.add_parser("status", help="show each component")
    kc = sub.add_parser("kubeconfig", help="print a kubeconfig path")
    kc.add_argument(
        "--user", help="user name for a client certificate (default: the admin kubeconfig)"
    )
    kc.add_argument("--group", action="append", default=[], help="group of that user (repeatable)")
    lg = sub.add_parser("logs", help="tail a component's log")
    lg.add_argument("component", choices=ORDER)
    lg.add_argument("-n", "--lines", type=int, default=50)
    stop = sub.add_parser("stop", help="stop one component; `up` starts it again")
    stop.add_argument("component", choices=ORDER)
    stop.add_argument("--timeout", type=float, default=15, help="seconds of SIGTERM before SIGKILL")
    sync = sub.add_parser("sync-scheduler-conf", help=argparse.SUPPRESS)
    # Accept --name after the subcommand too.
    for p in (up, down, kc, lg, stop, sync):
        p.add_argument("--name", dest="name", default=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    handler = {
        "up": cmd_up,
        "down": cmd_down,
        "status": cmd_status,
        "kubeconfig": cmd_kubeconfig,
        "logs": cmd_logs,
        "stop": cmd_stop,
        "sync-scheduler-conf": cmd_sync_scheduler_conf,
    }[args.command]
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
