# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inputs every module refuses before its first write, naming the field (issue 13, item 6):
node selectors, an empty spot pool, spot prices, throttle namespaces and job sizes."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.jobs import service as jobs_service
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs import supply_io, throttle_io
from ansible_collections.gpucloud.platform.plugins.modules import (
    large_job_throttle as throttle_module,
)
from ansible_collections.gpucloud.platform.plugins.modules import payg_capacity as payg_module
from ansible_collections.gpucloud.platform.plugins.modules import spot_capacity as capacity_module
from ansible_collections.gpucloud.platform.plugins.modules import spot_reclaim as reclaim_module
from ansible_collections.gpucloud.platform.plugins.modules import tenant as tenant_module
from ansible_collections.gpucloud.platform.plugins.modules import topology as topology_module
from ansible_collections.gpucloud.platform.plugins.modules import (
    topology_info as topology_info_module,
)
from ansible_collections.gpucloud.platform.plugins.modules import vcjob as vcjob_module
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.jobs.job_objects import (
    LARGE,
    SINGLE,
    cluster,
    gpu_node,
    queue,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.jobs.test_job_service import (
    api_error,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.modules.test_tenant import (
    module_args as tenant_args,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import (
    node as spot_node,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import (
    queue as spot_queue,
)

GPU = "nvidia.com/gpu"


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    clock = {"t": 0.0}
    monkeypatch.setattr(jobs_service, "sleep", lambda s: clock.__setitem__("t", clock["t"] + s))
    monkeypatch.setattr(jobs_service, "monotonic", lambda: clock["t"])


@pytest.fixture
def warnings(monkeypatch):
    seen = []
    for module in (jobs_service, supply_io, throttle_io):
        monkeypatch.setattr(module, "warn", seen.append)
    return seen


# --- node_selector: rule label-key and rule label-value, before any request ---------

SPLICED = {"platform.io/pool": "main,platform.io/gpu=a100"}
BAD_KEY = {"platform.io/Pool!": "main"}


def _refused_before_any_request(out, fake, field):
    assert out["failed"] is True and out["changed"] is False
    assert any(e.startswith(f"{field}:") for e in out["errors"]), out["errors"]
    assert out["requests"] == 0 and fake.requests == 0 and fake.writes == []


@pytest.mark.parametrize(
    ("selector", "field"),
    [(SPLICED, "node_selector.platform.io/pool"), (BAD_KEY, "node_selector.platform.io/Pool!")],
)
@pytest.mark.parametrize(
    ("module", "args"),
    [
        (tenant_module, None),
        (capacity_module, {}),
        (reclaim_module, {"need": 1}),
        (payg_module, {"tenant": "a", "capability": {GPU: 4}}),
    ],
    ids=["tenant", "spot_capacity", "spot_reclaim", "payg_capacity"],
)
def test_a_bad_node_selector_is_refused_naming_the_key(run_module, module, args, selector, field):
    fake = FakeCluster()
    given = tenant_args(node_selector=selector) if args is None else {**args}
    given["node_selector"] = selector
    out = run_module(module, fake, **given)
    _refused_before_any_request(out, fake, field)
    assert repr(selector[next(iter(selector))]) in out["msg"] or "is not a label key" in out["msg"]


@pytest.mark.parametrize("module", [topology_module, topology_info_module])
@pytest.mark.parametrize(
    "selector",
    ["Platform.IO/pool!=main", "pool=main,x y", "pool in (a,b c)", "=main"],
)
def test_the_topology_modules_refuse_a_bad_label_selector(run_module, module, selector):
    fake = FakeCluster()
    out = run_module(module, fake, node_selector=selector)
    assert out["failed"] is True and out["requests"] == 0 and fake.requests == 0
    assert all(e.startswith("node_selector") for e in out["errors"])


def test_the_topology_modules_take_a_good_label_selector(run_module):
    fake = FakeCluster()
    out = run_module(
        topology_info_module,
        fake,
        node_selector="platform.io/pool=main,gpu in (a100, h100),!cordon",
    )
    assert "failed" not in out and out["requests"] >= 1


def test_a_bad_tier_label_key_is_refused(run_module):
    fake = FakeCluster()
    out = run_module(topology_module, fake, tier_labels=["topology.volcano.sh/tor", "bad key"])
    assert out["failed"] is True and out["requests"] == 0
    assert out["errors"][0].startswith("tier_labels[1]: 'bad key' is not a label key")


# --- spot_capacity: rule spot-pool-not-empty and rule spot-capability-floor --------------


def spot_cluster():
    return FakeCluster(
        [
            {**spot_node(f"n{i}", labels={"platform.io/pool": "main"}), "kind": "Node"}
            for i in range(2)
        ]
        + [
            spot_queue("alpha", "subscription", deserved={GPU: 4}),
            spot_queue("alpha", "spot", capability={GPU: 5}),
            spot_queue("beta", "spot", capability={GPU: 3}),
        ]
    )


def test_spot_capacity_refuses_a_selector_that_matches_no_node(run_module):
    fake = spot_cluster()
    out = run_module(capacity_module, fake, node_selector={"platform.io/pool": "mian"})
    assert out["failed"] is True and out["changed"] is False
    assert out["errors"] == [
        "node_selector: {'platform.io/pool': 'mian'} matches 0 node(s), 0 of them Ready and "
        "schedulable; every spot queue would get 0 GPUs. Fix the selector, or set "
        "allow_empty_pool: true if the pool is meant to be empty"
    ]
    assert fake.writes == []


def test_spot_capacity_refuses_a_pool_without_gpus(run_module):
    fake = FakeCluster(
        [
            {**spot_node("cpu-0", gpus=0, labels={"platform.io/pool": "cpu"}), "kind": "Node"},
            spot_queue("alpha", "spot"),
        ]
    )
    out = run_module(capacity_module, fake, node_selector={"platform.io/pool": "cpu"})
    assert out["failed"] is True
    assert "matches 1 node(s) (1 Ready and schedulable) with 0 allocatable GPUs" in out["msg"]
    assert fake.writes == []


def test_an_allowed_empty_pool_never_writes_a_0_cpu_or_memory_capability(run_module):
    fake = spot_cluster()
    out = run_module(
        capacity_module, fake, node_selector={"platform.io/pool": "drained"}, allow_empty_pool=True
    )
    assert out["changed"] is True and out["pool"][GPU] == 0
    for name in ("tenant-alpha-spot", "tenant-beta-spot"):
        capability = fake.store[("Queue", "", name)]["spec"]["capability"]
        # Volcano reads cpu 0 / memory 0 as unlimited: the smallest unit instead.
        assert capability == {GPU: 0, "cpu": "1m", "memory": "1Mi"}


def test_spot_capacity_over_a_real_pool_still_works(run_module):
    fake = spot_cluster()
    out = run_module(capacity_module, fake, node_selector={"platform.io/pool": "main"})
    assert "failed" not in out and out["pool"][GPU] == 16
    rows = {r["tenant"]: r for r in out["tenants"]}
    assert rows["alpha"]["new"][GPU] == 12 and rows["beta"]["new"] == {
        GPU: 0,
        "cpu": "1m",
        "memory": "1Mi",
    }


# --- vcjob spot_price: rule spot-price -----------------------------------------------

SPOT = {
    **SINGLE,
    "name": "cheap",
    "queue": "tenant-alpha-spot",
    "job_class": "spot",
}


@pytest.mark.parametrize(
    ("price", "words"),
    [
        ("1e400", "'1e400' is too large; a spot price must be below 1000000 per GPU-hour"),
        ("1000000", "is too large"),
        ("nan", "'nan' must be a decimal price greater than 0"),
        ("inf", "'inf' must be a decimal price greater than 0"),
        ("-0.5", "'-0.5' must be a decimal price greater than 0"),
        ("0.0000001", "has more than 6 decimal places"),
    ],
)
def test_vcjob_refuses_a_spot_price_out_of_bounds(run_module, price, words):
    fake = cluster()
    out = run_module(vcjob_module, fake, **SPOT, spot_price=price)
    assert out["failed"] is True and out["requests"] == 0 and fake.requests == 0
    assert any(e.startswith("spot_price:") and words in e for e in out["errors"]), out["errors"]


def test_vcjob_takes_the_largest_spot_price(run_module):
    fake = cluster()
    out = run_module(vcjob_module, fake, **SPOT, spot_price="999999.999999")
    assert out["changed"] is True
    job = fake.store[("Job", "tenant-alpha", "cheap")]
    assert job["metadata"]["annotations"]["platform.io/spot-price"] == "999999.999999"


# --- large_job_throttle namespaces: rules tenant-namespace and tenant-namespace-live ------


@pytest.mark.parametrize("namespace", ["../x", "kube-system", "tenant-", "tenant-Alpha", ""])
def test_large_job_throttle_refuses_a_namespace_that_is_not_a_tenants(run_module, namespace):
    fake = cluster()
    out = run_module(throttle_module, fake, namespaces=["tenant-alpha", namespace])
    assert out["failed"] is True and out["requests"] == 0 and fake.requests == 0
    assert [e.split(":")[0] for e in out["errors"]] == ["namespaces[1]"]
    assert repr(namespace) in out["errors"][0]


def test_large_job_throttle_takes_tenant_namespaces(run_module):
    out = run_module(throttle_module, cluster(), namespaces=["tenant-alpha"])
    assert "failed" not in out


@pytest.mark.parametrize("namespace", ["tenant-nobody", "tenant-alphax"])
def test_large_job_throttle_refuses_a_tenant_namespace_no_tenant_has(run_module, namespace):
    """Rule tenant-namespace-live: named like a tenant's, but no namespace of that name carries
    the platform.io/tenant label; refused from the namespace list, before any write."""
    fake = cluster()
    out = run_module(throttle_module, fake, namespaces=["tenant-alpha", namespace])
    assert out["failed"] is True and out["changed"] is False and fake.writes == []
    assert out["requests"] == 1  # the namespace list only
    assert out["errors"] == [
        f"namespaces[1]: {namespace!r} is no tenant's namespace (no namespace of that name is "
        "labelled platform.io/tenant); expected the namespace of a tenant the platform made "
        "(tenant-alpha) (rule tenant-namespace-live)"
    ]


# --- vcjob job size: rule job-fits ---------------------------------------------------


def test_a_job_larger_than_the_pool_is_refused_before_the_create(run_module):
    fake = cluster()
    out = run_module(vcjob_module, fake, **{**LARGE, "replicas": 1_000_000})
    assert out["failed"] is True and out["changed"] is False
    assert out["errors"] == [
        "replicas: tenant-alpha/big asks for 8000000 GPUs and the nodes it may use (queue "
        "tenant-alpha-algo's node groups) hold 32: it can never run; ask for at most 32 GPUs"
    ]
    assert fake.writes == []
    # the tenant's queue list, the job, the Queues, the Nodes: nothing after
    assert out["requests"] == 4


def test_a_job_larger_than_its_queue_is_refused(run_module):
    fake = cluster(
        extra=[
            queue(
                "tenant-alpha-payg",
                "payg",
                capability={GPU: "16", "cpu": "128", "memory": "1Ti"},
            )
        ]
    )
    job = {**LARGE, "queue": "tenant-alpha-payg", "job_class": "normal", "replicas": 3}
    out = run_module(vcjob_module, fake, **job)
    assert out["failed"] is True and fake.writes == []
    assert out["errors"] == [
        "replicas: tenant-alpha/big asks for 24 GPUs and queue tenant-alpha-payg has a "
        "capability of 16: it can never run there; ask for at most 16 GPUs"
    ]


def test_a_manifest_job_is_refused_under_its_tasks(run_module):
    fake = cluster(nodes=[gpu_node("gpu-0", gpus=4)])
    container = {"name": "main", "image": "i", "resources": {"limits": {GPU: 8}}}
    manifest = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "m"},
        "spec": {
            "queue": "tenant-alpha-algo",
            "tasks": [
                {"name": "main", "replicas": 1, "template": {"spec": {"containers": [container]}}}
            ],
        },
    }
    out = run_module(vcjob_module, fake, tenant="alpha", job_class="normal", manifest=manifest)
    assert out["failed"] is True and fake.writes == []
    assert out["errors"][0].startswith("manifest.spec.tasks: tenant-alpha/m asks for 8 GPUs")


def test_a_spot_job_is_compared_with_the_pool_not_its_spot_queue(run_module, warnings):
    fake = cluster(extra=[queue("tenant-alpha-spot", "spot", capability={GPU: 0})])
    out = run_module(vcjob_module, fake, **{**SPOT, "spot_price": "0.3", "gpus_per_pod": 8})
    assert out["changed"] is True
    # the tenant's queue list, the job, the Queues, the Nodes, the Pods, the throttle, the
    # create
    assert out["requests"] == 7
    # Rule job-waits-for: accepted, with what it waits for.
    assert warnings == [
        "job tenant-alpha/cheap is accepted and waits: spot queue tenant-alpha-spot offers "
        "0 GPUs now (0 its share of the idle GPUs, 0 in use) and tenant-alpha/cheap asks "
        "for 8: it waits until paying work leaves GPUs idle and the spot recompute raises the "
        "queue"
    ]
    huge = {**SPOT, "name": "huge", "kind": "pytorch_ddp", "spot_price": "0.3"}
    big = run_module(vcjob_module, fake, **{**huge, "gpus_per_pod": 8, "replicas": 5})
    assert big["failed"] is True and "the nodes it may use" in big["msg"]
    assert "capability" not in big["msg"]


def test_a_job_without_gpus_reads_neither_queue_nor_nodes(run_module):
    fake = cluster(phase="Running", nodes=[])
    out = run_module(vcjob_module, fake, **{**SINGLE, "gpus_per_pod": 0})
    assert out["changed"] is True and out["requests"] == 4
    assert "Node" not in fake.lists


class NoNodeReads(type(cluster())):
    """A tenant's identity: it may get its own Queues but not list Nodes."""

    def list(self, api_version, kind, namespace=None, label_selector=None, field_selector=None):
        if kind == "Node":
            self.requests += 1
            raise api_error(403, 'nodes is forbidden: User "alice" cannot list resource "nodes"')
        return super().list(api_version, kind, namespace, label_selector, field_selector)


def test_an_identity_that_cannot_list_nodes_is_warned_and_still_compared_with_its_queue(
    run_module, warnings
):
    objects = list(cluster().store.values())
    fake = NoNodeReads(objects)
    out = run_module(vcjob_module, fake, **SINGLE)
    assert out["changed"] is True
    assert warnings == [
        "this identity may not list Nodes; the job's GPUs are not compared with its nodes"
    ]
