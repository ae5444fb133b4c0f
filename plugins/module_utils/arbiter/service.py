# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The queue arbiter against the cluster: the ``queue_arbiter`` module (``ARBITER_FLOW``,
through ``kube.flow``; its pure steps are ``arbiter/arbitrate``).

Inside a fully used subscription Volcano 1.15.1 cannot make a team's room: a job whose
queue or an ancestor is at its capability stays Pending until sla admits it (jobs/sla),
and then gangreclaim cannot place it while the parent queue still counts the victims'
GPUs (docs/scheduling-policy.md). For such a job the arbiter evicts whole lower-priority
jobs (rules of ``arbiter/rules.py`` and ``arbiter/plan.py``; which job it acts for:
``arbiter/candidates.py``). This file runs the module; its reads are ``arbiter/read_io.py``,
its evictions and the queue hold ``arbiter/write_io.py``, and the Events and the history
are written by ``kube/run_record.py``:

* gather (``gather``): with ``wait_for_admission``, the tenant's PodGroups once a second
  until sla admits the job; then the run's time and Lease holder, and the reads the
  decision needs (``read_io.read_facts``, one list per kind, in the tenant's namespace
  when ``tenant`` is given: PodGroups first, and only when one waits and is settled, or
  ``job`` is given, the Volcano Jobs, the managed Queues, the unfinished Pods and the
  Nodes; for a refusal the Lease and the history). A run with nothing waiting makes its one
  list and nothing else;
* plan (``arbitrate.plan_arbiter``, pure): decides for the first candidate only (rule
  arbiter-plan), reporting the others as ``waiting``;
* apply (``apply``): in check mode reports the victims and writes nothing (not even the
  Lease: it reads it, to warn when another run holds it); otherwise holds the
  ``queue-arbiter`` Lease in ``platform-system`` (``kube/lease_io``), gathers and plans
  again under it (the cluster may have moved since), evicts every pod of each victim Job
  through the Eviction API in victim order, raises each victim queue's eviction count
  (rule arbiter-eviction-count: a GET and a merge patch per queue), records an
  ``ArbiterEvicted`` Event on each evicted Job and an ``ArbiterMadeRoom`` Event on the waiting one, adds the run to the
  ConfigMap ``queue-arbiter-history`` and gives the Lease back. After a team reclaim it
  holds the victims' queues (rule reclaim-hold) and reads the waiting Job once a second
  until it runs.
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
from ..kube.flow import Flow
from ..kube.lease import QUEUE_ARBITER, lease_blocker, run_holder
from ..kube.lease_io import acquire_lease, default_holder, read_lease, release_lease, run_id
from ..kube.run_record import record_event, record_history
from .aftermath import aftermath_said
from .arbitrate import (
    ArbiterFacts,
    ArbiterPlan,
    ArbiterRequest,
    facts_in,
    facts_out,
    parse_arbiter,
    plan_arbiter,
    report,
    warnings,
)
from .candidates import admission_due, podgroup_phase
from .plan import RECLAIM
from .read_io import read_facts
from .record import arbiter_diff, history_entry, made_room_event, victim_dict
from .record import report as known_report
from .write_io import (
    count_evictions,
    evict_victims,
    hold_victim_queues,
    release_victim_queues,
    wait_until_running,
)


def utc_now() -> datetime:
    return datetime.now(tz=UTC)


def _warn_aftermath(result: Mapping[str, Any]) -> None:
    """Warn what rule restart-may-preempt says (``aftermath.aftermath_said``), if anything."""
    said = aftermath_said(result)
    if said:
        warn(said)


# --- gather ----------------------------------------------------------------------------


# How long a run waiting for admission waits for the job's PodGroup to exist and have a
# phase: Volcano's controller makes it within a second of the Job, later on a busy
# machine, and deciding before it exists would say the job is not waiting.
PODGROUP_APPEAR_SECONDS = 30


def wait_for_admission(cluster: Cluster, request: ArbiterRequest) -> None:
    """Option ``wait_for_admission`` (with ``job``): until the job's PodGroup exists with a
    phase (at most PODGROUP_APPEAR_SECONDS), then while it is Pending until sla admits it
    (rule arbiter-settle, ``admission_due``), re-read the tenant's PodGroups every second,
    at most until it is due."""
    if not (request.wait_for_admission and request.job):
        return
    namespace = namespace_name(str(request.tenant))
    appear_by = time.monotonic() + PODGROUP_APPEAR_SECONDS
    while True:
        podgroups = cluster.list(PODGROUP_API, "PodGroup", namespace=namespace)
        own = [pg for pg in podgroups if owner_job(pg)[0] == request.job]
        if not (own and podgroup_phase(own[0])):
            if time.monotonic() >= appear_by:
                return
            time.sleep(1.0)
            continue
        due = admission_due(own[0], utc_now().timestamp(), request.settle_seconds)
        if due <= 0:
            return
        time.sleep(min(1.0, due))


def gather(request: ArbiterRequest, cluster: Cluster) -> ArbiterFacts:
    """Reads only: the wait for sla's admission, then the run's time and Lease holder and
    what the decision needs (``read_io.read_facts``)."""
    wait_for_admission(cluster, request)
    holder = run_holder(request.holder_identity or default_holder(), run_id())
    return read_facts(cluster, request, ArbiterFacts(now=utc_now(), holder=holder))


# --- apply -----------------------------------------------------------------------------


def apply(
    request: ArbiterRequest, planned: ArbiterPlan, cluster: Cluster, check_mode: bool
) -> dict[str, Any]:
    """Nothing to write unless the plan evicts; in check mode the victims, with a warning
    when another run holds the Lease (read, not written); otherwise the evictions under
    the Lease."""
    if not planned.evicts:
        return dict(planned.result)
    if check_mode:
        live = read_lease(cluster, QUEUE_ARBITER)
        blocker = lease_blocker(QUEUE_ARBITER, live, planned.holder, planned.now)
        if blocker:
            warn(blocker)
        result = report(request, planned)
        _warn_aftermath(result)
        return result
    known = known_report(planned.result)
    lease = acquire_lease(
        cluster,
        QUEUE_ARBITER,
        planned.holder,
        request.lease_duration,
        planned.now,
        refused=lambda msg: Refused(msg, **known),
    )
    try:
        # The cluster may have moved since the first read: gather and plan again under it.
        facts = read_facts(cluster, request, ArbiterFacts(now=planned.now, holder=planned.holder))
        again = plan_arbiter(request, facts)
        if not again.evicts:
            for warning in warnings(again):
                warn(warning)
            return dict(again.result)
        return _evict(request, again, cluster)
    finally:
        release_lease(cluster, QUEUE_ARBITER, lease)


def _evict(request: ArbiterRequest, planned: ArbiterPlan, cluster: Cluster) -> dict[str, Any]:
    """The victims evicted in the plan's order (their queues held for a team reclaim),
    then the Event on the waiting job and the history entry."""
    job, decision = planned.job, planned.decision
    if job is None or decision is None:  # not a plan that evicts
        return dict(planned.result)
    result = dict(planned.result)
    reclaim = decision.action == RECLAIM
    held = hold_victim_queues(cluster, planned) if reclaim else []
    try:
        jobs, pods = evict_victims(cluster, planned, result, planned.now)
        if held and jobs:
            result["held_seconds"] = wait_until_running(cluster, job, request.hold_seconds)
    finally:
        release_victim_queues(cluster, held)
    victims = [victim_dict(v) for v in jobs]
    counted = count_evictions(cluster, victims) if victims else {}
    result.update(
        changed=bool(pods),
        victims=victims,
        freed=sum(v.gpus for v in jobs),
        evicted=pods,
        counted=counted,
        diff=arbiter_diff(victims, counted),
    )
    if jobs:
        _warn_aftermath(result)
        # The pods are gone either way: the Event and the history are best effort.
        record_event(
            cluster,
            made_room_event(job, decision.action, jobs, planned.now),
            f"room was made for {job.ref} but its {EVENT_REASON_ARBITER_MADE_ROOM}",
        )
        result["history"] = record_history(
            cluster,
            QUEUE_ARBITER_HISTORY,
            history_entry(result, planned.holder, planned.now),
            request.history_size,
            "the arbiter's evictions",
        )
    return result


ARBITER_FLOW: Flow[ArbiterRequest, ArbiterFacts, ArbiterPlan] = Flow(
    parse=parse_arbiter,
    gather=gather,
    plan=plan_arbiter,
    apply=apply,
    report=report,
    facts_out=facts_out,
    facts_in=facts_in,
    warnings_of=warnings,
)


def run(params: dict[str, Any], cluster: Cluster, check_mode: bool) -> dict[str, Any]:
    """The ``queue_arbiter`` module's run through ``ARBITER_FLOW``: decide for the first
    waiting job; for preempt or reclaim, under the Lease, decide again and evict its
    victims (check mode: report them)."""
    return ARBITER_FLOW.run(params, cluster, check_mode)
