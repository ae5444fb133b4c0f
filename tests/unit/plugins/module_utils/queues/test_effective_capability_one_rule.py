# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule effective-capability has one home (``queues.capability``): every reader of the
queue tree gives the same answer on the same queues, trees written around the webhook
(a child above its parent) included."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.arbiter import model
from ansible_collections.gpucloud.platform.plugins.module_utils.inference import placement
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs import feasibility
from ansible_collections.gpucloud.platform.plugins.module_utils.queues import capability, plan
from ansible_collections.gpucloud.platform.plugins.module_utils.queues.model import Queue
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster

GPU = "nvidia.com/gpu"
QUEUE_API = "scheduling.volcano.sh/v1beta1"


def queue(name: str, parent: str, cap: int | None) -> dict:
    spec: dict = {"parent": parent}
    if cap is not None:
        spec["capability"] = {GPU: str(cap)}
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name, "labels": {"platform.io/queue-type": "team"}},
        "spec": spec,
    }


@st.composite
def trees(draw):
    """Random queue forests under root, with any capability at any level."""
    out = []
    for i in range(draw(st.integers(1, 7))):
        parent = draw(st.sampled_from(["root", *[f"q{j}" for j in range(i)]]))
        out.append(queue(f"q{i}", parent, draw(st.none() | st.integers(0, 64))))
    return out


def answers(manifests: list[dict], name: str) -> dict[str, int | None]:
    by_name = {m["metadata"]["name"]: Queue.from_manifest(m) for m in manifests}
    planned = plan.effective_capability(by_name[name], by_name).get(GPU)
    limits = feasibility.queue_limits(manifests)
    return {
        "queues.plan": None if planned is None else int(planned),
        "arbiter.model": model.effective_capability(model.queue_states(manifests), name),
        "jobs.feasibility": feasibility.effective_capability(feasibility.chain_of(limits, name)),
        "inference.placement": placement.chain_capability(
            name, lambda _depth, queue: FakeCluster(manifests).get(QUEUE_API, "Queue", queue)
        ),
    }


@given(trees())
def test_every_reader_gives_the_same_effective_capability(manifests):
    for manifest in manifests:
        got = answers(manifests, manifest["metadata"]["name"])
        assert len(set(got.values())) == 1, got


def test_a_child_above_its_parent_is_held_to_the_parent():
    manifests = [queue("sub", "root", 8), queue("team", "sub", 20), queue("free", "sub", None)]
    assert set(answers(manifests, "team").values()) == {8}
    assert set(answers(manifests, "free").values()) == {8}


def test_nothing_on_the_way_to_root_is_no_bound():
    assert set(answers([queue("q", "root", None)], "q").values()) == {None}
    assert capability.effective_limit([None, None]) is None
    assert capability.effective_capability([{GPU: 4}, {GPU: 2, "cpu": 8}, {}]) == {GPU: 2, "cpu": 8}
