# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The large-job throttle state machine."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs import large_job as lj
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs import throttle as th

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def pg(
    name, phase="Pending", running=0, pc="large-job", queue="tenant-a-algo", ns="tenant-a", uid=None
):
    return {
        "metadata": {
            "name": f"{name}-pg",
            "namespace": ns,
            "uid": f"pg-{name}",
            "ownerReferences": [
                {
                    "apiVersion": "batch.volcano.sh/v1alpha1",
                    "kind": "Job",
                    "name": name,
                    "uid": uid or f"job-{name}",
                }
            ],
        },
        "spec": {
            "minMember": 4,
            "priorityClassName": pc,
            "queue": queue,
            # Not what the throttle counts (the owning Job's demand is).
            "minResources": {"nvidia.com/gpu": "99"},
        },
        "status": {"phase": phase, "running": running},
    }


def vcjob(uid, ns="tenant-a", tasks=((4, 8),)):
    """A Volcano Job with one task per (replicas, GPUs per pod): 4 x 8 = 32 GPUs by default."""
    return {
        "metadata": {"name": uid, "namespace": ns, "uid": uid},
        "spec": {
            "tasks": [
                {
                    "name": f"t{i}",
                    "replicas": replicas,
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "c", "resources": {"limits": {"nvidia.com/gpu": gpus}}}
                            ]
                        }
                    },
                }
                for i, (replicas, gpus) in enumerate(tasks)
            ]
        },
    }


def owners(pgs):
    """The Volcano Job of each PodGroup (the uid its ownerReferences name)."""
    return [vcjob(p["metadata"]["ownerReferences"][0]["uid"]) for p in pgs]


def jobs(*pgs):
    return lj.large_jobs(pgs, ["tenant-a"], owners(pgs))


def test_only_waiting_large_jobs_in_tenant_namespaces_count():
    pgs = [
        pg("big"),
        pg("small", pc="normal-job"),
        pg("other", ns="kube-system"),
        pg("run", phase="Running", running=4),
    ]
    found = lj.large_jobs(pgs, ["tenant-a"], owners(pgs))
    assert [(j.job, j.uid, j.waiting, j.gpus) for j in found] == [
        ("big", "job-big", True, 32),
        ("run", "job-run", False, 32),
    ]
    assert lj.podgroup_waits(pg("x", phase="Inqueue", running=2))
    assert not lj.podgroup_waits(pg("x", phase="Inqueue", running=4))


def test_a_podgroup_the_scheduler_has_not_seen_yet_waits_and_is_not_admitted():
    """Volcano's job controller creates the PodGroup with no status at all."""
    fresh = pg("x")
    del fresh["status"]
    assert lj.podgroup_waits(fresh) and not lj.podgroup_admitted(fresh)
    fresh["status"] = {"phase": ""}
    assert lj.podgroup_waits(fresh) and not lj.podgroup_admitted(fresh)
    (job,) = lj.large_jobs([fresh], ["tenant-a"], owners([fresh]))
    assert job.waiting and not job.admitted


def test_gpus_are_the_owning_jobs_demand():
    """Rule job-demand over every task of the owner: 2 x 8 + 1 x 0 + 3 x 2 GPUs."""
    owner = vcjob("job-big", tasks=((2, 8), (1, 0), (3, 2)))
    [found] = lj.large_jobs([pg("big")], ["tenant-a"], [owner])
    assert found.gpus == 22 and found.uid == "job-big"


def test_a_podgroup_without_its_job_is_no_large_job():
    """Its Job is gone (the PodGroup waits for the garbage collector) or it never had one."""
    orphan = pg("orphan")
    orphan["metadata"]["ownerReferences"] = []
    leaving = pg("leaving")
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    other_job = vcjob("job-big", tasks=((1, 1),))
    other_job["metadata"]["uid"] = "job-big-recreated"  # same name, a new Job
    assert lj.large_jobs([pg("big"), orphan], ["tenant-a"], [other_job]) == []
    assert lj.large_jobs([leaving], ["tenant-a"], owners([leaving])) == []
    cm = th.plan_namespace("tenant-a", "a", None, jobs(pg("big")), T0, 300).manifest
    released = th.plan_namespace(
        "tenant-a", "a", cm, lj.large_jobs([pg("big")], ["tenant-a"], []), T0, 300
    )
    assert released.action == "delete" and released.released == ["tenant-a/big"]


def test_is_large_podgroup():
    assert lj.is_large_podgroup(pg("big"), ["tenant-a"])
    assert not lj.is_large_podgroup(pg("big"), ["tenant-b"])
    assert not lj.is_large_podgroup(pg("small", pc="normal-job"), ["tenant-a"])


def test_engage_then_release_when_running():
    change = th.plan_namespace("tenant-a", "a", None, jobs(pg("big")), T0, 300)
    assert change.action == "apply" and change.engaged == ["tenant-a/big"]
    data = change.manifest["data"]
    assert data["queues"] == "tenant-a-algo" and data["until"] == "2026-01-01T12:05:00Z"
    assert "large job tenant-a/big (32 GPUs)" in data["reason"]
    assert change.manifest["metadata"]["labels"]["platform.io/managed-by"] == "gpucloud-platform"
    cm = change.manifest
    again = th.plan_namespace("tenant-a", "a", cm, jobs(pg("big")), T0 + timedelta(seconds=60), 300)
    assert again.action == "none"  # idempotent: the deadline does not move
    done = th.plan_namespace(
        "tenant-a",
        "a",
        cm,
        jobs(pg("big", phase="Running", running=4)),
        T0 + timedelta(seconds=90),
        300,
    )
    assert done.action == "delete" and done.released == ["tenant-a/big"]


def test_timeout_expires_and_never_engages_again():
    cm = th.plan_namespace("tenant-a", "a", None, jobs(pg("big")), T0, 300).manifest
    late = th.plan_namespace("tenant-a", "a", cm, jobs(pg("big")), T0 + timedelta(seconds=300), 300)
    assert late.action == "apply" and late.expired == ["tenant-a/big"]
    assert late.manifest["data"]["queues"] == "" and late.manifest["data"]["until"] == ""
    later = th.plan_namespace(
        "tenant-a", "a", late.manifest, jobs(pg("big")), T0 + timedelta(hours=1), 300
    )
    assert later.action == "none" and not later.engaged
    assert not th.blocks(late.manifest, "tenant-a-algo", "normal-job")
    gone = th.plan_namespace("tenant-a", "a", late.manifest, [], T0 + timedelta(hours=2), 300)
    assert gone.action == "delete"


def test_blocks_only_below_large_and_only_listed_queues():
    cm = {"data": {"queues": "q1, q2"}}
    assert (
        th.blocks(cm, "q1", "normal-job")
        and th.blocks(cm, "q2", "debug-job")
        and th.blocks(cm, "q2", None)
    )
    assert not th.blocks(cm, "q3", "normal-job")
    assert not th.blocks(cm, "q1", "large-job") and not th.blocks(cm, "q1", "critical-job")
    assert not th.blocks(None, "q1", "normal-job")


def test_reconcile_report_names_every_transition():
    engaged = th.plan_namespace("tenant-a", "a", None, jobs(pg("big")), T0, 300)
    quiet = th.plan_namespace("tenant-b", "b", None, [], T0, 300)
    report = th.reconcile_report([engaged, quiet], ["tenant-c"])
    assert report["changed"] is True and report["engaged"] == ["tenant-a/big"]
    assert (
        report["released"] == [] and report["expired"] == [] and report["skipped"] == ["tenant-c"]
    )
    assert report["throttles"] == {
        "tenant-a": {
            "queues": ["tenant-a-algo"],
            "until": "2026-01-01T12:05:00Z",
            "reason": "large job tenant-a/big (32 GPUs) is waiting for GPUs in tenant-a-algo "
            "(preemption is freeing them)",
        }
    }
    assert report["diff"] == {"before": {"tenant-a": []}, "after": {"tenant-a": ["tenant-a-algo"]}}
    assert th.reconcile_report([quiet], [])["changed"] is False


def test_negative_timeout_is_refused():
    with pytest.raises(PlatformValidationError, match="timeout: -1 must be 0 or more seconds"):
        th.check_reconcile_input({"timeout": -1})
    th.check_reconcile_input({"timeout": 0})


def test_unreadable_entries_are_dropped():
    assert th.read_entries({"data": {"entries.json": "not json"}}) == []
    assert th.read_entries({"data": {"entries.json": '[{"uid": 1}]'}}) == []


EVENTS = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c"]),
        st.sampled_from(["Pending", "Inqueue", "Running", "gone"]),
        st.integers(0, 200),
    ),
    max_size=25,
)


@given(events=EVENTS, timeout=st.integers(1, 400))
def test_invariants_over_any_history(events, timeout):
    """A queue is listed only for a job that waits now and engaged less than ``timeout`` ago;
    a job that expired never lists its queue again; reconciling twice at once changes nothing."""
    state: dict[str, str] = {}
    cm = None
    now = T0
    engaged_at: dict[str, datetime] = {}
    expired: set[str] = set()
    for name, phase, step in events:
        now += timedelta(seconds=step)
        state[name] = phase
        pgs = [pg(n, phase=p, queue=f"q-{n}") for n, p in state.items() if p != "gone"]
        change = th.plan_namespace("tenant-a", "a", cm, jobs(*pgs), now, timeout)
        cm = change.manifest if change.action != "delete" else None
        repeat = th.plan_namespace("tenant-a", "a", cm, jobs(*pgs), now, timeout)
        assert repeat.action == "none"
        listed = set(th.throttled_queues(th.read_entries(cm)))
        for n, p in state.items():
            waiting = p in ("Pending", "Inqueue")
            if not waiting:
                engaged_at.pop(n, None)
                expired.discard(n)
                assert f"q-{n}" not in listed
                continue
            engaged_at.setdefault(n, now)
            if now - engaged_at[n] >= timedelta(seconds=timeout):
                expired.add(n)
            assert (f"q-{n}" in listed) == (n not in expired)
