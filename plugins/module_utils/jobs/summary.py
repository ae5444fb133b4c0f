# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule run-summary for ``vcjob`` and ``large_job_throttle``: the job's phase and the
queue it runs in; the queues the throttle holds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.names import LABEL_COMPLIANCE_ZONE, LABEL_NODE_LOCATION
from ..common.summary import did, names
from ..hybrid.federation_placement import MEMBER_NOT_READY_TAINT


def job_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    """The job, what the run did with it, its phase and where it runs."""
    job = f"tenant-{params['tenant']}/{params['name']}"
    phase = result.get("phase") or "Absent"
    if params.get("state") == "absent":
        if not result.get("changed"):
            return [f"job {job}: there is none; nothing deleted"]
        lines = [f"job {job}: {did(check_mode, 'deleted', 'would be deleted')}"]
        if result.get("throttle_released"):
            lines.append(
                f"large-job throttle {did(check_mode, 'released', 'would be released')} on "
                f"{names(result['throttle_released'])}"
            )
        return lines
    queue = result.get("queue") or {}
    where = f"queue {queue.get('name', params.get('queue'))}"
    if queue.get("type"):
        where += f" ({queue['type']})"
    size = ""
    if params.get("kind"):
        pods = params.get("replicas") or 1
        size = (
            f"{params['kind']}, class {params.get('job_class') or 'normal'}, {pods} pod{'s' if pods != 1 else ''}"
            f" x {params.get('gpus_per_pod') or 0} GPUs, "
        )
    if not result.get("changed"):
        verb = "unchanged"
    else:
        verb = did(check_mode, "submitted", "would be submitted")
    if check_mode and phase == "Held":
        state = "; would be held by the large-job throttle"
    elif check_mode and result.get("changed"):
        state = ""
    else:
        state = f"; phase {phase}"
    lines = [f"job {job}: {verb} ({size}{where}){state}"]
    if result.get("held_seconds"):
        lines.append(
            f"held {result['held_seconds']} s by the large-job throttle before it was submitted"
        )
    if result.get("throttle_engaged"):
        lines.append(f"large-job throttle engaged on {queue.get('name')} until the job runs")
    if result.get("throttle_not_engaged"):
        lines.append(f"large-job throttle not engaged: {result['throttle_not_engaged']}")
    federation = result.get("federation")
    if federation:
        written = did(check_mode, "written", "would be written")
        lines.append(
            f"federation: PropagationPolicy {federation['policy']} "
            f"{written if federation.get('policy_written') else 'unchanged'}; Karmada runs the "
            f"whole job in one member: {members_text(federation.get('placement') or {})}; "
            f"{lost_member_text(federation.get('placement') or {})}{placed_text(federation)}"
        )
    return lines


def placed_text(federation: Mapping[str, Any]) -> str:
    """Where Karmada placed a job it holds, and what it was moved from (rule
    federation-moves-counted): ``; placed in idc-1 (moved from cloud-1)``, or nothing."""
    member, moved = federation.get("member"), federation.get("moved_from") or []
    if not member and not moved:
        return ""
    text = f"; placed in {member}" if member else "; not placed now"
    return text + (f" (moved from {', '.join(moved)})" if moved else "")


def lost_member_text(placement: Mapping[str, Any]) -> str:
    """What Karmada does with the job if its member is lost (rules federation-failover-once
    and federation-member-failover): a job that tolerates the lost-member taint is held."""
    held = any(
        t.get("key") == MEMBER_NOT_READY_TAINT for t in placement.get("clusterTolerations") or []
    )
    return (
        "held in its member if that member is lost"
        if held
        else "moved once to another member if its member is lost"
    )


def members_text(placement: Mapping[str, Any]) -> str:
    """Which members a job's placement allows, in Karmada's order of trying them: ``idc``,
    ``idc, else cloud``, ``idc or cloud``."""
    terms = placement.get("clusterAffinities") or [placement.get("clusterAffinity") or {}]
    tried = []
    for term in terms:
        expressions = (term.get("labelSelector") or {}).get("matchExpressions") or []
        locations = [
            v for e in expressions if e.get("key") == LABEL_NODE_LOCATION for v in e["values"]
        ]
        zones = [
            v for e in expressions if e.get("key") == LABEL_COMPLIANCE_ZONE for v in e["values"]
        ]
        text = " or ".join(locations) or "any"
        tried.append(f"{text} (compliance zone {', '.join(zones)})" if zones else text)
    return ", else ".join(tried)


def throttle_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    """What the throttle reconcile engaged and released, and the queues throttled after it."""
    lines = []
    for key, done, would in (
        ("engaged", "engaged for", "would engage for"),
        ("released", "released for", "would release for"),
        ("expired", "expired (past the timeout) for", "would expire (past the timeout) for"),
    ):
        if result.get(key):
            lines.append(f"large-job throttle {did(check_mode, done, would)} {names(result[key])}")
    for row in result.get("not_engaged") or []:
        lines.append(
            f"not throttled for {row.get('job')} ({row.get('queue')}): {row.get('reason')}"
        )
    throttles = result.get("throttles") or {}
    queues = [
        f"{q} until {t.get('until')}"
        for _namespace, t in sorted(throttles.items())
        for q in t.get("queues") or []
    ]
    state = did(check_mode, "throttled queues", "throttled queues after the run would be")
    lines.append(f"{state}: {names(queues)}")
    return lines
