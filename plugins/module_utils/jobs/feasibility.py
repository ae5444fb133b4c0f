# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a job can ever run, and what it waits for: one rule for every caller.

``vcjob`` (and so ``job_submit.yml``) asks before it writes a job, the large-job
throttle before it holds a queue for one, and the queue arbiter before it evicts for
one. All three ask these functions, with the same words, so they never disagree.

Rules held here:

* Rule job-never-runs (``never_runs``): a job can never run, and nothing the platform
  or Volcano does changes that, when

  1. a PersistentVolumeClaim it mounts does not exist in its namespace (its pods stay
     Pending with "persistentvolumeclaim not found");
  2. it asks for more GPUs than the nodes it may use hold (rule job-nodes: the pool's
     nodes in its queue's node groups, less the cloud nodes for ``local-only``);
  3. it asks for more GPUs than the capability of its queue or of an ancestor (a
     Volcano gang is admitted whole or not at all); a spot queue's capability is not
     judged here, it moves with the idle GPUs (rule job-waits-for says so instead).

  The answer names the first reason and ends "it can never run".
* Rule job-nodes (``usable_gpus``): the GPUs of the nodes a job may use: Ready,
  schedulable nodes (rule pool), in the node groups its queue requires (Volcano's
  ``nodegroup`` plugin gives a queue without an affinity its nearest ancestor's,
  ``root`` included: rule idc-by-default), cloud nodes only when the queue's groups
  reach them and its placement is not ``local-only``.
* Rule job-waits-for (``waits_for``): for a job that can run, why it cannot start now:
  its spot queue offers fewer GPUs than it asks (spot is the idle GPUs' share, and
  grows only when paying work leaves GPUs idle), its queue or an ancestor is at its
  capability, or fewer GPUs are free than it asks. ``vcjob`` accepts such a job with a
  warning naming what it waits for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..common.names import (
    ANNOTATION_PLACEMENT,
    LABEL_NODE_LOCATION,
    LABEL_QUEUE_TYPE,
    NODEGROUP_LABEL,
    QUEUE_TYPE_SPOT,
    ROOT_QUEUE,
)
from ..common.quantity import GPU, parse
from ..queues.capability import effective_limit
from ..workload.demand import gpus_and_pods
from ..workload.pool import allocated_from_pods, is_cloud_node, node_in_pool

NEVER = "it can never run"


@dataclass(frozen=True)
class Gang:
    """What a job asks for, as every caller reads it: ``claims`` the PVC names its pods
    mount, ``local_only`` its placement (``hybrid/placement``)."""

    ref: str
    queue: str
    gpus: int
    claims: tuple[str, ...] = ()
    local_only: bool = False


@dataclass(frozen=True)
class Limit:
    """One queue as the feasibility rules read it: its own GPU capability (None: not
    set), its allocated GPUs and its parent."""

    name: str
    capability: int | None
    allocated: int = 0
    parent: str = ROOT_QUEUE
    queue_type: str = ""


@dataclass(frozen=True)
class Supply:
    """What exists for a job, as read: ``chain`` its queue then its ancestors (nearest
    first, up to ``root``), ``node_gpus`` the GPUs of the nodes it may use (rule job-nodes;
    None: the Nodes could not be read), ``claims`` the PVC names of its namespace (None:
    not read), ``free_gpus`` the GPUs of those nodes no pod holds (None: not read)."""

    chain: tuple[Limit, ...] = ()
    node_gpus: int | None = None
    claims: frozenset[str] | None = None
    free_gpus: int | None = None


def queue_limits(queues: Iterable[Mapping[str, Any]]) -> dict[str, Limit]:
    """Volcano Queue objects -> ``Limit`` by name (GPUs only)."""
    out: dict[str, Limit] = {}
    for queue in queues:
        meta = queue.get("metadata") or {}
        spec = queue.get("spec") or {}
        name = str(meta.get("name") or "")
        capability = (spec.get("capability") or {}).get(GPU)
        allocated = ((queue.get("status") or {}).get("allocated") or {}).get(GPU)
        out[name] = Limit(
            name=name,
            capability=None if capability is None else int(parse(capability, f"{name}.capability")),
            allocated=0 if allocated is None else int(parse(allocated, f"{name}.allocated")),
            parent=str(spec.get("parent") or ROOT_QUEUE),
            queue_type=str((meta.get("labels") or {}).get(LABEL_QUEUE_TYPE) or ""),
        )
    return out


def chain_of(limits: Mapping[str, Limit], queue: str) -> tuple[Limit, ...]:
    """The queue and its ancestors, nearest first, up to (not including) ``root``; it
    stops at a parent that was not read and at a cycle."""
    chain: list[Limit] = []
    current = limits.get(queue)
    while current is not None and current not in chain and current.name != ROOT_QUEUE:
        chain.append(current)
        current = limits.get(current.parent)
    return tuple(chain)


def required_groups(queues: Mapping[str, Mapping[str, Any]], queue: str) -> frozenset[str] | None:
    """Rule job-nodes, the queue's side: the node groups of the nearest queue, itself then
    its ancestors up to ``root``, that names any (required, else preferred: a preferred
    group is still a group the queue may use); None when none names any."""
    seen: set[str] = set()
    name = queue
    while name and name not in seen:
        seen.add(name)
        live = queues.get(name)
        if live is None:
            return None
        spec = live.get("spec") or {}
        affinity = (spec.get("affinity") or {}).get("nodeGroupAffinity") or {}
        groups = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or affinity.get(
            "preferredDuringSchedulingIgnoredDuringExecution"
        )
        if groups:
            return frozenset(str(g) for g in groups)
        if name == ROOT_QUEUE:
            return None
        name = str(spec.get("parent") or ROOT_QUEUE)
    return None


def _usable(node: Mapping[str, Any], groups: frozenset[str] | None, local_only: bool) -> bool:
    labels = (node.get("metadata") or {}).get("labels") or {}
    cloud = is_cloud_node(node)
    if cloud and local_only:
        return False
    if groups is not None and labels.get(NODEGROUP_LABEL) not in groups:
        return False
    if cloud and groups is None:
        return False  # no group reaches a cloud node: rule pool-excludes-cloud
    selector = {LABEL_NODE_LOCATION: "cloud"} if cloud else None
    return node_in_pool(node, selector)


def usable_nodes(
    nodes: Iterable[Mapping[str, Any]], groups: frozenset[str] | None, local_only: bool
) -> list[str]:
    """Rule job-nodes: the names of the nodes a job may use."""
    return [
        str((n.get("metadata") or {}).get("name") or "")
        for n in nodes
        if _usable(n, groups, local_only)
    ]


def usable_gpus(
    nodes: Iterable[Mapping[str, Any]], groups: frozenset[str] | None, local_only: bool
) -> int:
    """Rule job-nodes: the allocatable GPUs of the nodes a job may use."""
    total = 0
    for node in nodes:
        if _usable(node, groups, local_only):
            name = (node.get("metadata") or {}).get("name", "")
            raw = ((node.get("status") or {}).get("allocatable") or {}).get(GPU, "0")
            total += int(parse(raw, f"nodes[{name}].status.allocatable.{GPU}"))
    return total


def at_most(gang: Gang, supply: Supply) -> int | None:
    """The most GPUs a job of ``gang``'s queue and placement could ever get (rule
    job-never-runs' GPU limits), None when nothing read limits it."""
    limits = [lim.capability for lim in supply.chain if lim.queue_type != QUEUE_TYPE_SPOT]
    limits.append(supply.node_gpus)
    known = [n for n in limits if n is not None]
    return min(known) if known else None


def never_runs(gang: Gang, supply: Supply) -> str | None:
    """Rule job-never-runs (see the module docstring): why ``gang`` can never run, or None."""
    if supply.claims is not None:
        missing = [c for c in gang.claims if c not in supply.claims]
        if missing:
            names = ", ".join(missing)
            return (
                f"{gang.ref} mounts PersistentVolumeClaim {names}, which does not exist in its "
                f"namespace: {NEVER} until it is created"
            )
    if gang.gpus <= 0:
        return None
    if supply.node_gpus is not None and gang.gpus > supply.node_gpus:
        return (
            f"{gang.ref} asks for {gang.gpus} GPUs and the nodes it may use (queue "
            f"{gang.queue}'s node groups{', placement local-only' if gang.local_only else ''}) "
            f"hold {supply.node_gpus}: {NEVER}"
        )
    for limit in supply.chain:
        # A spot queue's capability moves with the idle GPUs: never a reason for "never".
        if limit.queue_type == QUEUE_TYPE_SPOT:
            continue
        if limit.capability is not None and gang.gpus > limit.capability:
            return (
                f"{gang.ref} asks for {gang.gpus} GPUs and queue {limit.name} has a capability "
                f"of {limit.capability}: {NEVER} there"
            )
    return None


def effective_capability(chain: Sequence[Limit]) -> int | None:
    """Rule effective-capability (``queues.capability``) over the chain, in GPUs."""
    return effective_limit(lim.capability for lim in chain)


def waits_for(gang: Gang, supply: Supply) -> str | None:
    """Rule job-waits-for (see the module docstring): what a job that can run waits for
    before it can start, or None when nothing read says it must wait."""
    if gang.gpus <= 0:
        return None
    own = supply.chain[0] if supply.chain else None
    if own is not None and own.queue_type == QUEUE_TYPE_SPOT and own.capability is not None:
        offered = own.capability
        if gang.gpus > offered - own.allocated:
            return (
                f"spot queue {own.name} offers {max(0, offered - own.allocated)} GPUs now "
                f"({offered} its share of the idle GPUs, {own.allocated} in use) and "
                f"{gang.ref} asks for {gang.gpus}: it waits until paying work leaves GPUs "
                "idle and the spot recompute raises the queue"
            )
    for at, limit in enumerate(supply.chain):
        cap = effective_capability(supply.chain[at:])
        if cap is not None and limit.allocated + gang.gpus > cap:
            return (
                f"queue {limit.name} has {limit.allocated} of its {cap} GPUs allocated and "
                f"{gang.ref} asks for {gang.gpus}: it waits until jobs there end"
            )
    if supply.free_gpus is not None and gang.gpus > supply.free_gpus:
        return (
            f"{supply.free_gpus} GPUs are free on its nodes and {gang.ref} asks for "
            f"{gang.gpus}: it waits until they are freed"
        )
    return None


def claims_of(vcjob: Mapping[str, Any]) -> tuple[str, ...]:
    """The PVC names a Volcano Job's task templates mount, in order, each once."""
    out: list[str] = []
    for task in (vcjob.get("spec") or {}).get("tasks") or []:
        spec = ((task or {}).get("template") or {}).get("spec") or {}
        for volume in spec.get("volumes") or []:
            claim = ((volume or {}).get("persistentVolumeClaim") or {}).get("claimName")
            if claim and claim not in out:
                out.append(str(claim))
    return tuple(out)


def local_only(vcjob: Mapping[str, Any]) -> bool:
    """Whether a Volcano Job's placement is ``local-only`` (its annotation, written by the
    job builder; a compliance-restricted job is local-only too)."""
    annotations = (vcjob.get("metadata") or {}).get("annotations") or {}
    return annotations.get(ANNOTATION_PLACEMENT) == "local-only"


def gang_of(vcjob: Mapping[str, Any]) -> Gang:
    """A Volcano Job as rule job-never-runs reads it: its queue, GPUs (rule job-demand),
    PVCs and placement."""
    meta = vcjob.get("metadata") or {}
    return Gang(
        ref=f"{meta.get('namespace', '')}/{meta.get('name', '')}",
        queue=str((vcjob.get("spec") or {}).get("queue") or "default"),
        gpus=gpus_and_pods(vcjob)[0],
        claims=claims_of(vcjob),
        local_only=local_only(vcjob),
    )


def claim_names(pvcs: Iterable[Mapping[str, Any]]) -> dict[str, frozenset[str]]:
    """Namespace -> the names of its PersistentVolumeClaims (not being deleted)."""
    out: dict[str, set[str]] = {}
    for pvc in pvcs:
        meta = pvc.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            continue
        out.setdefault(str(meta.get("namespace") or ""), set()).add(str(meta.get("name") or ""))
    return {ns: frozenset(names) for ns, names in out.items()}


def supply_from(
    gang: Gang,
    namespace: str,
    queues: Mapping[str, Mapping[str, Any]],
    pvcs: Iterable[Mapping[str, Any]] | None,
    nodes: Sequence[Mapping[str, Any]] | None,
) -> tuple[Supply, list[str]]:
    """What rule job-never-runs judges a job about to be created by, from what was read:
    its queue chain, the GPUs of the nodes it may use (None: the Nodes were not read) and
    their names, its namespace's PVCs (``pvcs`` None: not read, none)."""
    claims = claim_names(pvcs) if pvcs is not None else {}
    node_gpus, members = None, []
    if nodes is not None:
        groups = required_groups(queues, gang.queue)
        node_gpus = usable_gpus(nodes, groups, gang.local_only)
        members = usable_nodes(nodes, groups, gang.local_only)
    supply = Supply(
        chain=chain_of(queue_limits(queues.values()), gang.queue),
        node_gpus=node_gpus,
        claims=claims.get(namespace, frozenset()),
    )
    return supply, members


def free_from(supply: Supply, pods: list[dict[str, Any]], members: list[str]) -> Supply:
    """``supply`` with the GPUs of its nodes that no pod of ``pods`` (the unfinished ones)
    holds."""
    held, _leaving = allocated_from_pods(pods, members)
    return replace(supply, free_gpus=max(0, (supply.node_gpus or 0) - int(held[GPU])))
