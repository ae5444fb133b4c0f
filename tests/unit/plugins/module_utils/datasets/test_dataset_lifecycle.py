# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A dataset version's lifecycle on the fake cluster: staged, ingested, published
read-only, removed (rules dataset-names, dataset-ingest, dataset-published-readonly,
dataset-in-use), and vcjob's ``dataset`` option (rule dataset-version)."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
    Refused,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.datasets import objects, plan
from ansible_collections.gpucloud.platform.plugins.module_utils.datasets.service import DATASET_FLOW
from ansible_collections.gpucloud.platform.plugins.module_utils.datasets.summary import (
    dataset_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.manifest import build_job
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster

NS = "tenant-alpha"
S3 = {"s3": "s3://tenant-alpha-datasets/imagenet/"}


def params(**over):
    p = {
        "tenant": "alpha",
        "name": "imagenet",
        "version": "v1",
        "state": "present",
        "size": "200Gi",
        "storage_class": None,
        "source": None,
        "ingest_image": None,
        "force": False,
    }
    p.update(over)
    return p


def cluster() -> FakeCluster:
    return FakeCluster([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}])


def bind(c: FakeCluster, reclaim: str = "Delete") -> None:
    """What a provisioner does: a volume for the staging claim, and the claim Bound."""
    claim = c.get("v1", "PersistentVolumeClaim", "dataset-imagenet-v1-staging", namespace=NS)
    c.put(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": "pvc-123"},
            "spec": {
                "capacity": {"storage": "200Gi"},
                "accessModes": ["ReadWriteOnce"],
                "csi": {"driver": "nfs.csi.k8s.io", "volumeHandle": "nfs#datasets#pvc-123"},
                "persistentVolumeReclaimPolicy": reclaim,
                "storageClassName": "datasets",
            },
        }
    )
    claim["spec"]["volumeName"] = "pvc-123"
    claim["status"] = {"phase": "Bound"}
    c.put(claim)


def test_a_version_is_staged_with_its_ingest_job_in_the_payg_queue():
    c = cluster()
    out = DATASET_FLOW.run(params(source=S3, ingest_image="tools/aws-cli:2"), c, False)
    assert out["writes"] == [
        "PersistentVolumeClaim/dataset-imagenet-v1-staging",
        "Job/ingest-imagenet-v1",
    ]
    job = c.get("batch.volcano.sh/v1alpha1", "Job", "ingest-imagenet-v1", namespace=NS)
    assert job["spec"]["queue"] == "tenant-alpha-payg"
    container = job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
    assert container["command"] == ["aws", "s3", "sync", "--no-progress", S3["s3"], "/data"]
    assert container["envFrom"] == [{"secretRef": {"name": "platform-object-store"}}]
    assert "nvidia.com/gpu" not in str(container["resources"])
    assert {"name": "workspace", "mountPath": "/data"} in container["volumeMounts"]
    again = DATASET_FLOW.run(params(source=S3, ingest_image="tools/aws-cli:2"), c, False)
    assert again["writes"] == [] and again["ingest"] == "Pending"
    assert dataset_summary({}, again, False)[-1] == "nothing to change"


def test_publishing_waits_for_the_bound_claim_and_the_completed_ingest():
    c = cluster()
    DATASET_FLOW.run(params(source=S3, ingest_image="tools/aws-cli:2"), c, False)
    with pytest.raises(Refused, match="is not bound"):
        DATASET_FLOW.run(params(state="published"), c, False)
    bind(c)
    with pytest.raises(Refused, match="the ingest job ingest-imagenet-v1 is Pending"):
        DATASET_FLOW.run(params(state="published"), c, False)
    job = c.get("batch.volcano.sh/v1alpha1", "Job", "ingest-imagenet-v1", namespace=NS)
    job["status"] = {"state": {"phase": "Completed"}}
    c.put(job)
    out = DATASET_FLOW.run(params(state="published"), c, False)
    assert out["writes"] == [
        "PersistentVolume/pvc-123 kept (Retain)",
        "PersistentVolume/tenant-alpha-dataset-imagenet-v1",
        "PersistentVolumeClaim/dataset-imagenet-v1",
        "Job/ingest-imagenet-v1 removed",
        "PersistentVolumeClaim/dataset-imagenet-v1-staging removed",
    ]
    assert out["claim"] == "dataset-imagenet-v1" and out["phase"] == "published"
    staged = c.get("v1", "PersistentVolume", "pvc-123")
    assert staged["spec"]["persistentVolumeReclaimPolicy"] == "Retain"  # the data stays
    published = c.get("v1", "PersistentVolume", "tenant-alpha-dataset-imagenet-v1")
    spec = published["spec"]
    assert spec["accessModes"] == ["ReadOnlyMany"] and spec["csi"]["readOnly"] is True
    assert spec["csi"]["volumeHandle"] == "nfs#datasets#pvc-123"  # the same storage, not a copy
    assert spec["claimRef"]["name"] == "dataset-imagenet-v1" and spec["claimRef"]["namespace"] == NS
    claim = c.get("v1", "PersistentVolumeClaim", "dataset-imagenet-v1", namespace=NS)
    assert claim["spec"]["volumeName"] == "tenant-alpha-dataset-imagenet-v1"
    assert claim["spec"]["accessModes"] == ["ReadOnlyMany"]
    assert DATASET_FLOW.run(params(state="published"), c, False)["writes"] == []
    with pytest.raises(Refused, match="is published and read-only; stage a new version"):
        DATASET_FLOW.run(params(), c, False)


def test_a_mounted_version_is_not_removed_unless_forced():
    c = cluster()
    DATASET_FLOW.run(params(), c, False)
    c.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "train-0", "namespace": NS},
            "spec": {
                "volumes": [
                    {
                        "name": "d",
                        "persistentVolumeClaim": {"claimName": "dataset-imagenet-v1-staging"},
                    }
                ]
            },
            "status": {"phase": "Running"},
        }
    )
    with pytest.raises(Refused, match=r"mounted by 1 unfinished pod\(s\) \(train-0\)"):
        DATASET_FLOW.run(params(state="absent"), c, False)
    assert c.get("v1", "PersistentVolumeClaim", "dataset-imagenet-v1-staging", namespace=NS)
    out = DATASET_FLOW.run(params(state="absent", force=True), c, False)
    assert out["writes"] == ["PersistentVolumeClaim/dataset-imagenet-v1-staging removed"]
    assert "storage is retained" in dataset_summary({}, out, False)[0]


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"size": None}, "size: None must be a storage size"),
        ({"name": "Image_Net"}, "name:"),
        (
            {"source": {"s3": "tenant-alpha-datasets/x"}},
            "source.s3: 'tenant-alpha-datasets/x' must start with s3://",
        ),
        ({"source": S3}, "ingest_image: is required with source"),
        ({"source": {"s3": "s3://b/p", "url": "https://x"}}, "source: "),
        ({"name": "n" * 30, "version": "v" * 30}, "name and version together take at most"),
    ],
)
def test_bad_options_are_named_before_anything_is_read(over, message):
    with pytest.raises(PlatformValidationError, match=message.replace("(", r"\(")):
        plan.parse_dataset(params(**over))


def test_a_tenant_without_its_namespace_is_refused():
    with pytest.raises(PlatformValidationError, match="has no namespace tenant-alpha"):
        DATASET_FLOW.run(params(), FakeCluster([]), False)


def test_a_job_mounts_a_published_version_read_only_by_name_and_version():
    job = build_job(
        {
            "name": "train",
            "tenant": "alpha",
            "queue": "tenant-alpha-algo",
            "kind": "single",
            "image": "x",
            "dataset": {"name": "imagenet", "version": "v1"},
        }
    )
    pod = job["spec"]["tasks"][0]["template"]["spec"]
    assert {
        "name": "dataset",
        "persistentVolumeClaim": {"claimName": "dataset-imagenet-v1", "readOnly": True},
    } in pod["volumes"]
    assert {"name": "dataset", "mountPath": "/data", "readOnly": True} in pod["containers"][0][
        "volumeMounts"
    ]
    with pytest.raises(PlatformValidationError, match="give dataset or dataset_pvc, not both"):
        build_job(
            {
                "name": "train",
                "tenant": "alpha",
                "queue": "tenant-alpha-algo",
                "kind": "single",
                "image": "x",
                "dataset": {"name": "imagenet", "version": "v1"},
                "dataset_pvc": "mine",
            }
        )
    with pytest.raises(PlatformValidationError, match=r"dataset: .* must be \{name"):
        build_job(
            {
                "name": "t",
                "tenant": "alpha",
                "queue": "tenant-alpha-algo",
                "kind": "single",
                "dataset": "imagenet",
            }
        )


def test_the_published_volume_copies_only_the_storage_source():
    staging = {
        "metadata": {"name": "pv-1", "uid": "u", "resourceVersion": "9"},
        "spec": {
            "hostPath": {"path": "/srv/ds"},
            "capacity": {"storage": "1Gi"},
            "claimRef": {"name": "dataset-x-v1-staging"},
            "accessModes": ["ReadWriteOnce"],
        },
        "status": {"phase": "Bound"},
    }
    pv = objects.published_volume("a", "x", "v1", staging)
    assert pv["spec"]["hostPath"] == {"path": "/srv/ds"}
    assert pv["spec"]["claimRef"]["name"] == "dataset-x-v1"
    assert "status" not in pv and "uid" not in pv["metadata"]
