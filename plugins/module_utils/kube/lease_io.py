# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Taking and giving back a run Lease (``kube/lease``) through a ``Cluster``.

The client layer's part of the Lease, shared by the spot reclaim and the queue arbiter:
``acquire_lease`` creates the Lease, or takes a free one over with an update guarded by
its resourceVersion; ``release_lease`` deletes it, guarded the same way, and only warns when
that fails (it is called from a ``finally`` and must not hide what the run did).
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from ansible.module_utils.common.warnings import warn

from ..common.errors import Refused
from ..common.names import LEASE_API
from .cluster import ApiException, Cluster, ConflictError, TransportError, api_error_message
from .lease import (
    RunLease,
    lease_blocker,
    lease_manifest,
    lease_race,
    lease_takeover,
    release_warning,
)


def run_id() -> str:
    """A fresh id for this run's Lease holder (rule reclaim-lease-holder)."""
    return uuid.uuid4().hex[:12]


def default_holder() -> str:
    """The Lease holder when none is given: this controller's host and process."""
    return f"{socket.gethostname()}-{os.getpid()}"


def read_lease(cluster: Cluster, run_lease: RunLease) -> dict[str, Any] | None:
    return cluster.get(LEASE_API, "Lease", run_lease.name, run_lease.namespace)


def acquire_lease(
    cluster: Cluster,
    run_lease: RunLease,
    holder: str,
    duration: int,
    now: datetime | None = None,
    refused: Callable[[str], Exception] = Refused,
) -> dict[str, Any]:
    """Take ``run_lease``: create it; if it exists and is free (expired or ours), take it
    over with an update guarded by its resourceVersion. A held Lease, or one taken by
    another run in between, raises ``refused(message)`` (a Refused by default)."""
    now = now or datetime.now(tz=UTC)
    try:
        return cluster.create(lease_manifest(run_lease, holder, duration, now))
    except ConflictError:
        pass
    live = read_lease(cluster, run_lease)
    if live is None:  # released between our create and our read
        try:
            return cluster.create(lease_manifest(run_lease, holder, duration, now))
        except ConflictError:
            raise refused(lease_race(run_lease)) from None
    blocker = lease_blocker(run_lease, live, holder, now)
    if blocker:
        raise refused(blocker)
    try:
        return cluster.replace(lease_takeover(run_lease, live, holder, duration, now))
    except ConflictError:
        raise refused(lease_race(run_lease)) from None


def release_lease(cluster: Cluster, run_lease: RunLease, lease: Mapping[str, Any]) -> bool:
    """Give the lease back, only if it is still the one we hold."""
    meta = lease.get("metadata") or {}
    try:
        return cluster.delete(
            LEASE_API,
            "Lease",
            run_lease.name,
            run_lease.namespace,
            propagation="Background",
            preconditions={"resourceVersion": meta.get("resourceVersion", "")},
        )
    except ConflictError:
        return False
    except (ApiException, TransportError) as exc:
        # Raised from a ``finally``, this would hide what the run had done; the
        # Lease runs out on its own, so the next run only waits for that.
        why = api_error_message(exc) if isinstance(exc, ApiException) else exc
        warn(release_warning(run_lease, lease, why))
        return False
