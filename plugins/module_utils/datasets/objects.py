# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A dataset's objects: its staging claim, its ingest job, and once published its
read-only volume and claim.

Rules held here:

* Rule dataset-names (``staging_claim``, ``published_claim``, ``published_volume_name``):
  version ``v`` of dataset ``d`` is staged in claim ``dataset-d-v-staging`` (writable)
  and published as claim ``dataset-d-v`` (ReadOnlyMany) bound to volume
  ``tenant-<tenant>-dataset-d-v``; every object carries ``platform.io/dataset`` and
  ``platform.io/dataset-version``.
* Rule dataset-ingest (``ingest_job``): the data comes in through a Volcano Job in the
  tenant's pay-as-you-go queue (no GPU, so nothing is billed for GPUs), which writes the
  staging claim at ``/data``: ``aws s3 sync`` from an ``s3://`` prefix with the tenant's
  own keys (its object store's Secret), or a download of one URL.
* Rule dataset-published-readonly (``published_volume``): the published volume is the
  staging volume's own storage (its source copied), ReadOnlyMany, Retain, and reserved
  for the published claim alone (``claimRef``); the data is never copied, and never
  writable through it.

Pure: no I/O.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ..common.names import (
    OBJECT_STORE_NAME,
    PREFIX,
    QUEUE_TYPE_PAYG,
    dataset_claim,
    namespace_name,
    queue_name,
    tenant_labels,
)
from ..jobs.manifest import build_job

LABEL_DATASET = PREFIX + "dataset"
LABEL_DATASET_VERSION = PREFIX + "dataset-version"
INGEST_MOUNT = "/data"
# A PersistentVolume's storage, whichever kind of source it has: these keys of its spec
# are copied to the published volume, nothing else.
VOLUME_SOURCES = (
    "csi",
    "nfs",
    "hostPath",
    "local",
    "cephfs",
    "iscsi",
    "fc",
    "rbd",
    "glusterfs",
)


def staging_claim(dataset: str, version: str) -> str:
    """Rule dataset-names: a version is staged in ``dataset-<name>-<version>-staging`` and
    published as ``dataset-<name>-<version>`` (``common.names.dataset_claim``) on volume
    ``tenant-<tenant>-dataset-<name>-<version>``."""
    return f"dataset-{dataset}-{version}-staging"


def published_claim(dataset: str, version: str) -> str:
    return dataset_claim(dataset, version)


def published_volume_name(tenant: str, dataset: str, version: str) -> str:
    return f"{namespace_name(tenant)}-dataset-{dataset}-{version}"


def ingest_job_name(dataset: str, version: str) -> str:
    return f"ingest-{dataset}-{version}"


def dataset_labels(tenant: str, dataset: str, version: str) -> dict[str, str]:
    return tenant_labels(tenant, **{LABEL_DATASET: dataset, LABEL_DATASET_VERSION: version})


def staging_claim_manifest(
    tenant: str, dataset: str, version: str, size: str, storage_class: str | None
) -> dict[str, Any]:
    """The writable claim the ingest job fills."""
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": size}},
    }
    if storage_class:
        spec["storageClassName"] = storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": staging_claim(dataset, version),
            "namespace": namespace_name(tenant),
            "labels": dataset_labels(tenant, dataset, version),
        },
        "spec": spec,
    }


def ingest_command(source: Mapping[str, str]) -> list[str]:
    """Rule dataset-ingest: what fills ``/data`` from the source."""
    if "s3" in source:
        return ["aws", "s3", "sync", "--no-progress", source["s3"], INGEST_MOUNT]
    url = source["url"]
    target = f"{INGEST_MOUNT}/{url.rstrip('/').rsplit('/', 1)[-1] or 'data'}"
    return ["curl", "--fail", "--location", "--silent", "--show-error", "--output", target, url]


def ingest_job(
    tenant: str, dataset: str, version: str, source: Mapping[str, str], image: str
) -> dict[str, Any]:
    """Rule dataset-ingest: the Volcano Job that fills the staging claim, in the tenant's
    pay-as-you-go queue, without GPUs."""
    job = build_job(
        {
            "name": ingest_job_name(dataset, version),
            "tenant": tenant,
            "queue": queue_name(tenant, QUEUE_TYPE_PAYG),
            "kind": "single",
            "job_class": "normal",
            "image": image,
            "command": ingest_command(source),
            "cpu": "1",
            "memory": "2Gi",
            "workspace_pvc": staging_claim(dataset, version),
            "workspace_mount_path": INGEST_MOUNT,
            "max_retry": 3,
        }
    )
    job["metadata"]["labels"].update(dataset_labels(tenant, dataset, version))
    if "s3" in source:
        for task in job["spec"]["tasks"]:
            for container in task["template"]["spec"]["containers"]:
                container["envFrom"] = [{"secretRef": {"name": OBJECT_STORE_NAME}}]
    return job


def published_volume(
    tenant: str, dataset: str, version: str, staging: Mapping[str, Any]
) -> dict[str, Any]:
    """Rule dataset-published-readonly: the staging volume's storage, read-only, for the
    published claim alone."""
    spec = staging.get("spec") or {}
    out_spec: dict[str, Any] = {
        key: copy.deepcopy(spec[key]) for key in VOLUME_SOURCES if key in spec
    }
    if "csi" in out_spec:
        out_spec["csi"]["readOnly"] = True
    if "nfs" in out_spec:
        out_spec["nfs"]["readOnly"] = True
    for key in ("capacity", "nodeAffinity", "mountOptions", "volumeMode", "storageClassName"):
        if key in spec:
            out_spec[key] = copy.deepcopy(spec[key])
    out_spec["accessModes"] = ["ReadOnlyMany"]
    out_spec["persistentVolumeReclaimPolicy"] = "Retain"
    out_spec["claimRef"] = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "namespace": namespace_name(tenant),
        "name": published_claim(dataset, version),
    }
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": published_volume_name(tenant, dataset, version),
            "labels": dataset_labels(tenant, dataset, version),
        },
        "spec": out_spec,
    }


def published_claim_manifest(
    tenant: str, dataset: str, version: str, volume: Mapping[str, Any]
) -> dict[str, Any]:
    """The read-only claim jobs mount, bound to the published volume by name."""
    spec = volume["spec"]
    claim_spec: dict[str, Any] = {
        "accessModes": ["ReadOnlyMany"],
        "resources": {"requests": {"storage": (spec.get("capacity") or {}).get("storage", "1Gi")}},
        "volumeName": volume["metadata"]["name"],
        "storageClassName": spec.get("storageClassName", ""),
    }
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": published_claim(dataset, version),
            "namespace": namespace_name(tenant),
            "labels": dataset_labels(tenant, dataset, version),
        },
        "spec": claim_spec,
    }
