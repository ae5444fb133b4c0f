# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""IDC first, then cloud, through ``payg_scale.yml`` on the local cluster (rule
payg-idc-first): with a ``cloud-burst`` queue, the tenant's PAYG queue bound to the IDC
group first and the cloud group after it (as node_groups binds it), and a burst quota of
4 GPUs, a growth 2 GPUs past what the IDC can give takes those 2 from the cloud; the
queue's capability is the whole grant, its annotation the cloud part, and the summary
says how many came from each. ``payg_reclaim: false``: no spot job of the cluster is
reclaimed, the IDC gives only what is free of spot."""

from __future__ import annotations

import contextlib
import re
import uuid

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.nodegroups import (
    NodeGroup,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.queues import (
    affinity_patch,
    burst_queue,
    elastic_affinity,
)
from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    remove_tenants,
    run_playbook,
)

pytestmark = pytest.mark.integration

GPU = "nvidia.com/gpu"
TENANT = f"pc{uuid.uuid4().hex[:5]}"
QUEUE = f"tenant-{TENANT}-payg"
GROUPS = [NodeGroup("idc-main", "idc"), NodeGroup(f"cloud-{TENANT}", "cloud", "aliyun", "cn-hz")]
QUOTA = 4


def queues(api_client):
    from kubernetes import dynamic

    dyn = dynamic.DynamicClient(api_client)
    return dyn.resources.get(api_version="scheduling.volcano.sh/v1beta1", kind="Queue")


def get_queue(api_client, name: str) -> dict | None:
    from kubernetes.dynamic.exceptions import NotFoundError

    try:
        return queues(api_client).get(name=name).to_dict()
    except NotFoundError:
        return None


def apply(api_client, manifest: dict, manager: str) -> None:
    queues(api_client).server_side_apply(body=manifest, field_manager=manager, force_conflicts=True)


@pytest.fixture(scope="module")
def hybrid_tenant(run_module, api_client):
    """The tenant, its PAYG queue bound IDC first then cloud, a cloud-burst queue (made
    here unless node_groups made one) and a burst quota of 4; all removed afterwards."""
    made = run_module(
        "tenant",
        {"name": TENANT, "subscription": {GPU: 1, "cpu": 4, "memory": "8Gi"}, "payg": {GPU: 0}},
    )
    assert not made.get("failed"), made.get("msg")
    parent = get_queue(api_client, "cloud-burst")
    ours = parent is None
    try:
        if ours:
            apply(api_client, burst_queue(GROUPS, QUOTA), "gpucloud-platform")
            groups = GROUPS
        else:  # the site's node groups: bind to its cloud groups
            cloud = parent["spec"]["affinity"]["nodeGroupAffinity"][
                "requiredDuringSchedulingIgnoredDuringExecution"
            ]
            groups = [GROUPS[0], *(NodeGroup(g, "cloud", "aliyun", "cn-hz") for g in cloud)]
        apply(api_client, affinity_patch(QUEUE, elastic_affinity(groups)), "test-node-groups")
        quota = run_module("burst_quota", {"tenant": TENANT, "gpus": QUOTA})
        assert not quota.get("failed"), quota.get("msg")
        yield TENANT
    finally:
        run_module("payg_capacity", {"tenant": TENANT, "capability": {GPU: 0}})
        run_module("burst_quota", {"tenant": TENANT, "state": "absent", "force": True})
        remove_tenants(run_module, api_client, [TENANT])
        if ours:
            with contextlib.suppress(Exception):
                queues(api_client).delete(name="cloud-burst")
        run_module("spot_capacity", {})


def idc_share(run_module) -> int:
    """What the IDC can give the tenant now without a reclaim, as payg_capacity counts it:
    a check-mode growth far past the cloud is refused with the split it would make."""
    probe = run_module(
        "payg_capacity",
        {"tenant": TENANT, "capability": {GPU: 10_000}, "reclaim": False},
        check=True,
    )
    assert probe.get("failed"), probe
    found = re.search(r"takes (\d+) from the IDC \(unsold and free of spot", probe["msg"])
    assert found, probe["msg"]
    return int(found.group(1))


def test_payg_scale_grows_past_the_idc_into_the_burst_quota(
    hybrid_tenant, run_module, ansible_env, api_client
):
    idc = idc_share(run_module)
    rc, tasks = run_playbook(
        ansible_env,
        "payg_scale.yml",
        {"tenant": TENANT, "payg_capability": {GPU: idc + 2}, "payg_reclaim": False},
        inventory="inventories/local",
    )
    assert rc == 0, {n: r.get("msg") for n, r in tasks.items() if r.get("failed")}
    (row,) = [
        r
        for r in tasks["Resize the pay-as-you-go queue, reclaiming spot GPUs first when short"][
            "queues"
        ]
        if r["queue"] == QUEUE
    ]
    # Other work on the cluster may take or free an IDC GPU between the probe and the run.
    assert row["growth"] == idc + 2 and row["from_idc"] + row["from_cloud"] == idc + 2
    assert 1 <= row["from_cloud"] <= QUOTA and row["cloud_gpus"] == row["from_cloud"]
    queue = get_queue(api_client, QUEUE)
    assert str(queue["spec"]["capability"][GPU]) == str(idc + 2)
    assert queue["metadata"]["annotations"]["platform.io/payg-cloud-gpus"] == str(row["from_cloud"])
    said = tasks["Say what changed"]["msg"]
    assert (
        f"{QUEUE} grew by {idc + 2} GPUs: {row['from_idc']} from the IDC, "
        f"{row['from_cloud']} from the cloud ({row['from_cloud']} cloud GPUs in the grant)"
    ) == said

    # Past the burst quota: refused with the numbers, nothing written.
    refused = run_module(
        "payg_capacity",
        {"tenant": TENANT, "capability": {GPU: idc + QUOTA + 10}, "reclaim": False},
    )
    assert refused.get("failed") and "rule payg-idc-first" in refused["msg"], refused
    assert str(get_queue(api_client, QUEUE)["spec"]["capability"][GPU]) == str(idc + 2)
