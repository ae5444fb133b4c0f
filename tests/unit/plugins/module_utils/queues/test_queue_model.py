# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.queues.model import (
    Queue,
    allocated,
    foreign_owner,
    needs_adoption,
    same_capacity,
    same_spec,
)

GPU = "nvidia.com/gpu"


def test_manifest_always_names_parent_root_included():
    m = Queue(name="q").to_manifest()
    assert m["spec"]["parent"] == "root"
    assert m["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert m["kind"] == "Queue"


def test_manifest_carries_queue_labels():
    q = Queue(
        name="tenant-a-ml", parent="tenant-a-subscription", queue_type="team", tenant="a", team="ml"
    )
    labels = q.to_manifest()["metadata"]["labels"]
    assert labels == {
        "platform.io/tenant": "a",
        "platform.io/queue-type": "team",
        "platform.io/team": "ml",
        "platform.io/managed-by": "gpucloud-platform",
    }


def test_manifest_renders_quantities_and_guarantee():
    q = Queue(
        name="q",
        deserved={GPU: Decimal(4), "memory": Decimal(64 * 2**30)},
        guarantee={GPU: Decimal(2)},
        capability={"cpu": Decimal("0.5")},
    )
    spec = q.to_manifest()["spec"]
    assert spec["deserved"] == {GPU: 4, "memory": "64Gi"}
    assert spec["guarantee"] == {"resource": {GPU: 2}}
    assert spec["capability"] == {"cpu": "500m"}


def test_capacity_fields_are_left_out_and_written_apart():
    q = Queue(
        name="s",
        deserved={GPU: Decimal(0)},
        capability={GPU: Decimal(0)},
        capacity_fields=("capability",),
    )
    assert "capability" not in q.to_manifest()["spec"]
    assert q.to_manifest()["spec"]["deserved"] == {GPU: 0}
    part = q.capacity_manifest()
    assert part["spec"] == {"capability": {GPU: 0}}
    assert "labels" not in part["metadata"]


def test_empty_capacity_field_is_written_empty_not_left_out():
    q = Queue(name="p", capacity_fields=("deserved", "capability"))
    assert q.capacity_manifest()["spec"] == {"deserved": {}, "capability": {}}


def test_from_manifest_collects_every_bad_field():
    with pytest.raises(PlatformValidationError) as exc:
        Queue.from_manifest(
            {
                "metadata": {"name": "q"},
                "spec": {"deserved": {"cpu": "-1"}, "capability": {GPU: "x"}, "weight": 0},
            }
        )
    fields = [e.field for e in exc.value.errors]
    assert "q.spec.deserved.cpu" in fields
    assert f"q.spec.capability.{GPU}" in fields
    assert "q.spec.weight" in fields


def test_from_manifest_reads_missing_parent_as_empty():
    q = Queue.from_manifest({"metadata": {"name": "q"}, "spec": {}})
    assert q.parent == ""


def test_same_spec_sees_a_dropped_resource():
    desired = Queue(name="q", deserved={GPU: Decimal(4)})
    live = Queue(name="q", deserved={GPU: Decimal(4), "cpu": Decimal(8)}).to_manifest()
    assert not same_spec(desired, live)
    assert same_spec(desired, desired.to_manifest())


def test_same_spec_compares_quantities_not_spelling():
    desired = Queue(name="q", deserved={"memory": Decimal(2**30)})
    live = desired.to_manifest()
    live["spec"]["deserved"]["memory"] = "1024Mi"
    assert same_spec(desired, live)


def test_same_spec_ignores_capacity_fields_same_capacity_does_not():
    desired = Queue(name="s", capability={GPU: Decimal(0)}, capacity_fields=("capability",))
    live = Queue(name="s", capability={GPU: Decimal(12)}).to_manifest()
    assert same_spec(desired, live)
    assert not same_capacity(desired, live)


def test_allocated_reads_status():
    m = {"metadata": {"name": "q"}, "status": {"allocated": {GPU: "3", "pods": "2"}}}
    assert allocated(m) == {GPU: Decimal(3), "pods": Decimal(2)}
    assert allocated({"metadata": {"name": "q"}}) == {}


resources = st.dictionaries(
    st.sampled_from([GPU, "cpu", "memory", "pods"]),
    st.integers(min_value=0, max_value=10**6).map(Decimal),
)


@given(deserved=resources, capability=resources, guarantee=resources, weight=st.integers(1, 100))
def test_manifest_round_trip(deserved, capability, guarantee, weight):
    q = Queue(
        name="tenant-a-x",
        parent="tenant-a-subscription",
        queue_type="team",
        tenant="a",
        team="x",
        deserved=deserved,
        capability=capability,
        guarantee=guarantee,
        weight=weight,
    )
    back = Queue.from_manifest(q.to_manifest())
    assert back.deserved == deserved
    assert back.capability == capability
    assert back.guarantee == guarantee
    assert (back.parent, back.tenant, back.team, back.queue_type, back.weight) == (
        q.parent,
        "a",
        "x",
        "team",
        weight,
    )
    assert same_spec(q, q.to_manifest())


def test_reading_once_parses_each_live_manifest_once_and_holds_nothing_after(monkeypatch):
    from ansible_collections.gpucloud.platform.plugins.module_utils.queues import model

    live = Queue(name="q", capability={GPU: Decimal(4)}).to_manifest()
    parsed = []
    original = Queue.from_manifest.__func__

    def counting(cls, manifest, source=None):
        parsed.append(manifest["metadata"].get("name"))
        return original(cls, manifest, source)

    monkeypatch.setattr(Queue, "from_manifest", classmethod(counting))
    with model.reading_once():
        first = model.read_live(live)
        assert model.read_live(live) is first
        with model.reading_once():  # a nested block shares the outer memo
            assert model.read_live(live) is first
        unreadable = {"metadata": {}, "spec": {}}  # no name
        assert model.read_live(unreadable) is None
        assert model.read_live(unreadable) is None  # remembered as unreadable
    assert parsed == ["q", None]
    assert model._READ_ONCE.memo is None
    model.read_live(live)
    model.read_live(live)
    assert parsed.count("q") == 3  # outside the block every read parses


def test_read_live_is_none_for_no_manifest_or_an_unreadable_one():
    from ansible_collections.gpucloud.platform.plugins.module_utils.queues.model import read_live

    assert read_live(None) is None
    assert read_live({"metadata": {"name": "q"}, "spec": {"capability": "lots"}}) is None
    assert read_live(Queue(name="q").to_manifest()).name == "q"


def _queue_named(name, labels, *managers):
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {
            "name": name,
            "labels": labels,
            "managedFields": [{"manager": m, "operation": "Apply"} for m in managers]
            # Volcano's own writes of every queue never count.
            + [
                {"manager": "vc-controller-manager", "operation": "Update"},
                {"manager": "vc-scheduler", "operation": "Update", "subresource": "status"},
                {"manager": "kubectl", "operation": "Update", "subresource": "status"},
            ],
        },
        "spec": {"parent": "root"},
    }


def test_queue_name_owned_adopts_only_what_the_platform_alone_wrote():
    """Rule queue-name-owned: the tenant's own queue and an unlabelled queue that only the
    platform's field managers wrote (a run stopped part-way) are the tenant's; a queue
    another tenant has, or one anybody else wrote, is not."""
    mine = _queue_named("tenant-a-spot", {"platform.io/tenant": "a"}, "gpucloud-platform")
    part_way = _queue_named("tenant-a-spot", {}, "gpucloud-platform-capacity")
    theirs = _queue_named("tenant-a-spot", {"platform.io/tenant": "b"}, "gpucloud-platform")
    kubectl = _queue_named("tenant-a-spot", {}, "gpucloud-platform-capacity", "kubectl-edit")
    nobody = _queue_named("tenant-a-spot", {})
    assert foreign_owner(mine, "a") is None
    assert foreign_owner(part_way, "a") is None
    assert foreign_owner(theirs, "a") == "tenant 'b'"
    assert foreign_owner(kubectl, "a") == "no tenant of the platform"
    assert foreign_owner(nobody, "a") == "no tenant of the platform"
    assert needs_adoption(part_way) and not needs_adoption(mine) and not needs_adoption(nobody)
