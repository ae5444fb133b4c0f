# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules burst-quota and burst-billing (hybrid/burst) and the burst_quota module's service
against the fake cluster."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
    Refused,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    team_name_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid import burst, inputs, service
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster

QUEUE_API = "scheduling.volcano.sh/v1beta1"
GPU = "nvidia.com/gpu"


def queue(name, labels=None, capability=None, parent="root", allocated=None):
    spec = {"parent": parent}
    if capability is not None:
        spec["capability"] = {GPU: str(capability)}
    out = {
        "apiVersion": QUEUE_API,
        "kind": "Queue",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
    }
    if allocated is not None:
        out["status"] = {"allocated": {GPU: str(allocated)}}
    return out


# The platform's burst queue as node_groups makes it.
BURST_LABELS = {"platform.io/managed-by": "gpucloud-platform", "platform.io/queue-type": "burst"}


def tenant_objects(cloud_gpus=16):
    labels = {
        "platform.io/tenant": "alpha",
        "platform.io/managed-by": "gpucloud-platform",
        "platform.io/queue-type": "payg",
    }
    return [
        queue("cloud-burst", BURST_LABELS, capability=cloud_gpus),
        queue("tenant-alpha-payg", labels),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "platform-queues", "namespace": "tenant-alpha"},
            "data": {"tenant-alpha-payg": "payg"},
        },
    ]


def params(**extra):
    return {
        "tenant": "alpha",
        "gpus": 8,
        "state": "present",
        "burst_queue": "cloud-burst",
        "force": False,
        **extra,
    }


def test_the_leaf_inherits_the_parent_and_is_listed_as_payg():
    cluster = FakeCluster(tenant_objects())
    out = service.run_burst(params(), cluster, check_mode=False)
    assert out["changed"] and out["writes"] == [
        "Queue/tenant-alpha-burst",
        "ConfigMap/platform-queues",
    ]
    leaf = cluster.get(QUEUE_API, "Queue", "tenant-alpha-burst")
    assert leaf["spec"]["parent"] == "cloud-burst" and "affinity" not in leaf["spec"]
    assert leaf["spec"]["capability"] == {GPU: "8"}
    assert leaf["metadata"]["labels"]["platform.io/queue-type"] == "burst"
    cm = cluster.get("v1", "ConfigMap", "platform-queues", namespace="tenant-alpha")
    assert cm["data"] == {"tenant-alpha-payg": "payg", "tenant-alpha-burst": burst.BURST_BILLING}
    again = service.run_burst(params(), cluster, check_mode=False)
    assert again["changed"] is False and again["writes"] == []


def test_check_mode_writes_nothing():
    cluster = FakeCluster(tenant_objects(), dry_run=True)
    out = service.run_burst(params(), cluster, check_mode=True)
    assert out["changed"] is True
    assert cluster.get(QUEUE_API, "Queue", "tenant-alpha-burst") is None


def test_more_than_the_cloud_is_refused_before_any_write():
    cluster = FakeCluster(tenant_objects(cloud_gpus=4))
    with pytest.raises(PlatformValidationError, match="rule burst-quota"):
        service.run_burst(params(), cluster, check_mode=False)
    assert cluster.get(QUEUE_API, "Queue", "tenant-alpha-burst") is None


def test_no_tenant_and_no_burst_queue_are_refused():
    with pytest.raises(PlatformValidationError, match="'beta' is not a tenant"):
        service.run_burst(params(tenant="beta"), FakeCluster(tenant_objects()), check_mode=False)
    without_parent = [o for o in tenant_objects() if o["metadata"]["name"] != "cloud-burst"]
    with pytest.raises(Refused, match="node_groups makes it"):
        service.run_burst(params(), FakeCluster(without_parent), check_mode=False)


def test_a_quota_below_what_the_leaf_holds_needs_force():
    objects = tenant_objects()
    objects.append(
        queue(
            "tenant-alpha-burst",
            {"platform.io/tenant": "alpha", "platform.io/managed-by": "gpucloud-platform"},
            capability=8,
            parent="cloud-burst",
            allocated=8,
        )
    )
    cluster = FakeCluster(objects)
    with pytest.raises(Refused, match="below the 8 GPUs"):
        service.run_burst(params(gpus=4), cluster, check_mode=False)
    forced = service.run_burst(params(gpus=4, force=True), cluster, check_mode=False)
    assert forced["changed"] and forced["diff"]["after"]["capability"] == 4


def test_removing_a_leaf_with_jobs_needs_force_and_drops_the_list_entry():
    cluster = FakeCluster(tenant_objects())
    service.run_burst(params(), cluster, check_mode=False)
    cluster.put(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "train", "namespace": "tenant-alpha"},
            "spec": {"queue": "tenant-alpha-burst"},
            "status": {"state": {"phase": "Running"}},
        }
    )
    with pytest.raises(Refused, match="holds jobs train"):
        service.run_burst(params(state="absent"), cluster, check_mode=False)
    out = service.run_burst(params(state="absent", force=True), cluster, check_mode=False)
    assert out["changed"] and cluster.get(QUEUE_API, "Queue", "tenant-alpha-burst") is None
    cm = cluster.get("v1", "ConfigMap", "platform-queues", namespace="tenant-alpha")
    assert cm["data"] == {"tenant-alpha-payg": "payg"}


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({"gpus": -1}, "gpus"),
        ({"gpus": None}, "gpus"),
        ({"tenant": "Bad_Name"}, "tenant"),
        ({"burst_queue": "no/slash"}, "burst_queue"),
    ],
)
def test_bad_input_names_its_field(given, field):
    with pytest.raises(PlatformValidationError) as err:
        inputs.validate_burst(params(**given))
    assert all(m.startswith(f"{field}:") for m in err.value.messages), err.value.messages


def test_a_team_may_not_be_named_like_the_burst_leaf():
    assert team_name_errors("alpha", "burst", "teams[0].name")
    assert team_name_errors("alpha", "cloud-burst", "teams[0].name")


def test_rule_burst_running_work():
    assert burst.burst_shrink_refusal("l", 4, 8, force=False).startswith("gpus: 4 is below the 8")
    assert burst.burst_shrink_refusal("l", 4, 8, force=True) is None
    assert burst.burst_shrink_refusal("l", 8, 8, force=False) is None
    assert "holds jobs a, b" in burst.burst_removal_refusal("l", ["a", "b"], force=False)
    assert burst.burst_removal_refusal("l", [], force=False) is None
    assert burst.burst_removal_refusal("l", ["a"], force=True) is None
    # quantities as the API writes them
    assert burst.allocated_gpus({"status": {"allocated": {GPU: "2k"}}}) == 2000
    assert burst.capability_gpus({"spec": {}}) is None


@pytest.mark.parametrize(
    ("name", "labels", "why"),
    [
        ("root", None, "Volcano's own queue"),
        ("default", None, "Volcano's own queue"),
        ("tenant-alpha-payg", None, "a tenant's queue name"),
        (
            "shared",
            {"platform.io/tenant": "alpha", "platform.io/queue-type": "team"},
            "tenant alpha's team queue",
        ),
        ("shared", {}, "a queue the platform did not make for bursting"),
    ],
)
def test_burst_queue_is_only_the_platforms_own(name, labels, why):
    """Rule burst-queue-platform-owned: never a tenant's queue, root or default."""
    from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.queues import (
        burst_target_errors,
    )

    live = None if labels is None else queue(name, labels)
    (error,) = burst_target_errors(name, live)
    assert error.field == "burst_queue" and why in str(error)
    assert "(rule burst-queue-platform-owned)" in str(error)
    assert burst_target_errors("cloud-burst", queue("cloud-burst", BURST_LABELS)) == []
    assert burst_target_errors("cloud-burst", None) == []  # node_groups makes it


def test_burst_quota_refuses_another_tenants_queue_as_the_parent_before_any_write():
    team = queue("beta-team", {"platform.io/tenant": "beta", "platform.io/queue-type": "team"})
    for parent, why in (("beta-team", "tenant beta's team queue"), ("root", "Volcano's own")):
        cluster = FakeCluster([*tenant_objects(), team])
        with pytest.raises(PlatformValidationError, match=why):
            service.run_burst(params(burst_queue=parent), cluster, check_mode=False)
        assert cluster.writes == []
