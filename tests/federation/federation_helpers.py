# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the federation suite's files share: its one federation (``conftest.federation``
starts it), two member local clusters of their own, ``fed-idc`` and ``fed-cloud`` (port
offsets 600 and 800, ``topologies/federation-member.yaml``), joined to a Karmada control
plane ``fed-test`` (federation port offset 900); and how the files reach it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    CLUSTER,
    ROOT,
    WATCHERS,
    state_dir,
)

FEDERATION = ROOT / "tools" / "localcluster" / "federation.py"
BUILD = ROOT / "tools" / "localcluster" / "build_federation.py"
# name -> (location, port offset); the federation's own ports are in a block of their own
MEMBERS = {"fed-idc": ("idc", 600), "fed-cloud": ("cloud", 800)}
FED_NAME, FED_OFFSET = "fed-test", 900
# Module federation_member's options for the cloud member (the suite's fixture joins it).
CLOUD_JOIN = {
    "name": "fed-cloud",
    "location": "cloud",
    "region": "local-cloud",
    "member_kubeconfig": str(state_dir("fed-cloud") / "admin.kubeconfig"),
}
LOCATION = "platform.io/node-location"
# one spine, one ToR, one 8-GPU node: a member's control plane is what is examined here
MEMBER_TOPOLOGY = ROOT / "tools" / "localcluster" / "topologies" / "federation-member.yaml"


def _run(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 600):
    return subprocess.run(
        cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def _member_env(name: str) -> dict[str, str]:
    return dict(
        os.environ,
        GPUCLOUD_LOCALCLUSTER=name,
        GPUCLOUD_LOCALCLUSTER_PORT_OFFSET=str(MEMBERS[name][1]),
    )


def _fed(*args: str, timeout: float = 600):
    return _run([sys.executable, str(FEDERATION), "--name", FED_NAME, *args], timeout=timeout)


def _fed_state() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "gpucloud-federation" / FED_NAME


def _pids(state: Path) -> dict[str, int]:
    try:
        return json.loads((state / "pids.json").read_text())
    except OSError:
        return {}


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _karmada_built() -> bool:
    out = _run([sys.executable, str(BUILD), "--print-dir"], timeout=60)
    return out.returncode == 0 and all(
        (Path(out.stdout.strip()) / b).exists()
        for b in ("karmada-controller-manager", "karmada-scheduler", "karmada-webhook")
    )


def dynamic(api):
    from kubernetes import dynamic as kdynamic

    return kdynamic.DynamicClient(api)


def stop_member_api_server(name: str) -> None:
    """Kill member ``name``'s API server at once (SIGKILL, as a host that is lost stops
    answering), then record it stopped so that ``up`` starts it again."""
    import signal

    pid = int(_pids(state_dir(name)).get("kube-apiserver") or 0)
    cmdline = Path(f"/proc/{pid}/cmdline")
    if pid and cmdline.exists() and b"kube-apiserver" in cmdline.read_bytes():
        os.kill(pid, signal.SIGKILL)
    done = _run(
        [sys.executable, str(CLUSTER), "stop", "kube-apiserver", "--timeout", "0"],
        _member_env(name),
    )
    assert done.returncode == 0, done.stderr


def restore_member(name: str) -> None:
    """Start member ``name``'s API server again, with the components that watch it (their
    informers re-list only after a back-off of up to a minute otherwise)."""
    for component in WATCHERS:
        _run([sys.executable, str(CLUSTER), "stop", component], _member_env(name))
    up = _run([sys.executable, str(CLUSTER), "up"], _member_env(name))
    assert up.returncode == 0, f"member {name}:\n{up.stdout}\n{up.stderr}"


# The platform's own state in the suite's federation (module federation_platform), written
# once per suite run by ``conftest.federation_platform``: cloud-burst of 8 GPUs, the width
# of the cloud member's one node.
PLATFORM_ARGS = {"cloud_burst_gpus": 8}
SCHEDULER_CONFIGMAP = ("volcano-system", "volcano-scheduler-configmap")
PRIORITY_CLASS_API = "scheduling.k8s.io/v1"
QUEUE_API = "scheduling.volcano.sh/v1beta1"
# Karmada's mark on what it made in a member (pkg/util/constants.go ManagedByKarmadaLabel)
KARMADA_MANAGED = "karmada.io/managed"


def platform_versions(karmada) -> dict[str, str]:
    """Every platform object in Karmada (federation_platform's kinds, selected as it
    selects them, less the tenants'), ``Kind/name`` -> resourceVersion."""
    from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
        MANAGED_SELECTOR,
    )
    from ansible_collections.gpucloud.platform.plugins.module_utils.federation.platform_federation import (
        NAMESPACED_KINDS,
        PLATFORM_KINDS,
        PLATFORM_NAMESPACES,
    )

    # a tenant's objects carry the same label, and the platform's no tenant's
    selector = f"{MANAGED_SELECTOR},!platform.io/tenant"
    found = {}
    for api_version, kind in PLATFORM_KINDS:
        for namespace in PLATFORM_NAMESPACES if kind in NAMESPACED_KINDS else (None,):
            for obj in karmada.list(api_version, kind, namespace, label_selector=selector):
                found[f"{kind}/{obj['metadata']['name']}"] = obj["metadata"]["resourceVersion"]
    return found


def member_platform(member) -> dict[str, Any]:
    """What a member holds of the platform's objects: its PriorityClasses (name ->
    resourceVersion), its scheduler ConfigMap (resourceVersion, conf text, whether Karmada
    made it) and its cloud-burst queue's GPUs (None: no such queue)."""
    classes = {
        c["metadata"]["name"]: c["metadata"]["resourceVersion"]
        for c in member.list(PRIORITY_CLASS_API, "PriorityClass")
        if not c["metadata"]["name"].startswith("system-")
    }
    namespace, name = SCHEDULER_CONFIGMAP
    cm = member.get("v1", "ConfigMap", name, namespace) or {}
    queue = member.get(QUEUE_API, "Queue", "cloud-burst")
    return {
        "priority_classes": classes,
        "configmap_version": (cm.get("metadata") or {}).get("resourceVersion"),
        "conf": (cm.get("data") or {}).get("volcano-scheduler.conf"),
        "karmada_made": ((cm.get("metadata") or {}).get("labels") or {}).get(KARMADA_MANAGED),
        "cloud_burst_gpus": None
        if queue is None
        else str(queue["spec"].get("capability", {}).get("nvidia.com/gpu")),
    }


def tenant_args(tenant: str) -> dict[str, Any]:
    """federation_tenant's options for a test's tenant: 8 subscription GPUs (IDC) and a
    pay-as-you-go grant of 16, 8 of them in the cloud."""
    return {
        "name": tenant,
        "subscription": {"nvidia.com/gpu": 8, "cpu": 256, "memory": "2Ti"},
        "payg": {"nvidia.com/gpu": 16},
        "payg_cloud_gpus": 8,
        "pod_cidr": "10.244.0.0/16",
        "service_cidr": "10.96.0.0/12",
    }


def federated_job(tenant: str, name: str, **options: Any) -> dict[str, Any]:
    """vcjob's options for a federated gang in the tenant's pay-as-you-go queue: 2 pods of 4
    GPUs unless ``options`` say otherwise."""
    return {
        "tenant": tenant,
        "name": name,
        "queue": f"tenant-{tenant}-payg",
        "kind": "pytorch_ddp",
        "image": "train:1",
        "command": ["python", "train.py"],
        "replicas": 2,
        "gpus_per_pod": 4,
        "federation": True,
        **options,
    }


def raw_job(namespace: str, name: str, queue: str) -> dict[str, Any]:
    """A Volcano Job as someone writes it straight to Karmada (as ``kubectl`` would, past
    vcjob's own checks): one pod, the platform's ``normal-job`` class, so that only its
    queue can be wrong."""
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "queue": queue,
            "minAvailable": 1,
            "priorityClassName": "normal-job",
            "tasks": [
                {
                    "name": "worker",
                    "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
                }
            ],
        },
    }


def queue_gpus(member, queue: str) -> str | None:
    """A Queue's GPU capability in a member (a dynamic client), or None while it has none."""
    queues = member.resources.get(api_version="scheduling.volcano.sh/v1beta1", kind="Queue")
    try:
        spec = queues.get(name=queue).to_dict().get("spec") or {}
    except Exception:
        return None
    gpus = (spec.get("capability") or {}).get("nvidia.com/gpu")
    # a member's copy may hold the quantity as a number (8), where the template has "8"
    return None if gpus is None else str(gpus)


def member_gpus_allocated(karmada, member: str) -> str | None:
    """The GPUs Karmada's member status says are allocated in a member (every 10 s)."""
    clusters = karmada.resources.get(api_version="cluster.karmada.io/v1alpha1", kind="Cluster")
    summary = (clusters.get(name=member).to_dict().get("status") or {}).get("resourceSummary") or {}
    return (summary.get("allocated") or {}).get("nvidia.com/gpu")
