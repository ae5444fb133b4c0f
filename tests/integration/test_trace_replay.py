# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A short trace replayed on the local cluster under the platform (docs/trace-replay.md):
about 35 jobs in a 20-minute day, twenty times faster, with the platform's submission path
and its reconcilers as production runs them beside the rulebook activation
(``platform-events``): started by the collection's event source, the schedules kept as the
safety net. The ``platform`` configuration is the same replay with every reconciler on its
one-minute schedule, and is left to the benchmark. No subscription job within its share waits
past the bound, no job is evicted twice for one shortage, the jobs run and complete
through kwok's delay stage, and what the replay could not submit is said. No time is
asserted: this is the replay working end to end, not the day's benchmark.

The suite's cluster has no bring-up before the docs test, so the module puts the
platform's PriorityClasses and scheduler configuration in place first (the replayer
refuses a cluster without them, which a test here checks)."""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import pytest

from ansible_collections.gpucloud.platform.benchmarks.traces.generate import Params, generate
from ansible_collections.gpucloud.platform.benchmarks.traces.load import dump

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DAY_S = 1200
FACTOR = 20
JOBS = 35
CONFIGURATION = "platform-events"


def replay_command(trace: Path, out: Path, kubeconfig: str) -> list[str]:
    return [
        sys.executable,
        str(ROOT / "benchmarks" / "trace_replay.py"),
        "--trace",
        str(trace),
        "--factor",
        str(FACTOR),
        "--day-seconds",
        str(DAY_S),
        "--configurations",
        CONFIGURATION,
        "--json",
        str(out),
        "--kubeconfig",
        kubeconfig,
    ]


@pytest.fixture(scope="module")
def platform_policy(api_client, priority_classes):
    """The platform's scheduler configuration for the module, put back afterwards."""
    from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_builder import (
        render_scheduler_conf,
    )
    from ansible_collections.gpucloud.platform.tests.conformance.conformance_kube import Kube

    kube = Kube(api_client)
    before = kube.scheduler_conf()
    kube.load_scheduler_conf(render_scheduler_conf())
    yield
    if before is not None:
        kube.load_scheduler_conf(before)


@pytest.fixture(scope="module")
def short_trace(tmp_path_factory) -> Path:
    trace = tmp_path_factory.mktemp("replay") / "short.yaml"
    trace.write_text(dump(generate(Params(seed=3, jobs=JOBS, gpus=64, day_seconds=DAY_S))))
    return trace


@pytest.fixture(scope="module")
def replayed(short_trace, kubeconfig, platform_policy):
    out = short_trace.parent / "records.json"
    done = subprocess.run(
        replay_command(short_trace, out, kubeconfig),
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(out.read_text()), done.stdout, done.stderr


def test_no_guarantee_breach_and_no_double_eviction(replayed):
    records, _stdout, _stderr = replayed
    figures = records["figures"][CONFIGURATION]
    assert figures["guarantee_breaches"] == [], figures["guarantee_breaches"]
    assert figures["double_evictions"] == [], figures["double_evictions"]
    # The bound is the measured reconcile period twice plus Volcano's period, traced:
    # payg_reconcile's one-minute schedule, as under the schedules alone.
    assert figures["guarantee_bound_s"] >= 2 * 60


def test_the_events_start_the_reconciles_between_the_safety_nets_runs(replayed):
    records, _stdout, _stderr = replayed
    figures = records["figures"][CONFIGURATION]
    (run,) = records["runs"]
    # The jobs' PodGroups and the purchases' queues made events ...
    assert figures["events"] > 0, run["events"]
    assert set(run["events"]) <= {
        "paying_job_blocked",
        "pool_changed",
        "subscription_changed",
        "large_job_waiting",
        "large_job_running",
        "large_job_gone",
    }
    # ... and they, not the five-minute safety net (four runs in the 20-minute day),
    # started spot_recompute: the subscriptions bought at the start alone are events.
    assert run["reconcile_runs"]["spot_recompute"] > DAY_S / 300 + 1, run["reconcile_runs"]
    # payg_reconcile has no event and keeps its minute: about one run a minute.
    assert run["reconcile_runs"]["payg_reconcile"] >= DAY_S / 60 / 2, run["reconcile_runs"]


def test_the_jobs_run_and_kwok_completes_them_after_their_duration(replayed):
    records, _stdout, _stderr = replayed
    (run,) = records["runs"]
    jobs = run["jobs"]
    # Every job of the trace was submitted or refused with its reason; none was lost.
    assert len(jobs) + len(records["refused"][CONFIGURATION]) == JOBS
    assert run["refused"] == len(records["refused"][CONFIGURATION])
    finished = [j for j in jobs if j["finished"] is not None]
    assert len(finished) >= len(jobs) // 2, f"{len(finished)} of {len(jobs)} finished"
    # Completed no sooner than its (traced) duration after it started, give or take a look.
    look_s = FACTOR * 1.0
    for job in finished:
        assert job["finished"] - job["started"] >= job["duration_s"] - 2 * look_s, job
    assert max(s["allocated"] for s in run["samples"]) > 0


def test_every_idle_gpu_of_every_look_is_put_under_a_cause(replayed):
    records, _stdout, _stderr = replayed
    (run,) = records["runs"]
    figures = records["figures"][CONFIGURATION]
    idle_looks = [s for s in run["samples"] if s["capacity"] > s["allocated"]]
    assert idle_looks
    for sample in idle_looks:
        # Rule idle-attribution: the look's idle GPUs, each once, under the cause of the
        # job that asked for it or "no job waiting".
        assert sum(sample["idle_by_cause"].values()) == sample["capacity"] - sample["allocated"]
    # Over the busy window, some GPUs stood idle under some cause (a cause seen only
    # outside it counts 0 there).
    idle_hours = figures["idle_gpu_h"].values()
    assert sum(idle_hours) > 0 and min(idle_hours) >= 0, figures["idle_gpu_h"]
    # The looks saw the jobs wait, and said why: every job that waited a look or more has
    # its seconds by cause, as many as its wait, give or take the longest gap between two
    # looks at each end.
    times = sorted(s["at"] for s in run["samples"])
    gap = max(b - a for a, b in pairwise(times))
    # (An evicted job waits again after its first start, which its wait does not count.)
    waited = [
        j
        for j in run["jobs"]
        if j["started"] is not None and j["waited_by_cause"] and not j["evictions"]
    ]
    assert waited
    for job in waited:
        wait = job["started"] - job["at"]
        assert abs(sum(job["waited_by_cause"].values()) - wait) <= 2 * gap + 1e-6, job


def test_it_prints_progress_the_table_and_the_verdict(replayed):
    _records, stdout, stderr = replayed
    assert f"replay: {CONFIGURATION}:" in stderr and "buying tenant" in stderr
    assert "guarantee breaches" in stdout and "double evictions" in stdout
    assert "platform events received" in stdout and "runs, spot_recompute" in stdout
    assert "holds: guarantee breaches" in stdout and "holds: double evictions" in stdout


def test_the_jobs_are_billed_from_the_clusters_prometheus(replayed):
    records, _stdout, _stderr = replayed
    (run,) = records["runs"]
    # usage_report.yml read the suite cluster's own Prometheus (its prometheus-url),
    # not the local inventory's address.
    assert not [f for f in records["failed"][CONFIGURATION] if "usage_report" in f]
    assert run["bills"] and max(run["bills"].values()) > 0, run["bills"]


def test_a_cluster_that_is_not_the_traces_is_refused_before_anything_is_bought(
    tmp_path, kubeconfig, api_client
):
    from kubernetes import client

    trace = tmp_path / "big.yaml"
    trace.write_text(dump(generate(Params(seed=3, jobs=20, gpus=512, day_seconds=DAY_S))))
    done = subprocess.run(
        replay_command(trace, tmp_path / "records.json", kubeconfig),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "schedulable GPUs and the trace's cluster 512" in done.stdout
    assert "buying tenant" not in done.stderr
    names = [ns.metadata.name for ns in client.CoreV1Api(api_client).list_namespace().items]
    assert not [n for n in names if n.startswith("tenant-t0")]
