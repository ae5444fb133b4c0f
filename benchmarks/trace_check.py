#!/usr/bin/env python3
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks trace files against the trace rules, without a cluster.

For each file, one line when it is valid (its jobs, tenants, events, GPUs and the
GPU-hours it asks), or every error, each naming the field, the value and the rule
(docs/trace-replay.md lists the rules). Exits 0 when every file is valid, 1 when one is
not.

    .venv/bin/python benchmarks/trace_check.py /tmp/day.yaml docs/examples/trace-small.yaml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / ".venv" / "collections"))

from ansible_collections.gpucloud.platform.benchmarks.traces.load import load
from ansible_collections.gpucloud.platform.benchmarks.traces.summary import line
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", metavar="FILE", help="trace files (YAML)")
    args = parser.parse_args(argv)
    failed = 0
    for name in args.files:
        try:
            trace = load(name)
        except PlatformValidationError as exc:
            failed += 1
            count = len(exc.errors)
            print(f"{name}: invalid, {count} error{'s' if count != 1 else ''}:")
            for error in exc.errors:
                print(f"  {error}")
            continue
        print(line(name, trace))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
