# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every benchmark starts the way docs/benchmarks.md runs it: the venv's Python, from the
checkout, with no PYTHONPATH (pytest's own path settings do not reach the subprocess)."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.tests.unit.benchmarks.scripts import ROOT, run_script

BENCHMARKS = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_"))


def test_there_are_benchmarks():
    assert {p.stem for p in BENCHMARKS} >= {"spot_capacity", "tenant_onboarding", "topology_sync"}


@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda p: p.stem)
def test_benchmark_imports_and_prints_its_usage(script):
    proc = run_script(script.stem, "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: "), proc.stdout
