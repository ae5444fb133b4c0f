# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules victim-returns and restart-may-preempt: what Volcano may do once the victims
come back."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.arbiter import aftermath, rules
from ansible_collections.gpucloud.platform.plugins.module_utils.arbiter.model import (
    class_preempts,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.manifest import (
    RESTART_POLICIES,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.arbiter.test_arbiter_rules import (
    A,
    B,
    design_6_2,
    run,
    wait,
)


def vcjob(policies=None, tasks=None):
    spec = {"tasks": tasks if tasks is not None else [{"name": "w"}]}
    if policies is not None:
        spec["policies"] = policies
    return {"spec": spec}


def test_the_platform_s_jobs_and_a_job_without_policies_return():
    assert aftermath.returns_after_eviction(vcjob(list(RESTART_POLICIES)))
    assert aftermath.returns_after_eviction(vcjob())
    assert aftermath.returns_after_eviction({})


def test_a_job_whose_eviction_ends_it_does_not_return():
    for action in ("AbortJob", "TerminateJob", "CompleteJob"):
        assert not aftermath.returns_after_eviction(
            vcjob([{"event": "PodEvicted", "action": action}])
        )
    assert not aftermath.returns_after_eviction(vcjob([{"events": ["*"], "action": "AbortJob"}]))


def test_the_first_matching_policy_and_the_task_s_own_policies_decide():
    # The job's first policy for PodEvicted restarts it; a later one that aborts is not read.
    first = [
        {"event": "PodEvicted", "action": "RestartJob"},
        {"event": "*", "action": "AbortJob"},
    ]
    assert aftermath.returns_after_eviction(vcjob(first))
    # A task that restarts itself comes back although the job's policy aborts.
    tasks = [{"name": "w", "policies": [{"event": "PodEvicted", "action": "RestartTask"}]}]
    assert aftermath.returns_after_eviction(
        vcjob([{"event": "PodEvicted", "action": "AbortJob"}], tasks)
    )
    # Every task must end for the job not to come back.
    ending = [{"event": "PodEvicted", "action": "AbortJob"}]
    tasks = [{"name": "w", "policies": ending}, {"name": "ps"}]
    assert not aftermath.returns_after_eviction(vcjob(ending, tasks))
    assert aftermath.returns_after_eviction(vcjob(None, tasks))


def test_design_6_2_the_restarted_normal_job_may_preempt_the_debug_job_left_running():
    """The arbiter takes task-e and task-c (task-d would leave team a at 19); task-c comes
    back at normal-job, and gangpreempt may take team a's debug job task-d for it. team b's
    debug job b1 is another queue's; task-e, a debug job, never preempts."""
    states, running = design_6_2()
    victims = rules.team_reclaim_victims(wait("b2", B, "normal-job", 5), states, running, 5)
    after = aftermath.restart_may_preempt(victims, running, {})
    assert [(v.name, [r.name for r in rs]) for v, rs in after] == [("task-c", ["task-d"])]
    dicts = aftermath.aftermath_dicts(after)
    assert dicts == [
        {
            "victim": "tenant-t/task-c",
            "priority_class": "normal-job",
            "queue": A,
            "may_preempt": ["tenant-t/task-d"],
        }
    ]
    assert aftermath.aftermath_warning(dicts) == (
        "tenant-t/task-c restarts at normal-job and Volcano's gangpreempt may then evict "
        "tenant-t/task-d of queue tenant-t-a for it (that queue's own priority order)."
    )
    # A victim that does not come back preempts nothing.
    assert aftermath.restart_may_preempt(victims, running, {"uid-task-c": False}) == []


def test_critical_non_preemptable_and_equal_priority_jobs_are_not_exposed():
    victim = run("v", A, "large-job", 8, 5)
    running = [
        victim,
        run("crit", A, "critical-job", 8, 50, preemptable=False),
        run("pinned", A, "normal-job", 8, 40, preemptable=False),
        run("peer", A, "large-job", 8, 30),
        run("other-queue", B, "normal-job", 8, 20),
    ]
    assert aftermath.restart_may_preempt([victim], running, {}) == []
    assert aftermath.aftermath_warning([]) == ""


def test_debug_victims_and_unknown_classes():
    assert not class_preempts("debug-job")
    assert class_preempts("normal-job")
    assert class_preempts("some-site-class")


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["critical-job", "large-job", "normal-job", "debug-job"]),
            st.integers(0, 8),
            st.booleans(),
        ),
        min_size=1,
        max_size=8,
    ),
    st.integers(1, 20),
)
def test_preemption_order_leaves_nothing_exposed(jobs, need):
    """Rule preempt-victims takes the lowest priority first and stops when covered, so a
    restarted victim of in-queue preemption never finds a lower-priority job left behind:
    only team reclaim, which skips a job that would take its team below its deserved, can
    leave one."""
    running = [run(f"j{i}", A, pc, g, i, preemptable=p) for i, (pc, g, p) in enumerate(jobs)]
    big = wait("big", A, "large-job", 32)
    victims = rules.preempt_victims(big, running, need)
    assert aftermath.restart_may_preempt(victims, running, {}) == []
