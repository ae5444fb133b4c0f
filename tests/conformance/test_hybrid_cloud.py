# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hybrid cloud on the real vc-scheduler: IDC nodes, two cloud GPU nodes shaped as
Virtual Kubelet registers them, the node_groups module, and jobs built by the collection's
job builders with each placement.

The module groups the 8 IDC nodes (64 GPUs) and the 2 cloud nodes (16 GPUs), binds root
to the IDC groups, the tenant's pay-as-you-go queue to IDC first then cloud, and makes the
platform's burst queue cloud-only. Every object the module or the test makes is removed
afterwards, and root loses its affinity, so the rest of the suite sees the cluster it had.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.rest import ApiException

from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.nodegroups import (
    OWNED_LABELS,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.manifest import build_job
from ansible_collections.gpucloud.platform.plugins.module_utils.policy import admission as ap
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.compliance import (
    POLICY_COMPLIANCE_PLACEMENT,
    compliance_placement_policy,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.pod_placement import (
    POLICY_POD_PLACEMENT,
    pod_placement_policy,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.vap import binding
from ansible_collections.gpucloud.platform.tests.conformance.conformance_kube import Kube, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "localcluster"))
import topology

pytestmark = [pytest.mark.conformance, pytest.mark.slow]

NEGATIVE_WAIT = float(os.environ.get("CONFORMANCE_NEGATIVE_WAIT_SECONDS", "6"))
QUEUES = ("scheduling.volcano.sh/v1beta1", "Queue")
CLOUD_NODES = ("vk-aliyun-hz-0", "vk-aliyun-hz-1")
GROUPS = [
    {"name": "idc-main", "location": "idc", "selector": {"type": "kwok"}},
    {
        "name": "cloud-aliyun-hz",
        "location": "cloud",
        "provider": "aliyun",
        "region": "cn-hangzhou",
        "selector": {"type": "virtual-kubelet"},
    },
]
CHECKPOINT = ["/bin/sh", "-c", "python /scripts/checkpoint_save.py"]


def _cloud_nodes(kube: Kube) -> None:
    for name in CLOUD_NODES:
        manifest = topology.cloud_node(name, "aliyun", "cn-hangzhou", gpus=8).manifest()
        status = manifest.pop("status")
        kube.apply(manifest)
        kube.core.patch_node_status(name, {"status": status})
    wait_for(
        "the cloud nodes Ready (kwok)",
        lambda: all(
            any(
                c.type == "Ready" and c.status == "True"
                for c in (kube.core.read_node(n).status.conditions or [])
            )
            for n in CLOUD_NODES
        ),
        timeout=60,
    )


def _ungroup(kube: Kube) -> None:
    """Root without an affinity, every node without the module's labels, no cloud node."""
    queues = kube.dyn.resources.get(api_version=QUEUES[0], kind=QUEUES[1])
    with contextlib.suppress(ApiException):
        queues.patch(
            name="root",
            body={"spec": {"affinity": None}},
            content_type="application/merge-patch+json",
        )
    for node in kube.core.list_node().items:
        labels = node.metadata.labels or {}
        drop = {k: None for k in (*OWNED_LABELS, topology.REGION_LABEL) if k in labels}
        if drop and node.metadata.name not in CLOUD_NODES:
            kube.core.patch_node(node.metadata.name, {"metadata": {"labels": drop}})
    for name in CLOUD_NODES:
        kube.delete("v1", "Node", name)


def _policies(kube: Kube, cloud_burst: bool) -> None:
    for manifest in (
        pod_placement_policy(cloud_burst),
        binding(POLICY_POD_PLACEMENT),
        compliance_placement_policy(),
        binding(POLICY_COMPLIANCE_PLACEMENT),
    ):
        kube.apply(manifest)


def _policy_exists(kube: Kube, name: str) -> bool:
    try:
        kube.dyn.resources.get(
            api_version="admissionregistration.k8s.io/v1", kind="ValidatingAdmissionPolicy"
        ).get(name=name)
        return True
    except ApiException:
        return False


class Hybrid:
    def __init__(self, kube: Kube, run_module: Any):
        self.kube = kube
        self.run_module = run_module
        self.tenant = f"hy{uuid.uuid4().hex[:6]}"
        self.ns = f"tenant-{self.tenant}"
        self.payg = f"{self.ns}-payg"
        self.team = f"{self.ns}-algo"
        self.burst = f"{self.ns}-burst"
        self.jobs: list[str] = []

    def queue(self, name: str, qtype: str, parent: str = "root") -> None:
        self.kube.apply(
            {
                "apiVersion": QUEUES[0],
                "kind": "Queue",
                "metadata": {
                    "name": name,
                    "labels": {
                        "platform.io/tenant": self.tenant,
                        "platform.io/queue-type": qtype,
                        "platform.io/managed-by": "gpucloud-platform",
                    },
                },
                "spec": {"parent": parent, "weight": 1, "reclaimable": False},
            }
        )
        self.kube.wait_queue_open(name)

    def job(self, name: str, queue: str, **params: Any) -> dict[str, Any]:
        """A single-pod job of 8 GPUs from the collection's builder."""
        qtype = {self.payg: "payg", self.team: "team", self.burst: "payg"}[queue]  # as listed
        manifest = build_job(
            {
                "name": name,
                "tenant": self.tenant,
                "queue": queue,
                "queue_type": qtype,
                "kind": "single",
                "image": "i",
                "command": ["x"],
                "gpus_per_pod": 8,
                "cpu": "1",
                "memory": "1Gi",
                **params,
            }
        )
        return manifest

    def submit(self, manifest: dict[str, Any]) -> str:
        self.kube.submit(manifest)
        self.jobs.append(manifest["metadata"]["name"])
        return manifest["metadata"]["name"]

    def node_of(self, job: str) -> str | None:
        pods = self.kube.core.list_namespaced_pod(
            self.ns, label_selector=f"volcano.sh/job-name={job}"
        ).items
        running = [p for p in pods if p.status.phase == "Running" and p.spec.node_name]
        return running[0].spec.node_name if running else None

    def wait_node(self, job: str) -> str:
        return wait_for(f"{job} running", lambda: self.node_of(job), timeout=120)

    def delete_jobs(self) -> None:
        for job in self.jobs:
            self.kube.delete("batch.volcano.sh/v1alpha1", "Job", job, self.ns)
        wait_for(
            "the jobs' pods gone",
            lambda: not self.kube.core.list_namespaced_pod(self.ns).items,
            timeout=120,
        )
        self.jobs = []


@pytest.fixture(scope="module")
def hybrid(api_client, run_module) -> Iterator[Hybrid]:
    from ansible_collections.gpucloud.platform.plugins.module_utils.policy.priority_classes import (
        priority_class_manifests,
    )
    from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_builder import (
        render_scheduler_conf,
    )

    kube = Kube(api_client)
    for manifest in priority_class_manifests():
        kube.apply(manifest)
    before_conf = kube.scheduler_conf()
    kube.load_scheduler_conf(render_scheduler_conf())
    had_placement = _policy_exists(kube, POLICY_POD_PLACEMENT)
    h = Hybrid(kube, run_module)
    try:
        _cloud_nodes(kube)
        kube.namespace(
            h.ns, {"platform.io/tenant": h.tenant, "platform.io/managed-by": "gpucloud-platform"}
        )
        h.queue(h.payg, "payg")
        h.queue(h.team, "team")
        _policies(kube, cloud_burst=True)
        yield h
    finally:
        with contextlib.suppress(Exception):
            h.delete_jobs()
        kube.delete_namespace(h.ns)
        for name in (h.burst, h.payg, h.team, "cloud-burst"):
            with contextlib.suppress(ApiException):
                kube.delete_queue(name)
        _ungroup(kube)
        if had_placement:
            kube.apply(pod_placement_policy(False))
        else:
            kube.delete(
                "admissionregistration.k8s.io/v1",
                "ValidatingAdmissionPolicyBinding",
                POLICY_POD_PLACEMENT,
            )
            kube.delete(
                "admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", POLICY_POD_PLACEMENT
            )
        for kind in ("ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy"):
            kube.delete("admissionregistration.k8s.io/v1", kind, POLICY_COMPLIANCE_PLACEMENT)
        if before_conf is not None:
            kube.load_scheduler_conf(before_conf)


@pytest.fixture(scope="module")
def grouped(hybrid: Hybrid) -> dict[str, Any]:
    """The node_groups module's first run, and the tenant's burst leaf under cloud-burst."""
    out = hybrid.run_module("node_groups", {"groups": GROUPS}, diff=True)
    assert out.get("failed") is not True, out.get("msg")
    # The queue policies (where installed) read the tenant's queue list, as the tenant
    # module writes it; burst_quota adds the burst leaf to it under its own manager.
    hybrid.kube.apply(
        ap.tenant_queues_configmap(hybrid.tenant, {hybrid.payg: "payg", hybrid.team: "team"})
    )
    burst = hybrid.run_module("burst_quota", {"tenant": hybrid.tenant, "gpus": 16})
    assert burst.get("failed") is not True and burst["changed"], burst
    hybrid.kube.wait_queue_open(hybrid.burst)
    time.sleep(2)  # vc-scheduler's next session sees the affinities
    return out


def _queue(kube: Kube, name: str) -> dict[str, Any]:
    return kube.custom.get_cluster_custom_object("scheduling.volcano.sh", "v1beta1", "queues", name)


def test_node_groups_labels_taints_and_binds_the_queues(hybrid: Hybrid, grouped: dict[str, Any]):
    kube = hybrid.kube
    cloud = kube.core.read_node(CLOUD_NODES[0])
    labels = cloud.metadata.labels
    assert labels["volcano.sh/nodegroup-name"] == "cloud-aliyun-hz"
    assert labels["platform.io/node-location"] == "cloud"
    assert labels["platform.io/cloud-provider"] == "aliyun"
    assert [t.key for t in cloud.spec.taints] == ["virtual-kubelet.io/provider"]
    idc = kube.core.read_node("gpu-node-0").metadata.labels
    assert (
        idc["volcano.sh/nodegroup-name"] == "idc-main" and idc["platform.io/node-location"] == "idc"
    )
    root = _queue(kube, "root")["spec"]["affinity"]
    assert root == {
        "nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["idc-main"]}
    }
    assert _queue(kube, hybrid.payg)["spec"]["affinity"]["nodeGroupAffinity"] == {
        "preferredDuringSchedulingIgnoredDuringExecution": ["idc-main", "cloud-aliyun-hz"]
    }
    burst = _queue(kube, "cloud-burst")["spec"]
    assert burst["capability"]["nvidia.com/gpu"] in ("16", 16)
    assert burst["affinity"]["nodeGroupAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ] == ["cloud-aliyun-hz"]
    assert grouped["changed"] is True
    assert sorted(grouped["groups"]["cloud-aliyun-hz"]) == list(CLOUD_NODES)
    # Again: nothing to write; in check mode the same.
    again = hybrid.run_module("node_groups", {"groups": GROUPS})
    assert again["changed"] is False and again["writes"] == [], again
    check = hybrid.run_module("node_groups", {"groups": GROUPS}, check=True)
    assert check["changed"] is False


def test_a_gpu_node_in_no_group_is_refused_by_name(hybrid: Hybrid, grouped: dict[str, Any]):
    only_idc = [GROUPS[0]]
    out = hybrid.run_module("node_groups", {"groups": only_idc})
    assert out.get("failed") is True
    assert "vk-aliyun-hz-0" in out["msg"] and "every-gpu-node-grouped" in out["msg"]
    # nothing was written: the cloud nodes keep their group
    labels = hybrid.kube.core.read_node(CLOUD_NODES[0]).metadata.labels
    assert labels["volcano.sh/nodegroup-name"] == "cloud-aliyun-hz"


def test_burst_quota_makes_a_cloud_leaf_the_tenant_can_submit_to(
    hybrid: Hybrid, grouped: dict[str, Any]
):
    kube = hybrid.kube
    leaf = _queue(kube, hybrid.burst)
    assert leaf["spec"]["parent"] == "cloud-burst" and "affinity" not in leaf["spec"]
    assert str(leaf["spec"]["capability"]["nvidia.com/gpu"]) == "16"
    listed = kube.core.read_namespaced_config_map("platform-queues", hybrid.ns).data
    assert listed[hybrid.burst] == "payg" and listed[hybrid.payg] == "payg"
    # The tenant's own apply of its queue list (another field manager) keeps the entry.
    kube.apply(
        ap.tenant_queues_configmap(hybrid.tenant, {hybrid.payg: "payg", hybrid.team: "team"})
    )
    assert (
        kube.core.read_namespaced_config_map("platform-queues", hybrid.ns).data[hybrid.burst]
        == "payg"
    )
    again = hybrid.run_module("burst_quota", {"tenant": hybrid.tenant, "gpus": 16})
    assert again["changed"] is False, again
    too_many = hybrid.run_module("burst_quota", {"tenant": hybrid.tenant, "gpus": 17})
    assert too_many.get("failed") and "rule burst-quota" in too_many["msg"], too_many


def test_burst_queue_jobs_land_only_on_cloud_nodes(hybrid: Hybrid, grouped: dict[str, Any]):
    """With the IDC empty, a job of the burst queue still runs on a cloud node."""
    job = hybrid.submit(
        hybrid.job("burst-a", hybrid.burst, placement="cloud-ok", checkpoint_command=CHECKPOINT)
    )
    assert hybrid.wait_node(job) in CLOUD_NODES
    hybrid.delete_jobs()


def test_vcjob_refuses_local_only_in_the_cloud_only_burst_leaf(
    hybrid: Hybrid, grouped: dict[str, Any]
):
    """Rule job-nodes: the burst leaf reaches only cloud nodes and local-only none of them,
    so such a job can never run and is refused before it is written (rule job-never-runs);
    cloud-ok in the same leaf is accepted."""
    args = {
        "tenant": hybrid.tenant,
        "name": "stuck",
        "queue": hybrid.burst,
        "kind": "single",
        "image": "i",
        "command": ["x"],
        "gpus_per_pod": 8,
        "cpu": "1",
        "memory": "1Gi",
    }
    out = hybrid.run_module("vcjob", {**args, "placement": "local-only"})
    assert out.get("failed") and out["changed"] is False, out
    assert out["errors"] == [
        f"gpus_per_pod: {hybrid.ns}/stuck asks for 8 GPUs and the nodes it may use (queue "
        f"{hybrid.burst}'s node groups, placement local-only) hold 0: it can never run"
    ]
    jobs = hybrid.kube.custom.list_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", hybrid.ns, "jobs"
    )["items"]
    assert "stuck" not in [j["metadata"]["name"] for j in jobs]
    ok = hybrid.run_module(
        "vcjob", {**args, "placement": "cloud-ok", "checkpoint_command": CHECKPOINT}
    )
    assert ok.get("failed") is not True and ok["changed"] is True, ok.get("msg")
    hybrid.jobs.append("stuck")
    hybrid.delete_jobs()


def test_local_first_fills_the_idc_then_spills_to_cloud(hybrid: Hybrid, grouped: dict[str, Any]):
    idc_jobs = [
        hybrid.submit(
            hybrid.job(
                f"lf-{i}", hybrid.payg, placement="local-first", checkpoint_command=CHECKPOINT
            )
        )
        for i in range(8)
    ]
    nodes = {hybrid.wait_node(j) for j in idc_jobs}
    assert len(nodes) == 8 and not nodes & set(CLOUD_NODES), nodes
    spill = hybrid.submit(
        hybrid.job("lf-spill", hybrid.payg, placement="local-first", checkpoint_command=CHECKPOINT)
    )
    assert hybrid.wait_node(spill) in CLOUD_NODES

    # The IDC is full and one cloud node is free: these must wait, never take it.
    local_only = hybrid.submit(hybrid.job("lo", hybrid.payg, placement="local-only"))
    compliance = hybrid.submit(hybrid.job("cmp", hybrid.payg, compliance=True))
    # An IDC queue's job that tolerates the cloud taint: root's affinity keeps it off.
    team = hybrid.submit(
        hybrid.job("team-tol", hybrid.team, placement="cloud-ok", checkpoint_command=CHECKPOINT)
    )
    deadline = time.monotonic() + NEGATIVE_WAIT
    while time.monotonic() < deadline:
        for job in (local_only, compliance, team):
            assert hybrid.node_of(job) is None, f"{job} ran on {hybrid.node_of(job)}"
        time.sleep(1)
    pods = hybrid.kube.core.list_namespaced_pod(hybrid.ns).items
    assert not any(
        p.spec.node_name in CLOUD_NODES
        for p in pods
        if p.metadata.labels.get("volcano.sh/job-name") in (local_only, compliance, team)
    )
    hybrid.delete_jobs()


def test_a_compliance_job_that_tolerates_the_cloud_is_refused_by_the_api_server(
    hybrid: Hybrid, grouped: dict[str, Any]
):
    manifest = hybrid.job("cmp-tol", hybrid.payg, compliance=True)
    spec = manifest["spec"]["tasks"][0]["template"]["spec"]
    spec["tolerations"] = [
        {"key": "virtual-kubelet.io/provider", "operator": "Exists", "effect": "NoSchedule"}
    ]
    denial = hybrid.kube.dry_run_create(manifest)
    assert denial and "compliance-restricted" in denial and "tolerations" in denial, denial
    # Without the IDC affinity, refused as well.
    bare = hybrid.job("cmp-bare", hybrid.payg, compliance=True)
    bare["spec"]["tasks"][0]["template"]["spec"].pop("affinity")
    denial = hybrid.kube.dry_run_create(bare)
    assert denial and "must require IDC nodes" in denial, denial
    # The builder's own compliance job is admitted.
    assert hybrid.kube.dry_run_create(hybrid.job("cmp-ok", hybrid.payg, compliance=True)) is None


def test_the_spot_pool_ignores_cloud_gpus(hybrid: Hybrid, grouped: dict[str, Any]):
    out = hybrid.run_module("spot_capacity", {}, check=True)
    assert out.get("failed") is not True, out.get("msg")
    assert out["pool"]["nvidia.com/gpu"] in (64, "64"), out["pool"]
