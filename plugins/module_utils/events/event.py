# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the cluster event source emits: the events by name, and one event's shape. Pure.

An event is a plain, JSON-serialisable dict::

    {"platform_event": "pool_changed", "kind": "Node", "name": "gpu-07", "namespace": "",
     "tenant": "", "reason": "GPU node gpu-07 was cordoned", "at": "2026-01-01T12:00:00Z",
     "change": "cordoned", "gpus": 8}

``platform_event``, ``kind``, ``name``, ``namespace`` ("" when cluster-scoped), ``tenant``
(the ``platform.io/tenant`` label of a managed queue, else the tenant whose namespace it
is, else ""), ``reason`` and ``at`` are always there; each event adds its own keys.

The rules that make them are ``events.rules`` (which runs them) and one file per event:
``paying_job_blocked``, ``large_job``, ``pool_changed``, ``subscription_changed`` and
``gpu_health_changed``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Optional

from .model import Snapshot, key_of

PAYING_JOB_BLOCKED = "paying_job_blocked"
LARGE_JOB_WAITING = "large_job_waiting"
LARGE_JOB_RUNNING = "large_job_running"
LARGE_JOB_GONE = "large_job_gone"
POOL_CHANGED = "pool_changed"
SUBSCRIPTION_CHANGED = "subscription_changed"
GPU_HEALTH_CHANGED = "gpu_health_changed"
PLATFORM_EVENTS = (
    PAYING_JOB_BLOCKED,
    LARGE_JOB_WAITING,
    LARGE_JOB_RUNNING,
    LARGE_JOB_GONE,
    POOL_CHANGED,
    SUBSCRIPTION_CHANGED,
    GPU_HEALTH_CHANGED,
)
# The keys every event has.
EVENT_KEYS = ("platform_event", "kind", "name", "namespace", "tenant", "reason", "at")

Event = dict[str, Any]
# Runtime aliases: sanity's pylint refuses ``X | None`` outside annotations.
MaybeObject = Optional[Mapping[str, Any]]  # noqa: UP045
Change = tuple[MaybeObject, MaybeObject]
Rule = Callable[[MaybeObject, MaybeObject, Snapshot, str], list[Event]]


def platform_event(
    name: str, kind: str, obj: Mapping[str, Any], tenant: str, reason: str, at: str, **extra: Any
) -> Event:
    """One event: the keys every event has, then the event's own."""
    namespace, obj_name = key_of(obj)
    return {
        "platform_event": name,
        "kind": kind,
        "name": obj_name,
        "namespace": namespace,
        "tenant": tenant,
        "reason": reason,
        "at": at,
        **extra,
    }
