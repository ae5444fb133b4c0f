# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The platform's run Leases (pure: no I/O): one ``coordination.k8s.io/v1`` Lease per kind of
run that must never run twice at once, held while a run chooses and removes work.

Two Leases use it: ``spot-reclaim`` (``SPOT_RECLAIM``, the spot reclaim) and ``queue-arbiter``
(``QUEUE_ARBITER``, the in-tenant arbiter), both in ``platform-system``. Each is a
``RunLease``: its name, namespace and what its runs are called in the messages ("spot
reclaim", "queue arbiter"). The reads and writes are ``kube/lease_io`` (``acquire_lease``,
``release_lease``). Rules held here:

* Rule reclaim-lease (``lease_blocker``): who holds the Lease so that this run must not act.
  The Lease is free when it does not exist, has no holder, is this run's own, or was last
  renewed more than its duration ago.
* Rule reclaim-lease-holder (``run_holder``): the Lease is held by one run, not by an identity.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..common.names import (
    LABEL_MANAGED_BY,
    LEASE_API,
    MANAGED_BY,
    PLATFORM_NAMESPACE,
    QUEUE_ARBITER_LEASE,
    SPOT_RECLAIM_LEASE,
)
from ..common.times import read_rfc3339, write_rfc3339


@dataclass(frozen=True)
class RunLease:
    """One run Lease: ``name`` in ``namespace``; ``what`` names its runs in messages."""

    name: str
    what: str
    namespace: str = PLATFORM_NAMESPACE

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


SPOT_RECLAIM = RunLease(SPOT_RECLAIM_LEASE, "spot reclaim")
QUEUE_ARBITER = RunLease(QUEUE_ARBITER_LEASE, "queue arbiter")


def micro_time(moment: datetime) -> str:
    """A Lease's MicroTime (``2026-01-01T12:00:00.000000Z``)."""
    return write_rfc3339(moment, micro=True)


def seconds_time(moment: datetime) -> str:
    """An RFC 3339 time to the second (``2026-01-01T12:00:00Z``)."""
    return write_rfc3339(moment)


def parse_micro(value: object) -> datetime | None:
    """A Lease time as written by ``micro_time`` (or any RFC 3339 time); None when not one."""
    return read_rfc3339(value) if isinstance(value, str) else None


def run_holder(identity: str, run_id: str) -> str:
    """Rule reclaim-lease-holder: the Lease is held by one run, not by an identity. Two
    runs that share ``holder_identity`` (two launches of one AWX template) would each
    find the Lease their own and both act; the run id makes each a holder of its own."""
    return f"{identity}/{run_id}" if run_id else identity


def lease_blocker(
    run_lease: RunLease, lease: Mapping[str, Any] | None, holder: str, now: datetime
) -> str | None:
    """Rule reclaim-lease: who blocks ``holder`` from taking ``run_lease``, or None.

    The lease is free when it does not exist, has no holder, is ``holder``'s
    own, or was last renewed more than its duration ago."""
    if not lease:
        return None
    spec = lease.get("spec") or {}
    other = spec.get("holderIdentity")
    if not other or other == holder:
        return None
    renewed = parse_micro(spec.get("renewTime")) or parse_micro(spec.get("acquireTime"))
    duration = spec.get("leaseDurationSeconds") or 0
    if renewed is None:
        return None
    expires = renewed.timestamp() + float(duration)
    if expires <= now.timestamp():
        return None
    return (
        f"Lease {run_lease.ref} is held by {other!r} until "
        f"{seconds_time(datetime.fromtimestamp(expires, tz=UTC))}; another {run_lease.what} is "
        "running, try again after it ends"
    )


def lease_race(run_lease: RunLease) -> str:
    """The refusal when another run took the Lease between this run's read and its write."""
    return (
        f"Lease {run_lease.ref} was taken by another {run_lease.what} at the same time; try again"
    )


def lease_manifest(
    run_lease: RunLease, holder: str, duration: int, now: datetime, transitions: int = 0
) -> dict[str, Any]:
    """The Lease ``holder`` creates: valid ``duration`` seconds from ``now``."""
    return {
        "apiVersion": LEASE_API,
        "kind": "Lease",
        "metadata": {
            "name": run_lease.name,
            "namespace": run_lease.namespace,
            "labels": {LABEL_MANAGED_BY: MANAGED_BY},
        },
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": int(duration),
            "acquireTime": micro_time(now),
            "renewTime": micro_time(now),
            "leaseTransitions": transitions,
        },
    }


def lease_takeover(
    run_lease: RunLease, live: Mapping[str, Any], holder: str, duration: int, now: datetime
) -> dict[str, Any]:
    """The update that takes a free live lease over, guarded by its resourceVersion
    (a holder change counts as one more transition)."""
    spec = live.get("spec") or {}
    transitions = int(spec.get("leaseTransitions") or 0) + (
        0 if spec.get("holderIdentity") == holder else 1
    )
    manifest = lease_manifest(run_lease, holder, duration, now, transitions)
    manifest["metadata"]["resourceVersion"] = (live.get("metadata") or {}).get("resourceVersion")
    return manifest


def release_warning(run_lease: RunLease, lease: Mapping[str, Any], why: object) -> str:
    """The warning when the Lease cannot be given back: it runs out on its own."""
    seconds = (lease.get("spec") or {}).get("leaseDurationSeconds")
    return (
        f"the Lease {run_lease.ref} could not be given back ({why}); "
        f"it expires {seconds} s after it was taken"
    )
