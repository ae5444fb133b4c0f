# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The spot market view (``spot_info``) against the local cluster (kwok nodes, real
vc-scheduler and vc-controller-manager).

Two tenants run the design's worked example as spot jobs: tenant a the two 0.1-priced
ones (4 GPUs single, 8 GPUs on 2 pods), tenant b the 0.3 (4 single) and 0.5 (8 on 2
pods) ones. ``spot_info`` ranks them cluster-wide in the reclaim's order (a's two first),
shows each spot queue's capability and use, and gives the safe bid: 0.100001 for a
reclaim of 12 GPUs (a's two jobs go), 0.300001 for 13, none for more than the 24 GPUs
spot holds. A ``spot_reclaim`` that frees 16 GPUs then takes a's two jobs and b's
cheaper one; each tenant's history shows only its own jobs of that reclaim, and b's
last job is now first in line. Each spot queue counts the jobs it lost (rule
spot-reclaim-count), kube-state-metrics exports the count and Prometheus's rule
``platform:spot_reclaims:count1h`` sums it per tenant.

Needs the cluster's GPUs free of other jobs (it skips otherwise).
"""

from __future__ import annotations

import contextlib
import json
import urllib.parse
import urllib.request
import uuid

import pytest

from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    prometheus_url,
    wait_until,
)
from ansible_collections.gpucloud.platform.tests.integration.test_spot import (
    GPU,
    create_queues,
    job_body,
    job_phase,
    remove_queues,
    start_one_by_one,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def market_tenants(api_client, priority_classes):
    """Two tenants' queues (subscription 2 GPUs each, spot capability 64), unique names;
    removed afterwards with every job in their queues (``test_spot``'s helpers)."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    core = client.CoreV1Api(api_client)
    with contextlib.suppress(ApiException):  # 409: it exists
        core.create_namespace({"metadata": {"name": "platform-system"}})
    suffix = uuid.uuid4().hex[:6]
    names = (f"mka{suffix}", f"mkb{suffix}")
    custom = client.CustomObjectsApi(api_client)
    created = create_queues(custom, names)
    yield names
    remove_queues(custom, created)


def prometheus_values(query: str) -> dict[str, float]:
    """The local Prometheus's instant answer to ``query``: tenant -> value."""
    url = f"{prometheus_url()}/api/v1/query?{urllib.parse.urlencode({'query': query})}"
    with urllib.request.urlopen(url, timeout=10) as resp:
        body = json.load(resp)
    assert body["status"] == "success", body
    return {r["metric"].get("tenant", ""): float(r["value"][1]) for r in body["data"]["result"]}


def market(run_module, **args):
    out = run_module("spot_info", args)
    assert not out.get("failed"), out.get("msg")
    assert out["changed"] is False
    return out


def tenant_view(out, tenant):
    (view,) = [t for t in out["tenants"] if t["tenant"] == tenant]
    return view


def ranked(view):
    return [(j["name"], j["price"], j["rank"]) for j in view["jobs"]]


def test_ranks_safe_bid_and_history_after_a_reclaim(
    api_client, namespace, market_tenants, run_module
):
    from kubernetes import client

    custom = client.CustomObjectsApi(api_client)
    a, b = market_tenants
    spot_a, spot_b = f"tenant-{a}-spot", f"tenant-{b}-spot"

    idle = run_module("spot_reclaim", {"need": 0}, check=True)
    assert not idle.get("failed"), idle.get("msg")
    if idle["free"] != idle["pool"] or idle["pool"] % 8 or idle["pool"] < 32:
        pytest.skip(f"needs an idle cluster of 8-GPU nodes; {idle['free']} of {idle['pool']} free")
    before = market(run_module)
    if before["spot_jobs"]:
        pytest.skip(f"needs a cluster without running spot jobs; {before['spot_jobs']} run")

    # The multi-pod jobs start first (the design's "2 h" and "1 h" are the older ones).
    jobs = {
        "a-multi": job_body("a-multi", namespace, spot_a, 4, 2, "0.1"),
        "b-high": job_body("b-high", namespace, spot_b, 4, 2, "0.5"),
        "b-mid": job_body("b-mid", namespace, spot_b, 4, 1, "0.3"),
        "a-cheap": job_body("a-cheap", namespace, spot_a, 4, 1, "0.1"),
    }
    start_one_by_one(custom, namespace, jobs)

    # The queues' use is what vc-scheduler reports in status.allocated: wait for it.
    def allocated_gpus():
        out = market(run_module, reclaim_gpus=12)
        return [tenant_view(out, t)["queue"]["allocated"].get(GPU) for t in (a, b)]

    wait_until(lambda: allocated_gpus() == [12, 12], 60, 1, "both spot queues allocate 12 GPUs")
    # The counts Prometheus will see grow: 0 until the reclaim (kube-state-metrics finds
    # the Queue kind by discovery, then every Queue has a series).
    counted = f'platform_queue_spot_reclaimed_jobs{{tenant=~"{a}|{b}",queue_type="spot"}}'
    wait_until(
        lambda: prometheus_values(counted) == {a: 0.0, b: 0.0},
        90,
        2,
        "the counts at 0 in Prometheus",
    )

    out = market(run_module, reclaim_gpus=12)
    assert out["spot_jobs"] == 4 and out["reclaim_gpus"] == 12
    view_a, view_b = tenant_view(out, a), tenant_view(out, b)
    # Cluster-wide reclaim order: price, single-pod before multi-pod, fewer GPUs, newest.
    assert ranked(view_a) == [("a-cheap", "0.1", 1), ("a-multi", "0.1", 2)]
    assert ranked(view_b) == [("b-mid", "0.3", 3), ("b-high", "0.5", 4)]
    assert [j["at_risk"] for j in view_a["jobs"] + view_b["jobs"]] == [True, True, False, False]
    assert view_a["queue"]["name"] == spot_a and view_a["queue"]["exists"] is True
    assert view_a["queue"]["capability"][GPU] == 64  # a number, as manifests write GPUs
    assert view_b["queue"]["allocated"][GPU] == 12
    # 12 GPUs: a-cheap (4) then a-multi (8), both at 0.1: one step above is safe.
    assert out["safe_bid"] == "0.100001"
    detail = out["safe_bid_detail"]
    assert detail["victims"] == [f"{namespace}/a-cheap", f"{namespace}/a-multi"]
    assert detail["highest_price"] == "0.1" and detail["spot_gpus"] == 24
    assert view_a["history"] == [] and view_b["history"] == []

    one = market(run_module, tenant=b, reclaim_gpus=13)
    assert [t["tenant"] for t in one["tenants"]] == [b]
    assert one["safe_bid"] == "0.300001"  # the 13th GPU comes from b-mid
    too_much = market(run_module, tenant=b, reclaim_gpus=25)
    assert too_much["safe_bid"] is None and too_much["safe_bid_detail"]["possible"] is False

    # A paying demand of (free + 16) GPUs: 16 are reclaimed, a-cheap, a-multi, then b-mid.
    reason = f"spot market test {a}"
    need = idle["pool"] - 24 + 16
    reclaim = run_module("spot_reclaim", {"need": need, "demand_reason": reason})
    assert not reclaim.get("failed"), reclaim.get("msg")
    assert [v["name"] for v in reclaim["victims"]] == ["a-cheap", "a-multi", "b-mid"]
    for name in ("a-cheap", "a-multi", "b-mid"):
        wait_until(
            lambda name=name: job_phase(custom, namespace, name) is None, what=f"{name} deleted"
        )

    after = market(run_module)
    (entry_a,) = tenant_view(after, a)["history"]
    assert [v["name"] for v in entry_a["victims"]] == ["a-cheap", "a-multi"]
    assert entry_a["tenant_freed"] == 12 and entry_a["freed"] == 16
    assert entry_a["reason"] == reason
    (entry_b,) = tenant_view(after, b)["history"]
    assert [v["name"] for v in entry_b["victims"]] == ["b-mid"] and entry_b["tenant_freed"] == 4
    assert tenant_view(after, a)["jobs"] == []
    assert ranked(tenant_view(after, b)) == [("b-high", "0.5", 1)]
    assert after["spot_jobs"] == 1 and after["safe_bid"] == "0.500001"
    # Each spot queue counts the jobs it lost; Prometheus reads the counts and the rule
    # sums their increase per tenant over the hour (increase() extrapolates, so the
    # hour's figure is at least the count, not exactly it).
    assert [tenant_view(after, t)["queue"]["reclaimed_jobs"] for t in (a, b)] == [2, 1]
    wait_until(
        lambda: prometheus_values(counted) == {a: 2.0, b: 1.0}, 60, 2, "the counts in Prometheus"
    )
    hour = f'platform:spot_reclaims:count1h{{tenant=~"{a}|{b}"}}'
    wait_until(
        lambda: (v := prometheus_values(hour)) and v.get(a, 0) >= 2 and 1 <= v.get(b, 0) < 2,
        60,
        2,
        "the reclaims of the hour per tenant",
    )

    only_a = market(run_module, tenant=a)
    assert [t["tenant"] for t in only_a["tenants"]] == [a]
    assert only_a["tenants"][0]["history"] == [entry_a]


def test_an_unknown_tenant_is_refused(run_module):
    out = run_module("spot_info", {"tenant": f"nobody{uuid.uuid4().hex[:6]}"})
    assert out.get("failed") is True and out["changed"] is False
    assert out["msg"].startswith("tenant: 'nobody") and "(rule known-tenant)" in out["msg"]
    assert out["requests"] == 1
