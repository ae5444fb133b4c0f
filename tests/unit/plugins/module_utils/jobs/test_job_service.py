# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The jobs service against the fake cluster: what it reads, writes and raises."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest
from kubernetes.client.rest import ApiException

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PartialWrite,
    PlatformValidationError,
    Refused,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs import service, throttle_io
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.jobs.job_objects import (
    CM_KEY,
    LARGE,
    NS,
    SINGLE,
    JobController,
    big_job,
    cluster,
    large_pg,
    throttle_cm,
    throttled,
    vcjob_params,
)
from ansible_collections.kubernetes.core.plugins.module_utils.k8s import waiter as k8s_waiter

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


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


params = vcjob_params


def api_error(status, message):
    exc = ApiException(status=status, reason="Forbidden")
    exc.body = json.dumps({"message": message})
    return exc


THROTTLE_DENIAL = (
    'admission webhook denied the request: ValidatingAdmissionPolicy "gpucloud-large-job-throttle" '
    "denied request: spec.queue: tenant-alpha-algo accepts no jobs below large-job"
)


class DenyingCreates(JobController):
    """The API server denies the first ``denials`` creates with ``message``."""

    def __init__(self, objects, denials=1, message=THROTTLE_DENIAL):
        super().__init__(objects)
        self.denials = denials
        self.message = message

    def create(self, manifest):
        if self.denials:
            self.denials -= 1
            self.requests += 1
            raise api_error(403, self.message)
        return super().create(manifest)


class FailingApplies(JobController):
    """Every apply after the first ``ok`` fails with a server error."""

    def __init__(self, objects, ok=0):
        super().__init__(objects)
        self.ok = ok

    def apply(self, manifest, field_manager="gpucloud-platform"):
        if self.ok == 0:
            self.requests += 1
            raise api_error(500, "etcdserver: request timed out")
        self.ok -= 1
        return super().apply(manifest, field_manager)


def objects_of(fake):
    return list(fake.store.values())


def test_run_creates_the_job_and_reports_it():
    fake = cluster(phase="Running")
    result = service.run(params(**SINGLE), fake, check_mode=False)
    assert result["changed"] is True and result["phase"] == "Running"
    assert result["job"]["metadata"]["name"] == "eval"
    assert result["diff"]["before"] == {} and fake.writes == [("create", "Job", "eval")]


def test_run_refuses_a_queue_of_another_tenant_before_any_write():
    fake = cluster()
    with pytest.raises(PlatformValidationError, match="'tenant-alpha-other' is no queue of this"):
        service.run(params(**{**SINGLE, "queue": "tenant-alpha-other"}), fake, check_mode=False)
    assert fake.writes == [] and fake.requests == 1


def test_a_throttle_denial_while_holding_holds_and_creates():
    """The admission policy may see the throttle before the module read it."""
    fake = DenyingCreates(objects_of(cluster()))
    result = service.run(params(**SINGLE, hold_when_throttled=True), fake, check_mode=False)
    assert result["changed"] is True and result["held_seconds"] == 0
    assert fake.writes == [("create", "Job", "eval")]


def test_a_denied_create_is_refused_with_the_servers_words():
    fake = DenyingCreates(objects_of(cluster()), message="denied: quota exceeded")
    with pytest.raises(Refused) as info:
        service.run(params(**SINGLE, hold_when_throttled=True), fake, check_mode=False)
    assert str(info.value) == "creating job tenant-alpha/eval failed: denied: quota exceeded"
    assert info.value.extra["changed"] is False and fake.writes == []


def test_a_throttle_denial_without_hold_is_refused():
    fake = DenyingCreates(objects_of(cluster()))
    with pytest.raises(Refused, match="creating job tenant-alpha/eval failed: admission webhook"):
        service.run(params(**SINGLE), fake, check_mode=False)


def test_a_failure_after_the_create_says_the_job_was_created():
    fake = FailingApplies(objects_of(cluster(phase="Pending")))
    with pytest.raises(PartialWrite) as info:
        service.run(params(**LARGE), fake, check_mode=False)
    assert info.value.what == "submitting job tenant-alpha/big"
    assert info.value.done == ["created Job tenant-alpha/big"]
    assert info.value.report["changed"] is True
    assert ("Job", NS, "big") in fake.store and CM_KEY not in fake.store


def test_a_wait_that_times_out_is_refused_with_changed_true():
    fake = cluster(phase="Pending", extra=[large_pg(owner="eval")])
    with pytest.raises(Refused) as info:
        service.run(params(**SINGLE, wait=True, wait_timeout=10), fake, check_mode=False)
    assert info.value.extra["changed"] is True
    assert info.value.extra["podgroup"]["name"] == "eval-pg"


def test_check_mode_with_a_live_job_neither_waits_nor_writes(no_sleep):
    fake = cluster(phase="Pending")
    service.run(params(**SINGLE), fake, check_mode=False)
    result = service.run(params(**SINGLE, wait=True), fake, check_mode=True)
    assert result["changed"] is False and result["phase"] == "Pending"
    assert no_sleep["t"] == 0 and len(fake.writes) == 1


def test_absent_in_check_mode_deletes_nothing():
    fake = cluster(phase="Running")
    service.run(params(**SINGLE), fake, check_mode=False)
    result = service.run(params(tenant="alpha", state="absent", name="eval"), fake, check_mode=True)
    assert result["changed"] is True and result["job"]["metadata"]["name"] == "eval"
    assert ("Job", NS, "eval") in fake.store and fake.writes == [("create", "Job", "eval")]


def test_a_failed_delete_is_refused_with_the_servers_words():
    class FailingDeletes(JobController):
        def delete(self, *args, **kwargs):
            self.requests += 1
            raise api_error(500, "etcdserver: request timed out")

    fake = FailingDeletes(objects_of(cluster(phase="Running")))
    service.run(params(**SINGLE), fake, check_mode=False)
    with pytest.raises(Refused) as info:
        service.run(params(tenant="alpha", state="absent", name="eval"), fake, check_mode=False)
    assert str(info.value) == "deleting job tenant-alpha/eval failed: etcdserver: request timed out"


def test_a_read_error_goes_through():
    class FailingReads(JobController):
        def get(self, *args, **kwargs):
            raise api_error(500, "etcdserver: leader changed")

    with pytest.raises(ApiException):
        service.run(params(**SINGLE), FailingReads(objects_of(cluster())), check_mode=False)


def second_tenant():
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "tenant-beta", "labels": {"platform.io/tenant": "beta"}},
        },
        {
            **large_pg(owner="huge"),
            "metadata": {**large_pg(owner="huge")["metadata"], "namespace": "tenant-beta"},
        },
        {**big_job(), "metadata": {"name": "huge", "namespace": "tenant-beta", "uid": "uid-huge"}},
    ]


def test_run_throttle_reconciles_every_tenant_with_one_list_per_kind():
    fake = cluster(extra=[large_pg(), big_job(), *second_tenant()])
    result = service.run_throttle({"timeout": 300, "namespaces": []}, fake, check_mode=False)
    assert result["engaged"] == ["tenant-alpha/big", "tenant-beta/huge"]
    assert fake.lists == [
        "Namespace",
        "PodGroup",
        "Job",
        "ConfigMap",
        "Node",
        "Queue",
        "Pod",
    ]
    assert [w[0] for w in fake.writes] == ["apply", "apply"]
    only = service.run_throttle(
        {"timeout": 300, "namespaces": ["tenant-beta"]}, fake, check_mode=False
    )
    assert only["changed"] is False and list(only["throttles"]) == ["tenant-beta"]


def test_run_throttle_failing_part_way_names_what_it_wrote():
    fake = FailingApplies(
        objects_of(cluster(extra=[large_pg(), big_job(), *second_tenant()])), ok=1
    )
    with pytest.raises(PartialWrite) as info:
        service.run_throttle({"timeout": 300, "namespaces": []}, fake, check_mode=False)
    assert info.value.what == "throttle reconcile"
    assert info.value.done == ["apply tenant-alpha/platform-throttle"]


def test_reconcile_namespace_returns_the_configmap_as_it_now_is():
    fake = throttled()
    change, cm, _away = throttle_io.reconcile_namespace(fake, NS, "alpha", T0, 300)
    assert change.action == "apply"  # the entry stays; the texts are the platform's own
    assert cm["data"]["queues"] == "tenant-alpha-algo" and "(32 GPUs)" in cm["data"]["reason"]
    change, cm, _away = throttle_io.reconcile_namespace(fake, NS, "alpha", T0, 300)
    assert change.action == "none" and cm == fake.store[CM_KEY]
    fake.put(large_pg("Running", 4))
    change, cm, _away = throttle_io.reconcile_namespace(fake, NS, "alpha", T0, 300)
    assert change.action == "delete" and cm is None and CM_KEY not in fake.store


def test_reconcile_namespace_leaves_an_unmanaged_configmap_alone():
    cm = throttle_cm()
    cm["metadata"]["labels"] = {}
    fake = cluster(extra=[cm, large_pg(), big_job()])
    change, live, away = throttle_io.reconcile_namespace(fake, NS, "alpha", T0, 300)
    assert change.action == "none" and live["data"] == cm["data"] and away == []
    assert fake.writes == []


# --- the waits: kubernetes.core's Waiter, one request a poll ---------------------------


def reading(fake, kind, clock, then=None, after=0):
    """Record when ``kind`` is read (GET or LIST); on read ``after`` (1: the first) call
    ``then``, as the job controller would act between two polls."""
    seen = []

    def wrap(original):
        def read(api_version, kind_, *args, **kw):
            if kind_ == kind:
                seen.append(clock["t"])
                if then is not None and len(seen) == after:
                    then()
            return original(api_version, kind_, *args, **kw)

        return read

    fake.get, fake.list = wrap(fake.get), wrap(fake.list)
    return seen


def test_wait_phase_reads_the_job_once_a_poll_until_it_runs(no_sleep):
    fake = cluster(phase="Pending")
    service.run(params(**SINGLE), fake, check_mode=False)
    key = ("Job", NS, "eval")

    def start():
        fake.store[key]["status"] = {"state": {"phase": "Running"}}

    reads = reading(fake, "Job", no_sleep, then=start, after=3)
    fake.requests = 0
    phase, live = service.wait_phase(fake, NS, "eval", 10, 2)
    assert phase == "Running" and live["status"]["state"]["phase"] == "Running"
    assert reads == [0, 2, 4] and fake.requests == 3


def test_wait_phase_returns_a_failed_job_at_once(no_sleep):
    fake = cluster(phase="Failed")
    service.run(params(**SINGLE), fake, check_mode=False)
    fake.requests = 0
    assert service.wait_phase(fake, NS, "eval", 10, 2)[0] == "Failed"
    assert fake.requests == 1 and no_sleep["t"] == 0


def test_wait_phase_of_an_absent_job_times_out_as_pending_with_none(no_sleep):
    fake = cluster()
    reads = reading(fake, "Job", no_sleep)
    assert service.wait_phase(fake, NS, "gone", 5, 2) == ("Pending", None)
    assert reads == [0, 2, 4, 6]  # the first look after the timeout is the last


def test_podgroup_created_lists_the_podgroups_until_the_jobs_appears(no_sleep):
    fake = cluster()
    lists = reading(fake, "PodGroup", no_sleep, then=lambda: fake.put(large_pg()), after=2)
    assert service.podgroup_created(fake, NS, "uid-big", 5) is True
    assert lists == [0, service.GRACE_POLL_SECONDS]


def test_podgroup_created_gives_up_after_podgroup_wait_seconds(no_sleep):
    fake = cluster(extra=[large_pg(owner="other")])
    lists = reading(fake, "PodGroup", no_sleep)
    assert service.podgroup_created(fake, NS, "uid-big", 5) is False
    step = service.GRACE_POLL_SECONDS
    assert lists == [float(t) for t in range(0, service.PODGROUP_WAIT_SECONDS + 1, step)]
    assert fake.requests == len(lists)
