# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The arbiter's records: queues, running and waiting jobs built from Volcano objects."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.arbiter import model
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    PRIORITY_CLASSES,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.queues.model import Queue
from ansible_collections.gpucloud.platform.plugins.module_utils.queues.plan import (
    effective_capability as plan_effective_capability,
)

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def queue(name, queue_type, parent=None, deserved=None, capability=None, allocated=None):
    spec = {}
    if parent is not None:
        spec["parent"] = parent
    if deserved is not None:
        spec["deserved"] = {"nvidia.com/gpu": deserved, "cpu": "10"}
    if capability is not None:
        spec["capability"] = {"nvidia.com/gpu": capability}
    out = {
        "metadata": {
            "name": name,
            "labels": {"platform.io/queue-type": queue_type, "platform.io/tenant": "alpha"},
        },
        "spec": spec,
    }
    if allocated is not None:
        out["status"] = {"allocated": {"nvidia.com/gpu": allocated, "cpu": "3"}}
    return out


def vcjob(
    name,
    queue="tenant-alpha-algo",
    pc="normal-job",
    replicas=1,
    gpus=8,
    phase="Running",
    transition="2026-01-01T11:00:00Z",
    created="2026-01-01T10:00:00Z",
    annotations=None,
    labels=None,
    ns="tenant-alpha",
):
    meta = {"name": name, "namespace": ns, "uid": f"uid-{name}"}
    if created:
        meta["creationTimestamp"] = created
    template_meta = {}
    if annotations:
        template_meta["annotations"] = dict(annotations)
    if labels:
        template_meta["labels"] = dict(labels)
    state = {"phase": phase}
    if transition:
        state["lastTransitionTime"] = transition
    return {
        "metadata": meta,
        "spec": {
            "queue": queue,
            "priorityClassName": pc,
            "tasks": [
                {
                    "name": "worker",
                    "replicas": replicas,
                    "template": {
                        "metadata": template_meta,
                        "spec": {
                            "containers": [
                                {"name": "c", "resources": {"limits": {"nvidia.com/gpu": gpus}}}
                            ]
                        },
                    },
                }
            ],
        },
        "status": {"state": state},
    }


def pod(job, ns="tenant-alpha", owner_uid=None, label=None, annotations=None, phase="Running"):
    meta = {"name": f"{job}-worker-0", "namespace": ns, "annotations": dict(annotations or {})}
    if owner_uid:
        meta["ownerReferences"] = [
            {
                "apiVersion": "batch.volcano.sh/v1alpha1",
                "kind": "Job",
                "name": job,
                "uid": owner_uid,
            }
        ]
    if label:
        meta["labels"] = {"volcano.sh/job-name": label}
    return {"metadata": meta, "status": {"phase": phase}}


# -- queues ---------------------------------------------------------------------------------


def tenant_tree():
    return [
        queue("tenant-alpha-subscription", "subscription", "root", 30, 30, 30),
        queue("tenant-alpha-a", "team", "tenant-alpha-subscription", 20, None, 25),
        queue("tenant-alpha-b", "team", "tenant-alpha-subscription", 10, 12, "5"),
        queue("tenant-alpha-payg", "payg", None, None, None, None),
    ]


def test_queue_states_read_gpus_labels_and_parent():
    states = model.queue_states(tenant_tree())
    assert states["tenant-alpha-a"] == model.QueueState(
        name="tenant-alpha-a",
        parent="tenant-alpha-subscription",
        deserved_gpus=20,
        capability_gpus=None,
        allocated_gpus=25,
        queue_type="team",
        tenant="alpha",
    )
    assert states["tenant-alpha-b"].capability_gpus == 12
    assert states["tenant-alpha-b"].allocated_gpus == 5
    payg = states["tenant-alpha-payg"]
    assert (payg.parent, payg.deserved_gpus, payg.capability_gpus, payg.allocated_gpus) == (
        "root",
        None,
        None,
        0,
    )
    assert payg.deserved == 0


def test_a_parent_whose_status_lags_counts_at_least_its_childrens_allocation():
    """vc-scheduler writes each Queue's status on its own: a parent still reading 5 while
    its teams report 25 and 5 is a full subscription of 30, not one with 25 GPUs of room."""
    tree = tenant_tree()
    tree[0]["status"]["allocated"]["nvidia.com/gpu"] = "5"
    states = model.queue_states(tree)
    assert states["tenant-alpha-subscription"].allocated_gpus == 30
    assert states["tenant-alpha-a"].allocated_gpus == 25  # a leaf keeps its own


def test_a_parent_reporting_more_than_its_children_keeps_its_own():
    tree = tenant_tree()
    tree[0]["status"]["allocated"]["nvidia.com/gpu"] = "31"
    assert model.queue_states(tree)["tenant-alpha-subscription"].allocated_gpus == 31


@given(st.lists(st.integers(0, 40), min_size=1, max_size=5), st.integers(0, 80))
def test_parent_allocation_is_never_below_the_sum_of_its_children(children, own):
    tree = [queue("p", "subscription", "root", 0, 100, own)]
    tree += [queue(f"c{i}", "team", "p", 0, None, n) for i, n in enumerate(children)]
    states = model.queue_states(tree)
    assert states["p"].allocated_gpus == max(own, sum(children))
    assert [states[f"c{i}"].allocated_gpus for i in range(len(children))] == children


def test_a_capability_without_gpus_is_unset_for_gpus():
    q = queue("q", "team", "root")
    q["spec"]["capability"] = {"cpu": "8"}
    assert model.queue_states([q])["q"].capability_gpus is None


def test_a_bad_quantity_is_refused_with_its_path():
    q = queue("q", "team", "root", allocated="lots")
    with pytest.raises(PlatformValidationError) as err:
        model.queue_states([q])
    assert "q.status.allocated.nvidia.com/gpu" in str(err.value)


def test_effective_capability_is_the_smallest_on_the_way_to_root():
    states = model.queue_states(tenant_tree())
    assert model.effective_capability(states, "tenant-alpha-a") == 30
    assert model.effective_capability(states, "tenant-alpha-b") == 12
    assert model.effective_capability(states, "tenant-alpha-payg") is None
    assert model.effective_capability(states, "unknown") is None
    assert model.ancestry(states, "tenant-alpha-a") == [
        "tenant-alpha-a",
        "tenant-alpha-subscription",
    ]


def test_ancestry_stops_at_a_cycle():
    states = {
        "x": model.QueueState("x", "y", None, None, 0, "team", "t"),
        "y": model.QueueState("y", "x", None, 4, 0, "team", "t"),
    }
    assert model.ancestry(states, "x") == ["x", "y"]
    assert model.effective_capability(states, "x") == 4


@st.composite
def trees(draw):
    """Random queue forests under root, as manifests."""
    n = draw(st.integers(1, 8))
    out = []
    for i in range(n):
        parent = draw(st.sampled_from(["root", *[f"q{j}" for j in range(i)]]))
        cap = draw(st.none() | st.integers(0, 64))
        out.append(queue(f"q{i}", "team", parent, None, cap, None))
    return out


@given(trees())
def test_effective_capability_is_queue_plans_rule(manifests):
    """The same rule effective-capability as queues/plan.effective_capability."""
    states = model.queue_states(manifests)
    by_name = {m["metadata"]["name"]: Queue.from_manifest(m) for m in manifests}
    for name, q in by_name.items():
        expected = plan_effective_capability(q, by_name).get("nvidia.com/gpu")
        got = model.effective_capability(states, name)
        assert (None if expected is None else int(expected)) == got
        assert expected is None or isinstance(expected, Decimal)


# -- running jobs ---------------------------------------------------------------------------


def test_running_jobs_read_demand_priority_and_start():
    jobs = model.running_jobs(
        [
            vcjob("a", replicas=4, gpus=8),
            vcjob("pending", phase="Pending"),
            vcjob("done", phase="Completed"),
            vcjob("d", pc="debug-job", gpus=2, transition=None),
            vcjob("x", pc="unknown-class", transition=None, created=None),
        ]
    )
    assert [j.name for j in jobs] == ["a", "d", "x"]
    a, d, x = jobs
    assert (a.gpus, a.priority, a.priority_class, a.queue, a.uid) == (
        32,
        PRIORITY_CLASSES["normal-job"][0],
        "normal-job",
        "tenant-alpha-algo",
        "uid-a",
    )
    assert a.started == datetime(2026, 1, 1, 11, tzinfo=UTC).timestamp()
    assert d.started == datetime(2026, 1, 1, 10, tzinfo=UTC).timestamp()  # creationTimestamp
    assert d.priority == PRIORITY_CLASSES["debug-job"][0]
    assert (x.priority, x.started) == (0, 0.0)
    assert all(j.preemptable for j in jobs)
    assert a.as_dict()["started_at"] == "2026-01-01T11:00:00Z"


def test_a_job_being_deleted_is_not_running():
    job = vcjob("gone")
    job["metadata"]["deletionTimestamp"] = "2026-01-01T11:59:00Z"
    assert model.running_jobs([job]) == []


def test_critical_job_is_never_preemptable():
    (job,) = model.running_jobs([vcjob("c", pc="critical-job")])
    assert job.priority == PRIORITY_CLASSES["critical-job"][0]
    assert not job.preemptable


@pytest.mark.parametrize(
    ("annotations", "labels", "preemptable"),
    [
        ({"volcano.sh/preemptable": "false"}, None, False),
        ({"volcano.sh/preemptable": "False"}, None, False),
        ({"volcano.sh/preemptable": "true"}, {"volcano.sh/preemptable": "false"}, True),
        (None, {"volcano.sh/preemptable": "false"}, False),
        ({"volcano.sh/preemptable": "no"}, None, True),
        (None, None, True),
    ],
)
def test_task_template_mark(annotations, labels, preemptable):
    (job,) = model.running_jobs([vcjob("j", annotations=annotations, labels=labels)])
    assert job.preemptable is preemptable


def test_a_marked_pod_makes_its_job_non_preemptable():
    mark = {"volcano.sh/preemptable": "false"}
    jobs = [vcjob("by-owner"), vcjob("by-label"), vcjob("other"), vcjob("ended")]
    pods = [
        pod("by-owner", owner_uid="uid-by-owner", annotations=mark),
        pod("by-label", label="by-label", annotations=mark),
        pod("other", ns="elsewhere", label="other", annotations=mark),
        pod("ended", owner_uid="uid-ended", annotations=mark, phase="Succeeded"),
    ]
    got = {j.name: j.preemptable for j in model.running_jobs(jobs, pods)}
    assert got == {"by-owner": False, "by-label": False, "other": True, "ended": True}


# -- waiting jobs ---------------------------------------------------------------------------


def podgroup(job, phase="Pending", running=0, min_member=4, uid=None, pc="large-job"):
    return {
        "metadata": {
            "name": f"{job}-pg",
            "namespace": "tenant-alpha",
            "ownerReferences": [
                {
                    "apiVersion": "batch.volcano.sh/v1alpha1",
                    "kind": "Job",
                    "name": job,
                    "uid": uid or f"uid-{job}",
                }
            ],
        },
        "spec": {"minMember": min_member, "queue": "tenant-alpha-algo", "priorityClassName": pc},
        "status": {"phase": phase, "running": running},
    }


def test_waiting_jobs_pair_podgroups_with_their_jobs():
    jobs = [
        vcjob("big", pc="large-job", replicas=4, gpus=8, phase="Pending"),
        vcjob("runs", phase="Running"),
    ]
    pgs = [
        podgroup("big"),
        podgroup("runs", phase="Running", running=4),
        podgroup("orphan", uid="nobody"),
    ]
    (big,) = model.waiting_jobs(pgs, jobs)
    assert big == model.WaitingJob(
        namespace="tenant-alpha",
        name="big",
        uid="uid-big",
        queue="tenant-alpha-algo",
        priority_class="large-job",
        priority=PRIORITY_CLASSES["large-job"][0],
        gpus=32,
        podgroup_phase="Pending",
    )
    assert big.ref == "tenant-alpha/big"


def test_a_running_job_whose_podgroup_still_says_inqueue_is_not_waiting():
    """The PodGroup's status is written at the end of the scheduler's session, after the
    job controller has seen the pods run: the Job's phase decides."""
    jobs = [vcjob("b2", phase="Running"), vcjob("b3", phase="Pending")]
    pgs = [podgroup("b2", phase="Inqueue", running=0), podgroup("b3", phase="Inqueue")]
    assert [w.name for w in model.waiting_jobs(pgs, jobs)] == ["b3"]


def _bound(job, index, node="gpu-node-0", deleting=False):
    p = pod(job, owner_uid=f"uid-{job}", phase="Pending")
    p["metadata"]["name"] = f"{job}-worker-{index}"
    p["spec"] = {"nodeName": node} if node else {}
    if deleting:
        p["metadata"]["deletionTimestamp"] = "2026-01-01T12:00:00Z"
    return p


def test_a_job_the_scheduler_placed_is_not_waiting():
    """Rule placed-is-not-waiting: minAvailable pods bound (and not leaving) while the Job and
    its PodGroup still say Pending: its GPUs are in the queue's allocation already."""
    jobs = [vcjob("b2", replicas=2, phase="Pending"), vcjob("b3", replicas=2, phase="Pending")]
    pgs = [podgroup("b2", min_member=2), podgroup("b3", min_member=2)]
    pods = [
        _bound("b2", 0),
        _bound("b2", 1),
        _bound("b3", 0),  # one of two bound
        _bound("b3", 1, node=None),
    ]
    assert [w.name for w in model.waiting_jobs(pgs, jobs, pods)] == ["b3"]
    # a bound pod on its way out does not count
    leaving = [_bound("b2", 0), _bound("b2", 1, deleting=True)]
    assert [w.name for w in model.waiting_jobs(pgs, jobs, leaving)] == ["b2", "b3"]
    # without the pods the Job and PodGroup phases decide, as before
    assert [w.name for w in model.waiting_jobs(pgs, jobs)] == ["b2", "b3"]


def test_the_gpus_of_stopping_pods_are_free_in_their_queues_and_ancestors():
    """Rule releasing-is-free: a victim's pod with a deletion timestamp still counts in its
    queue's status.allocated (Volcano's Releasing); the arbiter takes it out of the queue
    and every ancestor, once per pod, and ignores pods not bound or already ended."""
    states = model.queue_states(tenant_tree())
    leaving = _bound("a4", 0, deleting=True)
    leaving["metadata"]["labels"] = {"volcano.sh/queue-name": "tenant-alpha-a"}
    leaving["spec"]["containers"] = [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 3}}}]
    unbound = dict(leaving, spec={"containers": leaving["spec"]["containers"]})
    ended = dict(leaving, status={"phase": "Failed"})
    staying = _bound("a5", 0)
    releasing = model.releasing_gpus([leaving, unbound, ended, staying])
    assert releasing == {"tenant-alpha-a": 3}
    after = model.without_releasing(states, releasing)
    assert after["tenant-alpha-a"].allocated_gpus == states["tenant-alpha-a"].allocated_gpus - 3
    sub = "tenant-alpha-subscription"
    assert after[sub].allocated_gpus == states[sub].allocated_gpus - 3
    assert after["tenant-alpha-b"] == states["tenant-alpha-b"]
    # never below 0
    assert (
        model.without_releasing(states, {"tenant-alpha-b": 99})["tenant-alpha-b"].allocated_gpus
        == 0
    )
