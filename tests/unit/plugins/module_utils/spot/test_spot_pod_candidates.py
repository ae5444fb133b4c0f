# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule spot-candidate-pod: spot means reclaimable, whatever the workload."""

from __future__ import annotations

from decimal import Decimal

from ansible_collections.gpucloud.platform.plugins.module_utils.spot.candidates import (
    candidates_from_pods,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.victims import choose_victims

SPOT = "tenant-a-spot"


def pod(name, queue=SPOT, gpus=1, price=None, phase="Running", owner=None, init_gpus=0, **meta):
    annotations = {"scheduling.volcano.sh/queue-name": queue}
    if price is not None:
        annotations["platform.io/spot-price"] = price
    out = {
        "metadata": {
            "name": name,
            "namespace": "tenant-a",
            "uid": f"uid-{name}",
            "annotations": annotations,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            **meta,
        },
        "spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": gpus}}}]},
        "status": {"phase": phase, "startTime": "2026-01-01T00:01:00Z"},
    }
    if init_gpus:
        out["spec"]["initContainers"] = [{"resources": {"limits": {"nvidia.com/gpu": init_gpus}}}]
    if owner:
        out["metadata"]["ownerReferences"] = [owner]
    return out


VCJOB = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "j"}
REPLICASET = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "llm-predictor-abc"}


def test_a_predictor_pod_in_a_spot_queue_is_a_candidate_by_its_queue_alone():
    (victim,), warnings = candidates_from_pods(
        [pod("llm-1", price="0.4", owner=REPLICASET)], [SPOT]
    )
    assert warnings == []
    assert victim.as_dict() == {
        "kind": "Pod",
        "namespace": "tenant-a",
        "name": "llm-1",
        "queue": SPOT,
        "price": "0.4",
        "gpus": 1,
        "pods": 1,
        "started_at": "2026-01-01T00:01:00Z",
    }
    assert victim.uid == "uid-llm-1"


def test_pods_outside_spot_queues_holding_nothing_or_of_a_volcano_job_are_not():
    pods = [
        pod("payg", queue="tenant-a-payg"),
        pod("cpu-only", gpus=0),
        pod("pending", phase="Pending"),
        pod("of-a-job", owner=VCJOB),
        pod("leaving", deletionTimestamp="2026-01-01T00:02:00Z"),
        pod("no-queue", queue=""),
    ]
    assert candidates_from_pods(pods, [SPOT]) == ([], [])


def test_an_unpriced_or_badly_priced_pod_counts_at_price_0_and_goes_first():
    pods = [pod("priced", price="0.9"), pod("unpriced"), pod("bad", price="cheap")]
    candidates, warnings = candidates_from_pods(pods, [SPOT])
    assert [c.price for c in candidates] == [Decimal("0.9"), Decimal(0), Decimal(0)]
    assert len(warnings) == 1 and "tenant-a/bad" in warnings[0] and "price 0" in warnings[0]
    # Price 0 first; at equal price, shape and start, by name.
    assert [v.name for v in choose_victims(candidates, 2)] == ["bad", "unpriced"]


def test_an_init_container_asking_more_counts_as_the_pods_request():
    (victim,), warnings = candidates_from_pods([pod("init", gpus=1, init_gpus=2)], [SPOT])
    assert victim.gpus == 2 and warnings == []
