# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster event source's rules: each event, and each change that is none."""

from __future__ import annotations

import json

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.events.event import EVENT_KEYS
from ansible_collections.gpucloud.platform.plugins.module_utils.events.model import (
    KIND_CONFIGMAP,
    KIND_NODE,
    KIND_PODGROUP,
    KIND_QUEUE,
    Snapshot,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.events.rules import observe
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.events.event_objects import (
    AT,
    configmap,
    node,
    podgroup,
    queue,
    tenant_queue,
)


def seeded(*queues, podgroups=(), spot=4) -> Snapshot:
    """A snapshot holding tenant a's subscription, payg and team queues, tenant b's spot
    queue holding ``spot`` GPUs, and ``queues`` and ``podgroups``."""
    snapshot = Snapshot()
    base = [
        tenant_queue("a", "subscription", deserved=16),
        tenant_queue("a", "payg", deserved=4, capability=4),
        queue("tenant-a-algo", "team", "a", parent="tenant-a-subscription", deserved=8),
        tenant_queue("b", "spot", allocated=spot),
    ]
    for q in [*base, *queues]:
        observe(snapshot, KIND_QUEUE, snapshot.get(KIND_QUEUE, ("", q["metadata"]["name"])), q, AT)
    for pg in podgroups:
        observe(snapshot, KIND_PODGROUP, None, pg, AT)
    return snapshot


def names(events):
    return [(e["platform_event"], e["namespace"], e["name"]) for e in events]


def test_every_event_has_the_common_keys_and_is_json():
    snapshot = seeded()
    events = observe(snapshot, KIND_PODGROUP, None, podgroup("j", unschedulable=True), AT)
    assert len(events) == 1
    event = events[0]
    assert list(event)[: len(EVENT_KEYS)] == list(EVENT_KEYS)
    assert json.loads(json.dumps(event)) == event
    assert event == {
        "platform_event": "paying_job_blocked",
        "kind": "PodGroup",
        "name": "j",
        "namespace": "tenant-a",
        "tenant": "a",
        "reason": "PodGroup tenant-a/j waits unschedulable (Pending) in subscription queue "
        "tenant-a-subscription while spot queues hold 4 GPUs",
        "at": AT,
        "queue": "tenant-a-subscription",
        "queue_type": "subscription",
        "spot_gpus": 4,
    }


# Rule event-paying-job-blocked.


@pytest.mark.parametrize(
    "queue_name, phase",
    [
        ("tenant-a-subscription", "Pending"),
        ("tenant-a-subscription", "Inqueue"),
        ("tenant-a-payg", "Pending"),
        ("tenant-a-algo", "Inqueue"),
    ],
)
def test_a_paying_job_that_becomes_unschedulable_while_spot_holds_gpus_is_blocked(
    queue_name, phase
):
    snapshot = seeded()
    waiting = podgroup("j", queue_name=queue_name, phase=phase)
    assert observe(snapshot, KIND_PODGROUP, None, waiting, AT) == []
    events = observe(
        snapshot,
        KIND_PODGROUP,
        waiting,
        podgroup("j", queue_name=queue_name, phase=phase, unschedulable=True),
        AT,
    )
    assert names(events) == [("paying_job_blocked", "tenant-a", "j")]
    assert events[0]["queue"] == queue_name
    assert events[0]["spot_gpus"] == 4


def test_a_blocked_job_is_emitted_once_not_on_every_status_update():
    snapshot = seeded()
    first = podgroup("j", unschedulable=True, message="1/4")
    assert len(observe(snapshot, KIND_PODGROUP, None, first, AT)) == 1
    # vc-scheduler rewrites the condition's message and time every session.
    again = podgroup("j", unschedulable=True, message="2/4", version="2")
    assert observe(snapshot, KIND_PODGROUP, first, again, AT) == []
    inqueue = podgroup("j", phase="Inqueue", unschedulable=True, version="3")
    assert observe(snapshot, KIND_PODGROUP, again, inqueue, AT) == []


@pytest.mark.parametrize(
    "why, pg, spot",
    [
        ("spot holds nothing", podgroup("j", unschedulable=True), 0),
        ("not unschedulable", podgroup("j"), 4),
        ("running", podgroup("j", phase="Running", unschedulable=True), 4),
        ("no status yet", podgroup("j", phase=None), 4),
        ("a spot queue", podgroup("j", "tenant-b", "tenant-b-spot", unschedulable=True), 4),
        ("an unmanaged queue", podgroup("j", queue_name="lab", unschedulable=True), 4),
        ("an unknown queue", podgroup("j", queue_name="tenant-a-nope", unschedulable=True), 4),
        ("Volcano's default queue", podgroup("j", "team-x", "default", unschedulable=True), 4),
        (
            "a tenant's own labels on the PodGroup",
            podgroup(
                "j",
                queue_name="lab",
                unschedulable=True,
                labels={
                    "platform.io/queue-type": "subscription",
                    "platform.io/billing-type": "subscription",
                    "platform.io/managed-by": "gpucloud-platform",
                    "platform.io/tenant": "a",
                },
            ),
            4,
        ),
    ],
)
def test_no_paying_job_is_blocked(why, pg, spot):
    # "lab" is labelled subscription but not managed by the platform.
    snapshot = seeded(queue("lab", "subscription", "a", managed=False), spot=spot)
    events = observe(snapshot, KIND_PODGROUP, None, pg, AT)
    assert [e for e in events if e["platform_event"] == "paying_job_blocked"] == [], why


def test_an_unschedulable_condition_that_is_not_true_is_no_block():
    snapshot = seeded()
    pg = podgroup("j", unschedulable=True)
    pg["status"]["conditions"][-1]["status"] = "False"
    assert observe(snapshot, KIND_PODGROUP, None, pg, AT) == []


def test_spot_taking_gpus_makes_the_waiting_paying_jobs_blocked():
    snapshot = seeded(spot=0)
    waiting = [
        podgroup("j1", unschedulable=True),
        podgroup("j2", queue_name="tenant-a-payg", phase="Inqueue", unschedulable=True),
        podgroup("j3"),  # not unschedulable
        podgroup("s1", "tenant-b", "tenant-b-spot", unschedulable=True),
    ]
    for pg in waiting:
        assert observe(snapshot, KIND_PODGROUP, None, pg, AT) == []
    spot = snapshot.get(KIND_QUEUE, ("", "tenant-b-spot"))
    events = observe(snapshot, KIND_QUEUE, spot, tenant_queue("b", "spot", allocated=12), AT)
    assert names(events) == [
        ("paying_job_blocked", "tenant-a", "j1"),
        ("paying_job_blocked", "tenant-a", "j2"),
    ]
    assert {e["spot_gpus"] for e in events} == {12}
    # More GPUs to spot while it already holds some: nothing new.
    more = tenant_queue("b", "spot", allocated=16)
    assert (
        observe(snapshot, KIND_QUEUE, snapshot.get(KIND_QUEUE, ("", "tenant-b-spot")), more, AT)
        == []
    )
    assert snapshot.spot_gpus == 16


def test_spot_gpus_of_an_unmanaged_spot_queue_do_not_count():
    snapshot = seeded(queue("lab-spot", "spot", "b", managed=False, allocated=8), spot=0)
    assert snapshot.spot_gpus == 0
    assert observe(snapshot, KIND_PODGROUP, None, podgroup("j", unschedulable=True), AT) == []


def test_a_queue_that_becomes_paying_makes_its_waiting_jobs_blocked():
    snapshot = seeded(queue("tenant-a-new", None, "a"))
    pg = podgroup("j", queue_name="tenant-a-new", unschedulable=True)
    other = podgroup("k", queue_name="tenant-a-other", unschedulable=True)
    assert observe(snapshot, KIND_PODGROUP, None, pg, AT) == []
    assert observe(snapshot, KIND_PODGROUP, None, other, AT) == []
    labelled = queue("tenant-a-new", "payg", "a", deserved=2)
    events = observe(
        snapshot, KIND_QUEUE, snapshot.get(KIND_QUEUE, ("", "tenant-a-new")), labelled, AT
    )
    assert names(events) == [
        ("subscription_changed", "", "tenant-a-new"),
        ("paying_job_blocked", "tenant-a", "j"),
    ]


# Rule event-large-job.


def large(phase, version="1", **kw):
    return podgroup("big", phase=phase, priority_class="large-job", version=version, **kw)


@pytest.mark.parametrize(
    "phase, expected",
    [
        ("Pending", "large_job_waiting"),
        ("Inqueue", "large_job_waiting"),
        (None, "large_job_waiting"),  # no status yet: Pending, as the throttle reads it
        ("Running", "large_job_running"),
    ],
)
def test_a_large_job_added(phase, expected):
    events = observe(seeded(), KIND_PODGROUP, None, large(phase), AT)
    assert [e["platform_event"] for e in events] == [expected]
    assert events[0]["queue"] == "tenant-a-subscription"
    assert events[0]["tenant"] == "a"
    assert events[0]["phase"] == (phase or "Pending")


def test_a_large_job_added_completed_is_no_event():
    assert observe(seeded(), KIND_PODGROUP, None, large("Completed"), AT) == []


def test_a_large_job_emits_on_each_phase_change_and_on_delete_only():
    snapshot = seeded(spot=0)
    steps = [
        (None, large("Pending"), ["large_job_waiting"]),
        (large("Pending"), large("Pending", "2", unschedulable=True), []),  # a status update
        (large("Pending", "2", unschedulable=True), large("Inqueue", "3"), ["large_job_waiting"]),
        (large("Inqueue", "3"), large("Inqueue", "4", message="x"), []),
        (large("Inqueue", "4"), large("Running", "5"), ["large_job_running"]),
        (large("Running", "5"), large("Running", "6"), []),
        (large("Running", "6"), large("Pending", "7"), ["large_job_waiting"]),  # preempted
        (large("Pending", "7"), large("Completed", "8"), []),
        (large("Completed", "8"), None, ["large_job_gone"]),
    ]
    for old, new, expected in steps:
        got = observe(snapshot, KIND_PODGROUP, old, new, AT)
        assert [e["platform_event"] for e in got] == expected, (old, new)


def test_a_large_job_gone_says_the_phase_it_had():
    snapshot = seeded()
    observe(snapshot, KIND_PODGROUP, None, large("Running"), AT)
    (gone,) = observe(snapshot, KIND_PODGROUP, large("Running"), None, AT)
    assert gone["platform_event"] == "large_job_gone"
    assert gone["phase"] == "Running"
    assert (
        gone["reason"]
        == "large job tenant-a/big is gone from queue tenant-a-subscription (it was Running)"
    )


def test_a_job_below_large_is_no_large_job():
    snapshot = seeded()
    for pc in ("normal-job", "critical-job", "", "large"):
        pg = podgroup(f"j-{pc or 'none'}", priority_class=pc)
        assert observe(snapshot, KIND_PODGROUP, None, pg, AT) == []
        assert observe(snapshot, KIND_PODGROUP, pg, None, AT) == []


def test_a_large_job_in_no_tenant_namespace_has_no_tenant():
    pg = podgroup("big", "research", "lab", priority_class="large-job")
    (event,) = observe(seeded(), KIND_PODGROUP, None, pg, AT)
    assert event["tenant"] == ""
    assert event["namespace"] == "research"


# Rule event-pool-changed.


@pytest.mark.parametrize(
    "old, new, changes",
    [
        (None, node("n1"), ["added"]),
        (node("n1"), None, ["removed"]),
        (node("n1"), node("n1", unschedulable=True), ["cordoned"]),
        (node("n1", unschedulable=True), node("n1"), ["uncordoned"]),
        (node("n1"), node("n1", gpus=4), ["allocatable"]),
        (node("n1", gpus=0), node("n1", gpus=8), ["allocatable"]),  # registered, then its GPUs
        (node("n1", gpus=8), node("n1", gpus=None), ["allocatable"]),  # the device plugin gone
        (node("n1"), node("n1", ready=False), ["not-ready"]),
        (node("n1", ready=False), node("n1"), ["ready"]),
        (node("n1", ready=None), node("n1"), ["ready"]),
        (node("n1"), node("n1", ready=False, unschedulable=True), ["cordoned", "not-ready"]),
    ],
)
def test_a_gpu_node_change(old, new, changes):
    snapshot = Snapshot()
    if old is not None:
        observe(snapshot, KIND_NODE, None, old, AT)
    events = observe(snapshot, KIND_NODE, old, new, AT)
    assert [e["change"] for e in events] == changes
    assert all(e["platform_event"] == "pool_changed" and e["namespace"] == "" for e in events)
    assert all(e["tenant"] == "" and e["name"] == "n1" for e in events)


def test_a_removed_node_says_the_gpus_it_had():
    (event,) = observe(Snapshot(), KIND_NODE, node("n1", gpus="8"), None, AT)
    assert event["gpus"] == 8
    assert event["reason"] == "GPU node n1 was removed (8 GPUs)"
    (event,) = observe(Snapshot(), KIND_NODE, node("n1", gpus=8), node("n1", gpus=4), AT)
    assert event["gpus"] == 4


@pytest.mark.parametrize(
    "old, new",
    [
        (None, node("cpu-1", gpus=None)),
        (node("cpu-1", gpus=None), None),
        (node("cpu-1", gpus=None), node("cpu-1", gpus=None, unschedulable=True)),
        (node("cpu-1", gpus="0"), node("cpu-1", gpus=0, ready=False)),
        # A GPU node's heartbeat and anything else no rule reads.
        (node("n1"), node("n1", version="2", heartbeat="2026-01-01T12:00:40Z")),
    ],
)
def test_no_pool_change(old, new):
    assert observe(Snapshot(), KIND_NODE, old, new, AT) == []


# Rule event-subscription-changed.


@pytest.mark.parametrize("queue_type", ["subscription", "team", "payg"])
def test_a_paying_queue_added_and_removed(queue_type):
    snapshot = Snapshot()
    q = tenant_queue("c", queue_type, deserved=8, capability="16")
    (added,) = observe(snapshot, KIND_QUEUE, None, q, AT)
    assert added["platform_event"] == "subscription_changed"
    assert (added["queue"], added["queue_type"], added["change"]) == (
        q["metadata"]["name"],
        queue_type,
        "added",
    )
    assert (added["deserved_gpus"], added["capability_gpus"], added["tenant"]) == (8, 16, "c")
    (removed,) = observe(snapshot, KIND_QUEUE, q, None, AT)
    assert removed["change"] == "removed"


def test_a_paying_queue_whose_gpus_change():
    snapshot = seeded()
    old = snapshot.get(KIND_QUEUE, ("", "tenant-a-payg"))
    both = tenant_queue("a", "payg", deserved=6, capability=6)
    events = observe(snapshot, KIND_QUEUE, old, both, AT)
    assert [e["change"] for e in events] == ["deserved", "capability"]
    assert events[0]["deserved_gpus"] == 6
    capped = tenant_queue("a", "payg", deserved=6, capability=None)
    (event,) = observe(snapshot, KIND_QUEUE, both, capped, AT)
    assert (event["change"], event["capability_gpus"]) == ("capability", None)


@pytest.mark.parametrize(
    "old, new",
    [
        (None, tenant_queue("c", "spot", capability=8)),
        (tenant_queue("c", "spot", capability=8), tenant_queue("c", "spot", capability=2)),
        (None, queue("lab", "subscription", "c", managed=False, deserved=8)),
        (None, queue("root")),
        (None, queue("default", managed=False)),
        (tenant_queue("c", "burst", capability=8), None),
        # Status and what is not GPUs.
        (
            tenant_queue("c", "payg", deserved=4, allocated=0),
            tenant_queue("c", "payg", deserved="4", allocated=4, version="2"),
        ),
    ],
)
def test_no_subscription_change(old, new):
    snapshot = Snapshot()
    if old is not None:
        observe(snapshot, KIND_QUEUE, None, old, AT)
    assert observe(snapshot, KIND_QUEUE, old, new, AT) == []


def test_a_queue_the_platform_stops_managing_is_removed():
    snapshot = Snapshot()
    q = tenant_queue("c", "team", deserved=8)
    observe(snapshot, KIND_QUEUE, None, q, AT)
    (event,) = observe(
        snapshot, KIND_QUEUE, q, tenant_queue("c", "team", deserved=8, managed=False), AT
    )
    assert event["change"] == "removed"


def test_a_tenants_queue_list_added_changed_removed():
    snapshot = Snapshot()
    cm = configmap()
    (added,) = observe(snapshot, KIND_CONFIGMAP, None, cm, AT)
    assert (added["platform_event"], added["kind"], added["change"]) == (
        "subscription_changed",
        "ConfigMap",
        "added",
    )
    assert (added["namespace"], added["name"], added["tenant"]) == (
        "tenant-a",
        "platform-queues",
        "a",
    )
    more = configmap(data={"tenant-a-algo": "team", "tenant-a-payg": "payg"})
    (changed,) = observe(snapshot, KIND_CONFIGMAP, cm, more, AT)
    assert changed["change"] == "changed"
    (removed,) = observe(snapshot, KIND_CONFIGMAP, more, None, AT)
    assert removed["change"] == "removed"


@pytest.mark.parametrize(
    "old, new",
    [
        (None, configmap(name="platform-throttle")),
        (None, configmap(namespace="platform-system")),
        (None, configmap(namespace="research")),
        (None, configmap(managed=False)),
        (configmap(), configmap()),  # a label or annotation change: same data
    ],
)
def test_no_queue_list_change(old, new):
    assert observe(Snapshot(), KIND_CONFIGMAP, old, new, AT) == []


# observe: the snapshot, and a name that holds another object.


def test_observe_keeps_the_snapshot():
    snapshot = seeded()
    pg = podgroup("j")
    observe(snapshot, KIND_PODGROUP, None, pg, AT)
    assert snapshot.get(KIND_PODGROUP, ("tenant-a", "j"))["status"]["phase"] == "Pending"
    observe(snapshot, KIND_PODGROUP, pg, None, AT)
    assert snapshot.get(KIND_PODGROUP, ("tenant-a", "j")) is None
    assert snapshot.queue_facts("tenant-a-subscription").parent is True
    assert snapshot.queue_facts("tenant-a-algo").parent is False
    assert snapshot.queue_facts("nope") is None


def test_a_node_recreated_under_its_name_is_removed_then_added():
    snapshot = Snapshot()
    observe(snapshot, KIND_NODE, None, node("n1", uid="u1"), AT)
    events = observe(
        snapshot, KIND_NODE, snapshot.get(KIND_NODE, ("", "n1")), node("n1", uid="u2"), AT
    )
    assert [e["change"] for e in events] == ["removed", "added"]
