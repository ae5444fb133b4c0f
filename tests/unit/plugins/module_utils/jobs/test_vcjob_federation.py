# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vcjob with ``federation``: the Job goes to a Karmada federation with its own
PropagationPolicy, read from the Job the module builds (rules federation-placement and
federation-failover-once), written only when the live one lacks or contradicts it; the
members' nodes, pods, claims and throttles are not judged; ``wait`` is refused."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.federation_placement import (
    federated_job_policy,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs import submission
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.summary import (
    job_summary,
    lost_member_text,
    members_text,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.jobs.job_objects import (
    SINGLE,
    queue,
    queue_list,
    throttle_cm,
    vcjob_params,
)

QUEUES = (
    queue("tenant-alpha-subscription", "subscription", capability={"nvidia.com/gpu": 32}),
    queue("tenant-alpha-algo", "team", parent="tenant-alpha-subscription"),
    queue("tenant-alpha-payg", "payg"),
)
LOCATION = "platform.io/node-location"


CLOUD_PLACEMENTS = ("local-first", "cloud-ok")
SAVE = ["/bin/sh", "-c", "python save.py"]


def request_of(**options):
    """A federated job; a cloud placement comes with its checkpoint (rule cloud-patterns)."""
    if options.get("placement") in CLOUD_PLACEMENTS:
        options.setdefault("checkpoint_command", SAVE)
    return submission.parse_job(vcjob_params(**{**SINGLE, "federation": True, **options}))


def facts(policy=None, live=None, throttle=None):
    return submission.SubmitFacts(
        queue_list=queue_list(), live=live, queues=QUEUES, throttle=throttle, policy=policy
    )


def plan(policy=None, **options):
    return submission.plan_job(request_of(**options), facts(policy))


def locations(placement):
    """The locations each term of a placement selects, in order."""
    terms = placement.get("clusterAffinities") or [placement["clusterAffinity"]]
    return [
        [
            v
            for e in t["labelSelector"]["matchExpressions"]
            if e["key"] == LOCATION
            for v in e["values"]
        ]
        for t in terms
    ]


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, [["idc"]]),
        ({"placement": "local-only"}, [["idc"]]),
        ({"placement": "local-first"}, [["idc"], ["cloud"]]),
        ({"placement": "cloud-ok"}, [["idc", "cloud"]]),
        ({"compliance": True}, [["idc"]]),
        ({"placement": "local-only", "compliance": True}, [["idc"]]),
    ],
)
def test_the_policy_places_the_job_by_its_placement(options, expected):
    planned = plan(**options)
    assert planned.action == "create" and planned.policy_write
    policy = planned.policy
    assert policy["kind"] == "PropagationPolicy"
    assert policy["metadata"] == {
        "name": "eval",
        "namespace": "tenant-alpha",
        "labels": {"platform.io/managed-by": "gpucloud-platform"},
    }
    assert policy["spec"]["resourceSelectors"] == [
        {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "eval"}
    ]
    assert locations(policy["spec"]["placement"]) == expected
    # whole in one member, always
    assert policy["spec"]["placement"]["spreadConstraints"][0]["maxGroups"] == 1


def test_a_compliance_zone_pins_the_zone():
    policy = plan(compliance=True, compliance_zone="finance").policy
    expressions = policy["spec"]["placement"]["clusterAffinity"]["labelSelector"][
        "matchExpressions"
    ]
    assert {
        "key": "platform.io/compliance-zone",
        "operator": "In",
        "values": ["finance"],
    } in expressions


def test_cloud_ok_may_be_replaced_once_and_idc_work_never():
    assert "failover" in plan(placement="cloud-ok").policy["spec"]
    assert plan(placement="cloud-ok").policy["spec"]["propagateDeps"] is True
    for options in (
        {},
        {"placement": "local-first"},
        {"compliance": True},
    ):
        assert "failover" not in plan(**options).policy["spec"], options


def test_the_live_policy_unchanged_is_not_written_again():
    first = plan(placement="local-first")
    live = copy.deepcopy(first.policy)
    live["metadata"].update(uid="u", resourceVersion="7")
    live["spec"]["conflictResolution"] = "Abort"  # a default the API server filled in
    again = plan(policy=live, placement="local-first")
    assert not again.policy_write
    moved = plan(policy=live, placement="cloud-ok")
    assert moved.policy_write


def test_a_job_moved_once_keeps_its_record_and_stays_held_when_submitted_again():
    """Rule federation-moves-counted: the record the reconcile wrote on the live policy
    is kept, and the job is not given its failover back."""
    live = copy.deepcopy(plan(placement="cloud-ok").policy)
    record = {"platform.io/placed-in": "idc-1", "platform.io/moved-from": "cloud-1"}
    live["metadata"]["annotations"] = record
    del live["spec"]["failover"]
    again = plan(policy=live, placement="cloud-ok").policy
    assert again["metadata"]["annotations"] == record
    assert "failover" not in again["spec"]
    assert again["spec"]["placement"]["clusterTolerations"][0]["effect"] == "NoExecute"


def test_the_answer_names_the_policy_and_its_placement():
    request = request_of(placement="local-first")
    answer = submission.report_job(request, submission.plan_job(request, facts()))
    assert answer["federation"]["policy"] == "tenant-alpha/eval"
    assert answer["federation"]["policy_written"] is True
    assert answer["changed"] is True


def test_nothing_a_member_holds_is_judged():
    # no nodes, pods or claims read; a throttle in the federation would not be a member's
    request = request_of()
    planned = submission.plan_job(request, facts(throttle=throttle_cm()))
    assert planned.action in ("create", "hold", "throttled")
    assert request.settings.engage_throttle is False


def test_wait_is_refused_with_federation():
    with pytest.raises(PlatformValidationError, match="wait"):
        request_of(wait=True)


def test_absent_deletes_the_policy_too():
    live_policy = plan().policy
    request = request_of(state="absent")
    planned = submission.plan_job(request, facts(policy=live_policy))
    assert planned.action == "none" and planned.policy_live == live_policy
    answer = submission.report_job(request, planned)
    assert answer["changed"] is True
    # the diff names the policy going
    assert answer["diff"][1]["before_header"] == "PropagationPolicy/tenant-alpha/eval"
    assert answer["diff"][1]["after"] == {}


def test_the_diff_shows_the_job_and_its_policy():
    request = request_of(placement="local-first")
    answer = submission.report_job(request, submission.plan_job(request, facts()))
    job, policy = answer["diff"]
    assert job["before_header"] == "Job/tenant-alpha/eval" and job["before"] == {}
    assert job["after"]["kind"] == "Job"
    assert policy["before"] == {} and policy["after"]["kind"] == "PropagationPolicy"


def test_the_summary_says_where_karmada_may_run_it():
    request = request_of(placement="local-first")
    answer = submission.report_job(request, submission.plan_job(request, facts()))
    params = vcjob_params(**{**SINGLE, "federation": True})
    lines = job_summary(params, answer, check_mode=True)
    assert lines[-1] == (
        "federation: PropagationPolicy tenant-alpha/eval would be written; Karmada runs the "
        "whole job in one member: idc, else cloud; held in its member if that member is lost"
    )
    roaming = plan(placement="cloud-ok").policy["spec"]["placement"]
    assert lost_member_text(roaming) == "moved once to another member if its member is lost"
    zoned = submission.plan_job(request_of(compliance=True, compliance_zone="finance"), facts())
    text = members_text(zoned.policy["spec"]["placement"])
    assert text == "idc (compliance zone finance)"
    assert members_text(plan(placement="cloud-ok").policy["spec"]["placement"]) == "idc or cloud"


def test_gathered_facts_round_trip_the_policy_and_the_binding():
    live_policy = plan().policy
    binding = {"metadata": {"name": "eval-job", "namespace": "tenant-alpha"}, "spec": {}}
    given_facts = replace(facts(policy=live_policy), binding=binding)
    back = submission.facts_in(request_of(), submission.facts_out(given_facts))
    assert back.policy == live_policy
    assert back.binding == binding


def test_a_job_karmada_holds_says_its_member_and_what_it_was_moved_from():
    """Submitted again, a job Karmada placed says where (its binding) and, once the
    reconcile recorded a move, where from (rule federation-moves-counted)."""
    request = request_of(placement="cloud-ok")
    first = submission.plan_job(request, facts())
    policy = copy.deepcopy(first.policy)
    policy["metadata"]["annotations"] = {
        "platform.io/placed-in": "idc-1",
        "platform.io/moved-from": "cloud-1",
    }
    del policy["spec"]["failover"]
    binding = {"spec": {"clusters": [{"name": "idc-1", "replicas": 1}]}}
    live_facts = replace(facts(policy=policy, live=first.desired), binding=binding)
    answer = submission.report_job(request, submission.plan_job(request, live_facts))
    assert answer["federation"]["member"] == "idc-1"
    assert answer["federation"]["moved_from"] == ["cloud-1"]
    params = vcjob_params(**{**SINGLE, "federation": True})
    assert job_summary(params, answer, check_mode=False)[-1].endswith(
        "held in its member if that member is lost; placed in idc-1 (moved from cloud-1)"
    )
    # a new job: Karmada has not placed it, and nothing is said of a member
    new = submission.report_job(request, first)
    assert new["federation"]["member"] is None and new["federation"]["moved_from"] == []
    assert job_summary(params, new, check_mode=True)[-1].endswith("if its member is lost")


@given(
    placement=st.sampled_from([None, "local-only", "local-first", "cloud-ok"]),
    compliance=st.booleans(),
    spot=st.booleans(),
)
def test_idc_work_never_names_a_cloud_member(placement, compliance, spot):
    """Invariant: whatever the options, a job without a cloud placement, or with
    compliance, is never given a term that selects the cloud."""
    if compliance and placement in CLOUD_PLACEMENTS:
        placement = None  # refused before anything is built (rule compliance-local-only)
    job = submission.plan_job(
        request_of(placement=placement, compliance=compliance), facts()
    ).desired
    policy = federated_job_policy(job, None, spot)
    terms = locations(policy["spec"]["placement"])
    if compliance or placement in (None, "local-only"):
        assert all("cloud" not in t for t in terms)
    assert terms[0] != ["cloud"]  # IDC first, or both at once
