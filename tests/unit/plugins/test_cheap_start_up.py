# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters and the pure core never import the Kubernetes client.

Importing ``kubernetes`` costs about half a second in every process, and a filter
runs in the controller's process or a template worker that never calls the API.
Each import below runs in a fresh interpreter, so nothing imported by another test
can hide a client import; only a domain's ``service`` and ``kube/`` may import it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PLUGINS = Path(__file__).resolve().parents[3] / "plugins"
PACKAGE = "ansible_collections.gpucloud.platform.plugins"

FILTERS = sorted(p.stem for p in (PLUGINS / "filter").glob("*.py") if p.stem != "__init__")
# The pure core: every rule file of every domain (not the services, not kube/).
PURE = sorted(
    f"{p.parent.name}.{p.stem}"
    for p in (PLUGINS / "module_utils").glob("*/*.py")
    if p.stem not in ("__init__", "service", "lease_io")
    and p.parent.name != "kube"
    and not p.stem.endswith("_io")
)

PROBE = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted(m for m in sys.modules if m == "kubernetes" or m.startswith("kubernetes."))))
"""


def client_modules_after_import(*modules: str) -> list[str]:
    """The ``kubernetes`` modules loaded once ``modules`` are imported in a fresh interpreter."""
    run = subprocess.run(
        [sys.executable, "-c", PROBE, *modules],
        # The collection is found where this process finds it.
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)


def test_the_lists_are_not_empty():
    assert "spot_victims" in FILTERS
    assert {"common.quantity", "spot.victims", "jobs.demand"} <= set(PURE)


@pytest.mark.parametrize("name", FILTERS)
def test_a_filter_imports_no_kubernetes_client(name):
    assert client_modules_after_import(f"{PACKAGE}.filter.{name}") == []


def test_the_pure_core_imports_no_kubernetes_client():
    # One interpreter for all of them: any one pulling the client in shows.
    assert client_modules_after_import(*(f"{PACKAGE}.module_utils.{m}" for m in PURE)) == []


def test_the_probe_sees_a_client_import():
    assert "kubernetes" in client_modules_after_import("kubernetes.utils.quantity")
