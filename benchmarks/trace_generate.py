#!/usr/bin/env python3
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writes a seeded, tidal day of traffic as a trace file, and says what it asks.

Interactive debug and small jobs by day, large training by night, spot at any hour,
purchases by day; job sizes from 1 to 64 GPUs with a heavy tail (the distributions are
in benchmarks/traces/generate.py and docs/trace-replay.md). The same parameters give the
same file. Every trace written passes the trace rules (trace_check.py); the summary
printed after it gives the jobs by billing type and class, the GPU-hours asked and the
busiest hour.

    .venv/bin/python benchmarks/trace_generate.py --seed 7 --jobs 2000 --gpus 128 -o /tmp/day.yaml
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / ".venv" / "collections"))

from ansible_collections.gpucloud.platform.benchmarks.traces.generate import DAY, Params, generate
from ansible_collections.gpucloud.platform.benchmarks.traces.load import dump, playbook_variables
from ansible_collections.gpucloud.platform.benchmarks.traces.summary import paragraph
from ansible_collections.gpucloud.platform.benchmarks.traces.validate import trace_errors
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)

WIDTH = 92  # the summary's lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="The summary goes to standard output, or to standard error when the trace "
        "does (no -o).",
    )
    parser.add_argument("--seed", type=int, default=7, help="the random seed (default 7)")
    parser.add_argument("--jobs", type=int, default=2000, help="jobs in the day (default 2000)")
    parser.add_argument(
        "--gpus", type=int, default=128, help="the cluster's GPUs, 8 a node (default 128)"
    )
    parser.add_argument(
        "--tenants",
        type=int,
        default=4,
        help="tenants in all; with two or more the last is bought during the day (default 4)",
    )
    parser.add_argument(
        "--day-seconds",
        type=int,
        default=DAY,
        help=f"how long the day is: times and durations scale with it (default {DAY})",
    )
    parser.add_argument(
        "--load",
        type=float,
        default=1.0,
        help="GPU-hours asked over the cluster's GPU-hours of the day (default 1.0)",
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="where to write the trace (default: standard output)"
    )
    args = parser.parse_args(argv)
    params = Params(args.seed, args.jobs, args.gpus, args.tenants, args.day_seconds, args.load)
    try:
        trace = generate(params)
    except PlatformValidationError as exc:
        parser.error("; ".join(exc.messages))
    errors = trace_errors(trace.as_mapping(), playbook_variables())
    if errors:  # the generator's promise broken: say so, write nothing
        print("the generated trace breaks the trace rules:", file=sys.stderr)
        print("\n".join(f"  {e}" for e in errors), file=sys.stderr)
        return 1
    command = (
        f"benchmarks/trace_generate.py --seed {args.seed} --jobs {args.jobs} --gpus {args.gpus} "
        f"--tenants {args.tenants} --day-seconds {args.day_seconds} --load {args.load:g}"
    )
    text = dump(trace, f"A generated day of traffic (docs/trace-replay.md):\n  {command}")
    if args.output is None:
        sys.stdout.write(text)
        print(textwrap.fill(paragraph(trace, args.day_seconds), WIDTH), file=sys.stderr)
        return 0
    Path(args.output).write_text(text, encoding="utf-8")
    print(textwrap.fill(f"{args.output}: {paragraph(trace, args.day_seconds)}", WIDTH))
    return 0


if __name__ == "__main__":
    sys.exit(main())
