# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Design 6.1 scenarios one and two inside a fully used subscription, with the queue
layout the tenant module makes (subscription deserved = capability, team capability =
the subscription), on the real vc-scheduler with the platform's policy.

Measured here (docs/scheduling-policy.md, "A full subscription"):

* a job without an sla waiting time (debug, or a class whose waiting time is switched
  off) stays Pending in the full queue: capacity's enqueue check refuses it, and
  Volcano's preempt and reclaim act only for admitted jobs (shown for a large job in
  tests/integration/test_jobs.py, ``_large_without_sla``, and for a team's job in
  test_scheduling_policy.py's full subscription);
* with ``sla`` alone in the first tier (rule sla-before-capacity) and the job annotated
  ``volcano.sh/sla-waiting-time`` (the class table gives large, normal and critical
  jobs one), sla's permit admits it once the time has passed, and

  - scenario one: gangpreempt evicts task-d, task-e, task-c, task-b (the design's set
    and order) and the large job runs (tests/conformance/test_queue_arbiter.py, scenario
    one, with the tenant module's queues);
  - when the jobs below large-job cannot cover the need (the rest are critical, or
    some are preemptable but too few), the job is admitted and nothing is evicted;
  - scenario two: gangreclaim finds team a's borrowed jobs but cannot place team b's
    job, because the parent subscription counts the victims' GPUs as used until they
    are gone; with sla's pipelined vote off (rule sla-enqueue-only) it discards, so
    nothing is evicted. The platform's queue arbiter does this one
    (tests/conformance/test_queue_arbiter.py, scenario two, shows both).
"""

from __future__ import annotations

import time

import pytest

from ansible_collections.gpucloud.platform.tests.conformance.conformance_kube import (
    PodDeletions,
)
from ansible_collections.gpucloud.platform.tests.conformance.test_scheduling_policy import (
    NEGATIVE_WAIT,
    _tenant,
    scenario,
)

pytestmark = [pytest.mark.conformance, pytest.mark.slow]

SLA_WAIT = "5s"
WAITING = {"volcano.sh/sla-waiting-time": SLA_WAIT}


def full_team_queue(s, tenant: str, gpus: int, **labels: str) -> tuple[str, str]:
    """The tenant module's layout: subscription deserved = capability = gpus, one team
    whose deserved and capability are the subscription's."""
    ns = s.tenant(tenant, **labels)
    parent = s.queue(f"tenant-{tenant}-subscription", deserved=gpus, capability=gpus)
    team = s.queue(f"tenant-{tenant}-algo", deserved=gpus, capability=gpus, parent=parent)
    return ns, team


def submit(s, name, ns, queue, priority_class, replicas, gpus, annotations=None):
    manifest = s.kube.job_manifest(name, ns, queue, priority_class, replicas, gpus, s.name)
    if annotations:
        manifest["metadata"]["annotations"] = {
            **(manifest["metadata"].get("annotations") or {}),
            **annotations,
        }
    s.kube.submit(manifest)


def test_nothing_is_evicted_when_the_preemptable_jobs_fall_short(kube):
    """Some preemptable jobs, not enough: 8 GPUs free, a debug job of 8 and a normal job
    of 8 below large-job, 16 critical; the large job asks for 32. Nothing is evicted."""
    with scenario(kube, "f5", nodes=5) as s:
        ns, team = full_team_queue(s, _tenant("fse"), 40, **{"platform.io/allow-critical": "true"})
        for name, pc in (
            ("crit-a", "critical-job"),
            ("crit-b", "critical-job"),
            ("norm-a", "normal-job"),
            ("dbg-a", "debug-job"),
        ):
            notes = {"volcano.sh/preemptable": "false"} if pc == "critical-job" else None
            s.job(name, ns, team, pc, 1, 8, annotations=notes)
        with PodDeletions(kube, [ns]) as deletions:
            submit(s, "large", ns, team, "large-job", 4, 8, WAITING)
            time.sleep(NEGATIVE_WAIT + 5)
            phase = kube.pod_group_phase(ns, "large")
        assert phase == "Inqueue", phase
        assert deletions.order == []
        for name in ("crit-a", "crit-b", "norm-a", "dbg-a"):
            assert kube.running(ns, name, 1), name


def _borrowed_from_another_tenant(kube, teams_reclaimable: bool, wait: float):
    """Tenant X's subscription of 16 on 2 nodes: team a (deserved 8) runs 16, 8 borrowed
    from its idle sibling b. Tenant Y's pay-as-you-go queue (deserved = capability 8),
    empty, asks for 8 with a waiting time on the same nodes. Returns (X's jobs evicted,
    whether Y's job ran). The platform's policy (ancestorReclaimLevel 1) is loaded."""
    with scenario(kube, "f6", nodes=2) as s:
        x, y = _tenant("fsx"), _tenant("fsy")
        nsx, nsy = s.tenant(x), s.tenant(y)
        parent = s.queue(f"tenant-{x}-subscription", deserved=16, capability=16)
        team = {"capability": 16, "parent": parent, "reclaimable": teams_reclaimable}
        qa = s.queue(f"tenant-{x}-a", deserved=8, **team)
        s.queue(f"tenant-{x}-b", deserved=8, **team)
        qy = s.queue(f"tenant-{y}-payg", deserved=8, capability=8)
        s.job("a-own", nsx, qa, "normal-job", 1, 8)
        s.job("a-borrowed", nsx, qa, "normal-job", 1, 8)
        with PodDeletions(kube, [nsx]) as deletions:
            submit(s, "hungry", nsy, qy, "normal-job", 1, 8, WAITING)
            try:
                kube.wait_running(nsy, "hungry", 1, timeout=wait)
                ran = True
            except AssertionError:
                ran = False
        return list(deletions.order), ran


def test_another_tenant_never_reclaims_what_a_team_borrowed_in_its_subscription(kube):
    """Rule team-reclaim-by-platform: the tenant module's team queues are not reclaimable,
    so Volcano's reclaim actions never take a team's job; X keeps both jobs."""
    evicted, ran = _borrowed_from_another_tenant(kube, False, NEGATIVE_WAIT)
    assert evicted == [] and not ran, (evicted, ran)


def test_gangreclaim_ignores_ancestor_reclaim_level(kube):
    """With the team queues reclaimable, ancestorReclaimLevel 1 does not stop gangreclaim:
    capacity's UnifiedEvictableFn (the gang actions' victim filter) judges only the
    victim's own queue, so team a (above its deserved 8) loses its job to another tenant
    although its subscription is at its deserved. Task-level reclaim does check the
    parent. The policy must not rely on the level alone."""
    evicted, ran = _borrowed_from_another_tenant(kube, True, 90)
    assert len(evicted) == 1 and evicted[0].split("/")[1].startswith("a-") and ran, (evicted, ran)
