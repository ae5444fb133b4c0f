#!/usr/bin/env python3
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ratio benchmark: how soon the platform acts on a change in the cluster, with the
event-driven rulebook against the one-minute schedule, in the same run. Two changes, each
timed from the write that makes it to the action done:

* ``node``: a kwok GPU node added to the pool, or removed, until the spot queues'
  capabilities change (``pool_changed``, then ``spot_recompute.yml``);
* ``blocked``: a subscription job submitted while spot jobs hold every GPU, until it is
  Running (``paying_job_blocked``, then ``spot_recompute.yml`` deletes the cheapest spot
  jobs that hold sold GPUs).

Configurations:

* ``events``: ``ansible-rulebook`` runs ``extensions/eda/rulebooks/platform_reconcile.yml``;
  each change is made once the rulebook has fallen quiet after the previous one.
* ``schedule``: the baseline, ``spot_recompute.yml`` on AWX's one-minute schedule
  (``--schedule-seconds``). A change falls at a point of the schedule's period: the points
  are spread evenly over the period (in a seeded order), and the schedule's next run starts
  the rest of the period after the change, then every period until the platform has acted.

The cluster needs the demo tenants of ``scripts/setup`` (``--owner`` has a subscription
queue of at least 8 idle GPUs, ``--spot-tenant`` a spot queue) on an idle pool of 8-GPU
nodes. Prints every reaction, the table and the ratios; asserts nothing.

    .venv/bin/python benchmarks/event_reaction.py [--trials 20] [--schedule-trials 8]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / ".venv" / "collections"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ansible_collections.gpucloud.platform.benchmarks.reaction.blocked import (
    KIND as BLOCKED,
)
from ansible_collections.gpucloud.platform.benchmarks.reaction.blocked import (
    Stage,
    blocked_changes,
)
from ansible_collections.gpucloud.platform.benchmarks.reaction.changes import Change, wait_done
from ansible_collections.gpucloud.platform.benchmarks.reaction.pool import (
    GPU,
    node_changes,
    spot_capabilities,
)
from ansible_collections.gpucloud.platform.benchmarks.reaction.pool import KIND as NODE
from ansible_collections.gpucloud.platform.benchmarks.reaction.rulebook import BIN, Rulebook

from _api_counter import ROOT, api_client, default_kubeconfig

# The targets for the event-driven p95, by change.
TARGET_P95_S = {BLOCKED: 5.0, NODE: 3.0}
KINDS = (NODE, BLOCKED)  # in the order they run and print
PLAYBOOK = "playbooks/spot_recompute.yml"
SETTLE_S = 2.0  # between a change's cleanup and the next change, with nothing running


class Schedule:
    """``spot_recompute.yml`` as AWX's schedule runs it, its phase set by the benchmark:
    the first run ``first_in`` seconds after a change, then every ``period``."""

    def __init__(self, env: dict[str, str], period: float):
        self.env, self.period = env, period
        self.durations: list[float] = []

    def run(self) -> None:
        started = time.monotonic()
        done = subprocess.run(
            [str(BIN / "ansible-playbook"), "-i", "inventories/local", PLAYBOOK],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        self.durations.append(time.monotonic() - started)
        if done.returncode:
            print(f"  spot_recompute.yml failed:\n{done.stdout[-2000:]}", flush=True)

    @contextmanager
    def runs_from(self, first_in: float) -> Iterator[None]:
        """Runs the schedule while the block waits; a run under way ends before it exits."""
        stop = threading.Event()

        def loop() -> None:
            if stop.wait(first_in):
                return
            while True:
                started = time.monotonic()
                self.run()
                if stop.wait(max(0.0, self.period - (time.monotonic() - started))):
                    return

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()


def timed(change: Change, around: Callable[[], object] | None = None) -> float:
    """Prepare, make and wait for one change; cleaned up whatever happens."""
    change.prepare()
    try:
        started = time.monotonic()
        change.make()
        if around is None:
            return wait_done(change, started)
        with around():
            return wait_done(change, started)
    finally:
        change.cleanup()


def with_events(rulebook: Rulebook, changes: Iterable[Change]) -> list[float]:
    out = []
    for i, change in enumerate(changes, 1):
        rulebook.settle()
        out.append(timed(change))
        print(f"  events, {change.kind} {i}: {out[-1]:.1f} s", flush=True)
    return out


def offsets(count: int, period: float, seed: int) -> list[float]:
    """``count`` points spread evenly over the period, in a seeded order."""
    points = [period * (i + 0.5) / count for i in range(count)]
    random.Random(seed).shuffle(points)
    return points


def with_schedule(schedule: Schedule, changes: Iterable[Change], seed: int) -> list[float]:
    changes = list(changes)
    out = []
    points = offsets(len(changes), schedule.period, seed)
    for i, (change, at) in enumerate(zip(changes, points, strict=True), 1):
        time.sleep(SETTLE_S)
        out.append(timed(change, lambda at=at: schedule.runs_from(schedule.period - at)))
        print(
            f"  schedule, {change.kind} {i} ({at:.0f} s into the period): {out[-1]:.1f} s",
            flush=True,
        )
    return out


def pool_gpus(core) -> int:
    """The allocatable GPUs of the Ready, schedulable nodes."""
    total = 0
    for node in core.list_node().items:
        ready = any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or ())
        if ready and not node.spec.unschedulable:
            total += int((node.status.allocatable or {}).get(GPU, 0))
    return total


def summary(label: str, values: list[float]) -> tuple[float, float, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    row = (statistics.median(ordered), p95, ordered[-1])
    print(f"| {label} | {len(values)} | {row[0]:.1f} s | {row[1]:.1f} s | {row[2]:.1f} s |")
    return row


def report(results: dict[tuple[str, str], list[float]], schedule: Schedule) -> None:
    print("\n| change | configuration | reactions | median | p95 | max |")
    print("|---|---|---|---|---|---|")
    rows = {}
    for kind, config in sorted(results, key=lambda key: (KINDS.index(key[0]), key[1])):
        rows[kind, config] = summary(f"{kind} | {config}", results[kind, config])
    print()
    for kind in KINDS:
        if (kind, "events") not in rows:
            continue
        target = TARGET_P95_S[kind]
        fast = rows[kind, "events"]
        verdict = "met" if fast[1] <= target else "missed"
        line = f"{kind}: events p95 {fast[1]:.1f} s, target {target:g} s {verdict}"
        if (kind, "schedule") in rows:
            slow = rows[kind, "schedule"]
            line += f"; schedule / events: median {slow[0] / fast[0]:.1f}x, p95 {slow[1] / fast[1]:.1f}x"
        print(line)
    if schedule.durations:
        ordered = sorted(schedule.durations)
        print(
            f"spot_recompute.yml on its own (the schedule's {len(ordered)} runs): median "
            f"{statistics.median(ordered):.1f} s, min {ordered[0]:.1f} s: the floor under "
            "any reaction that runs it"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", default=None, help="admin kubeconfig")
    parser.add_argument("--trials", type=int, default=20, help="changes of each kind with events")
    parser.add_argument(
        "--schedule-trials", type=int, default=8, help="changes of each kind with the schedule"
    )
    parser.add_argument("--schedule-seconds", type=float, default=60.0)
    parser.add_argument("--changes", default="node,blocked", help="node, blocked or both")
    parser.add_argument("--owner", default="demo-beta", help="the blocked job's tenant")
    parser.add_argument("--spot-tenant", default="demo-alpha", help="the spot jobs' tenant")
    options = parser.parse_args()
    by_word = {"node": NODE, "blocked": BLOCKED}
    wanted = [by_word[k] for k in options.changes.split(",")]
    kubeconfig = options.kubeconfig or default_kubeconfig()
    from kubernetes import client

    api = api_client(kubeconfig)
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    if not spot_capabilities(custom):
        raise SystemExit("no spot queue: create a tenant first (scripts/setup's demo tenants)")
    stage = Stage(core, custom, options.owner, options.spot_tenant, pool_gpus(core))

    def changes(kind: str, count: int) -> Iterable[Change]:
        return node_changes(core, custom, count) if kind == NODE else blocked_changes(stage, count)

    env = dict(os.environ, KUBECONFIG=kubeconfig, K8S_AUTH_KUBECONFIG=kubeconfig)
    env["ANSIBLE_CONFIG"] = str(ROOT / "ansible.cfg")
    results: dict[tuple[str, str], list[float]] = {}
    print("events: extensions/eda/rulebooks/platform_reconcile.yml", flush=True)
    with tempfile.TemporaryDirectory() as work:
        rulebook = Rulebook.start(env, Path(work) / "rulebook.log")
        try:
            for kind in wanted:
                results[kind, "events"] = with_events(rulebook, changes(kind, options.trials))
        finally:
            rulebook.stop()
    schedule = Schedule(env, options.schedule_seconds)
    print(f"schedule: spot_recompute.yml every {options.schedule_seconds:g} s", flush=True)
    for seed, kind in enumerate(wanted, 7):
        results[kind, "schedule"] = with_schedule(
            schedule, changes(kind, options.schedule_trials), seed
        )
    report(results, schedule)


if __name__ == "__main__":
    main()
