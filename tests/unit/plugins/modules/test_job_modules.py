# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vcjob and large_job_throttle against the fake cluster."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.jobs import (
    service,
    supply_io,
    throttle_io,
)
from ansible_collections.gpucloud.platform.plugins.modules import (
    large_job_throttle as throttle_module,
)
from ansible_collections.gpucloud.platform.plugins.modules import vcjob as vcjob_module
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.jobs.job_objects import (
    CM_KEY,
    LARGE,
    NS,
    SINGLE,
    big_job,
    cluster,
    large_pg,
    queue,
    throttle_cm,
    throttled,
)
from ansible_collections.kubernetes.core.plugins.module_utils.k8s import waiter as k8s_waiter


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    clock = {"t": 0.0}
    monkeypatch.setattr(service, "sleep", lambda s: clock.__setitem__("t", clock["t"] + s))
    monkeypatch.setattr(service, "monotonic", lambda: clock["t"])
    # the waits go through kubernetes.core's Waiter, whose clock reads its own ``time``
    monkeypatch.setattr(
        k8s_waiter, "time", SimpleNamespace(monotonic=service.monotonic, sleep=service.sleep)
    )
    return clock


@pytest.fixture
def warnings(monkeypatch):
    """The warnings the service gives the module (Ansible's own collector depends on whether
    controller code was imported into the test process)."""
    seen = []
    for module in (service, supply_io, throttle_io):
        monkeypatch.setattr(module, "warn", seen.append)
    return seen


def test_creates_then_is_idempotent(run_module):
    fake = cluster(phase="Running")
    out = run_module(vcjob_module, fake, **SINGLE)
    assert out["changed"] is True and out["queue"] == {"name": "tenant-alpha-algo", "type": "team"}
    assert fake.writes == [("create", "Job", "eval")]
    live = fake.store[("Job", NS, "eval")]
    assert live["metadata"]["labels"]["platform.io/billing-type"] == "subscription"
    assert (
        out["diff"]["before"] == {} and out["diff"]["after"]["spec"]["queue"] == "tenant-alpha-algo"
    )
    # the tenant's queue list, the job, the Queues, the Nodes and the Pods (rules
    # job-never-runs and job-waits-for), the throttle ConfigMap, the create
    assert out["requests"] == 7
    again = run_module(vcjob_module, fake, **SINGLE)
    assert again["changed"] is False and len(fake.writes) == 1
    assert again["phase"] == "Running" and again["requests"] == 2


def test_existing_job_that_differs_is_refused(run_module):
    fake = cluster()
    run_module(vcjob_module, fake, **SINGLE)
    out = run_module(vcjob_module, fake, **{**SINGLE, "gpus_per_pod": 2})
    assert out["failed"] and "exists and differs in spec.tasks" in out["msg"]
    assert out["changed"] is False and out["job"]["metadata"]["name"] == "eval"
    assert len(fake.writes) == 1


def test_bad_input_fails_before_any_request(run_module):
    fake = cluster()
    out = run_module(vcjob_module, fake, **{**SINGLE, "replicas": 0, "gpus_per_pod": 9})
    assert out["failed"] and out["requests"] == 0 and fake.requests == 0
    assert "replicas: 0 must be >= 1" in out["msg"] and "gpus_per_pod: 9" in out["msg"]
    assert any(e.startswith("gpus_per_pod: 9") for e in out["errors"])


def test_queue_must_be_a_leaf_of_the_tenant_and_fit_the_class(run_module):
    fake = cluster()
    parent = run_module(vcjob_module, fake, **{**SINGLE, "queue": "tenant-alpha-subscription"})
    assert parent["failed"] and "subscription queue, a parent with team queues" in parent["msg"]
    assert parent["requests"] == 1  # the queues only
    missing = run_module(vcjob_module, fake, **{**SINGLE, "queue": "tenant-alpha-other"})
    assert missing["failed"] and "is no queue of this tenant" in missing["msg"]
    spot = run_module(vcjob_module, fake, **{**SINGLE, "queue": "tenant-alpha-spot"})
    assert (
        spot["failed"]
        and "class normal runs only in subscription or team or payg queues" in spot["msg"]
    )
    debug = run_module(
        vcjob_module, fake, **{**SINGLE, "queue": "tenant-alpha-payg", "job_class": "debug"}
    )
    assert debug["failed"] and "is a payg queue" in debug["msg"]
    assert not fake.real_writes


def test_throttled_queue_refuses_without_hold(run_module):
    fake = throttled()
    out = run_module(vcjob_module, fake, **SINGLE)
    assert (
        out["failed"] and "accepts no jobs below large-job until 2999-01-01T00:00:00Z" in out["msg"]
    )
    assert out["changed"] is False and out["held_seconds"] == 0
    other = run_module(vcjob_module, fake, **{**SINGLE, "queue": "tenant-alpha-payg"})
    assert other["changed"] is True


def test_hold_waits_until_the_large_job_runs(run_module):
    fake = throttled(phase="Running")
    calls = {"n": 0}
    original = fake.list

    def list_and_start(api_version, kind, **kw):
        if kind == "PodGroup":
            calls["n"] += 1
            if calls["n"] == 3:
                fake.put(large_pg("Running", 4))
        return original(api_version, kind, **kw)

    fake.list = list_and_start
    out = run_module(vcjob_module, fake, **SINGLE, hold_when_throttled=True, wait_sleep=5)
    assert out["changed"] is True and out["held_seconds"] == 10
    assert CM_KEY not in fake.store
    assert ("delete", "ConfigMap", "platform-throttle") in fake.writes
    assert fake.writes[-1] == ("create", "Job", "eval")


def test_hold_gives_up_after_hold_timeout(run_module):
    fake = throttled()
    out = run_module(vcjob_module, fake, **SINGLE, hold_when_throttled=True, hold_timeout=30)
    assert out["failed"] and "still throttled after 30 s" in out["msg"]
    assert ("create", "Job", "eval") not in fake.writes


def test_hold_releases_a_throttle_whose_large_job_is_gone(run_module):
    """A PodGroup whose Volcano Job is gone (awaiting the garbage collector) holds nothing."""
    fake = cluster(phase="Running", extra=[throttle_cm(), large_pg()])
    out = run_module(vcjob_module, fake, **SINGLE, hold_when_throttled=True)
    assert out["changed"] is True and out["held_seconds"] == 0
    assert fake.writes == [("delete", "ConfigMap", "platform-throttle"), ("create", "Job", "eval")]


def test_check_mode_reports_a_held_submission_and_writes_nothing(run_module, warnings):
    fake = throttled()
    out = run_module(
        vcjob_module, fake, **SINGLE, hold_when_throttled=True, _ansible_check_mode=True
    )
    assert out["changed"] is True and out["phase"] == "Held"
    assert out["job"]["metadata"]["name"] == "eval"
    assert warnings == [
        "spec.queue: tenant-alpha-algo accepts no jobs below large-job until "
        "2999-01-01T00:00:00Z because large job tenant-alpha/big (32 GPUs) is waiting; "
        "the job would be held until then"
    ]
    assert fake.writes == [] and CM_KEY in fake.store


def test_check_mode_creates_nothing(run_module):
    fake = cluster()
    fake.dry_run = True  # what check mode makes of the client
    out = run_module(vcjob_module, fake, **SINGLE, wait=True, _ansible_check_mode=True)
    assert out["changed"] is True
    assert out["job"]["spec"]["queue"] == "tenant-alpha-algo"
    assert out["diff"]["before"] == {} and out["diff"]["after"]["metadata"]["name"] == "eval"
    # the job goes to the API server as a dry run (its webhooks and policies judge it) only
    assert fake.writes == [("dry-run", "Job", "eval")] and fake.real_writes == []
    assert ("Job", NS, "eval") not in fake.store


def test_large_job_that_does_not_start_engages_the_throttle(run_module):
    fake = cluster(phase="Pending")
    out = run_module(vcjob_module, fake, **LARGE)
    assert out["changed"] and out["throttle_engaged"] is True
    cm = fake.store[CM_KEY]
    assert cm["data"]["queues"] == "tenant-alpha-algo"
    entry = json.loads(cm["data"]["entries.json"])[0]
    assert entry["uid"] == "uid-big" and entry["gpus"] == 32


def test_large_job_that_starts_within_the_grace_engages_nothing(run_module):
    fake = cluster(phase="Running")
    out = run_module(vcjob_module, fake, **LARGE)
    assert out["changed"] and out["throttle_engaged"] is False and out["phase"] == "Running"
    assert CM_KEY not in fake.store


def test_engage_throttle_false_leaves_the_throttle_alone(run_module):
    fake = cluster(phase="Pending")
    out = run_module(vcjob_module, fake, **LARGE, engage_throttle=False)
    assert out["changed"] and out["throttle_engaged"] is False
    assert CM_KEY not in fake.store


def test_wait_timeout_reports_the_podgroup_conditions(run_module):
    fake = cluster(phase="Pending", extra=[large_pg(owner="eval")])
    out = run_module(vcjob_module, fake, **SINGLE, wait=True, wait_timeout=20)
    assert out["failed"] and "is Pending, not Running, after 20 s" in out["msg"]
    assert "Unschedulable=True: NotEnoughResources 0/8 nodes are available" in out["msg"]
    assert out["podgroup"]["name"] == "eval-pg"
    assert out["changed"] is True  # the job was created


def test_wait_returns_once_running(run_module):
    fake = cluster(phase="Running")
    out = run_module(vcjob_module, fake, **SINGLE, wait=True)
    assert out["changed"] is True and out["phase"] == "Running"


def test_absent_deletes_once(run_module):
    fake = cluster(phase="Running")
    run_module(vcjob_module, fake, **SINGLE)
    gone = run_module(vcjob_module, fake, tenant="alpha", name="eval", state="absent")
    assert gone["changed"] is True and ("delete", "Job", "eval") in fake.writes
    assert gone["phase"] == "Absent" and gone["diff"]["before"]["metadata"]["name"] == "eval"
    again = run_module(vcjob_module, fake, tenant="alpha", name="eval", state="absent")
    assert again["changed"] is False and again["requests"] == 1


def test_absent_in_check_mode_reports_and_deletes_nothing(run_module):
    fake = cluster(phase="Running")
    run_module(vcjob_module, fake, **SINGLE)
    fake.dry_run = True
    out = run_module(
        vcjob_module, fake, tenant="alpha", name="eval", state="absent", _ansible_check_mode=True
    )
    assert out["changed"] is True and out["phase"] == "Absent"
    assert out["job"]["metadata"]["name"] == "eval"
    assert ("Job", NS, "eval") in fake.store
    assert [w for w in fake.writes if w[0] != "create"] == []


def test_absent_needs_a_name(run_module):
    out = run_module(vcjob_module, cluster(), tenant="alpha", state="absent")
    assert out["failed"] and out["requests"] == 0
    assert "name: is required to delete a job" in out["msg"]


def test_reconcile_engages_releases_and_is_idempotent(run_module):
    # 24 of the subscription's 32 GPUs in use: the 16-GPU large job waits for GPUs.
    full = {
        **queue("tenant-alpha-subscription", "subscription", capability={"nvidia.com/gpu": 32}),
        "status": {"allocated": {"nvidia.com/gpu": 24}},
    }
    fake = cluster(extra=[large_pg(), big_job(replicas=2), full])
    first = run_module(throttle_module, fake)
    assert first["changed"] and first["engaged"] == ["tenant-alpha/big"]
    assert first["throttles"]["tenant-alpha"]["queues"] == ["tenant-alpha-algo"]
    # the Job's demand (2 x 8), not the PodGroup's minResources
    assert "(16 GPUs)" in first["throttles"]["tenant-alpha"]["reason"]
    # namespaces, podgroups, jobs, configmaps; nodes, queues and pods (rules job-never-runs
    # and throttle-can-help, for the waiting job); one apply
    assert first["requests"] == 8
    assert fake.lists == ["Namespace", "PodGroup", "Job", "ConfigMap", "Node", "Queue", "Pod"]
    assert first["diff"] == {
        "before": {"tenant-alpha": []},
        "after": {"tenant-alpha": ["tenant-alpha-algo"]},
    }
    second = run_module(
        throttle_module, fake
    )  # judged again (nodes, queues, pods): it still can be
    assert second["changed"] is False and second["requests"] == 7
    fake.put(large_pg("Running", 4))
    third = run_module(throttle_module, fake)
    assert third["released"] == ["tenant-alpha/big"] and third["throttles"] == {}
    assert CM_KEY not in fake.store


def test_reconcile_without_large_jobs_lists_no_jobs(run_module):
    fake = cluster()
    out = run_module(throttle_module, fake)
    assert out["changed"] is False and out["requests"] == 3
    assert "Job" not in fake.lists


def test_reconcile_skips_a_podgroup_whose_job_is_gone(run_module):
    fake = cluster(extra=[large_pg(), throttle_cm()])
    out = run_module(throttle_module, fake)
    assert out["engaged"] == [] and out["released"] == ["tenant-alpha/big"]
    assert CM_KEY not in fake.store


def test_reconcile_in_check_mode_does_not_delete(run_module):
    fake = cluster(extra=[large_pg("Running", 4), big_job(), throttle_cm()])
    fake.dry_run = True
    out = run_module(throttle_module, fake, _ansible_check_mode=True)
    assert out["changed"] is True and out["released"] == ["tenant-alpha/big"]
    assert CM_KEY in fake.store and fake.writes == []


def test_reconcile_in_check_mode_engages_as_a_dry_run(run_module):
    fake = cluster(extra=[large_pg(), big_job()])
    fake.dry_run = True
    out = run_module(throttle_module, fake, _ansible_check_mode=True)
    assert out["changed"] is True and out["engaged"] == ["tenant-alpha/big"]
    assert fake.writes == [("dry-run", "ConfigMap", "platform-throttle")]
    assert CM_KEY not in fake.store


def test_reconcile_leaves_an_unmanaged_configmap_alone(run_module, warnings):
    cm = throttle_cm()
    cm["metadata"]["labels"] = {}
    fake = cluster(extra=[large_pg(), big_job(), cm])
    out = run_module(throttle_module, fake)
    assert out["skipped"] == ["tenant-alpha"] and out["changed"] is False and not fake.real_writes
    assert warnings == [
        "tenant-alpha: ConfigMap platform-throttle is not managed by the platform; left alone"
    ]


def test_reconcile_refuses_a_negative_timeout_before_any_request(run_module):
    fake = cluster()
    out = run_module(throttle_module, fake, timeout=-1)
    assert out["failed"] and out["msg"] == "timeout: -1 must be 0 or more seconds"
    assert out["requests"] == 0 and fake.requests == 0


def test_a_tenant_identity_submits_a_large_job_and_leaves_the_throttle_to_the_platform(
    run_module, warnings
):
    """Rule platform-state: a tenant's own identity may not write platform-throttle; the
    job is still submitted, and the platform's reconcile engages the throttle."""
    from kubernetes.client.rest import ApiException

    class TenantIdentity(type(cluster())):
        def apply(self, manifest, field_manager="gpucloud-platform"):
            if (
                manifest["kind"] == "ConfigMap"
                and manifest["metadata"]["name"] == "platform-throttle"
            ):
                self.requests += 1
                exc = ApiException(status=403, reason="Forbidden")
                exc.body = json.dumps(
                    {
                        "message": "ValidatingAdmissionPolicy 'gpucloud-platform-state' denied request"
                    }
                )
                raise exc
            return super().apply(manifest, field_manager)

    fake = TenantIdentity(list(cluster().store.values()), "Pending")
    out = run_module(vcjob_module, fake, **LARGE)
    assert out["changed"] is True and out["throttle_engaged"] is False
    assert ("create", "Job", "big") in fake.writes and CM_KEY not in fake.store
    assert any("large_job_throttle run keeps it" in w for w in warnings)


def test_poll_interval_is_a_deprecated_alias_of_wait_sleep(run_module):
    """kubernetes.core's name is wait_sleep; poll_interval still works until 1.0.0."""
    fake = cluster()
    out = run_module(vcjob_module, fake, **SINGLE, poll_interval=0)
    assert out["failed"] and "wait_sleep: 0 must be at least 1 second" in out["msg"]
