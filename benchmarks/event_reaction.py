#!/usr/bin/env python3
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ratio benchmark: how soon spot capacity follows a GPU node that joins or leaves, with
the event-driven rulebook against the scheduled reconcile, in the same run.

Each trial adds a kwok GPU node (a copy of the cluster's first one) and waits until the
spot queues' capabilities change; then removes it and waits until they change back. The
reaction is the time from the write to the change.

* ``events``: ``ansible-rulebook`` runs ``extensions/eda/rulebooks/platform_reconcile.yml``
  (the source's ``pool_changed``, then ``spot_recompute.yml``).
* ``schedule``: the baseline, ``spot_recompute.yml`` every ``--schedule-seconds`` (AWX's
  one-minute schedule, by default), the trials falling anywhere in its period.

The cluster needs a tenant with a spot queue (``scripts/setup``'s demo tenants will do);
nothing runs on the added node. Prints the reactions and their ratios; asserts nothing.

    .venv/bin/python benchmarks/event_reaction.py [--trials 5] [--schedule-seconds 60]
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
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / ".venv" / "collections"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _api_counter import ROOT, api_client, default_kubeconfig

BIN = Path(sys.executable).parent
RULEBOOK = "extensions/eda/rulebooks/platform_reconcile.yml"
RULEBOOK_ARGS = ("-i", "inventories/local", "--env-vars", "KUBECONFIG")
VOLCANO = ("scheduling.volcano.sh", "v1beta1", "queues")
GPU = "nvidia.com/gpu"
TIMEOUT = 300.0


def spot_capabilities(custom) -> dict[str, str]:
    """Every spot queue's GPU capability."""
    queues = custom.list_cluster_custom_object(
        *VOLCANO, label_selector="platform.io/queue-type=spot"
    )["items"]
    return {
        q["metadata"]["name"]: str(((q.get("spec") or {}).get("capability") or {}).get(GPU))
        for q in queues
    }


def wait_change(custom, before: dict[str, str], started: float) -> float:
    """Seconds from ``started`` until the spot capabilities differ from ``before``."""
    while time.monotonic() - started < TIMEOUT:
        if spot_capabilities(custom) != before:
            return time.monotonic() - started
        time.sleep(0.2)
    raise SystemExit(f"the spot capabilities did not change within {TIMEOUT:.0f} s")


def add_node(core, name: str) -> None:
    """A kwok GPU node like the cluster's first one, under another name (the integration
    test of the event source adds its node with this too)."""
    template = core.list_node(label_selector="type=kwok").items[0]
    labels = dict(template.metadata.labels or {}, **{"kubernetes.io/hostname": name})
    annotations = {k: v for k, v in (template.metadata.annotations or {}).items() if "kwok" in k}
    core.create_node({"metadata": {"name": name, "labels": labels, "annotations": annotations}})
    capacity = dict(template.status.capacity)
    core.patch_node_status(name, {"status": {"capacity": capacity, "allocatable": capacity}})


def trials(core, custom, count: int, settle: float, jitter: float = 0.0) -> list[float]:
    """``count`` node additions and removals; the reaction to each. Before each change
    the run waits ``settle`` seconds plus a seeded draw from [0, ``jitter``), so changes
    against a schedule fall anywhere in its period, not just after one of its runs."""
    draw = random.Random(7)
    out: list[float] = []
    for i in range(count):
        time.sleep(draw.uniform(0, jitter))
        name = f"bench-node-{uuid.uuid4().hex[:5]}"
        before = spot_capabilities(custom)
        started = time.monotonic()
        add_node(core, name)
        try:
            out.append(wait_change(custom, before, started))
        finally:
            time.sleep(settle + draw.uniform(0, jitter))
            after = spot_capabilities(custom)
            started = time.monotonic()
            core.delete_node(name)
        out.append(wait_change(custom, after, started))
        print(f"  trial {i + 1}: added {out[-2]:.1f} s, removed {out[-1]:.1f} s", flush=True)
        time.sleep(settle)
    return out


def start_rulebook(env: dict[str, str], log: Path) -> subprocess.Popen:
    with log.open("w") as out:
        proc = subprocess.Popen(
            [str(BIN / "ansible-rulebook"), "--rulebook", RULEBOOK, *RULEBOOK_ARGS],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + TIMEOUT
    while "PLAY RECAP" not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"ansible-rulebook did not start:\n{log.read_text()[-2000:]}")
        time.sleep(1)
    return proc


def schedule_loop(env: dict[str, str], period: float, stop: threading.Event) -> None:
    """The baseline: spot_recompute.yml every ``period`` seconds, as AWX schedules it."""
    while not stop.is_set():
        subprocess.run(
            [
                str(BIN / "ansible-playbook"),
                "-i",
                "inventories/local",
                "playbooks/spot_recompute.yml",
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            check=False,
        )
        stop.wait(period)


def summary(label: str, values: list[float]) -> tuple[float, float, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    row = (statistics.median(ordered), p95, ordered[-1])
    print(f"| {label} | {len(values)} | {row[0]:.1f} s | {row[1]:.1f} s | {row[2]:.1f} s |")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", default=None, help="admin kubeconfig")
    parser.add_argument("--trials", type=int, default=5, help="node additions per configuration")
    parser.add_argument("--schedule-seconds", type=float, default=60.0)
    parser.add_argument("--settle", type=float, default=8.0, help="seconds between changes")
    options = parser.parse_args()
    kubeconfig = options.kubeconfig or default_kubeconfig()
    from kubernetes import client

    api = api_client(kubeconfig)
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    if not spot_capabilities(custom):
        raise SystemExit("no spot queue: create a tenant first (scripts/setup's demo tenants)")
    env = dict(os.environ, KUBECONFIG=kubeconfig, K8S_AUTH_KUBECONFIG=kubeconfig)
    env["ANSIBLE_CONFIG"] = str(ROOT / "ansible.cfg")

    print(f"events: {RULEBOOK}")
    with tempfile.TemporaryDirectory() as work:
        rulebook = start_rulebook(env, Path(work) / "rulebook.log")
        try:
            time.sleep(options.settle)
            events = trials(core, custom, options.trials, options.settle)
        finally:
            rulebook.terminate()
            rulebook.wait(30)
    print(f"schedule: spot_recompute.yml every {options.schedule_seconds:g} s")
    stop = threading.Event()
    loop = threading.Thread(
        target=schedule_loop, args=(env, options.schedule_seconds, stop), daemon=True
    )
    loop.start()
    try:
        scheduled = trials(
            core, custom, options.trials, options.settle, jitter=options.schedule_seconds
        )
    finally:
        stop.set()
        loop.join(TIMEOUT)

    print("\n| configuration | reactions | median | p95 | max |\n|---|---|---|---|---|")
    fast = summary("events (rulebook)", events)
    slow = summary(f"schedule ({options.schedule_seconds:g} s)", scheduled)
    print(
        f"\nschedule / events: median {slow[0] / fast[0]:.1f}x, p95 {slow[1] / fast[1]:.1f}x "
        "(how many times longer the spot capacity is wrong after a node change)"
    )


if __name__ == "__main__":
    main()
