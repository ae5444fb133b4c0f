# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU health plan as a table of (facts -> plan), with no cluster: rules gpu-unhealthy,
quarantine, quarantine-guard, quarantine-release, quarantine-jobs and quarantine-count."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common import names
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
    Refused,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.gpu_health import (
    disruption,
    health,
    quarantine,
    signals,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.gpu_health.fixtures import (
    PARAMS,
    node,
    pod,
    quarantined,
    tenant_workload,
    vcjob,
    xid,
)

NOW = datetime(2026, 1, 1, 1, 0, tzinfo=UTC)


def plan(nodes, xids=(), remaps=(), workload=(), now=NOW, **given):
    request = health.parse_health({**PARAMS, **given})
    kinds = {"Pod": [], "Job": [], "Queue": []}
    for obj in workload:
        kinds[obj["kind"]].append(obj)
    facts = health.HealthFacts(
        now, tuple(nodes), tuple(xids), tuple(remaps),
        tuple(kinds["Pod"]), tuple(kinds["Job"]), tuple(kinds["Queue"]),
    )  # fmt: skip
    return health.plan_health(request, facts)


def actions(planned):
    return {a.name: a.action for a in planned.nodes}


# --- rule gpu-unhealthy ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "nodes", "xids", "remaps", "expected"),
    [
        ("all healthy", [node("n1"), node("n2")], [], [], {}),
        (
            "a condition",
            [node("n1", sick=True), node("n2")],
            [],
            [],
            {"n1": ("condition GpuUnhealthy: nvidia-smi failed",)},
        ),
        (
            "a fatal XID, label Hostname",
            [node("n1")],
            [xid("n1", 79, "3")],
            [],
            {"n1": ("GPU 3 XID 79",)},
        ),
        (
            "a fatal XID, label hostname",
            [node("n1")],
            [xid("n1", 48, label="hostname")],
            [],
            {"n1": ("GPU 0 XID 48",)},
        ),
        ("an application XID", [node("n1")], [xid("n1", 13)], [], {}),
        ("a series of another node", [node("n1")], [xid("elsewhere", 79)], [], {}),
        (
            "a row remap failure",
            [node("n1")],
            [],
            [xid("n1", 1, "2")],
            {"n1": ("GPU 2 row remap failure",)},
        ),
        (
            "a condition False",
            [
                {
                    **node("n1"),
                    "status": {"conditions": [{"type": "GpuUnhealthy", "status": "False"}]},
                }
            ],
            [],
            [],
            {},
        ),
    ],
)
def test_which_nodes_are_unhealthy(case, nodes, xids, remaps, expected):
    got = signals.unhealthy_nodes(nodes, ["GpuUnhealthy"], signals.DEFAULT_FATAL_XIDS, xids, remaps)
    assert got == expected, case


def test_the_queries_are_the_documented_text():
    assert signals.xid_query("10m") == (
        "max by (Hostname, hostname, gpu) (max_over_time(DCGM_FI_DEV_XID_ERRORS[10m])) > 0"
    )
    assert signals.ROW_REMAP_QUERY == (
        "max by (Hostname, hostname, gpu) (DCGM_FI_DEV_ROW_REMAP_FAILURE) > 0"
    )


# --- rules quarantine and quarantine-guard ----------------------------------------------


def test_an_unhealthy_gpu_node_is_tainted_cordoned_and_annotated():
    planned = plan([node("n1", sick=True), node("n2")])
    (action,) = planned.nodes
    assert (action.name, action.action, action.cordoned_by_platform) == ("n1", "quarantine", True)
    assert action.after["unschedulable"] is True
    assert action.after["taints"] == [
        {"key": names.TAINT_GPU_UNHEALTHY, "value": "true", "effect": "NoSchedule"}
    ]
    notes = action.patch["metadata"]["annotations"]
    assert notes[names.ANNOTATION_GPU_QUARANTINED_AT] == "2026-01-01T01:00:00Z"
    assert notes[names.ANNOTATION_GPU_QUARANTINE_CORDONED] == "true"
    assert "nvidia-smi failed" in notes[names.ANNOTATION_GPU_QUARANTINE_REASON]


def test_a_node_an_admin_cordoned_is_recorded_as_not_cordoned_by_the_platform():
    other = {"key": "maintenance", "value": "x", "effect": "NoExecute"}
    planned = plan([node("n1", sick=True, unschedulable=True, taints=[other])])
    (action,) = planned.nodes
    assert (
        action.patch["metadata"]["annotations"][names.ANNOTATION_GPU_QUARANTINE_CORDONED] == "false"
    )
    assert action.patch["spec"]["taints"][0] == other  # kept


def test_an_unhealthy_node_without_gpus_is_not_quarantined_but_warned():
    planned = plan([node("cpu", gpus=0, sick=True)])
    assert planned.nodes == ()
    assert planned.not_gpu == ("cpu",)
    assert "has no allocatable nvidia.com/gpu" in health.warnings_of(planned)[0]


def test_more_new_quarantines_than_the_limit_refuse_naming_nodes_and_option():
    sick = [node(f"n{i}", sick=True) for i in range(3)]
    with pytest.raises(Refused) as refused:
        plan(sick)
    assert "n0, n1, n2" in str(refused.value) and "max_quarantine 2" in str(refused.value)
    assert refused.value.extra["refused"] == ["n0", "n1", "n2"]
    assert actions(plan(sick, max_quarantine=3)) == dict.fromkeys(["n0", "n1", "n2"], "quarantine")


def test_nodes_quarantined_already_do_not_count_against_the_limit():
    nodes = [quarantined("q1", sick=True), quarantined("q2", sick=True), node("n1", sick=True)]
    assert actions(plan(nodes, max_quarantine=1)) == {
        "q1": "hold",
        "q2": "hold",
        "n1": "quarantine",
    }


# --- rule quarantine-release ------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "the_node", "expected"),
    [
        ("still unhealthy", quarantined("q", sick=True), "hold"),
        (
            "unhealthy again",
            quarantined("q", sick=True, healthy_since="2026-01-01T00:50:00Z"),
            "clear-healthy",
        ),
        ("first healthy run", quarantined("q"), "mark-healthy"),
        (
            "healthy 10 of 30 minutes",
            quarantined("q", healthy_since="2026-01-01T00:50:00Z"),
            "hold",
        ),
        ("healthy 30 minutes", quarantined("q", healthy_since="2026-01-01T00:30:00Z"), "release"),
        ("a healthy-since not a time", quarantined("q", healthy_since="soon"), "mark-healthy"),
    ],
)
def test_release_timing(case, the_node, expected):
    assert actions(plan([the_node])) == {"q": expected}, case


def test_the_release_uncordons_only_a_node_the_platform_cordoned():
    ours = quarantined("a", healthy_since="2026-01-01T00:00:00Z")
    admins = quarantined("b", cordoned="false", healthy_since="2026-01-01T00:00:00Z",
                         taints=[{"key": "maintenance", "effect": "NoSchedule"}])  # fmt: skip
    a, b = plan([ours, admins]).nodes
    assert a.patch["spec"] == {"taints": None, "unschedulable": None}
    assert a.after["unschedulable"] is False and a.after["annotations"] == {}
    assert b.patch["spec"] == {"taints": [{"key": "maintenance", "effect": "NoSchedule"}]}
    assert b.after["unschedulable"] is True


def test_mark_healthy_writes_only_the_annotation():
    (action,) = plan([quarantined("q")]).nodes
    assert "spec" not in action.patch
    assert action.patch["metadata"]["annotations"] == {
        names.ANNOTATION_GPU_HEALTHY_SINCE: "2026-01-01T01:00:00Z"
    }


# --- rules quarantine-jobs and quarantine-count ------------------------------------------


def test_each_class_gets_its_action_on_a_newly_quarantined_node():
    planned = plan([node("n1", sick=True), node("n2")], workload=tenant_workload())
    got = {j.name: (j.action, j.pods, j.tenant) for j in planned.jobs}
    assert got == {
        "cheap": ("delete", (("cheap-0", "uid-cheap-0"),), "alpha"),
        "poke": ("delete", (("poke-0", "uid-poke-0"),), "alpha"),
        "serve": ("left running", (("serve-0", "uid-serve-0"),), "alpha"),
        # only its pod on the quarantined node: Volcano restarts the whole job
        "train": ("evict", (("train-0", "uid-train-0"),), "alpha"),
        "tune": ("evict", (("tune-0", "uid-tune-0"),), "alpha"),
    }
    assert planned.unowned == ("tenant-alpha/lonely on n1 (not owned by a Volcano Job)",)
    assert planned.counts == {
        "tenant-alpha-spot": {"before": 0, "after": 1},
        "tenant-alpha-subscription": {"before": 3, "after": 6},
    }
    assert "critical job tenant-alpha/serve (alpha)" in health.warnings_of(planned)[0]


def test_jobs_on_a_node_released_this_run_are_left_alone():
    released = quarantined("n1", healthy_since="2026-01-01T00:00:00Z")
    assert plan([released], workload=tenant_workload()).jobs == ()


def test_pods_still_on_a_held_node_are_acted_on_again():
    planned = plan([quarantined("n1", sick=True)], workload=tenant_workload())
    assert {j.name for j in planned.jobs} == {"cheap", "poke", "serve", "train", "tune"}


def test_a_pod_whose_job_is_gone_is_left_alone():
    got, alone = disruption.jobs_on_nodes([pod("x-0", "tenant-a", "n1", "x")], [], [], ["n1"])
    assert got == [] and alone == ["tenant-a/x-0 on n1 (its Volcano Job is gone)"]


@pytest.mark.parametrize(
    ("job_class", "billing", "action"),
    [
        ("spot", "spot", "delete"),
        ("normal", "spot", "delete"),
        ("debug", "subscription", "delete"),
        ("critical", "subscription", "left running"),
        ("large", "payg", "evict"),
        ("normal", "subscription", "evict"),
    ],
)
def test_quarantine_action_by_class(job_class, billing, action):
    assert disruption.quarantine_action(job_class, billing) == action


def test_the_class_falls_back_to_the_priority_class():
    job = vcjob("x", "tenant-a", "q", "critical")
    job["metadata"]["labels"] = {}
    assert disruption.job_class(job) == "critical"
    job["spec"] = {}
    assert disruption.job_class(job) == "normal"


@pytest.mark.parametrize(("raw", "count"), [(None, 0), ("4", 4), ("-1", 0), ("x", 0), (" 7 ", 7)])
def test_the_disrupted_count_reads_a_whole_number(raw, count):
    queue = {
        "metadata": {"annotations": {names.ANNOTATION_GPU_QUARANTINE_DISRUPTED: raw} if raw else {}}
    }
    assert disruption.disrupted_jobs(queue) == count


# --- input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({"prometheus_url": "prometheus:9090"}, "prometheus_url"),
        ({"xid_window": "ten minutes"}, "xid_window"),
        ({"healthy_period": "soon"}, "healthy_period"),
        ({"fatal_xids": [79, -1]}, "fatal_xids[1]"),
        ({"max_quarantine": -1}, "max_quarantine"),
        ({"node_selector": {"bad key!": "x"}}, "node_selector"),
    ],
)
def test_bad_input_is_refused_naming_the_field(given, field):
    with pytest.raises(PlatformValidationError) as refused:
        health.parse_health({**PARAMS, **given})
    assert any(str(e).startswith(field) for e in refused.value.errors), refused.value.messages


def test_the_facts_round_trip():
    request = health.parse_health(PARAMS)
    facts = health.HealthFacts(NOW, (node("n1", sick=True),), (xid("n1", 79),))
    again = health.facts_in(request, health.facts_out(facts))
    assert again == facts
    with pytest.raises(PlatformValidationError, match=r"facts\.read_at"):
        health.facts_in(request, {"read_at": "yesterday"})


# --- invariants -----------------------------------------------------------------------

CLASSES = st.sampled_from(["critical", "large", "normal", "debug", "spot"])


@st.composite
def fleets(draw):
    size = draw(st.integers(1, 6))
    nodes, workload = [], []
    for i in range(size):
        name = f"n{i}"
        kind = draw(st.sampled_from(["healthy", "sick", "held-sick", "held-healthy", "admin-held"]))
        since = draw(st.sampled_from([None, "2026-01-01T00:00:00Z", "2026-01-01T00:59:00Z"]))
        if kind in ("healthy", "sick"):
            nodes.append(node(name, sick=kind == "sick", unschedulable=draw(st.booleans())))
        else:
            nodes.append(quarantined(name, sick=kind == "held-sick", healthy_since=since,
                                     cordoned="false" if kind == "admin-held" else "true"))  # fmt: skip
        for j in range(draw(st.integers(0, 2))):
            job = f"j{i}-{j}"
            workload += [
                vcjob(job, "tenant-a", "q", draw(CLASSES)),
                pod(f"{job}-0", "tenant-a", name, job),
            ]
    return nodes, workload


@settings(max_examples=150, deadline=None)
@given(fleets(), st.integers(0, 4))
def test_the_invariants(fleet, limit):
    nodes, workload = fleet
    try:
        planned = plan(nodes, workload=workload, max_quarantine=limit)
    except Refused as refused:
        assert len(refused.extra["refused"]) > limit
        return
    assert sum(a.action == "quarantine" for a in planned.nodes) <= limit
    by_name = {n["metadata"]["name"]: n for n in nodes}
    for action in planned.nodes:
        if action.after.get("unschedulable") is False and action.before["unschedulable"]:
            # uncordoned: only a node the platform cordoned
            notes = by_name[action.name]["metadata"]["annotations"]
            assert notes.get(names.ANNOTATION_GPU_QUARANTINE_CORDONED) == "true"
    for job in planned.jobs:
        if job.job_class == "critical":
            assert job.action == "left running" and not job.stopped


def test_after_a_conflict_the_step_is_planned_again_from_the_node_read():
    (first,) = plan([node("n1", sick=True)]).nodes
    other = {"key": "maintenance", "effect": "NoSchedule"}
    again = quarantine.replan(node("n1", sick=True, taints=[other]), first, NOW, 1800)
    assert again.action == "quarantine" and again.patch["spec"]["taints"][0] == other
    # quarantined meanwhile by another run: held, its record of who cordoned it kept
    held = quarantine.replan(quarantined("n1", sick=True), first, NOW, 1800)
    assert (held.action, held.patch) == ("hold", None)
    (release,) = plan([quarantined("q", healthy_since="2026-01-01T00:00:00Z")]).nodes
    by_hand = quarantine.replan(node("q"), release, NOW, 1800)
    assert (by_hand.action, by_hand.patch) == ("hold", None)
