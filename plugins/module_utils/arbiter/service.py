# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The queue arbiter against the cluster: the ``queue_arbiter`` module (``run``).

Inside a fully used subscription Volcano 1.15.1 cannot make a team's room: a job whose
queue or an ancestor is at its capability stays Pending until sla admits it (jobs/sla),
and then gangreclaim cannot place it while the parent queue still counts the victims'
GPUs (docs/scheduling-policy.md). For such a job the arbiter evicts whole lower-priority
jobs (rules of ``arbiter/rules.py`` and ``arbiter/plan.py``; which job it acts for:
``arbiter/candidates.py``). This file runs the module; its reads and the decision are
``arbiter/read_io.py``, its evictions and the queue hold ``arbiter/write_io.py``, and the
Events and the history are written by ``kube/run_record.py``:

* reads, one list per kind, in the tenant's namespace when ``tenant`` is given: PodGroups
  first, and only when one waits and is settled (or ``job`` is given) the Volcano Jobs,
  the managed Queues, the unfinished Pods and the Nodes (Pods and Nodes cluster-wide: the
  free GPUs are the pool's). A run with nothing waiting makes its one list and nothing else;
* decides for the first candidate only (rule arbiter-plan), reporting the others as
  ``waiting``;
* in check mode reports the victims and writes nothing (not even the Lease);
* otherwise holds the ``queue-arbiter`` Lease in ``platform-system`` (``kube/lease_io``),
  reads and decides again under it, evicts every pod of each victim Job through the
  Eviction API in victim order, records an ``ArbiterEvicted`` Event on each evicted Job and
  an ``ArbiterMadeRoom`` Event on the waiting one, adds the run to the ConfigMap
  ``queue-arbiter-history`` and gives the Lease back.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ansible.module_utils.common.warnings import warn

from ..common.errors import Refused
from ..common.names import (
    EVENT_REASON_ARBITER_MADE_ROOM,
    PODGROUP_API,
    QUEUE_ARBITER_HISTORY,
    namespace_name,
)
from ..jobs.large_job import owner_job
from ..kube.cluster import Cluster
from ..kube.lease import QUEUE_ARBITER, lease_blocker, run_holder
from ..kube.lease_io import acquire_lease, default_holder, read_lease, release_lease, run_id
from ..kube.run_record import read_run_history, record_event, record_history
from .aftermath import aftermath_said
from .candidates import admission_due
from .plan import RECLAIM, REFUSE
from .read_io import decide
from .record import (
    arbiter_diff,
    history_entry,
    made_room_event,
    report,
    settled,
    victim_dict,
)
from .write_io import (
    evict_victims,
    hold_victim_queues,
    release_victim_queues,
    wait_until_running,
)


def utc_now() -> datetime:
    return datetime.now(tz=UTC)


# --- the whole run -----------------------------------------------------------------


def _warn_aftermath(result: Mapping[str, Any]) -> None:
    """Warn what rule restart-may-preempt says (``aftermath.aftermath_said``), if anything."""
    said = aftermath_said(result)
    if said:
        warn(said)


def _without_eviction(result: dict[str, Any]) -> dict[str, Any]:
    if result["decision"] == REFUSE:
        warn(result["reason"])
    return result


def settling(
    cluster: Cluster, params: Mapping[str, Any], result: dict[str, Any], holder: str, now: datetime
) -> dict[str, Any]:
    """What rule refusal-while-settling (``record.settled``) judges a refusal by: the
    Lease, then, unless another run holds it, the arbiter's history. Two GETs, only on a
    refusal."""
    if result["decision"] != REFUSE:
        return result
    blocker = lease_blocker(QUEUE_ARBITER, read_lease(cluster, QUEUE_ARBITER), holder, now)
    history = None if blocker else read_run_history(cluster, QUEUE_ARBITER_HISTORY)
    return settled(result, blocker, history, now, params["lease_duration"])


def wait_for_admission(cluster: Cluster, params: Mapping[str, Any]) -> None:
    """Option ``wait_for_admission`` (with ``job``): while the job's PodGroup is Pending
    until sla admits it (rule arbiter-settle, ``admission_due``), re-read the tenant's
    PodGroups every second, at most until it is due."""
    if not (params.get("wait_for_admission") and params.get("job")):
        return
    namespace = namespace_name(params["tenant"])
    while True:
        podgroups = cluster.list(PODGROUP_API, "PodGroup", namespace=namespace)
        own = [pg for pg in podgroups if owner_job(pg)[0] == params["job"]]
        due = admission_due(own[0], utc_now().timestamp(), params["settle_seconds"]) if own else 0
        if due <= 0:
            return
        time.sleep(min(1.0, due))


def run(params: dict[str, Any], cluster: Cluster, check_mode: bool) -> dict[str, Any]:
    """The ``queue_arbiter`` module: decide for the first waiting job; for preempt or
    reclaim, under the Lease, decide again and evict its victims (check mode: report them)."""
    wait_for_admission(cluster, params)
    now = utc_now()
    holder = run_holder(params.get("holder_identity") or default_holder(), run_id())
    result, plan = decide(cluster, params, now)
    if plan is None or not plan.evicts:
        return _without_eviction(settling(cluster, params, result, holder, now))
    if check_mode:
        blocker = lease_blocker(QUEUE_ARBITER, read_lease(cluster, QUEUE_ARBITER), holder, now)
        if blocker:
            warn(blocker)
        _warn_aftermath(result)
        result.update(changed=True, diff=arbiter_diff(result["victims"]))
        return result
    known = report(result)
    lease = acquire_lease(
        cluster,
        QUEUE_ARBITER,
        holder,
        params["lease_duration"],
        now,
        refused=lambda msg: Refused(msg, **known),
    )
    try:
        # The cluster may have moved since the first read: decide again under the Lease.
        result, plan = decide(cluster, params, now)
        if plan is None or not plan.evicts:
            return _without_eviction(settling(cluster, params, result, holder, now))
        held = hold_victim_queues(cluster, plan) if plan.decision.action == RECLAIM else []
        try:
            jobs, pods = evict_victims(cluster, plan, result, now)
            if held and jobs:
                result["held_seconds"] = wait_until_running(
                    cluster, plan.job, params["hold_seconds"]
                )
        finally:
            release_victim_queues(cluster, held)
        victims = [victim_dict(v) for v in jobs]
        result.update(
            changed=bool(pods),
            victims=victims,
            freed=sum(v.gpus for v in jobs),
            evicted=pods,
            diff=arbiter_diff(victims),
        )
        if jobs:
            _warn_aftermath(result)
            # The pods are gone either way: the Event and the history are best effort.
            record_event(
                cluster,
                made_room_event(plan.job, plan.decision.action, jobs, now),
                f"room was made for {plan.job.ref} but its {EVENT_REASON_ARBITER_MADE_ROOM}",
            )
            result["history"] = record_history(
                cluster,
                QUEUE_ARBITER_HISTORY,
                history_entry(result, holder, now),
                params["history_size"],
                "the arbiter's evictions",
            )
        return result
    finally:
        release_lease(cluster, QUEUE_ARBITER, lease)
