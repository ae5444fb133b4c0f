# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A tenant's dataset versions against the cluster: the ``dataset`` module, through
``kube.flow`` (``DATASET_FLOW``; its pure steps are ``datasets/plan``).

Reads the namespace, the version's claims, its published volume and ingest job (one GET
each), the staging claim's volume when it is bound, and for ``absent`` the namespace's
unfinished pods (one list); with ``cache``, and for ``absent``, the version's Fluid
Dataset and AlluxioRuntime (one GET each; ``absent`` on a cluster without Fluid's CRDs
finds none). Writes in the plan's order: the staging volume kept (Retain, a merge
patch), then the new objects and those that differ (server-side applied), then the
deletions. In check mode every write is the API server's dry run.
"""

from __future__ import annotations

from typing import Any

from ..common.errors import PartialWrite, Refused
from ..common.names import FLUID_API, JOB_API, dataset_cache
from ..kube.cluster import ApiException, Cluster, ResourceNotFoundError, TransportError
from ..kube.flow import Flow
from .objects import ingest_job_name, published_claim, published_volume_name, staging_claim
from .plan import (
    DatasetFacts,
    DatasetPlan,
    DatasetRequest,
    parse_dataset,
    plan_dataset,
    report_dataset,
)

_UNFINISHED = "status.phase!=Succeeded,status.phase!=Failed"


def _cache_object(request: DatasetRequest, cluster: Cluster, kind: str) -> Any:
    try:
        return cluster.get(
            FLUID_API, kind, dataset_cache(request.name, request.version), request.namespace
        )
    except ResourceNotFoundError as exc:
        if request.state == "absent":
            return None  # no Fluid here, so no cache to remove
        raise Refused(
            f"cache: the cluster has no {kind} kind ({FLUID_API}); install Fluid first "
            "(role gpucloud.platform.fluid), or publish without cache"
        ) from exc


def gather_dataset(request: DatasetRequest, cluster: Cluster) -> DatasetFacts:
    ns = request.namespace
    staging = cluster.get(
        "v1", "PersistentVolumeClaim", staging_claim(request.name, request.version), ns
    )
    bound = ((staging or {}).get("spec") or {}).get("volumeName")
    cached = request.cache is not None or request.state == "absent"
    return DatasetFacts(
        namespace=cluster.get("v1", "Namespace", ns),
        staging=staging,
        staging_volume=cluster.get("v1", "PersistentVolume", bound) if bound else None,
        published=cluster.get(
            "v1", "PersistentVolumeClaim", published_claim(request.name, request.version), ns
        ),
        volume=cluster.get(
            "v1",
            "PersistentVolume",
            published_volume_name(request.tenant, request.name, request.version),
        ),
        job=cluster.get(JOB_API, "Job", ingest_job_name(request.name, request.version), ns),
        pods=tuple(cluster.list("v1", "Pod", namespace=ns, field_selector=_UNFINISHED))
        if request.state == "absent"
        else (),
        cache_dataset=_cache_object(request, cluster, "Dataset") if cached else None,
        cache_runtime=_cache_object(request, cluster, "AlluxioRuntime") if cached else None,
    )


def apply_dataset(
    request: DatasetRequest, planned: DatasetPlan, cluster: Cluster, check_mode: bool
) -> dict[str, Any]:
    done: list[str] = []
    try:
        if planned.retain:
            cluster.merge_patch(
                "v1",
                "PersistentVolume",
                planned.retain,
                {"spec": {"persistentVolumeReclaimPolicy": "Retain"}},
            )
            done.append(f"PersistentVolume/{planned.retain} kept (Retain)")
        for manifest in planned.creates:
            cluster.apply(manifest)
            done.append(f"{manifest['kind']}/{manifest['metadata']['name']}")
        for manifest in planned.updates:
            cluster.apply(manifest)
            done.append(f"{manifest['kind']}/{manifest['metadata']['name']} updated")
        for api, kind, name, namespace in planned.deletes:
            cluster.delete(api, kind, name, namespace=namespace, propagation="Background")
            done.append(f"{kind}/{name} removed")
    except (ApiException, TransportError) as exc:
        raise PartialWrite(f"dataset {request.name} version {request.version}", done, exc) from exc
    return report_dataset(request, planned, done)


# Module dataset: a tenant's dataset version staged, published read-only, or removed.
DATASET_FLOW: Flow[DatasetRequest, DatasetFacts, DatasetPlan] = Flow(
    parse=parse_dataset,
    gather=gather_dataset,
    plan=plan_dataset,
    apply=apply_dataset,
    report=report_dataset,
)
