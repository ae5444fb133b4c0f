# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The core/v1 Event a run records on an object it acted on (pure: no I/O).

One shape for every run that records Events: the queue arbiter (``ArbiterEvicted`` on
each evicted Volcano Job, ``ArbiterMadeRoom`` on the job it made room for,
``arbiter/record``) and the spot reclaim (``SpotReclaimed`` on each deleted spot job or
pod, ``spot/reclaim``). They differ only in the object, the reason, the type, the
message and the annotations; ``kube/run_record.record_event`` writes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from .names import LABEL_MANAGED_BY, MANAGED_BY
from .times import write_rfc3339

# The longest part of an object's name an Event's name keeps (a name is at most 253
# characters; the suffix is a dot and a nanosecond time in hex).
EVENT_NAME_PREFIX = 200


def involved_object(
    api_version: str, kind: str, name: str, namespace: str, uid: str | None = None
) -> dict[str, str]:
    """The Event's ``involvedObject``: the object the run acted on; its ``uid`` when
    known (the object listed, not one re-created under its name since)."""
    involved = {"apiVersion": api_version, "kind": kind, "name": name, "namespace": namespace}
    if uid:
        involved["uid"] = uid
    return involved


def run_event(
    involved: Mapping[str, str],
    reason: str,
    event_type: str,
    message: str,
    annotations: Mapping[str, str],
    now: datetime,
    order: int,
) -> dict[str, Any]:
    """The Event on ``involved`` (``involved_object``), in its namespace, labelled as
    the platform's. ``order`` (the object's place in the run, 1 first) is added in
    nanoseconds to the run's time in the name suffix, so that the Events of one run,
    which share a timestamp, still sort in the run's order by name."""
    stamp = int(now.timestamp() * 1_000_000_000) + order
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{involved['name'][:EVENT_NAME_PREFIX]}.{stamp:x}",
            "namespace": involved["namespace"],
            "labels": {LABEL_MANAGED_BY: MANAGED_BY},
            "annotations": dict(annotations),
        },
        "involvedObject": dict(involved),
        "reason": reason,
        "type": event_type,
        "message": message,
        "source": {"component": MANAGED_BY},
        "firstTimestamp": write_rfc3339(now),
        "lastTimestamp": write_rfc3339(now),
        "count": 1,
    }
