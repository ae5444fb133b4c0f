# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vcjob's pure rules: options, the manifest, leaf-queue-of-tenant, job-immutable, reports."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs import submit
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.classes import (
    job_class_table,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.queues import kinds, ownership
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.jobs.job_objects import (
    SINGLE,
    vcjob_params,
)


def params(**kw):
    return vcjob_params(**{**SINGLE, **kw})


def queue(name, qtype, parent="root"):
    return {
        "metadata": {"name": name, "labels": {"platform.io/queue-type": qtype}},
        "spec": {"parent": parent},
    }


# The tenant's leaf queues (its platform-queues ConfigMap): the subscription has a team.
QUEUES = {"tenant-alpha-algo": "team", "tenant-alpha-payg": "payg"}


def fields_of(exc_info):
    return {e.field for e in exc_info.value.errors}


def test_option_errors_name_each_option():
    errors = submit.option_errors(
        params(kind=None, wait_timeout=-1, throttle_grace=-2, wait_sleep=0)
    )
    assert [str(e) for e in errors] == [
        "kind: give kind (with its parameters) or manifest",
        "wait_timeout: -1 must be 0 or more seconds",
        "throttle_grace: -2 must be 0 or more seconds",
        "wait_sleep: 0 must be at least 1 second",
    ]
    assert submit.option_errors(params(state="absent", name=None)) == [
        submit.FieldError("name", "is required to delete a job")
    ]
    named = params(state="absent", name=None, manifest={"metadata": {"name": "m"}})
    assert submit.option_errors(named) == [] and submit.job_name(named) == "m"


def test_check_submission_collects_options_classes_and_the_job():
    with pytest.raises(PlatformValidationError) as info:
        submit.check_submission(params(replicas=0, gpus_per_pod=9, job_classes={"huge": {}}))
    assert fields_of(info) == {"job_classes.huge"}  # a bad table stops before the job
    with pytest.raises(PlatformValidationError) as info:
        submit.check_submission(params(replicas=0, gpus_per_pod=9))
    assert {"replicas", "gpus_per_pod"} <= fields_of(info)
    submit.check_submission(params())
    submit.check_submission(params(state="absent", kind=None))


def test_leaf_queue_type():
    assert kinds.leaf_queue_type("tenant-alpha-algo", QUEUES, "alpha") == ("team", [])
    assert kinds.leaf_queue_type("tenant-alpha-payg", QUEUES, "alpha") == ("payg", [])
    qtype, errors = kinds.leaf_queue_type("tenant-alpha-subscription", QUEUES, "alpha")
    assert qtype is None
    assert [str(e) for e in errors] == [
        "queue: 'tenant-alpha-subscription' is this tenant's subscription queue, a parent with "
        "team queues under it (Volcano runs work only in leaf queues); expected one of tenant "
        "alpha's leaf queues (tenant-alpha-algo, tenant-alpha-payg) (rule leaf-queue-of-tenant)"
    ]
    # a queue of another tenant, even one whose name starts like this tenant's
    for other in ("tenant-beta-algo", "tenant-alpha-b-x"):
        qtype, errors = kinds.leaf_queue_type(other, QUEUES, "alpha")
        assert qtype is None and f"{other!r} is " in str(errors[0])
        assert "(rule leaf-queue-of-tenant)" in str(errors[0])
    # the option a manifest's queue came from is the one named
    errors = kinds.leaf_queue_type("root", {}, "alpha", "manifest.spec.queue")[1]
    assert str(errors[0]).startswith("manifest.spec.queue: 'root' is Volcano's root queue")
    assert "leaf queues (none yet)" in str(errors[0])


def test_a_tenant_without_its_queue_list_is_refused():
    with pytest.raises(PlatformValidationError) as info:
        ownership.listed_leaves(None, "alpha")
    assert "tenant: 'alpha' has no queue list (ConfigMap platform-queues in tenant-alpha)" in str(
        info.value
    )
    assert ownership.listed_leaves({"data": {"q": "team"}}, "alpha") == {"q": "team"}


def test_job_for_queues_uses_the_queue_type():
    desired, qtype = submit.job_for_queues(
        params(queue="tenant-alpha-payg"), job_class_table({}), QUEUES
    )
    assert qtype == "payg"
    assert desired["metadata"]["labels"]["platform.io/billing-type"] == "payg"
    with pytest.raises(PlatformValidationError) as info:
        submit.job_for_queues(
            params(queue="tenant-alpha-payg", job_class="debug"), job_class_table({}), QUEUES
        )
    assert "is a payg queue" in str(info.value)


def test_desired_job_completes_a_manifest_with_the_options():
    manifest = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "mine"},
        "spec": {
            "queue": "elsewhere",
            "tasks": [
                {
                    "name": "main",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "main", "image": "i"}],
                        }
                    },
                }
            ],
        },
    }
    p = params(kind=None, manifest=manifest, name="renamed", job_class="normal")
    desired = submit.desired_job(p, job_class_table({}), "team")
    assert desired["metadata"]["name"] == "renamed"
    assert desired["spec"]["queue"] == "tenant-alpha-algo"
    assert desired["metadata"]["namespace"] == "tenant-alpha"


def test_changed_fields_ignores_what_the_server_adds():
    desired = {"spec": {"queue": "q", "tasks": [{"replicas": 1}]}, "kind": "Job"}
    live = {
        "spec": {"queue": "q", "tasks": [{"replicas": 1}], "minAvailable": 1},
        "kind": "Job",
        "status": {},
    }
    assert submit.changed_fields(desired, live) == []
    other = {"spec": {"queue": "r", "tasks": [{"replicas": 2}]}}
    assert submit.changed_fields(desired, other) == ["spec.queue", "spec.tasks", "kind"]
    assert submit.changed_fields(1, 2) == ["(root)"]
    text = submit.differs_text("ns", "j", [f"f{i}" for i in range(12)])
    assert "differs in f0, f1, f2, f3, f4, f5, f6, f7, f8, f9; a Volcano Job" in text


def test_job_phase():
    assert submit.job_phase(None) == "Pending"
    assert submit.job_phase({"status": {}}) == "Pending"
    assert submit.job_phase({"status": {"state": {"phase": "Running"}}}) == "Running"


def test_throttle_texts_quote_the_configmap():
    cm = {"data": {"until": "2999-01-01T00:00:00Z", "reason": "large job ns/big is waiting"}}
    assert submit.throttled_text(cm, "q") == (
        "spec.queue: q accepts no jobs below large-job until 2999-01-01T00:00:00Z because "
        "large job ns/big is waiting"
    )
    assert submit.still_throttled_text(cm, "q", 30) == (
        "queue q was still throttled after 30 s (until 2999-01-01T00:00:00Z: large job ns/big "
        "is waiting); try again later or submit to another queue"
    )


def podgroup(owner_uid):
    return {
        "metadata": {"name": f"pg-{owner_uid}", "ownerReferences": [{"uid": owner_uid}]},
        "status": {
            "phase": "Inqueue",
            "conditions": [
                {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources"},
                {"type": "Scheduled", "status": "False", "reason": "Gang", "message": "1/4 pods"},
            ],
        },
    }


def test_podgroup_summary_and_the_wait_failure():
    pgs = [podgroup("a"), podgroup("b")]
    pg = submit.owned_podgroup(pgs, "b")
    assert pg is pgs[1] and submit.owned_podgroup(pgs, "c") is None
    summary = submit.podgroup_summary(pg)
    assert summary == {
        "name": "pg-b",
        "phase": "Inqueue",
        "conditions": [
            {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources"},
            {"type": "Scheduled", "status": "False", "reason": "Gang", "message": "1/4 pods"},
        ],
    }
    assert submit.podgroup_summary(None) == {}
    assert submit.not_running_text("ns", "j", "Pending", 20, summary) == (
        "job ns/j is Pending, not Running, after 20 s; PodGroup pg-b is Inqueue: "
        "Unschedulable=True: NotEnoughResources; Scheduled=False: Gang 1/4 pods"
    )
    assert submit.not_running_text("ns", "j", "Pending", 20, {}).endswith("it has no PodGroup yet")
