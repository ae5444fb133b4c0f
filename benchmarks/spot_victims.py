#!/usr/bin/env python3
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How spot victim selection grows from 5,000 to 50,000 jobs.

Times, parsing included, the two ways victims are chosen:

* the ``spot_victims`` filter over job maps (name, namespace, price, gpus,
  replicas, started_at);
* ``candidates_from_vcjobs`` + ``choose_victims`` (what ``spot_reclaim`` runs)
  over Volcano Jobs as a LIST returns them: the billing-type label, the
  spot-price annotation, ``spec.queue``, tasks with replicas and GPU limits,
  ``status.state`` Running with its lastTransitionTime.

The baseline, measured in the same run on the same input, reads the jobs the
same way, sorts every one by the victim order (``victim_order_key``) and takes
the prefix the stop rule keeps. Prints times and ratios only; it asserts
nothing but that both ways choose the same victims.

    .venv/bin/python benchmarks/spot_victims.py [--repeat 5] [--need 64]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / ".venv" / "collections"))

from ansible_collections.gpucloud.platform.plugins.filter.spot_victims import (
    _record,
    spot_victims,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.candidates import (
    candidates_from_vcjobs,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.victims import (
    choose_victims,
    victim_order_key,
)

START = datetime(2026, 1, 1, tzinfo=UTC)
PRICES = ("0.1", "0.2", "0.3", "0.5", "0.8", "1.0")
TENANTS = 200
SIZES = (5_000, 50_000)


def _shape(rng: random.Random, i: int) -> tuple[str, str, str, int, int, str]:
    """One job's namespace, name, price, GPUs per pod, replicas and start time."""
    replicas = rng.choice((1, 1, 1, 2, 4, 8))
    started = START + timedelta(seconds=rng.randrange(86_400 * 7))
    return (
        f"tenant-t{i % TENANTS:03d}",
        f"job-{i:06d}",
        rng.choice(PRICES),
        rng.choice((1, 2, 4, 8)),
        replicas,
        started.strftime("%Y-%m-%dT%H:%M:%SZ"),
    )


def jobs(count: int, seed: int = 7) -> list[dict[str, Any]]:
    """Job maps for the filter (prices as floats, the way a playbook writes them)."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        namespace, name, price, per_pod, replicas, started = _shape(rng, i)
        out.append(
            {
                "name": name,
                "namespace": namespace,
                "price": float(price),
                "gpus": replicas * per_pod,
                "replicas": replicas,
                "started_at": started,
            }
        )
    return out


def vcjobs(count: int, seed: int = 7) -> list[dict[str, Any]]:
    """Volcano Jobs as a LIST returns them, all running spot jobs in spot queues."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        namespace, name, price, per_pod, replicas, started = _shape(rng, i)
        container = {
            "name": "trainer",
            "image": "registry.example/trainer:1",
            "resources": {"limits": {"nvidia.com/gpu": str(per_pod)}},
        }
        out.append(
            {
                "apiVersion": "batch.volcano.sh/v1alpha1",
                "kind": "Job",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "uid": f"00000000-0000-0000-0000-{i:012d}",
                    "resourceVersion": str(1000 + i),
                    "creationTimestamp": "2025-12-31T00:00:00Z",
                    "labels": {"platform.io/billing-type": "spot"},
                    "annotations": {"platform.io/spot-price": price},
                },
                "spec": {
                    "queue": f"{namespace}-spot",
                    "minAvailable": replicas,
                    "schedulerName": "volcano",
                    "tasks": [
                        {
                            "name": "worker",
                            "replicas": replicas,
                            "template": {"spec": {"containers": [container]}},
                        }
                    ],
                },
                "status": {
                    "state": {"phase": "Running", "lastTransitionTime": started},
                    "running": replicas,
                },
            }
        )
    return out


def spot_queues() -> list[str]:
    return [f"tenant-t{t:03d}-spot" for t in range(TENANTS)]


def prefix(records: list[Any], need: int) -> list[Any]:
    """The stop rule over records already in victim order."""
    chosen, freed = [], 0
    for record in records:
        if freed >= need:
            break
        if record.gpus > 0:
            chosen.append(record)
            freed += record.gpus
    return chosen


def filter_baseline(job_maps: list[dict[str, Any]], need: int) -> list[dict[str, Any]]:
    """Baseline: read the job maps the filter's way, sort everything, take a prefix."""
    records = [_record(j, i) for i, j in enumerate(job_maps)]
    order = sorted(range(len(records)), key=lambda i: victim_order_key(records[i]))
    chosen = {id(r) for r in prefix([records[i] for i in order], need)}
    return [job_maps[i] for i in order if id(records[i]) in chosen]


def reclaim(items: list[dict[str, Any]], queues: list[str], need: int) -> list[Any]:
    return choose_victims(candidates_from_vcjobs(items, queues)[0], need)


def reclaim_baseline(items: list[dict[str, Any]], queues: list[str], need: int) -> list[Any]:
    """Baseline: the same candidates, sorted whole, then a prefix."""
    return prefix(sorted(candidates_from_vcjobs(items, queues)[0], key=victim_order_key), need)


def best_of(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def report(title: str, unit: str, rows: dict[int, tuple[float, float]]) -> None:
    print(title)
    print(f"{'jobs':>8} {unit + ' s':>24} {'full sort s':>12} {'ratio vs sort':>14}")
    for size, (ours, base) in rows.items():
        print(f"{size:>8} {ours:>24.4f} {base:>12.4f} {ours / base:>14.2f}")
    (small, small_base), (large, large_base) = rows[SIZES[0]], rows[SIZES[1]]
    print(
        f"growth {SIZES[0]:,} -> {SIZES[1]:,} jobs (10x): {unit} x{large / small:.1f}, "
        f"full sort x{large_base / small_base:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--need", type=int, default=64)
    args = parser.parse_args()
    need, queues = args.need, spot_queues()
    filtered, reclaimed = {}, {}
    for size in SIZES:
        maps, items = jobs(size), vcjobs(size)
        assert spot_victims(maps, need) == filter_baseline(maps, need)
        assert reclaim(items, queues, need) == reclaim_baseline(items, queues, need)
        filtered[size] = (
            best_of(lambda maps=maps: spot_victims(maps, need), args.repeat),
            best_of(lambda maps=maps: filter_baseline(maps, need), args.repeat),
        )
        reclaimed[size] = (
            best_of(lambda items=items: reclaim(items, queues, need), args.repeat),
            best_of(lambda items=items: reclaim_baseline(items, queues, need), args.repeat),
        )
    print(f"spot victims, need {need} GPUs, best of {args.repeat} runs, parsing included")
    report("the spot_victims filter over job maps", "spot_victims", filtered)
    print()
    report(
        "Volcano Jobs as listed: candidates_from_vcjobs + choose_victims",
        "candidates+choose",
        reclaimed,
    )


if __name__ == "__main__":
    main()
