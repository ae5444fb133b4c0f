# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The local cluster's components as data: one ComponentSpec per process, in
the order `up` starts them (ORDER), with its binary, argument template, health
URL and environment; `components()` renders them for one cluster's state
directory and binaries.

Templates are `str.format` strings over `render_context()`: ``{host}``,
``{ports[NAME]}``, ``{pki}``, ``{state}``, ``{kubeconfig[USER]}``, and the
values named there.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import build_alerting
import build_objectstore
import pins
import topology
from credentials import SERVICE_USERS, kubeconfig_for
from objectstore_files import data_dir, ensure_object_store_files, iam_dir
from prometheus_files import KSM, KSM_CUSTOM_RESOURCE_STATE
from settings import (
    ALERT_SINK,
    ALERTMANAGER,
    APISERVER,
    CLUSTER_PY,
    ENABLED_ADMISSIONS,
    HERE,
    HOST,
    KSERVE_NS,
    OBJECT_STORE,
    POD_CIDR,
    PORTS,
    PROMETHEUS,
    SERVICE_CIDR,
    VOLCANO_NS,
)
from upstream import module_dir


@dataclass(frozen=True)
class ComponentSpec:
    """One component, before it is rendered for a cluster."""

    name: str
    # a file in the binaries directory, or None for this Python running CLUSTER_PY
    binary: str | None
    args: tuple[str, ...]
    health: str | None  # URL template (https: checked against the cluster's CA), or None
    env: tuple[tuple[str, str], ...] = ()  # added to the launcher's environment
    # Whose binaries directory holds it: build.py's ("core"), build_alerting.py's
    # ("alerting") or build_objectstore.py's ("objectstore").
    binaries: str = "core"

    @property
    def program(self) -> str:
        """What a live pid of this component runs (pids are reused): the binary's name."""
        return self.binary or CLUSTER_PY.name


@dataclass
class Component:
    """A component rendered for one cluster: what `start` runs and `healthy` checks."""

    name: str
    argv: list[str]
    health: str | None  # https URL checked with the admin certificate, or None
    env: dict[str, str] | None = None  # added to the launcher's environment
    program: str | None = None  # what alive() looks for in the pid's command line


# kube-controller-manager and kube-scheduler serve /healthz with a certificate of
# our CA, and skip the front-proxy lookup (there is no aggregation layer here).
_SERVING = (
    "--tls-cert-file={pki}/apiserver.crt",
    "--tls-private-key-file={pki}/apiserver.key",
    "--authentication-skip-lookup=true",
)


def _client_of(user: str) -> tuple[str, ...]:
    """The three kubeconfig flags of a kube-* controller, all as one identity."""
    return tuple(
        f"--{flag}={{kubeconfig[{user}]}}"
        for flag in ("kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig")
    )


COMPONENTS: tuple[ComponentSpec, ...] = (
    ComponentSpec(
        name="etcd",
        binary="etcd",
        args=(
            "--name=local",
            "--data-dir={state}/etcd",
            "--listen-client-urls=http://{host}:{ports[etcd]}",
            "--advertise-client-urls=http://{host}:{ports[etcd]}",
            "--listen-peer-urls=http://{host}:{ports[etcd-peer]}",
            "--initial-advertise-peer-urls=http://{host}:{ports[etcd-peer]}",
            "--initial-cluster=local=http://{host}:{ports[etcd-peer]}",
            "--quota-backend-bytes=4294967296",
            "--unsafe-no-fsync",
        ),
        health="http://{host}:{ports[etcd]}/health",
    ),
    ComponentSpec(
        name="kube-apiserver",
        binary="kube-apiserver",
        args=(
            "--etcd-servers=http://{host}:{ports[etcd]}",
            "--bind-address={host}",
            "--advertise-address={host}",
            "--secure-port={ports[kube-apiserver]}",
            "--authorization-mode=RBAC",
            "--client-ca-file={pki}/ca.crt",
            "--tls-cert-file={pki}/apiserver.crt",
            "--tls-private-key-file={pki}/apiserver.key",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--service-account-key-file={pki}/sa.pub",
            "--service-account-signing-key-file={pki}/sa.key",
            "--service-cluster-ip-range={service_cidr}",
            "--allow-privileged=true",
            "--enable-admission-plugins=NamespaceLifecycle,ServiceAccount,DefaultStorageClass,ResourceQuota,"
            "Priority,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ValidatingAdmissionPolicy",
            "--profiling=false",
            "--event-ttl=1h",
        ),
        health="{apiserver}/readyz",
    ),
    ComponentSpec(
        name="kube-controller-manager",
        binary="kube-controller-manager",
        args=(
            *_client_of("kube-controller-manager"),
            "--bind-address={host}",
            "--secure-port={ports[kube-controller-manager]}",
            *_SERVING,
            "--leader-elect=false",
            "--service-account-private-key-file={pki}/sa.key",
            "--root-ca-file={pki}/ca.crt",
            "--use-service-account-credentials=false",
            "--service-cluster-ip-range={service_cidr}",
            "--allocate-node-cidrs=true",
            "--cluster-cidr={pod_cidr}",
            "--node-cidr-mask-size=24",
            "--concurrent-gc-syncs=5",
            "--node-monitor-grace-period=60s",
        ),
        health="https://{host}:{ports[kube-controller-manager]}/healthz",
    ),
    ComponentSpec(
        name="kube-scheduler",
        binary="kube-scheduler",
        args=(
            *_client_of("kube-scheduler"),
            "--bind-address={host}",
            "--secure-port={ports[kube-scheduler]}",
            "--leader-elect=false",
            *_SERVING,
        ),
        health="https://{host}:{ports[kube-scheduler]}/healthz",
    ),
    ComponentSpec(
        name="kwok",
        binary="kwok",
        args=(
            "--kubeconfig={kubeconfig[kwok]}",
            "--config={kwok_stages}",
            "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector={kwok_annotation}=fake",
            "--cidr={kwok_cidr}",
            "--node-ip={host}",
            "--server-address={host}:{ports[kwok]}",
            "--node-lease-duration-seconds=40",
        ),
        health=None,
    ),
    ComponentSpec(
        name="vc-webhook-manager",
        binary="vc-webhook-manager",
        args=(
            "--kubeconfig={kubeconfig[volcano]}",
            "--enabled-admission={enabled_admissions}",
            "--tls-cert-file={pki}/webhook.crt",
            "--tls-private-key-file={pki}/webhook.key",
            "--ca-cert-file={pki}/ca.crt",
            "--listen-address={host}",
            "--port={ports[vc-webhook-manager]}",
            "--webhook-namespace={volcano_ns}",
            "--webhook-service-name=volcano-admission-service",
            "--enable-healthz=true",
            "--healthz-address={host}:{ports[vc-webhook-manager-healthz]}",
            "--logtostderr",
            "-v=2",
        ),
        health="https://{host}:{ports[vc-webhook-manager-healthz]}/healthz",
    ),
    ComponentSpec(
        name="vc-controller-manager",
        binary="vc-controller-manager",
        args=(
            "--kubeconfig={kubeconfig[volcano]}",
            "--leader-elect=false",
            "--listen-address={host}:{ports[vc-controller-manager]}",
            "--enable-metrics=true",
            "--enable-healthz=true",
            "--healthz-address={host}:{ports[vc-controller-manager-healthz]}",
            "--logtostderr",
            "-v=2",
        ),
        health="http://{host}:{ports[vc-controller-manager-healthz]}/healthz",
    ),
    ComponentSpec(
        name="vc-scheduler",
        binary="vc-scheduler",
        args=(
            "--kubeconfig={kubeconfig[volcano]}",
            "--leader-elect=false",
            "--scheduler-conf={state}/volcano-scheduler.conf",
            "--schedule-period=1s",
            "--listen-address={host}:{ports[vc-scheduler]}",
            "--enable-healthz=true",
            "--enable-metrics=true",
            "--healthz-address={host}:{ports[vc-scheduler-healthz]}",
            "--logtostderr",
            "-v=3",
        ),
        health="http://{host}:{ports[vc-scheduler-healthz]}/healthz",
    ),
    ComponentSpec(
        name="kserve-controller",
        binary="kserve-manager",
        args=(
            "--kubeconfig={kubeconfig[kserve]}",
            "--leader-elect=false",
            "--webhook-port={ports[kserve-webhook]}",
            "--metrics-addr={host}:{ports[kserve-metrics]}",
            "--health-probe-addr={host}:{ports[kserve-healthz]}",
        ),
        health="http://{host}:{ports[kserve-healthz]}/readyz",
        env=(
            # constants.KServeNamespace: where it reads inferenceservice-config
            ("POD_NAMESPACE", "{kserve_ns}"),
            # its webhook server's certificate (objects.kserve_tmpdir)
            ("TMPDIR", "{state}/kserve-tmp"),
        ),
    ),
    # Copies the scheduler ConfigMap to vc-scheduler's file (`cluster.py sync-scheduler-conf`).
    ComponentSpec(
        name="scheduler-conf-sync",
        binary=None,
        args=("{cluster_py}", "sync-scheduler-conf", "--name", "{name}"),
        health=None,
    ),
    ComponentSpec(
        name="kube-state-metrics",
        binary="kube-state-metrics",
        args=(
            "--kubeconfig={kubeconfig[kube-state-metrics]}",
            "--host={host}",
            "--port={ports[kube-state-metrics]}",
            "--telemetry-host={host}",
            "--telemetry-port={ports[kube-state-metrics-telemetry]}",
            # only what the platform's rules read, to keep it light
            "--resources=pods,nodes,namespaces,leases",
            "--metric-labels-allowlist={ksm_labels}",
            "--metric-annotations-allowlist={ksm_annotations}",
            # the Queues' tenants, types and sizes, the Volcano Jobs' bids (rule
            # billing-follows-queue) and the spot queues' reclaim counts
            "--custom-resource-state-config-file={state}/{ksm_config}",
        ),
        health="http://{host}:{ports[kube-state-metrics]}/healthz",
    ),
    # Keeps what Alertmanager posts (alert_sink.py): the receiver of every local route.
    ComponentSpec(
        name="alert-sink",
        binary=None,
        args=("{cluster_py}", "alert-sink", "--name", "{name}"),
        health="{alert_sink}/healthz",
    ),
    ComponentSpec(
        name="alertmanager",
        binary="alertmanager",
        args=(
            "--config.file={state}/alertmanager.yml",
            "--storage.path={state}/alertmanager",
            "--web.listen-address={host}:{ports[alertmanager]}",
            "--cluster.listen-address=",  # one instance: no gossip port
            "--log.level=warn",
        ),
        health="{alertmanager}/-/ready",
        binaries="alerting",
    ),
    # The tenants' object store (docs/object-store.md): versitygw over a directory, with
    # its own accounts; the root's credentials come from the state directory.
    ComponentSpec(
        name="object-store",
        binary="versitygw",
        args=(
            "--port={host}:{ports[object-store]}",
            "--admin-port={host}:{ports[object-store-admin]}",
            "--iam-dir={object_store_iam}",
            "--health=/healthz",
            "--quiet",
            "posix",
            "{object_store_data}",
        ),
        health="{object_store}/healthz",
        env=(
            ("ROOT_ACCESS_KEY_ID", "{object_store_root[0]}"),
            ("ROOT_SECRET_ACCESS_KEY", "{object_store_root[1]}"),
        ),
        binaries="objectstore",
    ),
    ComponentSpec(
        name="prometheus",
        binary="prometheus",
        args=(
            "--config.file={state}/prometheus.yml",
            "--storage.tsdb.path={state}/prometheus",
            "--storage.tsdb.retention.time=1d",
            "--web.listen-address={host}:{ports[prometheus]}",
            "--web.enable-lifecycle",
            "--log.level=warn",
        ),
        health="{prometheus}/-/ready",
    ),
)
# The start order; `down` stops in reverse.
ORDER = [spec.name for spec in COMPONENTS]


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


def render_context(state: Path) -> dict[str, Any]:
    """The values the templates name, for one cluster. It writes the files they
    point at that change with the sources (kubeconfigs, kwok's stages)."""
    return {
        "host": HOST,
        "ports": PORTS,
        "apiserver": APISERVER,
        "prometheus": PROMETHEUS,
        "alertmanager": ALERTMANAGER,
        "alert_sink": ALERT_SINK,
        "object_store": OBJECT_STORE,
        "object_store_root": ensure_object_store_files(state),
        "object_store_data": data_dir(state),
        "object_store_iam": iam_dir(state),
        "state": state,
        "name": state.name,
        "pki": state / "pki",
        "kubeconfig": {u: kubeconfig_for(state, u) for u in SERVICE_USERS},
        "service_cidr": SERVICE_CIDR,
        "pod_cidr": POD_CIDR,
        "kwok_cidr": POD_CIDR.replace(".0/", ".1/", 1),
        "kwok_stages": kwok_stages(state),
        "kwok_annotation": topology.KWOK_ANNOTATION,
        "enabled_admissions": ENABLED_ADMISSIONS,
        "volcano_ns": VOLCANO_NS,
        "kserve_ns": KSERVE_NS,
        "ksm_labels": KSM.ksm_labels_allowlist(),
        "ksm_annotations": KSM.ksm_annotations_allowlist(),
        "ksm_config": KSM_CUSTOM_RESOURCE_STATE,
        "cluster_py": CLUSTER_PY,
    }


def render(spec: ComponentSpec, bins: dict[str, Path], context: dict[str, Any]) -> Component:
    argv0 = str(bins[spec.binaries] / spec.binary) if spec.binary else sys.executable
    return Component(
        spec.name,
        [argv0, *(arg.format(**context) for arg in spec.args)],
        spec.health.format(**context) if spec.health else None,
        {key: value.format(**context) for key, value in spec.env} or None,
        spec.program,
    )


def components(state: Path, bins: Path) -> list[Component]:
    """Every component rendered for the cluster in `state`, in ORDER."""
    context = render_context(state)
    dirs = {
        "core": bins,
        "alerting": build_alerting.bin_dir(),
        "objectstore": build_objectstore.bin_dir(),
    }
    return [render(spec, dirs, context) for spec in COMPONENTS]
