# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule reconcile-heartbeat: a scheduled playbook says it ran, and an alert says when it
stopped running or keeps failing. Pure and stdlib only (the local cluster loads the
observability package by path).

Each scheduled playbook renews two Leases in ``platform-system`` (task file
``playbooks/tasks/heartbeat.yml``, filter ``heartbeat_lease``):
``heartbeat-<playbook>-attempt`` once its variables are checked, and
``heartbeat-<playbook>`` when it finished without a failure. A Lease's renew time is what
kube-state-metrics exports for it (``kube_lease_renew_time``, seconds since the epoch,
labels ``namespace`` and ``lease``), so the heartbeat needs nothing but the exporter the
rules already read. Two alerts per playbook:

* ``PlatformReconcileStopped``: no attempt for longer than the playbook's stale time, so
  its schedule stopped (a disabled schedule, an AWX or EDA outage, a lost credential);
* ``PlatformReconcileFailing``: attempts within the stale time but no success in it (or
  none ever), so it runs and fails: a refusal, an API error, a timeout.

The stale time is a few of the playbook's periods (``stale_after_minutes``). A playbook
that has never run has no Lease and raises neither alert: a cluster without the schedules
is not an outage.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HEARTBEAT_NAMESPACE = "platform-system"  # common/names.PLATFORM_NAMESPACE
MANAGED_BY = {"platform.io/managed-by": "gpucloud-platform"}  # common/names.py
ATTEMPT = "attempt"
SUCCESS = "success"
STEPS = (ATTEMPT, SUCCESS)

# The scheduled playbooks and the longest gap between their runs, in minutes: the
# schedules of awx_configure.yml's awx_schedules (its events_every_minutes where the
# rulebook activation runs the playbook too, since then the schedule is only the safety
# net). tests/unit holds them equal. monitoring_reconcile_periods_minutes overrides them.
RECONCILE_PERIODS_MINUTES: dict[str, int] = {
    "spot_recompute": 5,
    "payg_reconcile": 1,
    "throttle_reconcile": 5,
    "arbiter_reconcile": 5,
    "tenant_catalog": 30,
    "hypernode_sync": 15,
    "gpu_health": 5,
    "checkpoint_retention": 60,
    "usage_report": 1440,
}
MISSED_PERIODS = 3
# A minutely reconcile may wait in AWX's queue; one slow run is not an outage.
MIN_STALE_MINUTES = 5
# A period longer than an hour (the daily ledger) is late after one period and this.
LONG_PERIOD_GRACE_MINUTES = 60


def heartbeat_lease_name(playbook: str, step: str) -> str:
    """``heartbeat-spot-recompute`` (success) or ``heartbeat-spot-recompute-attempt``."""
    base = f"heartbeat-{playbook.replace('_', '-')}"
    return base if step == SUCCESS else f"{base}-{step}"


def heartbeat_lease(playbook: str, step: str, renew_time: str, holder: str) -> dict[str, Any]:
    """Rule reconcile-heartbeat: the Lease a run of ``playbook`` renews at ``step``;
    ``renew_time`` is an RFC 3339 time with microseconds (a Lease's MicroTime)."""
    if step not in STEPS:
        raise ValueError(f"heartbeat step {step!r} is not one of {', '.join(STEPS)}")
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": heartbeat_lease_name(playbook, step),
            "namespace": HEARTBEAT_NAMESPACE,
            "labels": {
                **MANAGED_BY,
                "platform.io/heartbeat": step,
                "platform.io/playbook": playbook,
            },
        },
        "spec": {"holderIdentity": holder, "renewTime": renew_time},
    }


def stale_after_minutes(period_minutes: int) -> int:
    """How long without a run (or a success) raises the heartbeat's alert:
    ``MISSED_PERIODS`` periods, at least ``MIN_STALE_MINUTES``; a period over an hour,
    one period and ``LONG_PERIOD_GRACE_MINUTES``."""
    if period_minutes > 60:
        return period_minutes + LONG_PERIOD_GRACE_MINUTES
    return max(MISSED_PERIODS * period_minutes, MIN_STALE_MINUTES)


def period_errors(values: Any) -> list[str]:
    """``monitoring_reconcile_periods_minutes``: playbook name to a whole number of
    minutes, 1 or more; names outside the scheduled playbooks are allowed (a site's own
    playbook that renews the same heartbeat)."""
    if not isinstance(values, Mapping):
        return [f"reconcile_periods: {values!r} must be a mapping of playbook to minutes"]
    return [
        f"reconcile_periods.{name}: {minutes!r} must be a whole number of minutes, 1 or more"
        for name, minutes in values.items()
        if isinstance(minutes, bool) or not isinstance(minutes, int) or minutes < 1
    ]


def _renewed(playbook: str, step: str) -> str:
    lease = heartbeat_lease_name(playbook, step)
    return f'kube_lease_renew_time{{namespace="{HEARTBEAT_NAMESPACE}",lease="{lease}"}}'


def _of(playbook: str, expr: str) -> str:
    """``expr`` with label ``playbook`` set, so one alert names the playbook it is about."""
    return f'label_replace({expr}, "playbook", "{playbook}", "", "")'


def _stopped(playbook: str, stale: int) -> str:
    return _of(playbook, f"time() - {_renewed(playbook, ATTEMPT)} > {stale}")


def _failing(playbook: str, stale: int) -> str:
    """Its last success older than the stale time (or none at all) while it ran within it;
    the value is the success's age (1 when it never succeeded)."""
    attempt, success = _renewed(playbook, ATTEMPT), _renewed(playbook, SUCCESS)
    late = f"((time() - {success} > {stale}) or on (namespace) absent({success}))"
    return _of(playbook, f"{late} and on (namespace) (time() - {attempt} <= {stale})")


def heartbeat_rules(periods: Mapping[str, int] | None = None) -> list[dict[str, Any]]:
    """The two alerts, one clause per scheduled playbook (``periods`` over the defaults)
    with its own stale time."""
    merged = {**RECONCILE_PERIODS_MINUTES, **(periods or {})}
    stale = {playbook: stale_after_minutes(period) * 60 for playbook, period in merged.items()}
    return [
        {
            "alert": "PlatformReconcileStopped",
            "expr": " or ".join(_stopped(p, stale[p]) for p in sorted(stale)),
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "{{ $labels.playbook }} has not run for {{ $value | humanizeDuration }}; "
                "its schedule or the controller that runs it stopped",
            },
        },
        {
            "alert": "PlatformReconcileFailing",
            "expr": " or ".join(_failing(p, stale[p]) for p in sorted(stale)),
            # a run in progress has an attempt and no success yet
            "for": f"{MIN_STALE_MINUTES}m",
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "{{ $labels.playbook }} runs but has not succeeded for longer than "
                "a few of its periods; see its last job's output",
            },
        },
    ]
