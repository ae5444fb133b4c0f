# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A published dataset version's cache in the IDC: Fluid's Dataset and AlluxioRuntime
(``data.fluid.io/v1alpha1``), both named ``cache-<name>-<version>``
(``common.names.dataset_cache``).

Rules held here:

* Rule dataset-cache-source (``cache_errors``): the cache is made when a version is
  published, from an ``s3://`` source; asked for with ``state: present`` or without an
  S3 source it is refused, naming the option.
* Rule dataset-cache-mount (``cache_dataset``): the Dataset mounts the version's S3
  prefix (the ingest's source) read-only, with access mode ReadOnlyMany; the tenant's
  keys and the store's endpoint come from the tenant's Secret ``platform-object-store``
  through ``encryptOptions`` (never copied into the object); placement and node affinity
  are Fluid's defaults.
* Rule dataset-cache-tier (``cache_runtime``): the AlluxioRuntime has ``replicas``
  workers, each with one tiered-store level of ``medium`` at ``path`` holding at most
  ``quota``; MEM defaults to ``/dev/shm``, SSD and HDD need a node-local path.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..common import quantity
from ..common.errors import FieldError
from ..common.names import FLUID_API, OBJECT_STORE_NAME, dataset_cache, namespace_name
from .objects import dataset_labels

MEDIUMS = ("MEM", "SSD", "HDD")
MEM_PATH = "/dev/shm"
DEFAULT_QUOTA = "2Gi"
DEFAULT_REPLICAS = 1
# The module's option `cache` (its suboptions); the defaults are the pure core's.
CACHE_OPTIONS: dict[str, dict[str, Any]] = {
    "replicas": {"type": "int", "default": DEFAULT_REPLICAS},
    "medium": {"type": "str", "choices": list(MEDIUMS), "default": "MEM"},
    "path": {"type": "str"},
    "quota": {"type": "str", "default": DEFAULT_QUOTA},
}
# Alluxio's S3 under-store options: path-style requests (as versitygw, MinIO and Ceph
# RGW serve them), and no ACL copied from the bucket.
S3_OPTIONS = {
    "alluxio.underfs.s3.disable.dns.buckets": "true",
    "alluxio.underfs.s3.inherit.acl": "false",
}
# Alluxio's option -> the key of the tenant's Secret that holds its value.
S3_SECRET_OPTIONS = (
    ("aws.accessKeyId", "AWS_ACCESS_KEY_ID"),
    ("aws.secretKey", "AWS_SECRET_ACCESS_KEY"),
    ("alluxio.underfs.s3.endpoint", "AWS_ENDPOINT_URL"),
)


@dataclass(frozen=True)
class CacheSpec:
    replicas: int = DEFAULT_REPLICAS
    medium: str = "MEM"
    path: str = MEM_PATH
    quota: str = DEFAULT_QUOTA


def cache_errors(
    raw: object, state: str, source: Mapping[str, str] | None
) -> tuple[CacheSpec | None, list[FieldError]]:
    """Rule dataset-cache-source: a cache is asked for with ``state: published`` and an
    ``s3://`` source, its options valid; the spec with its defaults, or the errors."""
    if raw is None:
        return None, []
    if not isinstance(raw, Mapping):
        return None, [
            FieldError("cache", f"{raw!r} must be a mapping of replicas, medium, path, quota")
        ]
    errors: list[FieldError] = []
    unknown = sorted(set(raw) - set(CACHE_OPTIONS))
    if unknown:
        errors.append(
            FieldError(
                "cache", f"{', '.join(map(str, unknown))}: not one of {', '.join(CACHE_OPTIONS)}"
            )
        )
    if state == "present":
        errors.append(
            FieldError(
                "cache",
                "a version is cached once it is published; give cache with state: published",
            )
        )
    if state != "absent" and not (isinstance(source, Mapping) and "s3" in source):
        errors.append(
            FieldError(
                "source",
                f"{source!r}: the cache mounts an S3 prefix; give source: {{s3: s3://bucket/prefix}}",
            )
        )
    replicas = raw.get("replicas")
    replicas = DEFAULT_REPLICAS if replicas is None else replicas
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 1:
        errors.append(
            FieldError("cache.replicas", f"{replicas!r} must be a whole number of at least 1")
        )
    medium = raw.get("medium") or "MEM"
    if medium not in MEDIUMS:
        errors.append(FieldError("cache.medium", f"{medium!r} is not one of {', '.join(MEDIUMS)}"))
    path = raw.get("path")
    if path is None and medium == "MEM":
        path = MEM_PATH
    if path is None:
        errors.append(
            FieldError(
                "cache.path",
                f"is required with medium {medium}: the node-local directory the cache workers use",
            )
        )
    elif not isinstance(path, str) or not path.startswith("/"):
        errors.append(FieldError("cache.path", f"{path!r} must be an absolute path"))
    quota = raw.get("quota") or DEFAULT_QUOTA
    if not quantity.is_positive(quota):
        errors.append(FieldError("cache.quota", f"{quota!r} must be a size such as 20Gi"))
    if errors:
        return None, errors
    return CacheSpec(
        replicas=int(replicas), medium=str(medium), path=str(path), quota=str(quota)
    ), []


def _metadata(tenant: str, dataset: str, version: str) -> dict[str, Any]:
    return {
        "name": dataset_cache(dataset, version),
        "namespace": namespace_name(tenant),
        "labels": dataset_labels(tenant, dataset, version),
    }


def cache_dataset(tenant: str, dataset: str, version: str, s3: str) -> dict[str, Any]:
    """Rule dataset-cache-mount: the version's S3 prefix, read-only, with the tenant's
    own keys and endpoint from its Secret."""
    return {
        "apiVersion": FLUID_API,
        "kind": "Dataset",
        "metadata": _metadata(tenant, dataset, version),
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "mounts": [
                {
                    "name": dataset,
                    "mountPoint": s3,
                    "readOnly": True,
                    "options": dict(S3_OPTIONS),
                    "encryptOptions": [
                        {
                            "name": option,
                            "valueFrom": {"secretKeyRef": {"name": OBJECT_STORE_NAME, "key": key}},
                        }
                        for option, key in S3_SECRET_OPTIONS
                    ],
                }
            ],
        },
    }


def cache_runtime(tenant: str, dataset: str, version: str, spec: CacheSpec) -> dict[str, Any]:
    """Rule dataset-cache-tier: the cache workers and their one tiered-store level."""
    return {
        "apiVersion": FLUID_API,
        "kind": "AlluxioRuntime",
        "metadata": _metadata(tenant, dataset, version),
        "spec": {
            "replicas": spec.replicas,
            "tieredstore": {
                "levels": [{"mediumtype": spec.medium, "path": spec.path, "quota": spec.quota}]
            },
        },
    }


def cache_manifests(
    tenant: str, dataset: str, version: str, s3: str, spec: CacheSpec
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Dataset, then the AlluxioRuntime that binds to it (same name)."""
    return cache_dataset(tenant, dataset, version, s3), cache_runtime(
        tenant, dataset, version, spec
    )
