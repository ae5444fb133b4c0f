# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``federation_job_moves`` through the flow contract (``kube.flow``): each
federated job's moves between members counted and recorded on its PropagationPolicy, and
a job moved as often as it may held where it is from then on. Its pure steps.

* ``parse``: the namespaces to look at (none: every one);
* ``plan``: for each of the platform's job policies (``vcjob`` with ``federation``), its
  ResourceBinding read by rule federation-moves-counted, and the policy written again
  where the record changed or the job may no longer move (rule federation-failover-once);
* ``report``: what the plan says, as a check-mode run says it.

The reads and writes are ``federation.job_moves_io``'s. Pure: nothing here reads or
writes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..common.summary import count, did, names
from ..hybrid.federation_moves import (
    Moves,
    binding_name,
    job_of_policy,
    moves_seen,
    needs_writing,
    policy_after_moves,
    recorded_moves,
)
from ..kube.flow import Flow
from ..queues.plan import UPDATE
from ..tenants.changes import Changes, diff_key, object_ref
from ..tenants.summary import object_counts


@dataclass(frozen=True)
class JobMovesRequest:
    """The namespaces whose job policies are looked at; empty: every one."""

    namespaces: tuple[str, ...] = ()


@dataclass(frozen=True)
class JobMovesFacts:
    """The platform's PropagationPolicies in Karmada and every ResourceBinding (each one
    LIST across namespaces)."""

    policies: tuple[Mapping[str, Any], ...] = ()
    bindings: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class JobMove:
    """One job policy to write: the job (``namespace/name``), what was known of its moves
    and what is now, the policy to write and the live one."""

    job: str
    before: Moves
    after: Moves
    policy: dict[str, Any]
    live: Mapping[str, Any]

    @property
    def newly_moved(self) -> tuple[str, ...]:
        return self.after.moved_from[self.before.count :]

    @property
    def held(self) -> bool:
        """The write takes the job's ``failover`` off."""
        was = "failover" in (self.live.get("spec") or {})
        return was and "failover" not in self.policy["spec"]


@dataclass(frozen=True)
class JobMovesRun:
    """The writes, and how many job policies were looked at."""

    jobs: int
    writes: tuple[JobMove, ...] = field(default_factory=tuple)


def parse(params: Mapping[str, Any]) -> JobMovesRequest:
    return JobMovesRequest(tuple(dict.fromkeys(params.get("namespaces") or ())))


def _by_name(bindings: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], Mapping[str, Any]]:
    """The ResourceBindings by namespace and name (a job's is ``binding_name(job)``)."""
    return {(b["metadata"].get("namespace") or "", b["metadata"]["name"]): b for b in bindings}


def plan(request: JobMovesRequest, facts: JobMovesFacts) -> JobMovesRun:
    """A write for each job policy whose record is behind its binding, or which still
    lets a job moved as often as it may move again; sorted by job."""
    bound = _by_name(facts.bindings)
    writes = []
    jobs = 0
    for policy in facts.policies:
        job = job_of_policy(policy)
        namespace = policy["metadata"].get("namespace") or ""
        if job is None or (request.namespaces and namespace not in request.namespaces):
            continue
        jobs += 1
        before = recorded_moves(policy)
        after = moves_seen(before, bound.get((namespace, binding_name(job))))
        if needs_writing(policy, after):
            desired = policy_after_moves(policy, after)
            writes.append(JobMove(f"{namespace}/{job}", before, after, desired, policy))
    return JobMovesRun(jobs, tuple(sorted(writes, key=lambda w: w.job)))


# -- report ----------------------------------------------------------------------------------


def _shown(policy: Mapping[str, Any]) -> dict[str, Any]:
    """What a diff shows of a job policy: the record, and whether Karmada may move it."""
    spec = policy.get("spec") or {}
    out: dict[str, Any] = {"metadata": {"annotations": recorded_moves(policy).annotations()}}
    shown_spec: dict[str, Any] = {"failover": spec["failover"]} if "failover" in spec else {}
    tolerations = (spec.get("placement") or {}).get("clusterTolerations")
    if tolerations:
        shown_spec["placement"] = {"clusterTolerations": tolerations}
    if shown_spec:
        out["spec"] = shown_spec
    return out


def record_plan(planned: JobMovesRun, changes: Changes) -> None:
    """Every write, as ``changes`` records it, with a diff of what changes in it."""
    for move in planned.writes:
        ref = object_ref(move.policy, UPDATE)
        changes.objects.append(ref)
        key = diff_key(move.policy)
        changes.before[key] = _shown(move.live)
        changes.after[key] = _shown(move.policy)


def job_rows(planned: JobMovesRun) -> list[dict[str, Any]]:
    """Per job written: where it is, where it was moved from (the moves seen in this run)
    and whether it is now held."""
    return [
        {
            "job": move.job,
            "placed_in": move.after.placed_in,
            "moved_from": list(move.newly_moved),
            "moves": move.after.count,
            "held": move.held,
        }
        for move in planned.writes
    ]


def result(planned: JobMovesRun, changes: Changes) -> dict[str, Any]:
    return {
        "changed": changes.changed,
        "objects": changes.objects,
        "diff": changes.diff(),
        "jobs": job_rows(planned),
        "policies": planned.jobs,
    }


def report(request: JobMovesRequest, planned: JobMovesRun) -> dict[str, Any]:
    """What a check-mode run reports."""
    changes = Changes()
    record_plan(planned, changes)
    return result(planned, changes)


def job_moves_flow(
    gather: Callable[[JobMovesRequest, Any], JobMovesFacts],
    apply: Callable[[JobMovesRequest, JobMovesRun, Any, bool], dict[str, Any]],
) -> Flow[JobMovesRequest, JobMovesFacts, JobMovesRun]:
    """The module's flow over these pure steps and the I/O's ``gather`` and ``apply``."""
    return Flow(parse=parse, gather=gather, plan=plan, apply=apply, report=report)


# -- summary ---------------------------------------------------------------------------------


def job_moves_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    """How many job policies were looked at, which jobs were moved and which are now held,
    in lines a person reads."""
    rows = result.get("jobs") or []
    moved = [r for r in rows if r["moved_from"]]
    held = [r for r in rows if r["held"]]
    lines = [
        f"federated jobs: {count(result.get('policies') or 0, 'job')} read, "
        f"{count(len(moved), 'job')} moved since the last run; job policies "
        f"{object_counts(result.get('objects') or [], check_mode)}"
    ]
    for row in moved:
        lines.append(
            f"{row['job']}: moved from {names(row['moved_from'])} to "
            f"{row['placed_in'] or 'a member not chosen yet'} "
            f"({count(row['moves'], 'move')})"
        )
    if held:
        lines.append(
            f"{did(check_mode, 'held', 'would hold')} where they are from now on "
            f"(moved as often as they may): {names(r['job'] for r in held)}"
        )
    return lines
