# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``large_job_throttle`` through the flow contract: its plan as a table of cases
over facts (no cluster, no fake), and ``parsed`` of what ``gathered`` returned equal to
the check-mode run on the fake cluster."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs import reconcile, service
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.reconcile import (
    RoomFacts,
    ThrottleFacts,
    ThrottleRequest,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.service import THROTTLE_FLOW
from ansible_collections.gpucloud.platform.plugins.modules import large_job_throttle
from ansible_collections.gpucloud.platform.tests.unit.flow_checks import (
    assert_parsed_is_the_run,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.jobs.job_objects import (
    NODES,
    NS,
    big_job,
    cluster,
    large_pg,
    queue,
    throttle_cm,
)

NOW = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
ALGO = "tenant-alpha-algo"
TENANT_NS = {
    "apiVersion": "v1",
    "kind": "Namespace",
    "metadata": {"name": NS, "labels": {"platform.io/tenant": "alpha"}},
}
# The queues rule job-never-runs judges the large job by: 32 GPUs, 8 in use.
QUEUES = (
    {
        **queue("tenant-alpha-subscription", "subscription", capability={"nvidia.com/gpu": 32}),
        "status": {"allocated": {"nvidia.com/gpu": 8}},
    },
    queue(ALGO, "team", parent="tenant-alpha-subscription"),
)
ROOM = RoomFacts(nodes=NODES, queues=QUEUES)


def params(**given):
    return {n: s.get("default") for n, s in large_job_throttle.OPTIONS.items()} | given


def stored(obj):
    """``obj`` as the API server returns it: a Volcano Job with the uid its PodGroup's
    owner reference names (the fake cluster gives ``uid-<name>``)."""
    meta = obj["metadata"]
    return {**obj, "metadata": {"uid": f"uid-{meta['name']}", **meta}}


def facts(*objects, room=ROOM):
    """The facts of a cluster holding the tenant namespace and ``objects``."""

    def of(kind):
        return tuple(stored(o) for o in objects if o["kind"] == kind)

    configmaps = tuple(o for o in of("ConfigMap") if o["metadata"]["name"] == "platform-throttle")
    return ThrottleFacts(NOW, (TENANT_NS,), of("PodGroup"), of("Job"), configmaps, room)


def expired_cm():
    cm = throttle_cm()
    entries = json.loads(cm["data"]["entries.json"])
    entries[0].update(engaged_at="2026-01-01T00:00:00Z", until="2026-01-01T00:01:00Z")
    cm["data"] = {
        **cm["data"],
        "until": "2026-01-01T00:01:00Z",
        "entries.json": json.dumps(entries),
    }
    return cm


def unmanaged_cm():
    cm = throttle_cm()
    cm["metadata"] = {**cm["metadata"], "labels": {}}
    return cm


# (case, request, facts, actions by namespace, engaged, released, expired, not engaged, skipped)
CASES = [
    ("no large job", ThrottleRequest(300), facts(), {NS: "none"}, [], [], [], [], []),
    (
        "an admitted large job waits for GPUs preemption can free",
        ThrottleRequest(300),
        facts(large_pg(), big_job()),
        {NS: "apply"},
        [f"{NS}/big"],
        [],
        [],
        [],
        [],
    ),
    (
        "a Pending PodGroup is not held for",
        ThrottleRequest(300),
        facts(large_pg(phase="Pending"), big_job(), room=None),
        {NS: "none"},
        [],
        [],
        [],
        [f"{NS}/big"],
        [],
    ),
    (
        "the large job runs: its entry goes",
        ThrottleRequest(300),
        facts(large_pg("Running", 4), big_job(), throttle_cm()),
        {NS: "delete"},
        [],
        [f"{NS}/big"],
        [],
        [],
        [],
    ),
    (
        "its PodGroup's Job is gone: its entry goes",
        ThrottleRequest(300),
        facts(large_pg(), throttle_cm()),
        {NS: "delete"},
        [],
        [f"{NS}/big"],
        [],
        [],
        [],
    ),
    (
        "the deadline passed: kept as expired, the queue no longer held",
        ThrottleRequest(300),
        facts(large_pg(), big_job(), expired_cm()),
        {NS: "apply"},
        [],
        [],
        [f"{NS}/big"],
        [],
        [],
    ),
    (
        "a ConfigMap not the platform's is left alone",
        ThrottleRequest(300),
        facts(large_pg(), big_job(), unmanaged_cm()),
        {},
        [],
        [],
        [],
        [],
        [NS],
    ),
]


@pytest.mark.parametrize(
    "request_,facts_,actions,engaged,released,expired,away,skipped",
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_the_plan_over_facts(request_, facts_, actions, engaged, released, expired, away, skipped):
    planned = reconcile.plan_throttle(request_, facts_)
    assert {c.namespace: c.action for c in planned.changes} == actions
    said = reconcile.report_throttle(request_, planned)
    assert said["engaged"] == engaged and said["released"] == released
    assert said["expired"] == expired and said["skipped"] == skipped
    assert [j["job"] for j in said["not_engaged"]] == away
    assert said["changed"] is any(a != "none" for a in actions.values())


def test_the_plan_refuses_a_namespace_no_tenant_has():
    with pytest.raises(PlatformValidationError, match="tenant-gone"):
        reconcile.plan_throttle(ThrottleRequest(300, ("tenant-gone",)), facts())


def test_the_deadline_is_the_facts_read_at_plus_the_timeout():
    planned = reconcile.plan_throttle(ThrottleRequest(120), facts(large_pg(), big_job()))
    said = reconcile.report_throttle(ThrottleRequest(120), planned)
    assert said["throttles"][NS]["until"] == "2026-01-01T00:07:00Z"


def gathered_from(fake):
    return THROTTLE_FLOW.run(params(state="gathered"), fake, False)["gathered"]


def test_gathered_reads_the_room_only_for_a_waiting_admitted_job(monkeypatch):
    monkeypatch.setattr(service, "now_utc", lambda: NOW)
    quiet = gathered_from(cluster())
    assert sorted(quiet) == ["configmaps", "jobs", "namespaces", "podgroups", "read_at"]
    assert quiet["read_at"] == "2026-01-01T00:05:00.000000Z"
    waiting = gathered_from(cluster(extra=[large_pg(), big_job()]))
    assert {"nodes", "pods", "queues"} <= set(waiting)
    assert "hypernodes" not in waiting and "persistentvolumeclaims" not in waiting


def test_parsed_facts_that_are_not_lists_are_refused_naming_the_key():
    with pytest.raises(PlatformValidationError, match=r"facts\.podgroups: must be a list"):
        THROTTLE_FLOW.offline(params(state="parsed", facts={"podgroups": {}}))
    with pytest.raises(PlatformValidationError, match=r"facts\.read_at"):
        THROTTLE_FLOW.offline(params(state="parsed", facts={"read_at": "yesterday"}))


def _same_as_check_mode(objects, given_params):
    """``parsed`` of what ``gathered`` returned is the check-mode run on the same cluster."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(service, "now_utc", lambda: NOW)
        facts_ = gathered_from(cluster(extra=copy.deepcopy(objects)))
        check = cluster(extra=copy.deepcopy(objects))
        check.dry_run = True

        def run():
            result = THROTTLE_FLOW.run(given_params, check, True)
            return {**result, "changed": False}

        assert_parsed_is_the_run(
            THROTTLE_FLOW, run, {**given_params, "state": "parsed", "facts": facts_}
        )


@pytest.mark.parametrize("case", CASES[1:], ids=[c[0] for c in CASES[1:]])
def test_parsed_of_gathered_is_the_check_mode_run(case):
    cluster_objects = [*case[2].podgroups, *case[2].vcjobs, *case[2].configmaps]
    _same_as_check_mode(cluster_objects, params())


@settings(max_examples=25, deadline=None)
@given(
    phase=st.sampled_from(["Pending", "Inqueue", "Running"]),
    running=st.integers(0, 4),
    replicas=st.integers(1, 6),
    engaged=st.booleans(),
    timeout=st.integers(0, 600),
    only=st.sampled_from([[], [NS], ["tenant-gone"]]),
)
def test_parsed_of_gathered_is_the_check_mode_run_whatever_the_job(
    phase, running, replicas, engaged, timeout, only
):
    objects = [large_pg(phase, running), big_job(replicas=replicas)]
    if engaged:
        objects.append(throttle_cm())
    _same_as_check_mode(objects, params(timeout=timeout, namespaces=only))


def test_the_module_plans_parsed_facts_with_no_request(run_module, monkeypatch):
    monkeypatch.setattr(service, "now_utc", lambda: NOW)
    facts_ = gathered_from(cluster(extra=[large_pg(), big_job()]))
    offline = cluster()
    out = run_module(large_job_throttle, offline, state="parsed", facts=facts_)
    assert out["requests"] == 0 and offline.lists == [] and out["changed"] is False
    assert out["engaged"] == [f"{NS}/big"] and out["state"] == "parsed"
    gathered = run_module(large_job_throttle, cluster(), state="gathered")
    assert gathered["requests"] == 3 and gathered["changed"] is False
