# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How many times Karmada moved a federated job from one member to another, and what the
job's PropagationPolicy says once it has been moved as often as it may. Pure.

Rule held here:

* Rule federation-moves-counted (``moves_seen``): a job's moves, read from its
  ResourceBinding and recorded on its PropagationPolicy.

Karmada v1.16.0 keeps no count of a binding's moves (``FailoverBehavior`` has none), and
what it shows of one lasts only while the move is under way: the member the job left is a
graceful eviction task of the binding (``spec.gracefulEvictionTasks[].fromCluster``) until
its copy there is deleted. So the platform writes down what it sees on the job's policy
(``platform.io/placed-in``, ``platform.io/moved-from``): a move is still counted when the
reconcile that sees it comes after the task is gone. Rule federation-failover-once then
reads the count (``moved_enough``): a job moved that often loses its ``failover`` and is held.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..common.names import (
    ANNOTATION_MOVED_FROM,
    ANNOTATION_PLACED_IN,
    JOB_API,
    LABEL_MANAGED_BY,
    MANAGED_BY,
)
from .federation_placement import POLICY_API, hold, moved_enough

BINDING_API = "work.karmada.io/v1alpha2"


@dataclass(frozen=True)
class Moves:
    """What the platform knows of a job's moves: the member it was last seen placed in,
    and the members Karmada moved it away from, in the order seen."""

    placed_in: str | None = None
    moved_from: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        return len(self.moved_from)

    def annotations(self) -> dict[str, str]:
        """The record, as the job's PropagationPolicy carries it."""
        out: dict[str, str] = {}
        if self.placed_in:
            out[ANNOTATION_PLACED_IN] = self.placed_in
        if self.moved_from:
            out[ANNOTATION_MOVED_FROM] = ",".join(self.moved_from)
        return out


def recorded_moves(policy: Mapping[str, Any] | None) -> Moves:
    """The record a job's PropagationPolicy carries (none without a policy)."""
    notes = ((policy or {}).get("metadata") or {}).get("annotations") or {}
    moved = tuple(m for m in (notes.get(ANNOTATION_MOVED_FROM) or "").split(",") if m)
    return Moves(notes.get(ANNOTATION_PLACED_IN) or None, moved)


def binding_name(job: str) -> str:
    """The ResourceBinding Karmada makes for a Volcano Job template: ``<name>-<kind>``,
    the kind in lower case (``pkg/util/names`` ``GenerateBindingName``)."""
    return f"{job}-job"


def bound_members(binding: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The members the binding places the job in now."""
    clusters = ((binding or {}).get("spec") or {}).get("clusters") or []
    return tuple(c["name"] for c in clusters if c.get("name"))


def members_left(binding: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The members Karmada is taking the job out of: its graceful eviction tasks."""
    tasks = ((binding or {}).get("spec") or {}).get("gracefulEvictionTasks") or []
    return tuple(dict.fromkeys(t["fromCluster"] for t in tasks if t.get("fromCluster")))


def moves_seen(recorded: Moves, binding: Mapping[str, Any] | None) -> Moves:
    """Rule federation-moves-counted: a job was moved from a member when its binding has a
    graceful eviction task from that member (the move under way), or when the binding
    places it in another member than the one it was last seen in (the move done). Each
    member left is counted once, so a move seen both ways, or by two reconciles, is one.
    The member the job is in now is recorded once the binding names exactly one (a job
    runs whole in one member, rule federation-placement); while it names none (not
    placed yet, or being placed again) the last one seen is kept."""
    now = bound_members(binding)
    left = list(members_left(binding))
    if recorded.placed_in and now and recorded.placed_in not in now:
        left.append(recorded.placed_in)
    moved = recorded.moved_from + tuple(
        m for m in dict.fromkeys(left) if m not in recorded.moved_from
    )
    placed = now[0] if len(now) == 1 else recorded.placed_in
    return Moves(placed, moved)


def job_of_policy(policy: Mapping[str, Any]) -> str | None:
    """The Volcano Job a platform job policy is for (``job_propagation_policy``: the
    policy named after the one job it selects); None for any other policy."""
    meta = policy.get("metadata") or {}
    if (meta.get("labels") or {}).get(LABEL_MANAGED_BY) != MANAGED_BY:
        return None
    selectors = (policy.get("spec") or {}).get("resourceSelectors") or []
    if len(selectors) != 1:
        return None
    selected = selectors[0]
    if (selected.get("apiVersion"), selected.get("kind")) != (JOB_API, "Job"):
        return None
    return meta.get("name") if selected.get("name") == meta.get("name") else None


def policy_after_moves(policy: Mapping[str, Any], moves: Moves) -> dict[str, Any]:
    """The job's policy as it is, with ``moves`` recorded, and, once the job was moved as
    often as rule federation-failover-once allows, without ``failover`` and tolerating the
    lost-member taint: Karmada moves it no more, and holds it where it is when that member
    is lost too. Only the fields the platform owns are in ``metadata``."""
    meta = policy.get("metadata") or {}
    spec = copy.deepcopy(dict(policy.get("spec") or {}))
    if moved_enough(moves.count) and spec.pop("failover", None) is not None:
        # propagateDeps is on for application failover only (job_propagation_policy)
        spec.pop("propagateDeps", None)
        hold(spec)
    return {
        "apiVersion": POLICY_API,
        "kind": "PropagationPolicy",
        "metadata": {
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "labels": {LABEL_MANAGED_BY: MANAGED_BY},
            "annotations": moves.annotations(),
        },
        "spec": spec,
    }


def needs_writing(policy: Mapping[str, Any], moves: Moves) -> bool:
    """Whether the live policy lacks the record, or still lets a job moved as often as it
    may move again."""
    spec = policy.get("spec") or {}
    stale = moved_enough(moves.count) and "failover" in spec
    return recorded_moves(policy) != moves or stale
