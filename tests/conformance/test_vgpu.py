# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vGPU requests scheduled by the real vc-scheduler's deviceshare plugin onto a node whose
vGPU registration is simulated as HAMi's device plugin writes it (docs/gpu-sharing.md).

``deviceshare.VGPUEnable`` is read once per vc-scheduler process, so the scenario runs a
second vc-scheduler of its own, ``--scheduler-name=volcano-vgpu``, with the platform's
configuration plus deviceshare; the cluster's vc-scheduler ignores its pods. The node is a
kwok node with two 80 GiB GPUs, each split ten ways, tainted so nothing else lands there.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    VGPU_NODE_REGISTER,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.vgpu import vgpu_resources
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_builder import (
    DEFAULT_TIERS,
    build_scheduler_conf,
    render_scheduler_conf,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_rules import (
    scheduler_conf_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.plan import plan_tenant
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.spec import (
    parse_tenant_spec,
)
from ansible_collections.gpucloud.platform.tests.conformance.conformance_kube import Kube, wait_for
from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    state_dir,
)

pytestmark = [pytest.mark.conformance, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SCHEDULER = "volcano-vgpu"
NODE = "vgpu-0"
TAINT = {"key": "platform.io/gpu-sharing", "value": "vgpu", "effect": "NoSchedule"}
REGISTER = "".join(
    f"GPU-00000000-0000-0000-0000-00000000000{i},10,81920,NVIDIA-H100,true,hami-core:"
    for i in range(2)
)
SHARES = {
    "volcano.sh/vgpu-number": "20",
    "volcano.sh/vgpu-memory": "163840",
    "volcano.sh/vgpu-cores": "200",
}


def vgpu_conf() -> str:
    """The platform's configuration with deviceshare's vGPU mode in the predicates tier."""
    tiers = [dict(t, plugins=[dict(p) for p in t["plugins"]]) for t in DEFAULT_TIERS]
    tiers[-1]["plugins"].append(
        {
            "name": "deviceshare",
            "arguments": {
                "deviceshare.VGPUEnable": True,
                "deviceshare.SchedulePolicy": "binpack",
                "deviceshare.ScheduleWeight": 10,
            },
        }
    )
    conf = build_scheduler_conf(tiers=tiers)
    assert scheduler_conf_errors(conf) == []  # the collection's own checks accept it
    return render_scheduler_conf(tiers=tiers)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _binary() -> Path:
    out = subprocess.run(
        [sys.executable, str(ROOT / "tools/localcluster/build.py"), "--print-dir"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip()) / "vc-scheduler"


def _node() -> dict[str, Any]:
    capacity = {"cpu": "64", "memory": "512Gi", "pods": "110", **SHARES}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": NODE,
            "labels": {
                "kubernetes.io/hostname": NODE,
                "type": "kwok",
                "gpucloud.localcluster/fake-node": "true",
                "platform.io/gpu-sharing": "vgpu",
            },
            "annotations": {"kwok.x-k8s.io/node": "fake", VGPU_NODE_REGISTER: REGISTER},
        },
        "spec": {"taints": [TAINT]},
        "status": {"capacity": capacity, "allocatable": dict(capacity)},
    }


def _job(
    name: str, ns: str, vgpu: dict[str, int], queue: str | None = None, replicas: int = 1
) -> dict[str, Any]:
    shares = {k: str(v) for k, v in vgpu_resources(vgpu).items()}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "schedulerName": SCHEDULER,
            "queue": queue or ns,
            "minAvailable": 1,
            "tasks": [
                {
                    "name": "infer",
                    "replicas": replicas,
                    "template": {
                        "metadata": {"labels": {"vgpu-job": name}},
                        "spec": {
                            "restartPolicy": "Never",
                            "tolerations": [dict(TAINT, operator="Equal")],
                            "nodeSelector": {"platform.io/gpu-sharing": "vgpu"},
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "i",
                                    "resources": {"requests": dict(shares), "limits": dict(shares)},
                                }
                            ],
                        },
                    },
                }
            ],
        },
    }


@pytest.fixture(scope="module")
def vgpu(api_client, tmp_path_factory) -> Iterator[tuple[Kube, str, Path]]:
    kube = Kube(api_client)
    ns = f"vgpu-{uuid.uuid4().hex[:5]}"
    # vc-scheduler reloads on any write in its configuration's directory: the log lives apart.
    conf = tmp_path_factory.mktemp("vgpu-conf") / "volcano-scheduler.conf"
    conf.write_text(vgpu_conf())
    log_path = tmp_path_factory.mktemp("vgpu-log") / "vc-scheduler.log"
    log = log_path.open("w")
    proc = subprocess.Popen(
        [
            str(_binary()),
            f"--kubeconfig={state_dir() / 'volcano.kubeconfig'}",
            "--leader-elect=false",
            f"--scheduler-name={SCHEDULER}",
            f"--scheduler-conf={conf}",
            "--schedule-period=1s",
            f"--listen-address=127.0.0.1:{_free_port()}",
            "--enable-healthz=false",
            "--logtostderr",
            "-v=4",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        # Volcano sets deviceshare's VGPUEnable when it builds the plugin for its first
        # session; a node its cache took in before that has no vGPU device (measured: the
        # device filter is then skipped, "Devices hamivgpu assertion conversion failed").
        # The node is registered after that session, as HAMi's plugin registers a node
        # after vc-scheduler runs.
        time.sleep(3)
        manifest = _node()
        status = manifest.pop("status")
        kube.apply(manifest)
        kube.core.patch_node_status(NODE, {"status": status})
        kube.namespace(ns, {})
        kube.queue(ns)
        kube.wait_queue_open(ns)
        yield kube, ns, log_path
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=20)
        log.close()
        kube.delete_namespace(ns)
        wait_for(
            "the vGPU pods gone",
            lambda: not kube.core.list_namespaced_pod(ns).items,
            timeout=120,
        )
        kube.delete_queue(ns)
        kube.delete("v1", "Node", NODE)


def _pod(kube: Kube, ns: str, job: str):
    pods = kube.core.list_namespaced_pod(ns, label_selector=f"vgpu-job={job}").items
    return pods[0] if pods else None


def test_a_vgpu_request_is_placed_on_the_shared_gpu_node(vgpu):
    """The deviceshare plugin registers the node's two GPUs from the annotation, places the
    pod there and records the device it gave it, as HAMi's device plugin then reads it;
    bind-phase stays allocating, since only that plugin sets success."""
    kube, ns, log = vgpu
    kube.submit(_job("small", ns, {"number": 1, "memory_mib": 8192, "cores": 30}))
    pod = wait_for(
        "the vGPU pod bound",
        lambda: (p := _pod(kube, ns, "small")) is not None and p.spec.node_name and p,
        timeout=120,
    )
    assert pod.spec.node_name == NODE
    assert '"Nvidia Device registered name" name="vgpu-0"' in log.read_text()
    notes = pod.metadata.annotations or {}
    assert notes.get("volcano.sh/vgpu-node") == NODE, notes
    assert notes.get("volcano.sh/bind-phase") == "allocating", notes
    # one physical GPU of the two, 8192 MiB and 30 % of it
    (device,) = [d for d in notes["volcano.sh/devices-to-allocate"].split(":") if d]
    card, vendor, memory, cores = device.split(",")
    assert card in REGISTER and vendor == "NVIDIA" and (memory, cores) == ("8192", "30"), device


def test_more_vgpus_than_the_node_has_gpus_stay_pending(vgpu):
    """Each vGPU of a container is on a different physical GPU: 3 do not fit on the node's
    2, although its extended resources (20 vGPUs) would hold them. Only the device's own
    filter can refuse it."""
    kube, ns, log = vgpu
    kube.submit(_job("wide", ns, {"number": 3, "memory_mib": 1024, "cores": 10}))
    with contextlib.suppress(AssertionError):
        wait_for(
            "the wide pod bound",
            lambda: (p := _pod(kube, ns, "wide")) is not None and p.spec.node_name,
            timeout=15,
        )
    pod = _pod(kube, ns, "wide")
    assert pod is not None and not pod.spec.node_name, pod and pod.spec.node_name
    assert "no enough gpu cards on node vgpu-0" in log.read_text()


def _subscription_queue(tenant: str, vgpu: dict[str, int] | None) -> dict[str, Any]:
    """The subscription queue the tenant module writes for a purchase (its manifest, built
    by the platform's own plan), with or without a vGPU purchase."""
    params: dict[str, Any] = {
        "name": tenant,
        "subscription": {"nvidia.com/gpu": 0, "cpu": 8, "memory": "32Gi"},
        "pod_cidr": "10.244.0.0/16",
        "service_cidr": "10.96.0.0/12",
    }
    if vgpu is not None:
        params["vgpu"] = vgpu
    (queue, *_unused) = plan_tenant(parse_tenant_spec(params), {}).queues
    return queue.to_manifest()


def _bound(kube: Kube, ns: str, job: str) -> int:
    pods = kube.core.list_namespaced_pod(ns, label_selector=f"vgpu-job={job}").items
    return sum(1 for p in pods if p.spec.node_name)


def test_a_tenant_without_a_vgpu_purchase_gets_none_and_a_purchase_bounds_the_other(vgpu):
    """The red team's case: one tenant asked for every vGPU of the shared node while
    another's 1-vGPU job waited. With the vGPU named in every tenant queue (rule
    vgpu-queue-capability), the tenant that bought none gets none (a 0 capability holds
    even the job's enqueue), the one that bought 4 holds 4 of its 20 pods, and a third
    tenant's 1-vGPU job runs next to them."""
    kube, ns, _log = vgpu
    tag = uuid.uuid4().hex[:4]
    tenants = {
        f"vg{tag}none": None,
        f"vg{tag}four": {"number": 4, "memory_mib": 4096, "cores": 20},
        f"vg{tag}one": {"number": 1},
    }
    queues = {t: _subscription_queue(t, bought) for t, bought in tenants.items()}
    try:
        for manifest in queues.values():
            kube.apply(manifest)
        for manifest in queues.values():
            kube.wait_queue_open(manifest["metadata"]["name"])
        none, four, one = tenants
        # Each asks for the whole node: 20 pods of one vGPU, 1 GiB and 5 % of a GPU each.
        share = {"number": 1, "memory_mib": 1024, "cores": 5}
        for tenant in (none, four):
            name = queues[tenant]["metadata"]["name"]
            kube.submit(_job(tenant, ns, share, queue=name, replicas=20))
        kube.submit(_job(one, ns, share, queue=queues[one]["metadata"]["name"]))
        wait_for("the 1-vGPU job of the third tenant bound", lambda: _bound(kube, ns, one) == 1)
        wait_for("4 pods of the tenant that bought 4 bound", lambda: _bound(kube, ns, four) >= 4)
        four_queue = queues[four]["metadata"]["name"]
        wait_for(
            "Volcano counting the 4 vGPUs in the queue's status",
            lambda: (
                kube.custom.get_cluster_custom_object(
                    "scheduling.volcano.sh", "v1beta1", "queues", four_queue
                )
                .get("status", {})
                .get("allocated", {})
                .get("volcano.sh/vgpu-number")
                == "4"
            ),
        )
        assert _bound(kube, ns, four) == 4
        assert _bound(kube, ns, none) == 0
        # Held at enqueue: Volcano's job controller never made the pods.
        assert kube.pod_group_phase(ns, none) == "Pending"
    finally:
        for tenant in tenants:
            kube.delete("batch.volcano.sh/v1alpha1", "Job", tenant, ns)
        wait_for(
            "the tenants' vGPU pods gone",
            lambda: (
                not any(
                    kube.core.list_namespaced_pod(ns, label_selector=f"vgpu-job={t}").items
                    for t in tenants
                )
            ),
            timeout=120,
        )
        for manifest in queues.values():
            kube.delete_queue(manifest["metadata"]["name"])
