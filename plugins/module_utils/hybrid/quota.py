# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``burst_quota`` through the flow contract (``kube.flow``), its pure steps: the
request, the facts as data and back, the plan and what it says (no I/O).

The reads (``gather``) and the writes (``apply``) are ``hybrid/service``'s. The reads stop
where the plan refuses (``refusal``), so a refused run reads what it read before. Offline:

* ``gathered``: the tenant's managed Queues, and what the run reads after them: the leaf's
  Volcano Jobs (``state: absent``), or the burst queue and the tenant's queue list;
* ``parsed``: the change planned from what ``gathered`` returned, as ``state: present``.

No ``rendered``: the quota is a leaf of a tenant and of a burst queue that must exist.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..common.errors import FieldError, PlatformValidationError, Refused
from ..common.names import (
    BURST_QUEUE,
    JOB_FINISHED_PHASES,
    TENANT_QUEUES_CONFIGMAP,
    namespace_name,
)
from ..common.objects import differs, strip_server_fields
from ..kube.flow import fact_lists
from .burst import (
    BURST_BILLING,
    allocated_gpus,
    burst_leaf,
    burst_leaf_name,
    burst_quota_errors,
    burst_removal_refusal,
    burst_shrink_refusal,
    capability_gpus,
)
from .inputs import validate_burst
from .queues import burst_target_errors


@dataclass(frozen=True)
class BurstRequest:
    """One tenant's cloud quota: ``gpus`` under ``burst_queue`` (None: the leaf removed)."""

    tenant: str
    gpus: int | None
    burst_queue: str
    force: bool

    @property
    def leaf(self) -> str:
        return burst_leaf_name(self.tenant)

    @property
    def namespace(self) -> str:
        return namespace_name(self.tenant)


@dataclass(frozen=True)
class BurstFacts:
    """The tenant's managed Queues; then the leaf's Volcano Jobs (removing), or the burst
    queue (``parent``, in a list of at most one) and the tenant's queue list (in a list of
    at most one). None: not read."""

    queues: tuple[Mapping[str, Any], ...] = ()
    jobs: tuple[Mapping[str, Any], ...] | None = None
    parent: tuple[Mapping[str, Any], ...] | None = None
    queue_list: tuple[Mapping[str, Any], ...] | None = None


@dataclass(frozen=True)
class BurstPlan:
    """The writes in order (manifests; a removal is the list entry dropped, then the leaf
    deleted), the leaf's capability and parent before and after."""

    leaf: str
    writes: tuple[Mapping[str, Any], ...]
    remove: bool
    before: Mapping[str, Any]
    after: Mapping[str, Any]
    written: tuple[str, ...]


def parse_burst(params: Mapping[str, Any]) -> BurstRequest:
    """The options as a request; raises for a bad tenant, burst queue or quota."""
    validate_burst(params)
    absent = params.get("state", "present") == "absent"
    return BurstRequest(
        tenant=str(params["tenant"]),
        gpus=None if absent else params["gpus"],
        burst_queue=params.get("burst_queue") or BURST_QUEUE,
        force=bool(params.get("force")),
    )


def leaf_of(request: BurstRequest, facts: BurstFacts) -> Mapping[str, Any] | None:
    return next((q for q in facts.queues if q["metadata"]["name"] == request.leaf), None)


def leaf_jobs(request: BurstRequest, jobs: tuple[Mapping[str, Any], ...]) -> list[str]:
    """The Volcano Jobs of the tenant that name the leaf and have not finished."""
    return sorted(
        j["metadata"]["name"]
        for j in jobs
        if (j.get("spec") or {}).get("queue") == request.leaf
        and ((j.get("status") or {}).get("state") or {}).get("phase") not in JOB_FINISHED_PHASES
    )


def refusal(request: BurstRequest, facts: BurstFacts) -> Exception | None:
    """What the run refuses from the facts read so far, in the order it reads them (None:
    nothing yet); the reads stop at it, and the plan raises it."""
    if not facts.queues:
        return PlatformValidationError(
            [FieldError("tenant", f"{request.tenant!r} is not a tenant (no managed Queue of it)")]
        )
    live = leaf_of(request, facts)
    if request.gpus is None:
        if live is None or facts.jobs is None:
            return None
        jobs = leaf_jobs(request, facts.jobs)
        refused = burst_removal_refusal(request.leaf, jobs, request.force)
        return Refused(refused, jobs=jobs) if refused else None
    parent = request.burst_queue
    errors = burst_target_errors(parent, None)
    if errors or facts.parent is None:
        return PlatformValidationError(errors) if errors else None
    parent_queue = next(iter(facts.parent), None)
    errors = burst_target_errors(parent, parent_queue)
    if errors:
        return PlatformValidationError(errors)
    if parent_queue is None:
        return Refused(
            f"burst_queue: {parent} does not exist; gpucloud.platform.node_groups makes it from "
            "the cloud groups"
        )
    errors = burst_quota_errors(request.gpus, capability_gpus(parent_queue), parent)
    if errors:
        return PlatformValidationError(errors)
    refused = burst_shrink_refusal(request.leaf, request.gpus, allocated_gpus(live), request.force)
    return Refused(refused) if live is not None and refused else None


def queue_list_entry(tenant: str, leaf: str, value: str | None) -> dict[str, Any]:
    """The tenant's queue list with the leaf's key alone, under the burst manager: the
    tenant module's own apply of the ConfigMap keeps it (another manager owns it)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": TENANT_QUEUES_CONFIGMAP, "namespace": namespace_name(tenant)},
        "data": {leaf: value} if value else {},
    }


def plan(request: BurstRequest, facts: BurstFacts) -> BurstPlan:
    """The writes; raises what the run refuses (``refusal``)."""
    refused = refusal(request, facts)
    if refused is not None:
        raise refused
    live = leaf_of(request, facts)
    leaf = request.leaf
    before = {
        "capability": capability_gpus(live),
        "parent": ((live or {}).get("spec") or {}).get("parent"),
    }
    if request.gpus is None:
        if live is None:
            return BurstPlan(leaf, (), True, before, before, ())
        entry = queue_list_entry(request.tenant, leaf, None)
        written = (f"ConfigMap/{request.namespace}/{TENANT_QUEUES_CONFIGMAP}", f"Queue/{leaf}")
        after = {"capability": None, "parent": None}
        return BurstPlan(leaf, (entry,), True, before, after, written)
    desired = burst_leaf(request.tenant, request.gpus, request.burst_queue)
    entry = queue_list_entry(request.tenant, leaf, BURST_BILLING)
    cm = next(iter(facts.queue_list or ()), None)
    writes = []
    if live is None or differs(desired, live):
        writes.append(desired)
    if differs(entry, cm):
        writes.append(entry)
    after = {"capability": request.gpus, "parent": request.burst_queue}
    written = tuple(f"{m['kind']}/{m['metadata']['name']}" for m in writes)
    return BurstPlan(leaf, tuple(writes), False, before, after, written)


def report(
    request: BurstRequest, planned: BurstPlan, done: list[str] | None = None
) -> dict[str, Any]:
    """What the change does (``done``: the writes made, by default the plan's)."""
    result: dict[str, Any] = {"changed": bool(planned.written), "queue": planned.leaf}
    if not (planned.remove and not planned.written):
        # A removal of a leaf that is not there says no writes, as it always has.
        result["writes"] = list(planned.written if done is None else done)
        result["changed"] = bool(result["writes"])
    result["diff"] = {"before": dict(planned.before), "after": dict(planned.after)}
    return result


def _kept(obj: Mapping[str, Any]) -> dict[str, Any]:
    """An object without what the server owns, but with its status (a queue's allocated
    GPUs are the plan's)."""
    out = strip_server_fields(obj) or {}
    if "status" in obj:
        out["status"] = obj["status"]
    return out


def facts_out(facts: BurstFacts) -> dict[str, Any]:
    """The facts as data; ``gathered`` reads as ``state: present`` does, so never the Jobs."""
    out: dict[str, Any] = {"queues": [_kept(q) for q in facts.queues]}
    if facts.parent is not None:
        out["burst_queue"] = [_kept(q) for q in facts.parent]
    if facts.queue_list is not None:
        out["queue_list"] = [strip_server_fields(c) for c in facts.queue_list]
    return out


def facts_in(request: BurstRequest, data: Mapping[str, Any]) -> BurstFacts:
    """Facts given as ``gathered`` returned them (a key left out: not read)."""
    (queues,) = fact_lists(data, "queues")
    parent, queue_list = (
        fact_lists(data, key)[0] if data.get(key) is not None else None
        for key in ("burst_queue", "queue_list")
    )
    return BurstFacts(queues, None, parent, queue_list)
