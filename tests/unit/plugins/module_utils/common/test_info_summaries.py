# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule run-summary for the info modules: ``tenant_info``, ``spot_info``,
``inference_service_info`` and ``topology_info`` each return ``summary``, a few aligned
lines with quantities in people's units (rule quantity-for-people)."""

from __future__ import annotations

from ansible_collections.gpucloud.platform.plugins.module_utils.inference.info_summary import (
    services_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.info_summary import (
    market_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.info_summary import (
    tenants_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.info_summary import (
    info_summary as topology_summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.info_summary import (
    tree_summary,
)

GPU = "nvidia.com/gpu"


def queue(kind, deserved=None, capability=None, allocated=None, team=None, jobs=0):
    return {
        "name": f"tenant-alpha-{team or kind}",
        "type": kind,
        "team": team,
        "state": "Open",
        "deserved": deserved or {},
        "capability": capability or {},
        "allocated": allocated or {},
        "active_jobs": jobs,
    }


def no_row_is_quoted(lines):
    """Ansible's YAML output quotes a line that begins with a space or holds ``: ``; a
    quoted row would stand out of line with the others."""
    return all(not line.startswith(" ") and ": " not in line for line in lines[1:])


def test_tenant_info_shows_each_queue_in_cores_gi_and_whole_gpus():
    tenants = [
        {
            "name": "alpha",
            "namespace": "tenant-alpha",
            "active_jobs": 2,
            "queues": [
                queue(
                    "subscription",
                    {GPU: 16, "cpu": "204800m", "memory": "1677722Mi"},
                    {GPU: 16, "cpu": "256", "memory": "2Ti"},
                    {GPU: 8, "cpu": "32", "memory": "128Gi", "pods": 2},
                    jobs=2,
                ),
                queue("team", {GPU: 8}, team="algo"),
            ],
        },
        {"name": "beta", "namespace": None, "active_jobs": 0, "queues": []},
    ]
    assert tenants_summary(tenants) == [
        "2 tenant(s), 2 queue(s), 2 active Volcano Job(s); "
        "GPUS, CORES, MEMORY as allocated/deserved/capability (- not set)",
        "TENANT               QUEUE         STATE  GPUS     CORES         MEMORY                 JOBS",
        "alpha                subscription  Open   8/16/16  32/204.8/256  128Gi/1638.4Gi/2048Gi     2",
        "alpha                team algo     Open   0/8/-    0/-/-         0/-/-                     0",
        "beta (no namespace)  (no queues)                                                           0",
    ]
    assert no_row_is_quoted(tenants_summary(tenants))
    assert tenants_summary([])[0].endswith(": no tenant")


def spot_market(safe_bid="0.100001"):
    return {
        "reclaim_gpus": 4,
        "safe_bid": safe_bid,
        "spot_jobs": 2,
        "safe_bid_detail": {
            "spot_gpus": 6,
            "victims": ["tenant-alpha/cheap"],
            "highest_price": "0.1",
        },
        "tenants": [
            {
                "tenant": "alpha",
                "queue": {
                    "name": "tenant-alpha-spot",
                    "exists": True,
                    "capability": {GPU: 27, "cpu": "426667m", "memory": "3495253Mi"},
                    "allocated": {GPU: 6, "cpu": "2", "memory": "8Gi", "pods": 2},
                    "reclaimed_jobs": 7,
                },
                "jobs": [
                    {
                        "namespace": "tenant-alpha",
                        "name": "dear",
                        "price": "0.5",
                        "gpus": 2,
                        "pods": 1,
                        "rank": 2,
                        "at_risk": False,
                    },
                    {
                        "namespace": "tenant-alpha",
                        "name": "cheap",
                        "price": "0.1",
                        "gpus": 4,
                        "pods": 1,
                        "rank": 1,
                        "at_risk": True,
                    },
                ],
                "history": [
                    {
                        "time": "2026-01-02T00:00:00Z",
                        "reason": "alpha bought 8 GPUs",
                        "victims": [{"name": "old"}],
                    },
                    {"time": "2026-01-01T00:00:00Z", "reason": "x", "victims": []},
                ],
            },
            {
                "tenant": "beta",
                "queue": {"name": "tenant-beta-spot", "exists": False},
                "jobs": [],
                "history": [],
            },
        ],
    }


def test_spot_info_shows_the_safe_bid_the_queues_and_the_jobs_by_rank():
    assert market_summary(spot_market()) == [
        "spot market: 2 running spot job(s) hold 6 GPUs; safe bid against a reclaim of 4 GPU(s): "
        "0.100001 per GPU-hour (it would take 1 job(s), up to price 0.1)",
        "spot queues (GPUS, CORES, MEMORY as allocated/capability):",
        "TENANT  SPOT QUEUE         GPUS  CORES    MEMORY        JOBS  RECLAIMED",
        "alpha   tenant-alpha-spot  6/27  2/426.7  8Gi/3413.3Gi     2          7",
        "beta    (no spot queue)                                    0",
        "running spot jobs, first reclaimed first:",
        "RANK  JOB                 PRICE  GPUS  PODS  AT RISK",
        "1     tenant-alpha/cheap  0.1       4     1  yes",
        "2     tenant-alpha/dear   0.5       2     1  no",
        "alpha: 2 reclaim(s) took its spot jobs; the last, at 2026-01-02T00:00:00Z, took 1 of its "
        "job(s) for alpha bought 8 GPUs",
    ]


def test_no_row_of_the_spot_tables_is_quoted():
    lines = market_summary(spot_market())
    assert no_row_is_quoted(lines[1:5]) and no_row_is_quoted(lines[5:9])


def test_spot_info_says_when_no_bid_is_safe_or_unsafe():
    market = spot_market(safe_bid=None)
    assert market_summary(market)[0] == (
        "spot market: 2 running spot job(s) hold 6 GPUs; a reclaim of 4 GPU(s) cannot be met "
        "from spot, so no bid is safe or unsafe by price"
    )
    market["tenants"] = []
    assert market_summary(market)[1:] == ["no tenant has a spot queue"]


def test_inference_service_info_shows_ready_and_desired_replicas_per_version():
    services = [
        {
            "name": "llm",
            "namespace": "tenant-alpha",
            "mode": "raw",
            "ready": False,
            "current_version": "v2",
            "canaries": [{"version": "v3", "traffic_percent": 10}],
            "traffic": {"v2": 90, "v3": 10},
            "replicas": {
                "v2": {"ready": 2, "desired": 2, "minimum": 1},
                "v3": {"ready": 0, "desired": 1, "minimum": 1},
            },
            "below_minimum": ["v3"],
        },
        {
            "name": "kn",
            "namespace": "tenant-beta",
            "mode": "knative",
            "ready": True,
            "current_version": "v5",
            "previous_version": "v4",
            "canaries": [],
            "traffic": {"latest": 20, "previous": 80},
        },
    ]
    graphs = [
        {
            "name": "ab",
            "namespace": "platform-serving",
            "ready": True,
            "router": "Splitter",
            "routes": [{"service": "llm-a", "weight": 50}, {"service": "llm-b", "weight": 50}],
        }
    ]
    assert services_summary(services, graphs) == [
        "2 inference service(s), 1 ready; REPLICAS as ready/desired",
        "SERVICE           READY  VERSION  ROLE                    REPLICAS  MIN  TRAFFIC",
        "tenant-alpha/llm  no     v2       current                      2/2    1      90%",
        "tenant-alpha/llm  no     v3       canary (below minimum)       0/1    1      10%",
        "tenant-beta/kn    yes    v5       latest                         -    -      20%",
        "tenant-beta/kn    yes    v4       previous                       -    -      80%",
        "A/B graph platform-serving/ab: ready yes, Splitter over llm-a 50%, llm-b 50%",
    ]
    assert no_row_is_quoted(services_summary(services))
    assert services_summary([]) == [
        "0 inference service(s), 0 ready; REPLICAS as ready/desired: no service"
    ]


def hypernode(name, tier, depth, parent=None, children=(), nodes=()):
    return {
        "name": name,
        "tier": tier,
        "depth": depth,
        "parent": parent,
        "leaf": not children,
        "children": list(children),
        "nodes": list(nodes),
    }


def test_topology_info_shows_the_tree_the_nodes_left_out_and_the_broken_rules():
    tree = [
        hypernode("spine-0", 2, 0, children=["tor-0", "tor-1"]),
        hypernode("tor-0", 1, 1, "spine-0", nodes=[f"gpu-{i}" for i in range(6)]),
        hypernode("tor-1", 1, 1, "spine-0"),
    ]
    assert tree_summary(tree, ["gpu-9"], ["tor-1 holds no node"]) == [
        "topology in the cluster: 3 HyperNode(s) in 2 tier(s), 6 node(s) placed, 1 in no leaf, "
        "1 rule(s) broken",
        "HYPERNODE  TIER  PARENT   HOLDS",
        "spine-0    2     -        2 HyperNode(s) (tor-0, tor-1)",
        "tor-0      1     spine-0  6 node(s) (gpu-0, gpu-1, gpu-2, gpu-3 and 2 more)",
        "tor-1      1     spine-0  no node",
        "nodes in no leaf HyperNode: gpu-9",
        "broken: tor-1 holds no node",
    ]
    assert no_row_is_quoted(tree_summary(tree))
    result = {"hypernodes": tree[:1], "unplaced_nodes": [], "errors": []}
    assert topology_summary({"source": "labels"}, result, True)[0].startswith(
        "topology from the labels: 1 HyperNode(s) in 1 tier(s), 0 node(s) placed"
    )
