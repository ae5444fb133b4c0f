# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``dataset`` module's request, facts and plan: a dataset version's lifecycle.

* ``present`` (staging): the writable staging claim, and with ``source`` the ingest job
  that fills it (rule dataset-ingest). A published version is not staged again.
* ``published``: once the staging claim is bound and the ingest job (if any) completed,
  the staging volume is kept (reclaim policy Retain), its storage is published read-only
  (rule dataset-published-readonly) under the published claim, then the ingest job and
  the staging claim go: nothing can write the version any more.
* ``absent``: the version's claims, published volume and ingest job go; refused while an
  unfinished pod mounts one of its claims, unless ``force`` (rule dataset-in-use). The
  storage itself is retained: the platform never deletes a dataset's data.
* ``cache`` (with ``published``): the version's Fluid Dataset and AlluxioRuntime
  (``datasets/cache``), made when missing and applied again when they differ from the
  options; ``absent`` removes them with the rest, after the same guard.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..common import quantity
from ..common.errors import FieldError, PlatformValidationError, Refused, raise_if
from ..common.names import (
    FLUID_API,
    dataset_cache,
    dns_label_errors,
    dns_subdomain_errors,
    namespace_name,
    tenant_name_errors,
)
from ..common.objects import differs
from .cache import CacheSpec, cache_errors, cache_manifests
from .objects import (
    ingest_job,
    ingest_job_name,
    published_claim,
    published_claim_manifest,
    published_volume,
    published_volume_name,
    staging_claim,
    staging_claim_manifest,
)

STATES = ("present", "published", "absent")
# dataset-<name>-<version>-staging is a DNS label: 63 - len("dataset--" "-staging")
NAME_ROOM = 63 - len("dataset--") - len("-staging")


@dataclass(frozen=True)
class DatasetRequest:
    tenant: str
    name: str
    version: str
    state: str = "present"
    size: str | None = None
    storage_class: str | None = None
    source: Mapping[str, str] | None = None
    ingest_image: str | None = None
    force: bool = False
    cache: CacheSpec | None = None

    @property
    def namespace(self) -> str:
        return namespace_name(self.tenant)


def _source_errors(source: object, image: object) -> list[FieldError]:
    if source is None:
        return []
    if not isinstance(source, Mapping) or len(source) != 1 or not set(source) <= {"s3", "url"}:
        return [
            FieldError(
                "source",
                f"{source!r} must be one of {{s3: s3://bucket/prefix}} or {{url: https://...}}",
            )
        ]
    (kind, value), errors = next(iter(source.items())), []
    wanted = ("s3://",) if kind == "s3" else ("https://", "http://")
    if not isinstance(value, str) or not value.startswith(wanted) or len(value) <= len(wanted[0]):
        errors.append(
            FieldError(f"source.{kind}", f"{value!r} must start with {' or '.join(wanted)}")
        )
    if not isinstance(image, str) or not image.strip():
        errors.append(
            FieldError("ingest_image", "is required with source: the image the ingest job runs")
        )
    return errors


def parse_dataset(params: Mapping[str, Any]) -> DatasetRequest:
    """The options as a request; every bad option named at once."""
    errors = tenant_name_errors(params.get("tenant"), "tenant")
    name, version = params.get("name"), params.get("version")
    errors += dns_label_errors("name", name)
    errors += dns_label_errors("version", version)
    if isinstance(name, str) and isinstance(version, str) and len(name) + len(version) > NAME_ROOM:
        errors.append(
            FieldError("version", f"name and version together take at most {NAME_ROOM} characters")
        )
    state = params.get("state") or "present"
    if state not in STATES:
        errors.append(FieldError("state", f"{state!r} is not one of {', '.join(STATES)}"))
    size = params.get("size")
    if state == "present" and not quantity.is_positive(size):
        errors.append(
            FieldError(
                "size",
                f"{size!r} must be a storage size such as 500Gi, required with state: present",
            )
        )
    if params.get("storage_class") is not None:
        errors += dns_subdomain_errors("storage_class", params["storage_class"])
    source = params.get("source")
    # The ingest image is needed only where an ingest job is made (state: present).
    errors += _source_errors(
        source, params.get("ingest_image") if state == "present" else "not used"
    )
    cache, cache_errs = cache_errors(params.get("cache"), state, source)
    errors += cache_errs
    raise_if(errors)
    return DatasetRequest(
        tenant=str(params["tenant"]),
        name=str(name),
        version=str(version),
        state=state,
        size=None if size is None else str(size),
        storage_class=params.get("storage_class"),
        source=params.get("source"),
        ingest_image=params.get("ingest_image"),
        force=bool(params.get("force")),
        cache=cache if state == "published" else None,
    )


@dataclass(frozen=True)
class DatasetFacts:
    namespace: Mapping[str, Any] | None = None
    staging: Mapping[str, Any] | None = None
    staging_volume: Mapping[str, Any] | None = None
    published: Mapping[str, Any] | None = None
    volume: Mapping[str, Any] | None = None
    job: Mapping[str, Any] | None = None
    pods: Sequence[Mapping[str, Any]] = ()
    # Fluid's Dataset and AlluxioRuntime of the version (read with cache, and for absent)
    cache_dataset: Mapping[str, Any] | None = None
    cache_runtime: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class DatasetPlan:
    """The writes in order: ``retain`` (the staging volume's name, to keep), ``creates``
    (manifests), ``updates`` (manifests of live objects that differ, applied again),
    ``deletes`` ((api version, kind, name, namespace)), and the phase the version is in
    after them."""

    request: DatasetRequest
    retain: str | None = None
    creates: tuple[dict[str, Any], ...] = ()
    deletes: tuple[tuple[str, str, str, str | None], ...] = ()
    updates: tuple[dict[str, Any], ...] = ()
    phase: str = ""
    ingest: str | None = None  # the ingest job's phase, when there is one
    said: tuple[str, ...] = field(default=())

    @property
    def writes(self) -> list[str]:
        out = [f"PersistentVolume/{self.retain} kept (Retain)"] if self.retain else []
        out += [f"{m['kind']}/{m['metadata']['name']}" for m in self.creates]
        out += [f"{m['kind']}/{m['metadata']['name']} updated" for m in self.updates]
        out += [f"{kind}/{name} removed" for _api, kind, name, _ns in self.deletes]
        return out


def _phase(obj: Mapping[str, Any] | None) -> str:
    return str(((obj or {}).get("status") or {}).get("phase") or "")


def _job_phase(job: Mapping[str, Any] | None) -> str:
    return str((((job or {}).get("status") or {}).get("state") or {}).get("phase") or "Pending")


def mounting_pods(request: DatasetRequest, pods: Sequence[Mapping[str, Any]]) -> list[str]:
    """Rule dataset-in-use: the unfinished pods that mount one of the version's claims;
    removing the version is refused while there are any, unless ``force``."""
    claims = {
        staging_claim(request.name, request.version),
        published_claim(request.name, request.version),
        # the claim Fluid makes for the cache's Dataset
        dataset_cache(request.name, request.version),
    }
    out = []
    for pod in pods:
        if _phase(pod) in ("Succeeded", "Failed"):
            continue
        volumes = (pod.get("spec") or {}).get("volumes") or []
        if any((v.get("persistentVolumeClaim") or {}).get("claimName") in claims for v in volumes):
            out.append(pod["metadata"]["name"])
    return sorted(out)


def _cache_writes(
    request: DatasetRequest, facts: DatasetFacts
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The cache's objects to create (missing) and to apply again (differing from the
    options; fields only Fluid or the API server set do not count)."""
    if request.cache is None or request.source is None:
        return [], []
    creates, updates = [], []
    manifests = cache_manifests(
        request.tenant, request.name, request.version, request.source["s3"], request.cache
    )
    for manifest, live in zip(manifests, (facts.cache_dataset, facts.cache_runtime), strict=True):
        if live is None:
            creates.append(manifest)
        elif differs(
            {"metadata": {"labels": manifest["metadata"]["labels"]}, "spec": manifest["spec"]},
            live,
        ):
            updates.append(manifest)
    return creates, updates


def _cache_deletes(
    request: DatasetRequest, facts: DatasetFacts
) -> list[tuple[str, str, str, str | None]]:
    """The runtime first, then the Dataset it is bound to."""
    name, ns = dataset_cache(request.name, request.version), request.namespace
    out: list[tuple[str, str, str, str | None]] = []
    if facts.cache_runtime is not None:
        out.append((FLUID_API, "AlluxioRuntime", name, ns))
    if facts.cache_dataset is not None:
        out.append((FLUID_API, "Dataset", name, ns))
    return out


def _plan_present(request: DatasetRequest, facts: DatasetFacts) -> DatasetPlan:
    if facts.published is not None:
        raise Refused(
            f"version {request.version} of dataset {request.name} is published and read-only; "
            "stage a new version instead"
        )
    creates: list[dict[str, Any]] = []
    if facts.staging is None:
        creates.append(
            staging_claim_manifest(
                request.tenant,
                request.name,
                request.version,
                request.size or "",
                request.storage_class,
            )
        )
    if request.source is not None and facts.job is None:
        creates.append(
            ingest_job(
                request.tenant,
                request.name,
                request.version,
                request.source,
                request.ingest_image or "",
            )
        )
    return DatasetPlan(
        request=request,
        creates=tuple(creates),
        phase="staging",
        ingest=_job_phase(facts.job)
        if facts.job is not None
        else ("Pending" if request.source else None),
    )


def _plan_published(request: DatasetRequest, facts: DatasetFacts) -> DatasetPlan:
    ns = request.namespace
    if facts.published is not None and facts.volume is not None:
        # Published already; what a run cut short left behind still goes.
        left: list[tuple[str, str, str, str | None]] = []
        if facts.job is not None:
            left.append(
                (
                    "batch.volcano.sh/v1alpha1",
                    "Job",
                    ingest_job_name(request.name, request.version),
                    ns,
                )
            )
        if facts.staging is not None:
            left.append(
                ("v1", "PersistentVolumeClaim", staging_claim(request.name, request.version), ns)
            )
        creates, updates = _cache_writes(request, facts)
        return DatasetPlan(
            request=request,
            creates=tuple(creates),
            updates=tuple(updates),
            deletes=tuple(left),
            phase="published",
        )
    staging, volume = facts.staging, facts.staging_volume
    if staging is None:
        raise Refused(
            f"dataset {request.name} has no staging claim {staging_claim(request.name, request.version)} "
            "to publish; stage it first (state: present)"
        )
    if _phase(staging) != "Bound" or volume is None:
        raise Refused(
            f"staging claim {staging_claim(request.name, request.version)} is {_phase(staging) or 'not bound'}: "
            "a dataset is published from a bound volume; publish once the claim is Bound"
        )
    if facts.job is not None and _job_phase(facts.job) != "Completed":
        raise Refused(
            f"the ingest job {ingest_job_name(request.name, request.version)} is {_job_phase(facts.job)}; "
            "publish once it has Completed"
        )
    published_pv = published_volume(request.tenant, request.name, request.version, volume)
    keep = (volume.get("spec") or {}).get("persistentVolumeReclaimPolicy") != "Retain"
    deletes: list[tuple[str, str, str, str | None]] = []
    if facts.job is not None:
        deletes.append(
            ("batch.volcano.sh/v1alpha1", "Job", ingest_job_name(request.name, request.version), ns)
        )
    deletes.append(
        ("v1", "PersistentVolumeClaim", staging_claim(request.name, request.version), ns)
    )
    cache_creates, cache_updates = _cache_writes(request, facts)
    return DatasetPlan(
        request=request,
        retain=volume["metadata"]["name"] if keep else None,
        creates=(
            published_pv,
            published_claim_manifest(request.tenant, request.name, request.version, published_pv),
            *cache_creates,
        ),
        updates=tuple(cache_updates),
        deletes=tuple(deletes),
        phase="published",
        ingest=_job_phase(facts.job) if facts.job is not None else None,
    )


def _plan_absent(request: DatasetRequest, facts: DatasetFacts) -> DatasetPlan:
    ns = request.namespace
    users = mounting_pods(request, facts.pods)
    if users and not request.force:
        raise Refused(
            f"dataset {request.name} version {request.version} is mounted by {len(users)} unfinished pod(s) "
            f"({', '.join(users[:5])}); wait for them, or force: true to remove it anyway",
            pods=users,
        )
    deletes = _cache_deletes(request, facts)
    if facts.job is not None:
        deletes.append(
            ("batch.volcano.sh/v1alpha1", "Job", ingest_job_name(request.name, request.version), ns)
        )
    if facts.published is not None:
        deletes.append(
            ("v1", "PersistentVolumeClaim", published_claim(request.name, request.version), ns)
        )
    if facts.volume is not None:
        deletes.append(
            (
                "v1",
                "PersistentVolume",
                published_volume_name(request.tenant, request.name, request.version),
                None,
            )
        )
    if facts.staging is not None:
        deletes.append(
            ("v1", "PersistentVolumeClaim", staging_claim(request.name, request.version), ns)
        )
    return DatasetPlan(request=request, deletes=tuple(deletes), phase="absent")


def plan_dataset(request: DatasetRequest, facts: DatasetFacts) -> DatasetPlan:
    """Every decision and refusal of a run, before any write."""
    if facts.namespace is None and request.state != "absent":
        raise PlatformValidationError(
            [
                FieldError(
                    "tenant",
                    f"{request.tenant!r} has no namespace {request.namespace}; make the tenant first",
                )
            ]
        )
    if request.state == "present":
        return _plan_present(request, facts)
    if request.state == "published":
        return _plan_published(request, facts)
    return _plan_absent(request, facts)


def report_dataset(
    request: DatasetRequest, planned: DatasetPlan, done: list[str] | None = None
) -> dict[str, Any]:
    writes = planned.writes if done is None else done
    claim = (
        published_claim(request.name, request.version)
        if planned.phase == "published"
        else staging_claim(request.name, request.version)
        if planned.phase == "staging"
        else None
    )
    return {
        "changed": bool(writes),
        "dataset": request.name,
        "version": request.version,
        "phase": planned.phase,
        "claim": claim,
        "ingest": planned.ingest,
        "cache": dataset_cache(request.name, request.version)
        if request.cache is not None
        else None,
        "writes": writes,
    }
