# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster reads rule job-never-runs (``feasibility``) and rule throttle-can-help
(``large_job``) judge a job by: its Queues, the Nodes it may use, the unfinished Pods
on them, its namespace's PVCs and, for a hard network topology, the HyperNodes. Reads
only, for ``service`` (a job about to be created) and ``throttle_io`` (the waiting large
jobs). An identity that may not read them (a tenant's own) gets a warning, not a refusal.
Not pure: every public function here takes a Cluster and reads it; the judging is the pure rules'.
"""

from __future__ import annotations

from typing import Any

from ansible.module_utils.common.warnings import warn

from ..common.names import HYPERNODE_API, QUEUE_API, ROOT_QUEUE
from ..kube.cluster import ApiException, Cluster, api_error_message
from .feasibility import (
    Gang,
    Supply,
    free_from,
    supply_from,
)
from .large_job import LargeJob, Room
from .reconcile import RoomFacts, room_from

_UNFINISHED_PODS = "status.phase!=Succeeded,status.phase!=Failed"


def _forbidden(exc: Exception) -> bool:
    """The API server refused the read: this identity may not make it."""
    return getattr(exc, "status", None) == 403


def read_room_facts(cluster: Cluster, jobs: list[LargeJob]) -> RoomFacts | None:
    """What rule throttle-can-help judges the waiting admitted large jobs ``jobs`` by: one
    list of Nodes, (rule job-never-runs) one of Queues and, when a job mounts any, one of
    PVCs (of the one namespace when the jobs share it), one of unfinished Pods and, when
    one of them has a hard topology, one of HyperNodes. None when this identity may not
    read them (a tenant's own): then no job is turned away."""
    try:
        nodes = tuple(cluster.list("v1", "Node"))
        queues: tuple[dict[str, Any], ...] = ()
        claims = None
        if jobs:
            queues = tuple(cluster.list(QUEUE_API, "Queue"))
            spaces = {j.namespace for j in jobs}
            only = next(iter(spaces)) if len(spaces) == 1 else None
            if any(j.claims for j in jobs):
                claims = tuple(cluster.list("v1", "PersistentVolumeClaim", namespace=only))
        pods = tuple(cluster.list("v1", "Pod", field_selector=_UNFINISHED_PODS))
        hypernodes = None
        if any(j.hard_tier is not None for j in jobs):
            hypernodes = tuple(cluster.list(HYPERNODE_API, "HyperNode"))
    except ApiException as exc:
        if not _forbidden(exc):
            raise
        warn(
            "could not read the Nodes, Pods or HyperNodes to judge whether preemption can help "
            f"a waiting large job ({api_error_message(exc)}); the throttle engages as it would"
        )
        return None
    return RoomFacts(nodes, pods, queues, claims, hypernodes)


def read_room(cluster: Cluster, jobs: list[LargeJob], vcjobs: list[dict[str, Any]]) -> Room | None:
    """What preemption could give the waiting admitted large jobs (``read_room_facts``,
    judged by ``reconcile.room_from``); None when this identity may not read it."""
    facts = read_room_facts(cluster, jobs)
    return room_from(facts, jobs, vcjobs) if facts is not None else None


def read_queues(cluster: Cluster, queue: str) -> dict[str, dict[str, Any]]:
    """The Queues rule job-never-runs judges ``queue`` by: every Queue (one list), or, for
    an identity that may not list them (a tenant's own), the queue and its ancestors one
    GET each, as far as it may read (then with a warning naming where it stopped)."""
    try:
        return {q["metadata"]["name"]: q for q in cluster.list(QUEUE_API, "Queue")}
    except ApiException as exc:
        if not _forbidden(exc):
            raise
    found: dict[str, dict[str, Any]] = {}
    name = queue
    while name and name != ROOT_QUEUE and name not in found:
        try:
            live = cluster.get(QUEUE_API, "Queue", name)
        except ApiException as exc:
            if not _forbidden(exc):
                raise
            warn(
                f"this identity may not read Queue {name}; the job's GPUs are not compared "
                "with its capability"
            )
            break
        if live is None:
            break
        found[name] = live
        name = str((live.get("spec") or {}).get("parent") or ROOT_QUEUE)
    return found


def read_nodes(cluster: Cluster) -> list[dict[str, Any]] | None:
    """Every Node (one list); None when this identity may not list them (then with a
    warning: the job's GPUs are not compared with its nodes)."""
    try:
        return cluster.list("v1", "Node")
    except ApiException as exc:
        if not _forbidden(exc):
            raise
        warn("this identity may not list Nodes; the job's GPUs are not compared with its nodes")
        return None


def read_supply(cluster: Cluster, gang: Gang, namespace: str) -> tuple[Supply, list[str]]:
    """What rule job-never-runs judges a job about to be created by: its queue chain, the
    GPUs of the nodes it may use (and their names), and its namespace's PVCs. Only what the
    job asks about is read: no Queues or Nodes for a job without GPUs, no PVCs for one
    that mounts none."""
    queues = read_queues(cluster, gang.queue) if gang.gpus > 0 else {}
    pvcs = cluster.list("v1", "PersistentVolumeClaim", namespace=namespace) if gang.claims else None
    nodes = read_nodes(cluster) if gang.gpus > 0 else None
    return supply_from(gang, namespace, queues, pvcs, nodes)


def free_on(cluster: Cluster, supply: Supply, members: list[str]) -> Supply:
    """``supply`` with the GPUs of its nodes that no unfinished pod holds (one Pod list)."""
    if supply.node_gpus is None:
        return supply
    return free_from(supply, unfinished_pods(cluster), members)


def unfinished_pods(cluster: Cluster) -> list[dict[str, Any]]:
    """The Pods that hold what they asked for (one list)."""
    return cluster.list("v1", "Pod", field_selector=_UNFINISHED_PODS)
