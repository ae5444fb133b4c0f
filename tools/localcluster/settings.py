# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The local cluster's fixed settings: addresses and ports (shifted per cluster by
GPUCLOUD_LOCALCLUSTER_PORT_OFFSET), CIDRs, namespaces and object names the
components and `cluster.py` agree on, the state directory and the log line."""

from __future__ import annotations

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The entry point: scheduler-conf-sync runs it as a component of its own.
CLUSTER_PY = HERE / "cluster.py"

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
    "alertmanager": 29093,
    "alert-sink": 29095,
    "object-store": 29700,
    "object-store-admin": 29701,
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
PROMETHEUS = f"http://{HOST}:{PORTS['prometheus']}"
ALERTMANAGER = f"http://{HOST}:{PORTS['alertmanager']}"
# A webhook receiver that keeps what Alertmanager sends it (alert_sink.py): a tenant's
# notices at /tenant/<name>, everything else at /platform.
ALERT_SINK = f"http://{HOST}:{PORTS['alert-sink']}"
# The S3 server (versitygw) and its admin API, on loopback (objectstore_files.py).
OBJECT_STORE = f"http://{HOST}:{PORTS['object-store']}"
OBJECT_STORE_ADMIN = f"http://{HOST}:{PORTS['object-store-admin']}"
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
