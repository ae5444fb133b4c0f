# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module vcjob through its flow (``jobs/submission.py``, ``service.JOB_FLOW``): plan
tables over facts with no cluster, the Job built once, and the contract's promise on the
fake cluster: ``parsed`` of what ``gathered`` returned answers as the check-mode run
does."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
    Refused,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs import (
    service,
    submission,
    submit,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.jobs.job_objects import (
    LARGE,
    NODES,
    SINGLE,
    big_job,
    cluster,
    large_pg,
    queue,
    queue_list,
    throttle_cm,
    vcjob_params,
)

QUEUES = (
    {
        **queue("tenant-alpha-subscription", "subscription", capability={"nvidia.com/gpu": 32}),
        "status": {"allocated": {"nvidia.com/gpu": 8}},
    },
    queue("tenant-alpha-algo", "team", parent="tenant-alpha-subscription"),
    queue("tenant-alpha-payg", "payg"),
)


def request_of(**options):
    return submission.parse_job(vcjob_params(**options))


def facts(live=None, throttle=None, nodes=NODES, pods=()):
    return submission.SubmitFacts(
        queue_list=queue_list(),
        live=live,
        queues=QUEUES,
        pvcs=None,
        nodes=nodes,
        pods=pods,
        throttle=throttle,
    )


def desired(**options):
    request = request_of(**options)
    return submission.plan_job(request, facts()).desired


@pytest.mark.parametrize(
    ("options", "given", "action", "waits"),
    [
        (SINGLE, facts(), "create", False),
        (SINGLE, facts(throttle=throttle_cm()), "throttled", False),
        ({**SINGLE, "hold_when_throttled": True}, facts(throttle=throttle_cm()), "hold", False),
        (LARGE, facts(throttle=throttle_cm()), "create", True),  # large-job is never held
        # Nodes not readable: not compared; it still waits for its queue's GPUs
        (LARGE, facts(nodes=None), "create", True),
        ({**SINGLE, "queue": "tenant-alpha-payg"}, facts(nodes=None), "create", False),
        ({**SINGLE, "state": "absent"}, facts(), "none", False),
    ],
)
def test_the_plan_over_facts(options, given, action, waits):
    planned = submission.plan_job(request_of(**options), given)
    assert planned.action == action
    assert (planned.waits is not None) is waits


def test_a_live_job_that_is_the_desired_one_is_kept_and_one_that_differs_is_refused():
    live = {**desired(**SINGLE), "status": {"state": {"phase": "Running"}}}
    planned = submission.plan_job(request_of(**SINGLE), facts(live=live))
    assert planned.action == "exists"
    report = submission.report_job(request_of(**SINGLE), planned)
    assert report["changed"] is False and report["phase"] == "Running"
    with pytest.raises(Refused, match=r"exists and differs in spec\.tasks"):
        submission.plan_job(request_of(**{**SINGLE, "gpus_per_pod": 2}), facts(live=live))
    deleted = submission.plan_job(request_of(**{**SINGLE, "state": "absent"}), facts(live=live))
    assert deleted.action == "delete"


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({**SINGLE, "queue": "tenant-alpha-subscription"}, "rule leaf-queue-of-tenant"),
        ({**SINGLE, "queue": "tenant-alpha-payg", "job_class": "debug"}, "is a payg queue"),
        ({**SINGLE, "gpus_per_pod": 8, "replicas": 5, "kind": "pytorch_ddp"}, "GPUs"),
    ],
)
def test_the_plan_refuses(options, words):
    with pytest.raises(PlatformValidationError, match=words):
        submission.plan_job(request_of(**options), facts())


def test_the_job_is_built_once_in_the_plan(monkeypatch):
    """The issue "vcjob builds its Job twice": the plan builds it once, with its queue's
    type; parse only checks it (its queue's type unknown), as the module did before it
    connected."""
    request = request_of(**{**SINGLE, "queue": "tenant-alpha-payg"})
    built = []
    real = submit.desired_job
    monkeypatch.setattr(submit, "desired_job", lambda *a: built.append(a[2]) or real(*a))
    planned = submission.plan_job(request, facts())
    assert built == ["payg"]
    assert planned.desired["metadata"]["labels"]["platform.io/billing-type"] == "payg"


def test_parse_refuses_before_connecting_and_keeps_what_the_checks_learn():
    with pytest.raises(PlatformValidationError):
        request_of(**{**SINGLE, "state": "parsed", "gpus_per_pod": -1})
    request = request_of(**{**LARGE, "state": "gathered"})
    assert request.present and request.queue == "tenant-alpha-algo"
    assert request.job_class == "large" and request.gang.gpus == 32
    gone = request_of(tenant="alpha", name="eval", state="absent")
    assert not gone.present and gone.gang is None


# -- the contract on the fake cluster ---------------------------------------------------------


def world(kind, live_job, throttle, busy):
    extra = []
    if busy:
        extra.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "busy", "namespace": "tenant-beta"},
                "spec": {
                    "nodeName": "gpu-0",
                    "containers": [{"resources": {"requests": {"nvidia.com/gpu": "8"}}}],
                },
                "status": {"phase": "Running"},
            }
        )
    fake = cluster(extra=extra)
    if live_job is not None:
        # submitted before the throttle, without the grace a large job gets to start
        options = {**kind, **live_job, "engage_throttle": False, "hold_when_throttled": False}
        service.run(vcjob_params(**options), fake, check_mode=False)
    if throttle:
        for obj in (throttle_cm(), large_pg(), big_job()):
            fake.put(obj)
    return copy.deepcopy(list(fake.store.values()))


KINDS = st.sampled_from(
    [
        SINGLE,
        LARGE,
        {**SINGLE, "hold_when_throttled": True},
        {**SINGLE, "queue": "tenant-alpha-subscription"},
        {**LARGE, "replicas": 5},
        {**SINGLE, "dataset_pvc": "data"},
        {**SINGLE, "queue": "tenant-alpha-payg", "job_class": "debug"},
    ]
)


@settings(max_examples=30, deadline=None)
@given(
    kind=KINDS,
    live_job=st.sampled_from([None, {}, {"image": "other"}]),
    throttle=st.booleans(),
    busy=st.booleans(),
)
def test_parsed_of_gathered_is_the_check_mode_run(kind, live_job, throttle, busy):
    try:
        objects = world(kind, live_job, throttle, busy)
    except (PlatformValidationError, Refused):
        objects = world(kind, None, throttle, busy)
    fake = service.JOB_FLOW.run(
        vcjob_params(**{**kind, "state": "gathered"}),
        type(cluster())(copy.deepcopy(objects)),
        check_mode=False,
    )
    gathered = fake["gathered"]
    parsed_params = vcjob_params(**{**kind, "state": "parsed", "facts": gathered})
    check_cluster = type(cluster())(copy.deepcopy(objects))
    check_cluster.dry_run = True
    try:
        check = service.run(vcjob_params(**kind), check_cluster, check_mode=True)
    except (PlatformValidationError, Refused) as exc:
        with pytest.raises(type(exc)) as again:
            service.JOB_FLOW.offline(parsed_params)
        assert str(again.value) == str(exc)
        assert getattr(again.value, "extra", None) == getattr(exc, "extra", None)
        return
    parsed = service.JOB_FLOW.offline(parsed_params)
    assert parsed is not None and parsed.pop("state") == "parsed" and parsed.pop("changed") is False
    check.pop("changed")
    assert parsed == check


def test_gathered_reads_only():
    fake = cluster()
    out = service.JOB_FLOW.run(vcjob_params(**{**SINGLE, "state": "gathered"}), fake, False)
    assert out["changed"] is False and fake.writes == []
    gathered = out["gathered"]
    assert [c["metadata"]["name"] for c in gathered["configmaps"]] == ["platform-queues"]
    assert gathered["jobs"] == [] and gathered["persistentvolumeclaims"] is None
    assert len(gathered["nodes"]) == len(NODES) and gathered["pods"] == []
    assert service.JOB_FLOW.offline(vcjob_params(**SINGLE)) is None  # present connects
