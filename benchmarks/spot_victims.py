#!/usr/bin/env python3
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How spot victim selection grows from 5,000 to 50,000 jobs.

Times the ``spot_victims`` filter (parsing the job maps and choosing victims)
and, as the baseline measured in the same run on the same records, a naive
full sort by the victim order followed by the same stop rule. Prints times
and ratios only; it asserts nothing.

    .venv/bin/python benchmarks/spot_victims.py [--repeat 5] [--need 64]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / ".venv" / "collections"))

from ansible_collections.gpucloud.platform.plugins.filter.spot_victims import (
    _record,
    spot_victims,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.victims import (
    choose_victims,
    victim_order_key,
)

START = datetime(2026, 1, 1, tzinfo=UTC)


def jobs(count: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        replicas = rng.choice((1, 1, 1, 2, 4, 8))
        out.append(
            {
                "name": f"job-{i:06d}",
                "namespace": f"tenant-t{i % 200:03d}",
                "price": rng.choice((0.1, 0.2, 0.3, 0.5, 0.8, 1.0)),
                "gpus": replicas * rng.choice((1, 2, 4, 8)),
                "replicas": replicas,
                "started_at": (START + timedelta(seconds=rng.randrange(86_400 * 7))).strftime(
                    "%Y-%m-%dT%H:%M:%SZ"
                ),
            }
        )
    return out


def naive(job_maps: list[dict], need: int) -> list[dict]:
    """Baseline: parse the same way, sort everything, then take a prefix."""
    records = [(_record(j, i), j) for i, j in enumerate(job_maps)]
    records.sort(key=lambda pair: victim_order_key(pair[0]))
    chosen, freed = [], 0
    for record, job in records:
        if freed >= need:
            break
        if record.gpus > 0:
            chosen.append(job)
            freed += record.gpus
    return chosen


def best_of(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--need", type=int, default=64)
    args = parser.parse_args()
    rows, core = {}, {}
    for size in (5_000, 50_000):
        data = jobs(size)
        assert [j["name"] for j in spot_victims(data, args.need)] == [
            j["name"] for j in naive(data, args.need)
        ]
        records = [_record(j, i) for i, j in enumerate(data)]
        rows[size] = (
            best_of(lambda data=data: spot_victims(data, args.need), args.repeat),
            best_of(lambda data=data: naive(data, args.need), args.repeat),
        )
        core[size] = (
            best_of(lambda records=records: choose_victims(records, args.need), args.repeat),
            best_of(lambda records=records: sorted(records, key=victim_order_key), args.repeat),
        )
    print(f"spot_victims, need {args.need} GPUs, best of {args.repeat} runs")
    print(f"{'jobs':>8} {'spot_victims s':>15} {'full sort s':>12} {'ratio vs sort':>14}")
    for size, (ours, base) in rows.items():
        print(f"{size:>8} {ours:>15.4f} {base:>12.4f} {ours / base:>14.2f}")
    (small, small_base), (large, large_base) = rows[5_000], rows[50_000]
    print(
        f"growth 5,000 -> 50,000 jobs (10x): spot_victims x{large / small:.1f}, full sort x{large_base / small_base:.1f}"
    )
    print()
    print("choosing only (records already parsed): heap selection vs sorting every record")
    print(f"{'jobs':>8} {'choose_victims s':>17} {'sorted() s':>11} {'ratio vs sort':>14}")
    for size, (ours, base) in core.items():
        print(f"{size:>8} {ours:>17.4f} {base:>11.4f} {ours / base:>14.2f}")
    (small, small_base), (large, large_base) = core[5_000], core[50_000]
    print(
        f"growth 5,000 -> 50,000 jobs (10x): choose_victims x{large / small:.1f}, "
        f"sorted() x{large_base / small_base:.1f}"
    )


if __name__ == "__main__":
    main()
