# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What tenant_info reports, from listed objects (no cluster)."""

from __future__ import annotations

from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.plan import plan_tenant
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.report import summarize
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.spec import (
    parse_tenant_spec,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.tenants.tenant_objects import (
    GPU,
    NO_VGPU_RENDERED,
    control_plane,
    networks_of,
)

# What the tenant module reads from a cluster (rule cluster-networks).
NETWORKS = networks_of(control_plane())


def tenant_queues(name, gpus):
    spec = parse_tenant_spec(
        {
            "name": name,
            "subscription": {GPU: gpus},
            "teams": [{"name": "ml", "deserved": {GPU: gpus}}],
        }
    )
    return [q.to_manifest() for q in plan_tenant(spec, {}, discovered=NETWORKS).queues]


def namespace(tenant):
    return {"metadata": {"name": f"tenant-{tenant}", "labels": {"platform.io/tenant": tenant}}}


def job(namespace, queue, phase):
    return {
        "metadata": {"name": f"j-{phase}", "namespace": namespace},
        "spec": {"queue": queue},
        "status": {"state": {"phase": phase}},
    }


def test_tenants_sorted_with_parents_first():
    queues = tenant_queues("b", 4) + tenant_queues("a", 8)
    [a, b] = summarize([namespace("a"), namespace("b")], queues, [])
    assert (a["name"], b["name"]) == ("a", "b")
    names = [q["name"] for q in a["queues"]]
    assert names == ["tenant-a-payg", "tenant-a-spot", "tenant-a-subscription", "tenant-a-ml"]
    assert a["queues"][-1]["parent"] == "tenant-a-subscription"
    subscription = a["queues"][2]
    assert subscription["deserved"] == subscription["capability"] == {GPU: 8, **NO_VGPU_RENDERED}
    assert subscription["type"] == "subscription" and subscription["team"] is None
    assert subscription["state"] is None  # no status yet


def test_active_jobs_count_only_in_the_tenants_own_namespace():
    jobs = [
        job("tenant-a", "tenant-a-ml", "Running"),
        job("tenant-a", "tenant-a-ml", "Completed"),
        job("elsewhere", "tenant-a-ml", "Running"),
    ]
    [a] = summarize([namespace("a")], tenant_queues("a", 8), jobs)
    assert a["active_jobs"] == 1
    assert {q["name"]: q["active_jobs"] for q in a["queues"]}["tenant-a-ml"] == 1


def test_queue_that_does_not_parse_is_left_out_and_a_tenant_without_namespace_shows():
    broken = {
        "metadata": {"name": "tenant-c-x", "labels": {"platform.io/tenant": "c"}},
        "spec": {"parent": "root", "deserved": {GPU: "lots"}},
    }
    [a] = summarize([], [*tenant_queues("a", 8), broken], [])
    assert a["name"] == "a" and a["namespace"] is None
    assert len(a["queues"]) == 4
