# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a benchmark script as docs/benchmarks.md does: the venv's Python, from the checkout,
with no PYTHONPATH (pytest's own path settings must not reach the subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def run_script(script: str, *args: str) -> subprocess.CompletedProcess:
    """``benchmarks/<script>.py`` with ``args``; its exit code, stdout and stderr."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, f"benchmarks/{script}.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
