# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A trace's job as the Volcano Job the replay submits (benchmarks/replay/jobs.py): its
name and the trace index it says, kwok's compressed delay, and the manifest of every kind
of the trace format: the delay on every pod, the time-to-live, the queue, the GPUs, no
command for ray, a checkpoint command for a cloud placement and a spot job's bid."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.benchmarks.replay.jobs import (
    DELAY_ANNOTATION,
    FINISHED_TTL_S,
    delay_text,
    index_of,
    job_name,
    manifest,
)
from ansible_collections.gpucloud.platform.benchmarks.traces.model import Job

GPU = "nvidia.com/gpu"
SPOT_PRICE = "platform.io/spot-price"  # manifest.class_annotations' key (common/names.py)
KINDS = ("pytorch_ddp", "ps_worker", "mpi", "spark", "ray", "single")


def trace_job(**overrides: Any) -> Job:
    """A job as the trace file gives it: two 8-GPU pods of a normal subscription job
    running one hour, unless told otherwise."""
    data: dict[str, Any] = {
        "at": 0,
        "tenant": "acme",
        "billing": "subscription",
        "class": "normal",
        "kind": "pytorch_ddp",
        "replicas": 2,
        "gpus_per_pod": 8,
        "duration_s": 3600,
    }
    data.update(overrides)
    return Job.from_mapping(data)


def of_kind(kind: str, **overrides: Any) -> Job:
    """A job of ``kind``; a single job is one pod."""
    if kind == "single":
        overrides.setdefault("replicas", 1)
    return trace_job(kind=kind, **overrides)


def tasks(out: dict[str, Any]) -> list[dict[str, Any]]:
    return out["spec"]["tasks"]


def containers(out: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for t in tasks(out) for c in t["template"]["spec"]["containers"]]


def pod_annotations(out: dict[str, Any]) -> list[dict[str, str]]:
    """Each task's pod annotations."""
    return [t["template"]["metadata"].get("annotations", {}) for t in tasks(out)]


def total_gpus(out: dict[str, Any]) -> int:
    """The GPUs all the job's pods ask for (container limits, times each task's replicas)."""
    return sum(
        t["replicas"]
        * sum(
            int(c["resources"].get("limits", {}).get(GPU, 0))
            for c in t["template"]["spec"]["containers"]
        )
        for t in tasks(out)
    )


# --------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------


def test_job_name_is_the_zero_padded_index():
    assert job_name(0) == "replay-0000"
    assert job_name(7) == "replay-0007"
    assert job_name(1234) == "replay-1234"
    assert job_name(12345) == "replay-12345"


def test_index_of_reads_a_replay_name():
    assert index_of("replay-0007") == 7
    assert index_of("replay-0000") == 0
    assert index_of("replay-12345") == 12345


@pytest.mark.parametrize(
    "name",
    [
        "",
        "replay-",
        "replay",
        "train-0007",
        "REPLAY-0007",
        "xreplay-0007",
        "replay-0007-worker-0",
        "replay-00a7",
        "replay--007",
        "replay-+7",
        "replay- 7",
        "replay-7.5",
    ],
)
def test_index_of_refuses_other_names(name):
    assert index_of(name) is None


def test_index_of_refuses_digits_outside_ascii():
    assert index_of("replay-\u00b2") is None
    assert index_of("replay-\u0663") is None


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=10**7))
def test_index_of_reads_back_job_name(index):
    assert index_of(job_name(index)) == index


# The characters of a Kubernetes name or label value: what index_of meets in practice.
NAME_CHARS = st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


@settings(max_examples=300, deadline=None)
@given(st.text(NAME_CHARS, max_size=20))
def test_index_of_a_name_is_none_unless_replay_and_digits(name):
    rest = name.removeprefix("replay-")
    is_replay = name.startswith("replay-") and rest != "" and rest.isdigit()
    assert index_of(name) == (int(rest) if is_replay else None)


# --------------------------------------------------------------------------
# The kwok delay
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("duration_s", "factor", "text"),
    [
        (3600, 1, "3600000ms"),  # not compressed
        (3600, 60, "60000ms"),  # an hour at 60x: a minute
        (90, 15, "6000ms"),
        (1, 3, "333ms"),  # 333.33 rounds down
        (2, 3, "667ms"),  # 666.67 rounds up
        (0.0014, 1, "1ms"),
        (0.0016, 1, "2ms"),
        (0.001, 10, "1ms"),  # 0.1 ms: at least 1 ms
        (0.0004, 1, "1ms"),  # 0.4 ms rounds to 0: at least 1 ms
        (10, 100000, "1ms"),
    ],
)
def test_delay_text_compresses_and_rounds_to_whole_milliseconds(duration_s, factor, text):
    assert delay_text(duration_s, factor) == text


@settings(max_examples=200, deadline=None)
@given(
    st.floats(min_value=0.001, max_value=86400 * 2, allow_nan=False),
    st.floats(min_value=1, max_value=1000, allow_nan=False),
)
def test_delay_text_is_the_nearest_millisecond_at_least_one(duration_s, factor):
    text = delay_text(duration_s, factor)
    assert text.endswith("ms")
    ms = int(text.removesuffix("ms"))
    assert ms >= 1
    exact = duration_s * 1000 / factor
    if exact < 0.5:
        assert ms == 1
    else:
        assert abs(ms - exact) <= 0.5


# --------------------------------------------------------------------------
# The manifest of each kind
# --------------------------------------------------------------------------

# kind -> the tasks the builder makes for replicas 2 (single: 1) and each task's pods and
# GPUs per pod: the coordinator of ps_worker, mpi, spark and ray holds no GPU.
TASKS = {
    "pytorch_ddp": [("master", 1, 8), ("worker", 1, 8)],
    "ps_worker": [("ps", 1, 0), ("worker", 2, 8)],
    "mpi": [("master", 1, 0), ("worker", 2, 8)],
    "spark": [("driver", 1, 0), ("executor", 2, 8)],
    "ray": [("head", 1, 0), ("worker", 2, 8)],
    "single": [("task", 1, 8)],
}


@pytest.mark.parametrize("kind", KINDS)
def test_manifest_of_each_kind(kind):
    job = of_kind(kind)
    out = manifest(job, 7, 60)
    assert out["apiVersion"] == "batch.volcano.sh/v1alpha1"
    assert out["kind"] == "Job"
    assert out["metadata"]["name"] == "replay-0007"
    assert out["metadata"]["namespace"] == "tenant-acme"
    assert out["spec"]["queue"] == "tenant-acme-subscription"
    assert out["spec"]["ttlSecondsAfterFinished"] == FINISHED_TTL_S == 30
    shape = [
        (t["name"], t["replicas"], int(c["resources"].get("limits", {}).get(GPU, 0)))
        for t in tasks(out)
        for c in t["template"]["spec"]["containers"]
    ]
    assert shape == TASKS[kind]
    # an hour at 60x: every pod completes a minute after it runs
    assert [a[DELAY_ANNOTATION] for a in pod_annotations(out)] == ["60000ms"] * len(TASKS[kind])
    assert total_gpus(out) == job.replicas * job.gpus_per_pod == job.gpus
    assert all(c["image"] == "replay.invalid/trace-job:1" for c in containers(out))


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "ray"])
def test_manifest_runs_sleep_where_a_kind_takes_a_command(kind):
    out = manifest(of_kind(kind), 0, 1)
    first = containers(out)[0]
    assert first["command"][-2:] == ["sleep", "infinity"]


def test_manifest_of_a_ray_job_has_no_command():
    out = manifest(of_kind("ray"), 3, 15)
    assert [c["name"] for c in containers(out)] == ["head", "worker"]
    assert [("command" in c) for c in containers(out)] == [False, False]
    assert out["spec"]["plugins"]["ray"] is not None


@settings(max_examples=60, deadline=None)
@given(
    kind=st.sampled_from(KINDS),
    replicas=st.integers(min_value=1, max_value=6),
    gpus_per_pod=st.sampled_from([1, 2, 4, 8]),
    duration_s=st.floats(min_value=1, max_value=86400, allow_nan=False),
    factor=st.sampled_from([1, 15, 60, 240]),
    index=st.integers(min_value=0, max_value=9999),
)
def test_manifest_gpus_and_delay_for_any_job(
    kind, replicas, gpus_per_pod, duration_s, factor, index
):
    if kind == "single":
        replicas = 1
    job = trace_job(kind=kind, replicas=replicas, gpus_per_pod=gpus_per_pod, duration_s=duration_s)
    out = manifest(job, index, factor)
    assert index_of(out["metadata"]["name"]) == index
    assert total_gpus(out) == replicas * gpus_per_pod
    delay = delay_text(duration_s, factor)
    assert [a[DELAY_ANNOTATION] for a in pod_annotations(out)] == [delay] * len(tasks(out))
    assert out["spec"]["ttlSecondsAfterFinished"] == 30


@pytest.mark.parametrize(
    ("fields", "queue"),
    [
        ({"billing": "subscription"}, "tenant-acme-subscription"),
        ({"billing": "subscription", "team": "algo"}, "tenant-acme-algo"),
        ({"billing": "payg"}, "tenant-acme-payg"),
        ({"billing": "spot", "class": "spot", "spot_price": "0.4"}, "tenant-acme-spot"),
    ],
)
def test_manifest_queue_is_the_jobs_queue(fields, queue):
    job = trace_job(**fields)
    out = manifest(job, 1, 60)
    assert job.queue == queue
    assert out["spec"]["queue"] == queue


@pytest.mark.parametrize("kind", KINDS)
def test_manifest_of_a_spot_job_carries_its_bid(kind):
    job = of_kind(kind, billing="spot", **{"class": "spot"}, spot_price="0.40")
    out = manifest(job, 12, 15)
    assert out["spec"]["queue"] == "tenant-acme-spot"
    assert out["metadata"]["annotations"][SPOT_PRICE] == "0.4"
    assert [a[SPOT_PRICE] for a in pod_annotations(out)] == ["0.4"] * len(tasks(out))
    # the delay sits beside the bid, not instead of it: 3600 s at 15x
    assert [a[DELAY_ANNOTATION] for a in pod_annotations(out)] == ["240000ms"] * len(tasks(out))


def test_manifest_of_a_subscription_job_has_no_bid():
    out = manifest(trace_job(), 0, 60)
    assert SPOT_PRICE not in out["metadata"].get("annotations", {})
    assert all(SPOT_PRICE not in a for a in pod_annotations(out))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("placement", ["local-first", "cloud-ok"])
def test_manifest_of_a_cloud_placement_checkpoints(kind, placement):
    out = manifest(of_kind(kind, placement=placement), 5, 60)
    assert out["metadata"]["annotations"]["platform.io/placement"] == placement
    stops = [c["lifecycle"]["preStop"]["exec"]["command"] for c in containers(out)]
    assert stops == [["true"]] * len(containers(out))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("placement", [None, "local-only"])
def test_manifest_of_an_idc_job_has_no_checkpoint(kind, placement):
    fields = {} if placement is None else {"placement": placement}
    out = manifest(of_kind(kind, **fields), 5, 60)
    assert [("lifecycle" in c) for c in containers(out)] == [False] * len(containers(out))


def test_manifest_does_not_share_its_command_between_jobs():
    first = manifest(of_kind("single"), 0, 1)
    containers(first)[0]["command"].append("--changed")
    second = manifest(of_kind("single"), 1, 1)
    assert containers(second)[0]["command"] == ["sleep", "infinity"]
