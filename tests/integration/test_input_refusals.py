# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inputs that used to be accepted, refused on the local cluster before any write.

Each case runs a module the way a playbook does, against the real API server, with
snapshots of everything the collection writes before and after: the run fails, names
the field, the value and the rule, and no object appears, vanishes or changes. The
spot queues in particular keep their capabilities when a mistyped node selector
selects no node (Volcano reads a 0 cpu or memory capability as unlimited).
"""

from __future__ import annotations

import uuid

import pytest

from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    remove_tenants,
)
from ansible_collections.gpucloud.platform.tests.integration.test_check_mode import (
    changes,
    snapshot,
)

pytestmark = pytest.mark.integration

GPU = "nvidia.com/gpu"
TENANT = f"ir{uuid.uuid4().hex[:5]}"
NS = f"tenant-{TENANT}"


@pytest.fixture(scope="module")
def dyn(api_client):
    from kubernetes import dynamic

    return dynamic.DynamicClient(api_client)


@pytest.fixture(scope="module")
def tenant(run_module, api_client):
    """A tenant with one team: a queue for the job cases, spot queues for the pool cases."""
    made = run_module(
        "tenant",
        {
            "name": TENANT,
            "subscription": {GPU: 8, "cpu": 32, "memory": "64Gi"},
            "teams": [{"name": "algo", "deserved": {GPU: 8}}],
            "oversell_check": False,
        },
    )
    assert not made.get("failed"), made.get("msg")
    yield TENANT
    remove_tenants(run_module, api_client, [TENANT])


def job_args(**extra):
    return {
        "tenant": TENANT,
        "name": "refused",
        "queue": f"{NS}-algo",
        "kind": "single",
        "image": "busybox",
        "command": ["sleep", "1"],
        "gpus_per_pod": 1,
        "cpu": "1",
        "memory": "1Gi",
        **extra,
    }


MODEL = {
    "version": "v1",
    "format": "sklearn",
    "runtime": "kserve-sklearnserver",
    "storage_uri": "s3://models/chat/v1",
    "gpus": 1,
}
SPLICED = {"platform.io/pool": "main,platform.io/gpu=a100"}
BAD_KEY = {"platform.io/Pool!": "main"}

CASES = [
    # A comma spliced into the label selector, and a key the API server would refuse
    # with a message that names no field.
    (
        "tenant",
        {"name": "irx", "subscription": {GPU: 1}, "node_selector": SPLICED},
        "node_selector.platform.io/pool: 'main,platform.io/gpu=a100' is not a label value",
    ),
    (
        "tenant",
        {"name": "irx", "subscription": {GPU: 1}, "node_selector": BAD_KEY},
        "node_selector.platform.io/Pool!: 'platform.io/Pool!' is not a label key",
    ),
    ("spot_reclaim", {"need": 1, "node_selector": BAD_KEY}, "node_selector.platform.io/Pool!:"),
    ("spot_capacity", {"node_selector": SPLICED}, "node_selector.platform.io/pool:"),
    ("topology", {"node_selector": "pool=main,x y"}, "node_selector"),
    # A typo selects no node: the spot queues are left as they are.
    (
        "spot_capacity",
        {"node_selector": {"platform.io/pool": "mian"}},
        "node_selector: {'platform.io/pool': 'mian'} matches 0 node(s)",
    ),
    # A job larger than the pool, and prices that are not a price.
    (
        "vcjob",
        job_args(name="huge", replicas=1000000, gpus_per_pod=8, kind="pytorch_ddp"),
        "GPUs and the nodes it may use (queue",
    ),
    (
        "vcjob",
        job_args(queue=f"{NS}-spot", job_class="spot", spot_price="1e400"),
        "spot_price: '1e400' is too large",
    ),
    (
        "vcjob",
        job_args(queue=f"{NS}-spot", job_class="spot", spot_price="nan"),
        "spot_price: 'nan'",
    ),
    ("vcjob", job_args(queue=f"{NS}-spot", job_class="spot", spot_price="-1"), "spot_price: '-1'"),
    # The spot market view: a reclaim of no GPU, a tenant that does not exist.
    ("spot_info", {"reclaim_gpus": 0}, "reclaim_gpus: 0 is less than 1"),
    ("spot_info", {"tenant": f"{TENANT}x"}, f"tenant: '{TENANT}x' is not a tenant"),
    # A burst queue that is a tenant's queue, or Volcano's root (rule burst-queue-platform-owned):
    # node_groups would reshape it into cloud-only quota, burst_quota hang a leaf under it.
    (
        "node_groups",
        {
            "groups": [{"name": "idc", "location": "idc", "selector": {"type": "kwok"}}],
            "burst_queue": f"{NS}-payg",
        },
        f"burst_queue: '{NS}-payg' is a tenant's queue name",
    ),
    ("burst_quota", {"tenant": TENANT, "gpus": 1, "burst_queue": "root"}, "is Volcano's own queue"),
    (
        "burst_quota",
        {"tenant": TENANT, "gpus": 1, "burst_queue": f"{NS}-algo"},
        "a tenant's queue name, never the platform's burst queue",
    ),
    # Namespaces that are not a tenant's.
    ("large_job_throttle", {"namespaces": ["../x"]}, "namespaces[0]: '../x'"),
    (
        "large_job_throttle",
        {"namespaces": [NS, "kube-system"]},
        "namespaces[1]: 'kube-system' is not a tenant namespace",
    ),
    # Named like a tenant's namespace, but no tenant has it (rule tenant-namespace-live):
    # the run used to reconcile nothing and report success.
    (
        "large_job_throttle",
        {"namespaces": [NS, f"{NS}x"]},
        f"namespaces[1]: '{NS}x' is no tenant's namespace",
    ),
    # A queue of the wrong kind where a leaf queue of the tenant is expected (rule
    # leaf-queue-of-tenant), each named as what it is.
    ("vcjob", job_args(queue="root"), "queue: 'root' is Volcano's root queue"),
    (
        "vcjob",
        job_args(queue=f"{NS}-subscription"),
        f"queue: '{NS}-subscription' is this tenant's subscription queue, a parent with team queues",
    ),
    (
        "vcjob",
        job_args(queue="tenant-demo-alpha-algo"),
        "queue: 'tenant-demo-alpha-algo' is another tenant's queue name; expected a leaf queue of "
        f"tenant {TENANT}",
    ),
    (
        "vcjob",
        job_args(queue=f"{NS}-nope"),
        f"queue: '{NS}-nope' is no queue of this tenant; expected one of tenant {TENANT}'s leaf queues",
    ),
    (
        "queue_arbiter",
        {"tenant": TENANT, "queue": f"{NS}-subscription"},
        f"queue: '{NS}-subscription' is this tenant's subscription queue, a parent with team queues",
    ),
    ("queue_arbiter", {"tenant": TENANT, "queue": "root"}, "queue: 'root' is Volcano's root queue"),
    (
        "inference_service",
        {"name": "refused", "tenant": TENANT, "queue": "default", "model": MODEL},
        "queue: 'default' is Volcano's default queue, outside every tenant's quota",
    ),
    # Namespaces the service's NetworkPolicy would open it to (rule serving-peer-namespace).
    (
        "inference_service",
        {
            "name": "refused",
            "tenant": TENANT,
            "queue": f"{NS}-algo",
            "model": MODEL,
            "gateway_namespaces": ["platform-serving", "kube-system"],
        },
        "gateway_namespaces[1]: 'kube-system' is a control namespace of Kubernetes or the platform",
    ),
    (
        "inference_service",
        {
            "name": "refused",
            "tenant": TENANT,
            "queue": f"{NS}-algo",
            "model": MODEL,
            "monitoring_namespace": "tenant-demo-beta",
        },
        "monitoring_namespace: 'tenant-demo-beta' is a tenant namespace",
    ),
]


@pytest.mark.parametrize(("module", "args", "message"), CASES)
def test_a_bad_input_is_refused_naming_the_field_and_nothing_is_written(
    module, args, message, tenant, dyn, run_module
):
    before = snapshot(dyn)
    out = run_module(module, args)
    after = snapshot(dyn)
    assert out.get("failed") is True, out
    assert message in out["msg"], out["msg"]
    assert out["changed"] is False
    assert "cannot reach" not in out["msg"] and "Traceback" not in out["msg"]
    # Only this test's own objects and everything else that is not another test's leftover
    # going away: an earlier test's tenant may still be finishing its removal.
    assert [c for c in changes(before, after) if not other_tenant_leaving(c)] == []


def other_tenant_leaving(change: str) -> bool:
    """An object of another tenant that vanished during the run (its removal finishing)."""
    return change.startswith("vanished ") and "tenant-" in change and TENANT not in change
