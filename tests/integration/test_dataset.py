# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A dataset version's lifecycle on the local cluster's real API server, PV controller,
Volcano and kwok: staged with an ingest job from the tenant's bucket, published
read-only, mounted by a job, and kept while mounted.

No CSI driver runs here: the staging claim is bound to a hostPath volume made by the
test, as a storage admin's static volume would be. kwok runs no container, so the
ingest job's download is not run; its pod is completed through kwok's delay stage, and
the test checks what the job was told to run.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    apply_object_store_connection,
    wait_until,
)

pytestmark = pytest.mark.integration

GPU = "nvidia.com/gpu"
TENANT = f"ds{uuid.uuid4().hex[:5]}"
NS = f"tenant-{TENANT}"
JOB_API = "batch.volcano.sh/v1alpha1"
DATASET = {"tenant": TENANT, "name": "imagenet", "version": "v1"}
STAGING = "dataset-imagenet-v1-staging"
PUBLISHED = "dataset-imagenet-v1"
KWOK_DELAY = "pod-complete.stage.kwok.x-k8s.io/delay"


@pytest.fixture(scope="module")
def core(api_client):
    from kubernetes import client

    return client.CoreV1Api(api_client)


@pytest.fixture(scope="module")
def dyn(api_client):
    from kubernetes import dynamic

    return dynamic.DynamicClient(api_client)


@pytest.fixture(scope="module")
def tenant(run_module, api_client, core, priority_classes):
    made = run_module(
        "tenant",
        {
            "name": TENANT,
            "subscription": {GPU: 2, "cpu": 16, "memory": "64Gi"},
            "teams": [{"name": "train", "deserved": {GPU: 2}}],
            "oversell_check": False,
        },
    )
    assert not made.get("failed"), made.get("msg")
    apply_object_store_connection(api_client)
    stored = run_module("tenant_object_store", {"tenant": TENANT, "buckets": ["datasets"]})
    assert not stored.get("failed"), stored.get("msg")
    yield
    # not waited for: the namespace goes in the background (its name is this run's own)
    run_module("tenant", {"name": TENANT, "state": "absent", "force": True})
    for pv in core.list_persistent_volume(label_selector=f"platform.io/tenant={TENANT}").items:
        core.delete_persistent_volume(pv.metadata.name)
    core.delete_persistent_volume(f"{NS}-staging-volume")


def pods_of(core, job: str) -> list[Any]:
    return core.list_namespaced_pod(NS, label_selector=f"volcano.sh/job-name={job}").items


def test_a_version_is_staged_ingested_published_read_only_and_mounted(
    run_module, core, dyn, tenant
):
    staged = run_module(
        "dataset",
        {
            **DATASET,
            "size": "10Gi",
            "source": {"s3": f"s3://{NS}-datasets/imagenet/"},
            "ingest_image": "amazon/aws-cli:2",
        },
    )
    assert not staged.get("failed") and staged["writes"] == [
        f"PersistentVolumeClaim/{STAGING}",
        "Job/ingest-imagenet-v1",
    ], staged
    # a storage admin's static volume for the staging claim; the PV controller binds them
    core.create_persistent_volume(
        {
            "metadata": {"name": f"{NS}-staging-volume"},
            "spec": {
                "capacity": {"storage": "10Gi"},
                "accessModes": ["ReadWriteOnce"],
                "hostPath": {"path": f"/srv/datasets/{NS}"},
                "persistentVolumeReclaimPolicy": "Delete",
                "claimRef": {"namespace": NS, "name": STAGING},
            },
        }
    )
    wait_until(
        lambda: core.read_namespaced_persistent_volume_claim(STAGING, NS).status.phase == "Bound",
        60,
        0.5,
        "the staging claim Bound",
    )
    refused = run_module("dataset", {**DATASET, "state": "published"})
    assert refused.get("failed") and "publish once it has Completed" in refused["msg"], refused

    # The ingest pod runs the tenant's own keys against its bucket (kwok runs no
    # container: its pod is completed through kwok's delay stage).
    ingest = wait_until(lambda: pods_of(core, "ingest-imagenet-v1"), 60, 0.5, "the ingest pod")[0]
    container = ingest.spec.containers[0]
    assert container.command[:3] == ["aws", "s3", "sync"] and container.env_from[
        0
    ].secret_ref.name == ("platform-object-store")
    wait_until(
        lambda: core.read_namespaced_pod(ingest.metadata.name, NS).status.phase == "Running",
        60,
        0.5,
        "the ingest pod Running",
    )
    core.patch_namespaced_pod(
        ingest.metadata.name, NS, {"metadata": {"annotations": {KWOK_DELAY: "1s"}}}
    )
    jobs = dyn.resources.get(api_version=JOB_API, kind="Job")
    wait_until(
        lambda: (
            (jobs.get(name="ingest-imagenet-v1", namespace=NS).status or {})
            .get("state", {})
            .get("phase")
            == "Completed"
        ),
        90,
        1,
        "the ingest job Completed",
    )

    published = run_module("dataset", {**DATASET, "state": "published"}, diff=True)
    assert not published.get("failed") and published["claim"] == PUBLISHED, published
    assert published["writes"][0] == f"PersistentVolume/{NS}-staging-volume kept (Retain)"
    claim = wait_until(
        lambda: (
            (c := core.read_namespaced_persistent_volume_claim(PUBLISHED, NS)).status.phase
            == "Bound"
            and c
        ),
        60,
        0.5,
        "the published claim Bound",
    )
    assert claim.spec.access_modes == ["ReadOnlyMany"]
    volume = core.read_persistent_volume(claim.spec.volume_name)
    assert volume.spec.host_path.path == f"/srv/datasets/{NS}"  # the staged data, not a copy
    assert (
        core.read_persistent_volume(f"{NS}-staging-volume").spec.persistent_volume_reclaim_policy
        == "Retain"
    )
    assert run_module("dataset", {**DATASET, "state": "published"})["writes"] == []

    # A job mounts the published version by name and version, read-only.
    submitted = run_module(
        "vcjob",
        {
            "tenant": TENANT,
            "name": "train-imagenet",
            "queue": f"{NS}-train",
            "kind": "single",
            "image": "busybox",
            "gpus_per_pod": 1,
            "cpu": "1",
            "memory": "1Gi",
            "dataset": {"name": "imagenet", "version": "v1"},
        },
    )
    assert not submitted.get("failed"), submitted.get("msg")
    pod = wait_until(
        lambda: next(
            (p for p in pods_of(core, "train-imagenet") if p.status.phase == "Running"), None
        ),
        90,
        0.5,
        "the training pod Running",
    )
    volume = next(v for v in pod.spec.volumes if v.name == "dataset")
    assert (
        volume.persistent_volume_claim.claim_name == PUBLISHED
        and volume.persistent_volume_claim.read_only
    )
    mount = next(m for m in pod.spec.containers[0].volume_mounts if m.name == "dataset")
    assert mount.read_only is True

    # Removing a mounted version is refused, and nothing is removed.
    kept = run_module("dataset", {**DATASET, "state": "absent"})
    assert kept.get("failed") and "is mounted by 1 unfinished pod(s)" in kept["msg"], kept
    assert core.read_namespaced_persistent_volume_claim(PUBLISHED, NS)


def test_a_job_asking_for_a_version_not_published_is_refused_naming_dataset(run_module, tenant):
    refused = run_module(
        "vcjob",
        {
            "tenant": TENANT,
            "name": "train-v9",
            "queue": f"{NS}-train",
            "kind": "single",
            "image": "busybox",
            "cpu": "1",
            "memory": "1Gi",
            "dataset": {"name": "imagenet", "version": "v9"},
        },
    )
    assert refused.get("failed") and "dataset:" in refused["msg"], refused
    assert "dataset-imagenet-v9" in refused["msg"], refused


def test_the_cache_of_a_published_version_is_admitted_by_fluids_crds(run_module, core, dyn, tenant):
    """The Dataset and AlluxioRuntime the module makes, read back from the API server,
    which validates them against Fluid v1.0.8's schemas (no Fluid controller runs here)."""
    version = {"tenant": TENANT, "name": "coco", "version": "v2"}
    staging = "dataset-coco-v2-staging"
    # the volume first: the PV controller binds the claim as soon as it is made
    core.create_persistent_volume(
        {
            "metadata": {"name": f"{NS}-coco-volume", "labels": {"platform.io/tenant": TENANT}},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "hostPath": {"path": f"/srv/datasets/{NS}-coco"},
                "claimRef": {"namespace": NS, "name": staging},
            },
        }
    )
    assert not run_module("dataset", {**version, "size": "1Gi"}).get("failed")
    wait_until(
        lambda: core.read_namespaced_persistent_volume_claim(staging, NS).status.phase == "Bound",
        60,
        0.5,
        "the staging claim Bound",
    )
    source = {"s3": f"s3://{NS}-datasets/coco/v2/"}
    cached = {**version, "state": "published", "source": source, "cache": {"quota": "4Gi"}}
    checked = run_module("dataset", cached, check=True)
    published = run_module("dataset", cached)
    assert not published.get("failed") and published["cache"] == "cache-coco-v2", published
    assert checked["writes"] == published["writes"], (checked, published)
    assert published["writes"][-3:-1] == ["Dataset/cache-coco-v2", "AlluxioRuntime/cache-coco-v2"]

    datasets = dyn.resources.get(api_version="data.fluid.io/v1alpha1", kind="Dataset")
    runtimes = dyn.resources.get(api_version="data.fluid.io/v1alpha1", kind="AlluxioRuntime")
    dataset = datasets.get(name="cache-coco-v2", namespace=NS).to_dict()
    runtime = runtimes.get(name="cache-coco-v2", namespace=NS).to_dict()
    (mount,) = dataset["spec"]["mounts"]
    assert mount["mountPoint"] == source["s3"] and mount["readOnly"] is True
    assert dataset["spec"]["accessModes"] == ["ReadOnlyMany"]
    assert {o["valueFrom"]["secretKeyRef"]["name"] for o in mount["encryptOptions"]} == {
        "platform-object-store"
    }
    assert dataset["metadata"]["labels"]["platform.io/tenant"] == TENANT
    assert runtime["spec"]["replicas"] == 1
    # volumeType is the default Fluid's schema gives a level: the API server applied it
    assert runtime["spec"]["tieredstore"]["levels"] == [
        {"mediumtype": "MEM", "path": "/dev/shm", "quota": "4Gi", "volumeType": "hostPath"}
    ]
    assert run_module("dataset", cached)["writes"] == []
    # The schema is enforced: a tier Fluid does not know is refused by the API server.
    from kubernetes.client.exceptions import ApiException

    bad = {**runtime, "metadata": {"name": "cache-bad", "namespace": NS}}
    bad["spec"]["tieredstore"]["levels"][0]["mediumtype"] = "NVME"
    with pytest.raises(ApiException) as refused:
        runtimes.create(body=bad, namespace=NS, dry_run="All")
    assert refused.value.status == 422 and "mediumtype" in str(refused.value.body)

    removed = run_module("dataset", {**version, "state": "absent"})
    assert removed["writes"][:2] == [
        "AlluxioRuntime/cache-coco-v2 removed",
        "Dataset/cache-coco-v2 removed",
    ], removed
    assert not datasets.get(namespace=NS, label_selector="platform.io/dataset=coco").items
