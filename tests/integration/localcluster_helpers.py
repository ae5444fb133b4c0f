"""Helpers shared by the integration and conformance tests."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "tools" / "localcluster" / "cluster.py"
VOLCANO_QUEUES = ("scheduling.volcano.sh", "v1beta1", "queues")


def state_dir(name: str | None = None) -> Path:
    name = name or os.environ.get("GPUCLOUD_LOCALCLUSTER", "default")
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "gpucloud-localcluster" / name


def object_store_connection() -> dict[str, str]:
    """The local cluster's S3 server, as the object_store role writes it for the platform
    (cluster.py records where it listens and its root keys in the state directory)."""
    state = state_dir()
    access, secret = (state / "object-store-root").read_text().split()[:2]
    return {
        "endpoint": (state / "object-store-url").read_text().strip(),
        "admin_endpoint": (state / "object-store-admin-url").read_text().strip(),
        "access_key": access,
        "secret_key": secret,
        "region": "us-east-1",
        "verify_tls": "false",
    }


def apply_object_store_connection(api_client: Any) -> dict[str, str]:
    """The platform's connection Secret for the local S3 server, applied as the
    object_store role applies it; the connection returned."""
    import base64

    from kubernetes import dynamic

    connection = object_store_connection()
    dynamic.DynamicClient(api_client).resources.get(
        api_version="v1", kind="Secret"
    ).server_side_apply(
        body={
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "platform-object-store", "namespace": "platform-system"},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in connection.items()},
        },
        namespace="platform-system",
        field_manager="gpucloud-platform",
        force_conflicts=True,
    )
    return connection


def prometheus_url() -> str:
    """The local cluster's Prometheus (cluster.py writes where it listens)."""
    override = os.environ.get("GPUCLOUD_PROMETHEUS_URL")
    if override:
        return override
    path = state_dir() / "prometheus-url"
    if not path.exists():
        pytest.fail(f"no local Prometheus recorded in {path}; run tools/localcluster/cluster.py up")
    return path.read_text().strip()


def wait_until(
    predicate: Callable[[], Any], timeout: float = 120, interval: float = 1, what: str = "condition"
) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail with ``what`` on timeout."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what} (last value: {last!r})")


# -- vc-scheduler configuration ------------------------------------------------
# The local cluster syncs the scheduler ConfigMap into vc-scheduler's --scheduler-conf
# file, which vc-scheduler reloads on change. A test that changes the policy waits until
# vc-scheduler has logged the reload, not for a fixed time, so a busy machine cannot make
# it run under the old configuration.

SCHEDULER_CM = ("volcano-scheduler-configmap", "volcano-system")
OTHER_CLUSTER_RELOAD_SECONDS = float(os.environ.get("CONFORMANCE_RELOAD_SECONDS", "20"))


def other_cluster() -> bool:
    """True when the tests run against GPUCLOUD_KUBECONFIG: no conf file or log to watch."""
    return bool(os.environ.get("GPUCLOUD_KUBECONFIG"))


def read_from(path: Path, offset: int) -> str:
    with path.open("rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")


def scheduler_conf(api_client: Any) -> str | None:
    """The scheduler configuration in the ConfigMap, or None when there is none."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        cm = client.CoreV1Api(api_client).read_namespaced_config_map(*SCHEDULER_CM)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return (cm.data or {}).get("volcano-scheduler.conf")


def loaded_line(text: str) -> str:
    """What vc-scheduler logs after loading ``text`` (scheduler.go: "Finished loading scheduler
    config. Final state: actions=[...], plugins=[...]")."""
    import yaml

    conf = yaml.safe_load(text)
    actions = " ".join(a.strip() for a in conf["actions"].split(","))
    plugins = " ".join(p["name"] for tier in conf["tiers"] for p in tier["plugins"])
    return f"Final state: actions=[{actions}], plugins=[{plugins}]"


def load_scheduler_conf(api_client: Any, text: str) -> None:
    """Write ``text`` to the scheduler ConfigMap and wait until vc-scheduler runs with it."""
    from kubernetes.dynamic import DynamicClient

    from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_builder import (
        scheduler_configmap,
    )

    conf_file = state_dir() / "volcano-scheduler.conf"
    if scheduler_conf(api_client) == text and (
        other_cluster() or not conf_file.exists() or conf_file.read_text() == text
    ):
        return
    log = state_dir() / "logs" / "vc-scheduler.log"
    offset = log.stat().st_size if log.exists() else 0
    manifest = scheduler_configmap(text)
    dyn = DynamicClient(api_client)
    dyn.server_side_apply(
        dyn.resources.get(api_version="v1", kind="ConfigMap"),
        body=manifest,
        name=manifest["metadata"]["name"],
        namespace=manifest["metadata"]["namespace"],
        field_manager="gpucloud-platform-tests",
        force_conflicts=True,
    )
    if other_cluster():
        time.sleep(OTHER_CLUSTER_RELOAD_SECONDS)
        return
    wait_until(
        lambda: conf_file.exists() and conf_file.read_text() == text,
        30,
        0.5,
        "the scheduler conf file to follow the ConfigMap",
    )
    expected = loaded_line(text)
    wait_until(
        lambda: log.exists() and expected in read_from(log, offset),
        30,
        0.5,
        f"vc-scheduler to log {expected!r}",
    )
    time.sleep(2)  # one schedule period (1 s) under the new configuration


def restore_scheduler_conf(api_client: Any, before: str | None) -> None:
    """Put back what ``scheduler_conf`` returned before a test (None: delete the ConfigMap)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    if before is not None:
        load_scheduler_conf(api_client, before)
        return
    try:
        client.CoreV1Api(api_client).delete_namespaced_config_map(*SCHEDULER_CM)
    except ApiException as exc:
        if exc.status != 404:
            raise


# -- the collection's playbooks ------------------------------------------------


def run_playbook(
    ansible_env: dict[str, str],
    playbook: str,
    extra_vars: dict[str, Any],
    check: bool = False,
    inventory: str = "localhost,",
) -> tuple[int, dict[str, dict[str, Any]]]:
    """Run ``playbooks/<playbook>`` on localhost as AWX would (``ansible_env`` sets the json
    callback), in check mode with ``check``; its exit code and its task results keyed by
    task name."""
    import json
    import subprocess
    import sys

    cmd = [
        str(Path(sys.executable).parent / "ansible-playbook"),
        "-i",
        inventory,
        "-e",
        f"ansible_python_interpreter={sys.executable}",
        "-e",
        json.dumps(extra_vars),
        str(ROOT / "playbooks" / playbook),
        *(["--check"] if check else []),
    ]
    proc = subprocess.run(
        cmd, cwd=ROOT, env=ansible_env, capture_output=True, text=True, timeout=600, check=False
    )
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        pytest.fail(f"{playbook} gave no JSON result:\n{proc.stdout}\n{proc.stderr}")
    # the localhost play's tasks (site.yml's first plays run on the GPU nodes)
    plays = [p for p in data["plays"] if any("localhost" in t["hosts"] for t in p["tasks"])]
    tasks = {
        t["task"]["name"]: t["hosts"].get("localhost", {})
        for play in plays or data["plays"][:1]
        for t in play["tasks"]
    }
    return proc.returncode, tasks


def apply_admission(api_client: Any, **switches: Any) -> None:
    """The collection's admission policies and the parent-queues parameter, applied as the
    scheduling_policy role applies them (``switches`` as ``admission_manifests`` takes them)
    and left installed as the role leaves them: removing a parameterised binding is what
    freezes the API server's parameter informer (kubernetes/kubernetes#133827)."""
    from kubernetes import dynamic

    from ansible_collections.gpucloud.platform.plugins.module_utils.policy import admission as ap

    client = dynamic.DynamicClient(api_client)
    for manifest in [ap.parent_queues_configmap(), *ap.admission_manifests(**switches)]:
        client.resources.get(
            api_version=manifest["apiVersion"], kind=manifest["kind"]
        ).server_side_apply(
            body=manifest,
            namespace=manifest["metadata"].get("namespace"),
            field_manager="gpucloud-platform",
            force_conflicts=True,
        )


def remove_admission(api_client: Any, policy_name: str) -> None:
    """One of the collection's policies without a parameter, and its binding, removed
    (binding first), as the scheduling_policy role removes a policy switched off."""
    import contextlib

    from kubernetes import dynamic
    from kubernetes.dynamic.exceptions import NotFoundError

    from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
        ADMISSION_API,
    )

    client = dynamic.DynamicClient(api_client)
    for kind in ("ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy"):
        with contextlib.suppress(NotFoundError):
            client.resources.get(api_version=ADMISSION_API, kind=kind).delete(name=policy_name)


def identity(user: str, tenant: str) -> Any:
    """A dynamic client for ``user`` in group ``tenant:<tenant>`` (the tenant's default
    RoleBinding subject), signed by the local cluster's CA."""
    import subprocess
    import sys

    from kubernetes import config, dynamic

    proc = subprocess.run(
        [sys.executable, str(CLUSTER), "kubeconfig", "--user", user, "--group", f"tenant:{tenant}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    path = proc.stdout.strip().splitlines()[-1]
    return dynamic.DynamicClient(config.new_client_from_config(config_file=path))


# The local cluster's components that watch the API server: restarted with it after a
# fault, since their informers re-list only after a back-off of up to a minute.
WATCHERS = (
    "kube-controller-manager",
    "kube-scheduler",
    "vc-webhook-manager",
    "vc-controller-manager",
    "vc-scheduler",
)


def cluster_tool(*args: str) -> None:
    subprocess.run([sys.executable, str(CLUSTER), *args], check=True, timeout=900)


def managed_queue(name: str, tenant: str, queue_type: str) -> dict:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {
            "name": name,
            "labels": {
                "platform.io/tenant": tenant,
                "platform.io/queue-type": queue_type,
                "platform.io/managed-by": "gpucloud-platform",
            },
        },
        "spec": {"parent": "root", "reclaimable": False, "capability": {"nvidia.com/gpu": 0}},
    }


def volcano_webhook_serves(custom) -> bool:
    """A dry-run Queue create passes Volcano's webhooks (they answer again)."""
    from kubernetes.client.rest import ApiException

    probe = managed_queue(f"probe-{uuid.uuid4().hex[:6]}", "probe", "spot")
    try:
        custom.create_cluster_custom_object(*VOLCANO_QUEUES, probe, dry_run="All")
    except ApiException as exc:
        if "failed calling webhook" in str(exc.body):
            return False
        raise
    return True


# -- alert delivery and DCGM's series -------------------------------------------
# The local Alertmanager posts to the cluster's webhook receiver (alert_sink.py), which
# keeps each notification by path; a tenant's path exists once the tenant is routed.


def route_tenant_alerts(tenant: str) -> None:
    """Route ``tenant``'s alerts to the receiver's /tenant/<tenant> (cluster.py alert-routes)."""
    cluster_tool("alert-routes", tenant)


def notifications(path: str) -> list[dict[str, Any]]:
    """What the local webhook receiver kept at ``path`` (``platform``, ``tenant/<name>``)."""
    import json
    import urllib.request

    sink = (state_dir() / "alert-sink-url").read_text().strip()
    with urllib.request.urlopen(f"{sink}/{path}", timeout=10) as answer:
        return [json.loads(line) for line in answer.read().decode().splitlines()]


def notified_alerts(path: str, alertname: str) -> list[dict[str, Any]]:
    """The firing alerts named ``alertname`` among the notifications kept at ``path``."""
    return [
        alert
        for post in notifications(path)
        for alert in post.get("alerts", [])
        if alert["labels"].get("alertname") == alertname and alert.get("status") == "firing"
    ]


class DcgmExporter:
    """DCGM exporter series served over HTTP in the exporter's text format and listed in
    the local Prometheus's ``dcgm-targets.json``, so Prometheus scrapes them as a real
    exporter's. ``series`` is changed in place to change what the next scrape reads."""

    def __init__(self, series: str) -> None:
        self.series = series

    def __enter__(self) -> DcgmExporter:
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = exporter.series.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.targets = state_dir() / "dcgm-targets.json"
        target = f"127.0.0.1:{self.server.server_port}"
        self.targets.write_text(json.dumps([{"targets": [target]}]) + "\n")
        return self

    def __exit__(self, *exc: object) -> None:
        self.targets.write_text("[]\n")
        self.server.shutdown()


def remove_tenants(run_module: Callable[..., dict], api_client: Any, names: list[str]) -> None:
    """Delete each tenant (forced, as a test's teardown does), then wait once until all
    their namespaces are gone. The namespace controller holds every deletion 5 s before
    it starts (kube-controller-manager's namespaceDeletionGracePeriod): one wait for all
    the tenants costs that once, where ``wait: true`` on each costs it per tenant.

    Their pods are deleted at once (grace 0) while the controller holds: it finds none
    left, where a pod still terminating makes it look again only after half the pod's
    grace period (30 s: 16 s). A Terminating namespace takes no new pod, so nothing
    comes back. A teardown's shortcut only: the tenant module lets pods end gracefully."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    core = client.CoreV1Api(api_client)
    for name in names:
        run_module("tenant", {"name": name, "state": "absent", "force": True})
    for name in names:
        try:
            core.delete_collection_namespaced_pod(f"tenant-{name}", grace_period_seconds=0)
        except ApiException as exc:
            if exc.status != 404:
                raise

    def left() -> list[str]:
        out = []
        for name in names:
            try:
                core.read_namespace(f"tenant-{name}")
                out.append(name)
            except ApiException as exc:
                if exc.status != 404:
                    raise
        return out

    wait_until(lambda: not left(), 180, 0.5, f"the namespaces of {names} gone")
