# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The in-tenant arbiter's rules: blocked-by-capacity, arbiter-need, preempt-victims,
team-reclaim-victims and the planner."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.arbiter import plan, rules
from ansible_collections.gpucloud.platform.plugins.module_utils.arbiter.model import (
    QueueState,
    RunningJob,
    WaitingJob,
    priority_of,
)

SUB = "tenant-t-subscription"
TEAM = "tenant-t-algo"
A = "tenant-t-a"
B = "tenant-t-b"
T0 = 1_767_268_800.0  # 2026-01-01T12:00:00Z


def qs(name, queue_type="team", parent=SUB, deserved=None, capability=None, allocated=0):
    return QueueState(name, parent, deserved, capability, allocated, queue_type, "t")


def states_of(*queues):
    return {q.name: q for q in queues}


def run(name, queue, pc, gpus, minutes_ago, preemptable=True, ns="tenant-t", priority=None):
    return RunningJob(
        namespace=ns,
        name=name,
        uid=f"uid-{name}",
        queue=queue,
        priority_class=pc,
        priority=priority_of(pc) if priority is None else priority,
        gpus=gpus,
        started=T0 - minutes_ago * 60,
        preemptable=preemptable,
    )


def wait(name, queue, pc, gpus, phase="Pending"):
    return WaitingJob("tenant-t", name, f"uid-{name}", queue, pc, priority_of(pc), gpus, phase)


def names(jobs):
    return [j.name for j in jobs]


# -- scenario 1: a large job in a full team queue -------------------------------------------


def scenario_one():
    """Design 6.1 scenario one inside a subscription of 40 (deserved = capability): the team
    queue uses 30 GPUs, the pool has 40 (10 free); a 32-GPU large job waits Pending, because
    30 + 32 exceeds the capability 40 the team inherits."""
    states = states_of(
        qs(SUB, "subscription", "root", 40, 40, 30),
        qs(TEAM, deserved=40, allocated=30),
    )
    running = [
        run("task-a", TEAM, "normal-job", 8, 50),
        run("task-b", TEAM, "normal-job", 8, 40),
        run("task-c", TEAM, "normal-job", 8, 30),
        run("task-d", TEAM, "debug-job", 4, 10),
        run("task-e", TEAM, "debug-job", 2, 20),
    ]
    return states, running, wait("big", TEAM, "large-job", 32)


def test_scenario_one_is_blocked_by_the_inherited_capability():
    states, _running, big = scenario_one()
    assert rules.blocked_by_capacity(big, states, free_gpus=10, pool_gpus=40) == TEAM
    assert rules.arbiter_need(big, states, free_gpus=10) == 22


def test_scenario_one_preempts_p50_then_p100_newest_first():
    _states, running, big = scenario_one()
    victims = rules.preempt_victims(big, running, 22)
    assert names(victims) == ["task-d", "task-e", "task-c", "task-b"]
    assert sum(v.gpus for v in victims) == 22  # task-a keeps running


def test_scenario_one_plan_preempts():
    states, running, big = scenario_one()
    decision = plan.plan_for(big, states, running, free_gpus=10, pool_gpus=40)
    assert decision.action == plan.PREEMPT
    assert names(decision.victims) == ["task-d", "task-e", "task-c", "task-b"]
    assert (decision.need, decision.freed, decision.blocked_by) == (22, 22, TEAM)
    assert decision.reason == (
        "tenant-t/big needs 22 GPUs freed (queue tenant-t-algo: 30 allocated + 32 > capability "
        "40; queue tenant-t-subscription: 30 allocated + 32 > capability 40; 10 GPUs free, 32 "
        "asked); preempting 22 GPUs in queue tenant-t-algo: tenant-t/task-d (debug-job, 4), "
        "tenant-t/task-e (debug-job, 2), tenant-t/task-c (normal-job, 8), tenant-t/task-b "
        "(normal-job, 8)"
    )
    assert decision.as_dict()["victims"][0]["name"] == "task-d"


def test_preempt_takes_only_as_many_jobs_as_needed():
    _states, running, big = scenario_one()
    assert names(rules.preempt_victims(big, running, 4)) == ["task-d"]
    assert names(rules.preempt_victims(big, running, 5)) == ["task-d", "task-e"]
    assert rules.preempt_victims(big, running, 0) == []


def test_no_whole_job_set_evicts_nothing_and_says_why():
    _states, running, big = scenario_one()
    assert rules.preempt_victims(big, running, 31) == []
    assert rules.preempt_refusal(big, running, 31) == (
        "queue tenant-t-algo: the running jobs below large-job hold 30 GPUs, 31 are needed; "
        "nothing is evicted"
    )


def test_plan_refuses_when_preemption_cannot_cover():
    states = states_of(
        qs(SUB, "subscription", "root", 16, 16, 16),
        qs(TEAM, deserved=16, allocated=16),
    )
    running = [
        run("normal", TEAM, "normal-job", 8, 5),
        run("crit", TEAM, "critical-job", 8, 1, preemptable=False),
    ]
    big = wait("big", TEAM, "large-job", 16)
    decision = plan.plan_for(big, states, running, free_gpus=0, pool_gpus=16)
    assert (decision.action, decision.victims, decision.need) == (plan.REFUSE, (), 16)
    assert decision.reason.endswith(
        "queue tenant-t-algo: the running jobs below large-job hold 8 GPUs, 16 are needed; "
        "nothing is evicted"
    )


def test_only_the_same_queue_and_lower_priority_are_candidates():
    running = [
        run("other-queue", "tenant-t-other", "debug-job", 8, 1),
        run("peer", TEAM, "large-job", 8, 1),
        run("low", TEAM, "normal-job", 8, 1),
    ]
    big = wait("big", TEAM, "large-job", 32)
    assert names(rules.preempt_candidates(big, running)) == ["low"]


def test_critical_and_non_preemptable_jobs_are_never_taken():
    running = [
        # A critical-job is never a victim, whatever priority it reports.
        run("crit", TEAM, "critical-job", 8, 1, priority=0),
        run("marked", TEAM, "normal-job", 8, 1, preemptable=False),
        run("free", TEAM, "normal-job", 8, 2),
    ]
    critical = wait("inference", TEAM, "critical-job", 8)
    assert names(rules.preempt_victims(critical, running, 8)) == ["free"]
    assert rules.preempt_victims(critical, running, 9) == []


def test_a_debug_job_never_preempts():
    running = [run("spot-like", TEAM, "spot-job", 8, 1, priority=0)]
    debug = wait("dbg", TEAM, "debug-job", 8)
    assert rules.preempt_victims(debug, running, 8) == []
    assert rules.preempt_refusal(debug, running, 8) == (
        "queue tenant-t-algo: tenant-t/dbg is a debug-job, which never preempts; nothing is evicted"
    )
    states = states_of(qs(TEAM, "team", "root", 8, 8, 8))
    decision = plan.plan_for(
        debug, states, running, 0, 8, preempting_classes=("debug-job", "large-job")
    )
    assert decision.action == plan.REFUSE
    assert "never preempts" in decision.reason


def test_a_normal_job_gets_no_preemption_from_the_arbiter():
    states = states_of(qs(TEAM, "team", "root", 8, 8, 8))
    running = [run("dbg", TEAM, "debug-job", 8, 1)]
    job = wait("n", TEAM, "normal-job", 8)
    decision = plan.plan_for(job, states, running, free_gpus=0, pool_gpus=8)
    assert decision.action == plan.REFUSE
    assert decision.reason == (
        "tenant-t/n needs 8 GPUs freed (queue tenant-t-algo: 8 allocated + 8 > capability 8; "
        "0 GPUs free, 8 asked): queue tenant-t-algo: tenant-t/n is a normal-job, and only "
        "large-job and critical-job preempt in their queue; nothing is evicted"
    )
    allowed = plan.plan_for(
        job, states, running, 0, 8, preempting_classes=("large-job", "normal-job")
    )
    assert (allowed.action, names(allowed.victims)) == (plan.PREEMPT, ["dbg"])


# -- scenario 2: team b takes back what team a borrowed -------------------------------------


def scenario_two(b_asks=5):
    """Design 6.1 scenario two: a subscription of 30 (deserved = capability) on a pool of 32;
    team a (deserved 20) uses 25, team b (deserved 10) uses 5 and asks for ``b_asks`` more."""
    states = states_of(
        qs(SUB, "subscription", "root", 30, 30, 30),
        qs(A, deserved=20, capability=30, allocated=25),
        qs(B, deserved=10, capability=30, allocated=5),
    )
    running = [
        run("a1", A, "normal-job", 8, 60),
        run("a2", A, "normal-job", 8, 50),
        run("a3", A, "normal-job", 4, 40),
        run("a4", A, "debug-job", 3, 30),
        run("a5", A, "debug-job", 2, 20),
        run("b1", B, "normal-job", 5, 10),
    ]
    return states, running, wait("b2", B, "normal-job", b_asks)


def test_scenario_two_need_is_the_subscriptions_shortfall():
    states, _running, b2 = scenario_two()
    assert rules.blocked_by_capacity(b2, states, free_gpus=2, pool_gpus=32) == SUB
    assert rules.arbiter_need(b2, states, free_gpus=2) == 5


def test_scenario_two_team_a_gives_back_its_borrowed_five_lowest_priority_first():
    states, running, b2 = scenario_two()
    victims = rules.team_reclaim_victims(b2, states, running, 5)
    assert names(victims) == ["a5", "a4"]
    decision = plan.plan_for(b2, states, running, free_gpus=2, pool_gpus=32)
    assert decision.action == plan.RECLAIM
    assert names(decision.victims) == ["a5", "a4"]
    assert (decision.need, decision.freed, decision.blocked_by) == (5, 5, SUB)
    assert decision.reason.endswith(
        "taking back 5 GPUs from sibling teams: tenant-t/a5 (debug-job, 2), "
        "tenant-t/a4 (debug-job, 3)"
    )


def test_reclaim_refuses_what_the_siblings_cannot_give():
    states, running, b2 = scenario_two(b_asks=8)
    need = rules.arbiter_need(b2, states, free_gpus=2)
    assert need == 8
    assert rules.team_reclaim_victims(b2, states, running, need) == []
    assert rules.team_reclaim_refusal(b2, states, running, need) == (
        "queue tenant-t-b: without going below their deserved, its sibling teams can give back "
        "5 GPUs of running jobs that may be evicted, 8 are needed (tenant-t-a 5 (uses 25, "
        "deserved 20)); nothing is evicted"
    )
    decision = plan.plan_for(b2, states, running, free_gpus=2, pool_gpus=32)
    assert (decision.action, decision.victims) == (plan.REFUSE, ())
    assert "can give back 5 GPUs" in decision.reason
    assert "only large-job and critical-job preempt" in decision.reason
    assert decision.reason.endswith("nothing is evicted")


def test_reclaim_never_takes_a_sibling_below_its_deserved():
    """Design 6.2's text (its worked example takes more): a 4-GPU job of a team that borrows
    3 is not taken, a smaller one later in the order is."""
    states = states_of(
        qs(SUB, "subscription", "root", 30, 30, 30),
        qs(A, deserved=20, allocated=23),
        qs(B, deserved=10, allocated=7),
    )
    running = [
        run("big-debug", A, "debug-job", 4, 1),
        run("small-debug", A, "debug-job", 2, 5),
        run("normal", A, "normal-job", 17, 50),
    ]
    b = wait("b", B, "normal-job", 3)
    assert names(rules.team_reclaim_victims(b, states, running, 2)) == ["small-debug"]
    assert rules.team_reclaim_victims(b, states, running, 3) == []
    assert "give back 2 GPUs" in rules.team_reclaim_refusal(b, states, running, 3)


def test_reclaim_merges_siblings_into_one_order_and_counts_each_down():
    c = "tenant-t-c"
    states = states_of(
        qs(SUB, "subscription", "root", 40, 40, 40),
        qs(A, deserved=10, allocated=14),
        qs(c, deserved=10, allocated=14),
        qs(B, deserved=20, allocated=12),
    )
    running = [
        run("a-old", A, "debug-job", 2, 30),
        run("a-new", A, "debug-job", 2, 1),
        run("a-third", A, "debug-job", 1, 0),
        run("c-mid", c, "debug-job", 4, 10),
    ]
    b = wait("b", B, "normal-job", 8)
    # Newest first across both teams: a-third (a: 13), a-new (a: 11), c-mid (c: 10).
    victims = rules.team_reclaim_victims(b, states, running, 7)
    assert names(victims) == ["a-third", "a-new", "c-mid"]
    # a-old would take team a to 9, below its deserved 10: 7 GPUs is all they can give.
    assert rules.team_reclaim_victims(b, states, running, 8) == []
    assert rules.team_reclaim_refusal(b, states, running, 8) == (
        "queue tenant-t-b: without going below their deserved, its sibling teams can give back "
        "7 GPUs of running jobs that may be evicted, 8 are needed (tenant-t-a 3 (uses 14, "
        "deserved 10), tenant-t-c 4 (uses 14, deserved 10)); nothing is evicted"
    )


def test_reclaim_only_for_a_team_below_its_deserved():
    states, running, b2 = scenario_two()
    full = dict(states)
    full[B] = qs(B, deserved=10, capability=30, allocated=10)
    assert rules.team_reclaim_victims(b2, full, running, 5) == []
    assert rules.team_reclaim_refusal(b2, full, running, 5) == (
        "queue tenant-t-b uses 10 GPUs of its deserved 10: it is not below its deserved share, "
        "so it takes nothing back from its siblings; nothing is evicted"
    )
    payg = states_of(qs("tenant-t-payg", "payg", "root", 8, 8, 0))
    job = wait("p", "tenant-t-payg", "normal-job", 4)
    assert rules.team_reclaim_victims(job, payg, running, 4) == []
    assert "not a team queue" in rules.team_reclaim_refusal(job, payg, running, 4)


def test_critical_and_non_preemptable_borrowers_are_never_reclaimed():
    states = states_of(
        qs(SUB, "subscription", "root", 16, 16, 16),
        qs(A, deserved=8, allocated=16),
        qs(B, deserved=8, allocated=0),
    )
    running = [
        run("crit", A, "critical-job", 4, 1, preemptable=False, priority=0),
        run("marked", A, "normal-job", 4, 2, preemptable=False),
        run("ok", A, "debug-job", 8, 60),
    ]
    b = wait("b", B, "critical-job", 8)
    assert names(rules.team_reclaim_victims(b, states, running, 8)) == ["ok"]
    assert rules.team_reclaim_victims(b, states, running, 9) == []


def test_no_borrowing_sibling_gives_nothing():
    states = states_of(
        qs(SUB, "subscription", "root", 20, 20, 20),
        qs(A, deserved=10, allocated=10),
        qs(B, deserved=10, allocated=5),
    )
    b = wait("b", B, "normal-job", 8)
    assert rules.team_reclaim_refusal(b, states, [], 3) == (
        "queue tenant-t-b: no sibling team under tenant-t-subscription uses more than its "
        "deserved; nothing is evicted"
    )


def test_reclaim_does_not_relieve_the_jobs_own_capability():
    """Team b's own capability of 36 holds the job (12 + 32 > 36): a sibling's GPUs do not
    change that, so the planner preempts in team b instead of taking back from team a."""
    states = states_of(
        qs(SUB, "subscription", "root", 60, 60, 26),
        qs(A, deserved=10, allocated=14),
        qs(B, deserved=30, capability=36, allocated=12),
    )
    running = [
        run("a-dbg", A, "debug-job", 4, 1),
        run("b-old", B, "debug-job", 4, 30),
        run("b-new", B, "debug-job", 8, 1),
    ]
    big = wait("big", B, "large-job", 32)
    assert rules.capacity_shortfall(big, states, B) == 8
    assert rules.capacity_shortfall(big, states, SUB) == 0
    decision = plan.plan_for(big, states, running, free_gpus=34, pool_gpus=60)
    assert (decision.action, names(decision.victims), decision.need) == (
        plan.PREEMPT,
        ["b-new"],
        8,
    )
    # A normal job there: no preemption, and the reason says why reclaim does not help.
    normal = wait("n", B, "normal-job", 32)
    refused = plan.plan_for(normal, states, running, free_gpus=34, pool_gpus=60)
    assert refused.action == plan.REFUSE
    assert "queue tenant-t-b itself would exceed its capability by 8 GPUs" in refused.reason


# -- planner edges --------------------------------------------------------------------------


def test_a_job_larger_than_the_pool_is_refused_not_blocked():
    states = states_of(qs(TEAM, "team", "root", 8, None, 0))
    big = wait("huge", TEAM, "large-job", 64)
    assert rules.blocked_by_capacity(big, states, free_gpus=32, pool_gpus=32) is None
    decision = plan.plan_for(big, states, [], free_gpus=32, pool_gpus=32)
    assert decision == plan.Decision(
        plan.REFUSE,
        (),
        0,
        "tenant-t/huge asks for 64 GPUs and the nodes it may use (queue tenant-t-algo's node "
        "groups) hold 32: it can never run; nothing is evicted",
    )


def test_a_job_larger_than_an_ancestors_capability_is_refused():
    states = states_of(qs(SUB, "subscription", "root", 16, 16, 0), qs(TEAM, deserved=16))
    big = wait("big", TEAM, "large-job", 32)
    decision = plan.plan_for(big, states, [], free_gpus=64, pool_gpus=64)
    assert decision.action == plan.REFUSE
    assert decision.reason == (
        "tenant-t/big asks for 32 GPUs and queue tenant-t-subscription has a capability of 16: "
        "it can never run there; nothing is evicted"
    )


def test_a_job_that_fits_needs_nothing():
    states = states_of(qs(TEAM, "team", "root", 16, 16, 4))
    job = wait("j", TEAM, "large-job", 8)
    assert rules.arbiter_need(job, states, free_gpus=12) == 0
    assert rules.blocked_by_capacity(job, states, 12, 16) is None
    assert plan.plan_for(job, states, [], 12, 16).action == plan.NONE


def test_need_is_the_node_shortfall_without_capacity_limits():
    states = states_of(qs(TEAM, "team", "root", None, None, 20))
    job = wait("j", TEAM, "large-job", 32)
    assert rules.blocked_by_capacity(job, states, 12, 40) is None
    assert rules.arbiter_need(job, states, free_gpus=12) == 20
    assert rules.arbiter_need(job, states, free_gpus=40) == 0


def test_the_waiting_job_itself_is_never_a_victim():
    job = wait("j", TEAM, "large-job", 8)
    me = RunningJob("tenant-t", "j", "uid-j", TEAM, "debug-job", 50, 8, T0, True)
    assert rules.preempt_victims(job, [me], 8) == []


# -- invariants -----------------------------------------------------------------------------

CLASSES = ("critical-job", "large-job", "normal-job", "debug-job")
TEAMS = ("tenant-t-a", "tenant-t-b", "tenant-t-c")


@st.composite
def worlds(draw):
    """A subscription with three teams, running jobs, a waiting job in one team and a need."""
    running = []
    for i in range(draw(st.integers(0, 14))):
        pc = draw(st.sampled_from(CLASSES))
        running.append(
            RunningJob(
                namespace=draw(st.sampled_from(["tenant-t", "tenant-u"])),
                name=f"j{i}",
                uid=f"uid-j{i}",
                queue=draw(st.sampled_from(TEAMS)),
                priority_class=pc,
                priority=priority_of(pc),
                gpus=draw(st.integers(0, 8)),
                started=T0 - draw(st.integers(0, 5)) * 60,
                preemptable=pc != "critical-job" and draw(st.booleans()),
            )
        )
    teams = []
    for name in TEAMS:
        used = sum(r.gpus for r in running if r.queue == name) + draw(st.integers(0, 4))
        teams.append(qs(name, deserved=draw(st.none() | st.integers(0, 30)), allocated=used))
    total = sum(t.allocated_gpus for t in teams)
    cap = draw(st.integers(0, 80))
    states = states_of(qs(SUB, "subscription", "root", cap, cap, total), *teams)
    pc = draw(st.sampled_from(CLASSES))
    job = wait("w", draw(st.sampled_from(TEAMS)), pc, draw(st.integers(1, 40)))
    return states, running, job, draw(st.integers(0, 60))


def check_victim_set(victims, job, need, below=True):
    """``below``: preemption takes only lower priorities; reclaim any (design 6.3)."""
    freed = sum(v.gpus for v in victims)
    if victims:
        assert freed >= need
        assert freed - victims[-1].gpus < need  # never one job more than needed
        assert job.priority_class != "debug-job"
    for v in victims:
        assert v.priority < job.priority or not below
        assert v.preemptable and v.priority_class != "critical-job"
    assert len({v.uid for v in victims}) == len(victims)


@settings(max_examples=300)
@given(worlds())
def test_preempt_invariants(world):
    _states, running, job, need = world
    victims = rules.preempt_victims(job, running, need)
    check_victim_set(victims, job, need)
    assert all(v.queue == job.queue for v in victims)
    assert victims == sorted(victims, key=rules.victim_order_key)
    if not victims and need > 0 and job.priority_class != "debug-job":
        held = sum(c.gpus for c in rules.preempt_candidates(job, running))
        assert held < need
        assert f"hold {held} GPUs, {need} are needed" in rules.preempt_refusal(job, running, need)
    if job.priority_class == "debug-job":
        assert victims == []


@settings(max_examples=300)
@given(worlds())
def test_team_reclaim_invariants(world):
    states, running, job, need = world
    victims = rules.team_reclaim_victims(job, states, running, need)
    check_victim_set(victims, job, need, below=False)
    assert victims == sorted(victims, key=rules.victim_order_key)
    own = states[job.queue]
    for v in victims:
        assert v.queue != job.queue and states[v.queue].parent == own.parent
    for name in TEAMS:
        taken = sum(v.gpus for v in victims if v.queue == name)
        if taken:
            assert states[name].allocated_gpus - taken >= states[name].deserved
    if victims:
        assert own.allocated_gpus < own.deserved
    elif need > 0:
        assert rules.team_reclaim_refusal(job, states, running, need).endswith("nothing is evicted")


@settings(max_examples=300)
@given(worlds(), st.integers(0, 40), st.integers(0, 60))
def test_plan_invariants(world, free, pool_extra):
    states, running, job, _need = world
    pool = free + pool_extra
    decision = plan.plan_for(job, states, running, free, pool)
    assert decision.action in plan.ACTIONS
    if decision.action in (plan.PREEMPT, plan.RECLAIM):
        below = decision.action == plan.PREEMPT
        check_victim_set(list(decision.victims), job, decision.need, below)
        assert decision.need == rules.arbiter_need(job, states, free) > 0
    else:
        assert decision.victims == ()
    if decision.action == plan.PREEMPT:
        assert job.priority_class in plan.DEFAULT_PREEMPTING_CLASSES
    if decision.action == plan.REFUSE:
        assert decision.reason.endswith("nothing is evicted")
    if job.gpus > pool:
        assert decision.action == plan.REFUSE
        assert rules.blocked_by_capacity(job, states, free, pool) is None
    blocked = rules.blocked_by_capacity(job, states, free, pool)
    if blocked is not None:
        assert rules.arbiter_need(job, states, free) > 0


def design_6_2():
    """Design 6.2's worked example in a subscription of 30: team a (deserved 20) runs 25,
    team b (deserved 10) runs 5 (its debug job b1)."""
    states = states_of(
        qs(SUB, "subscription", "root", 30, 30, 30),
        qs(A, deserved=20, allocated=25),
        qs(B, deserved=10, allocated=5),
    )
    running = [
        run("task-a", A, "normal-job", 8, 50),
        run("task-b", A, "normal-job", 8, 40),
        run("task-c", A, "normal-job", 3, 30),
        run("task-d", A, "debug-job", 4, 20),
        run("task-e", A, "debug-job", 2, 10),
        run("b1", B, "debug-job", 5, 60),
    ]
    return states, running


def test_design_6_2_reclaim_takes_a_normal_job_after_the_debug_job_it_may_take():
    """Design 6.2's worked example: reclaim returns what was borrowed whatever its priority
    (P50, then P100), never below deserved: task-e (debug 2), then task-c (normal 3, the
    newest normal job); task-d (debug 4) would take team a to 19."""
    states, running = design_6_2()
    b2 = wait("b2", B, "normal-job", 5)
    assert names(rules.team_reclaim_victims(b2, states, running, 5)) == ["task-e", "task-c"]
    debug = wait("b-debug", B, "debug-job", 5)
    assert rules.team_reclaim_victims(debug, states, running, 5) == []
    assert "never takes GPUs from other jobs" in rules.team_reclaim_refusal(
        debug, states, running, 5
    )
