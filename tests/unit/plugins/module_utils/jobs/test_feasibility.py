# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules job-never-runs, job-nodes and job-waits-for, and that vcjob, the throttle and
the arbiter give the same verdict for the same job."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.arbiter import plan, rules
from ansible_collections.gpucloud.platform.plugins.module_utils.arbiter.model import (
    QueueState,
    WaitingJob,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs import feasibility as f
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.large_job import (
    LargeJob,
    Room,
    cannot_help,
)

NS, SUB, TEAM, BURST = "tenant-t", "tenant-t-subscription", "tenant-t-algo", "tenant-t-burst"
SUB_LIMIT = f.Limit(SUB, 16, 0, "root", "subscription")
TEAM_LIMIT = f.Limit(TEAM, None, 0, SUB, "team")


def node(name, gpus, group=None, cloud=False, ready=True):
    labels = {}
    if group:
        labels["volcano.sh/nodegroup-name"] = group
    if cloud:
        labels["platform.io/node-location"] = "cloud"
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {
            "allocatable": {"nvidia.com/gpu": str(gpus)},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def queue(name, parent="root", required=None):
    spec = {"parent": parent}
    if required is not None:
        spec["affinity"] = {
            "nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
        }
    return {"metadata": {"name": name}, "spec": spec}


HYBRID_NODES = [node("idc-0", 8, "idc"), node("idc-1", 8, "idc"), node("vk-0", 16, "aws", True)]
HYBRID_QUEUES = {
    "root": queue("root", required=["idc"]),
    "burst": queue("burst", required=["aws"]),
    BURST: queue(BURST, parent="burst"),
    TEAM: queue(TEAM, parent=SUB),
    SUB: queue(SUB),
}


def test_the_nodes_a_job_may_use_follow_its_queues_groups_and_placement():
    idc = f.required_groups(HYBRID_QUEUES, TEAM)
    cloud = f.required_groups(HYBRID_QUEUES, BURST)
    assert idc == frozenset({"idc"}) and cloud == frozenset({"aws"})
    assert f.usable_gpus(HYBRID_NODES, idc, local_only=False) == 16
    assert f.usable_gpus(HYBRID_NODES, cloud, local_only=False) == 16
    # local-only in the cloud-only burst leaf: no node at all
    assert f.usable_gpus(HYBRID_NODES, cloud, local_only=True) == 0
    # Without any node group the cloud is not in the pool (rule pool-excludes-cloud).
    assert f.usable_gpus(HYBRID_NODES, None, local_only=False) == 16
    assert f.usable_nodes([node("down", 8, ready=False)], None, False) == []


def test_a_missing_claim_is_named_first():
    gang = f.Gang(f"{NS}/train", TEAM, 64, ("data", "ckpt"))
    supply = f.Supply(chain=(TEAM_LIMIT, SUB_LIMIT), node_gpus=32, claims=frozenset({"data"}))
    assert f.never_runs(gang, supply) == (
        f"{NS}/train mounts PersistentVolumeClaim ckpt, which does not exist in its namespace: "
        "it can never run until it is created"
    )


def test_an_ancestors_capability_is_judged_a_spot_queues_is_not():
    gang = f.Gang(f"{NS}/big", TEAM, 32)
    supply = f.Supply(chain=(TEAM_LIMIT, SUB_LIMIT), node_gpus=64)
    assert f.never_runs(gang, supply) == (
        f"{NS}/big asks for 32 GPUs and queue {SUB} has a capability of 16: it can never run there"
    )
    assert f.at_most(gang, supply) == 16
    spot = f.Limit("tenant-t-spot", 0, 0, "root", "spot")
    on_spot = f.Gang(f"{NS}/cheap", "tenant-t-spot", 8)
    assert f.never_runs(on_spot, f.Supply(chain=(spot,), node_gpus=64)) is None
    assert f.waits_for(on_spot, f.Supply(chain=(spot,), node_gpus=64)).startswith(
        "spot queue tenant-t-spot offers 0 GPUs now"
    )


def test_what_a_job_that_can_run_waits_for():
    full = f.Limit(SUB, 16, 12, "root", "subscription")
    gang = f.Gang(f"{NS}/j", TEAM, 8)
    assert f.waits_for(gang, f.Supply(chain=(TEAM_LIMIT, full), free_gpus=40)) == (
        f"queue {SUB} has 12 of its 16 GPUs allocated and {NS}/j asks for 8: it waits until "
        "jobs there end"
    )
    assert f.waits_for(gang, f.Supply(chain=(TEAM_LIMIT, SUB_LIMIT), free_gpus=4)).startswith(
        "4 GPUs are free on its nodes"
    )
    assert f.waits_for(gang, f.Supply(chain=(TEAM_LIMIT, SUB_LIMIT), free_gpus=8)) is None


@given(
    gpus=st.integers(min_value=0, max_value=200),
    caps=st.lists(st.one_of(st.none(), st.integers(min_value=0, max_value=200)), max_size=4),
    nodes=st.one_of(st.none(), st.integers(min_value=0, max_value=200)),
)
def test_never_exactly_when_above_a_limit_it_could_ever_get(gpus, caps, nodes):
    chain = tuple(f.Limit(f"q{i}", c) for i, c in enumerate(caps))
    gang, supply = f.Gang("ns/j", "q0", gpus), f.Supply(chain=chain, node_gpus=nodes)
    most = f.at_most(gang, supply)
    assert (f.never_runs(gang, supply) is not None) == (
        gpus > 0 and most is not None and gpus > most
    )


def _vcjob(claims=(), placement=None, gpus=8, replicas=2):
    volumes = [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]
    container = {"name": "m", "image": "i", "resources": {"limits": {"nvidia.com/gpu": gpus}}}
    annotations = {"platform.io/placement": placement} if placement else {}
    return {
        "metadata": {"name": "big", "namespace": NS, "uid": "u-1", "annotations": annotations},
        "spec": {
            "queue": TEAM,
            "tasks": [
                {
                    "name": "w",
                    "replicas": replicas,
                    "template": {"spec": {"containers": [container], "volumes": volumes}},
                }
            ],
        },
    }


CASES = {
    "missing claim": (
        _vcjob(claims=("data",)),
        f.Supply(chain=(TEAM_LIMIT, SUB_LIMIT), node_gpus=64, claims=frozenset()),
    ),
    "larger than the subscription": (
        _vcjob(replicas=4),
        f.Supply(chain=(TEAM_LIMIT, SUB_LIMIT), node_gpus=64, claims=frozenset()),
    ),
    "larger than its nodes": (
        _vcjob(placement="local-only"),
        f.Supply(chain=(TEAM_LIMIT, SUB_LIMIT), node_gpus=0, claims=frozenset()),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_vcjob_the_throttle_and_the_arbiter_give_the_same_verdict(case):
    vcjob, supply = CASES[case]
    gang = f.gang_of(vcjob)
    # vcjob: rule job-never-runs on the Job it is about to create
    submitted = f.never_runs(gang, supply)
    assert submitted is not None and submitted.startswith(f"{NS}/big ")
    # the throttle: the same Job waiting as a large job
    large = LargeJob(
        uid="u-1",
        namespace=NS,
        queue=TEAM,
        job="big",
        podgroup="big-pg",
        gpus=gang.gpus,
        waiting=True,
        admitted=True,
        claims=gang.claims,
        local_only=gang.local_only,
    )
    room = Room(pool_gpus=64, free_gpus=64, supplies={"u-1": supply})
    assert cannot_help(large, room, datetime.now(UTC)) == submitted
    # the arbiter: the same Job waiting behind its queue
    states = {
        SUB: QueueState(SUB, "root", 16, 16, 16, "subscription", "t"),
        TEAM: QueueState(TEAM, SUB, 16, None, 16, "team", "t"),
    }
    waiting = WaitingJob(
        NS,
        "big",
        "u-1",
        TEAM,
        "large-job",
        800,
        gang.gpus,
        "Pending",
        None,
        gang.claims,
        gang.local_only,
    )
    decision = plan.plan_for(waiting, states, [], 48, 64, supply=supply)
    assert decision.action == plan.REFUSE
    assert decision.reason == f"{submitted}; {rules.NOTHING_EVICTED}"
