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
from typing import Any

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


def in_fresh_interpreter(script: str, *args: str) -> Any:
    """What ``script`` prints as JSON, run with ``args`` in a fresh interpreter."""
    run = subprocess.run(
        [sys.executable, "-c", script, *args],
        # The collection is found where this process finds it.
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)


def client_modules_after_import(*modules: str) -> list[str]:
    """The ``kubernetes`` modules loaded once ``modules`` are imported in a fresh interpreter."""
    return in_fresh_interpreter(PROBE, *modules)


def test_the_lists_are_not_empty():
    assert "spot_victims" in FILTERS
    assert {"common.quantity", "spot.victims", "workload.demand"} <= set(PURE)


@pytest.mark.parametrize("name", FILTERS)
def test_a_filter_imports_no_kubernetes_client(name):
    assert client_modules_after_import(f"{PACKAGE}.filter.{name}") == []


def test_the_pure_core_imports_no_kubernetes_client():
    # One interpreter for all of them: any one pulling the client in shows.
    assert client_modules_after_import(*(f"{PACKAGE}.module_utils.{m}" for m in PURE)) == []


def test_the_probe_sees_a_client_import():
    assert "kubernetes" in client_modules_after_import("kubernetes.utils.quantity")


def test_a_module_imports_the_client_only_to_connect():
    # What every module imports before it connects: the runner and its Ansible side.
    modules = (
        "kube.runner",
        "kube.module",
        "catalog.rendered",
        "catalog.source_io",
        "tenants.rendered",
    )
    assert client_modules_after_import(*(f"{PACKAGE}.module_utils.{m}" for m in modules)) == []


# Runs a module's main() in a fresh interpreter; prints its result and the client
# modules loaded by then.
MODULE_RUN = """
import contextlib, importlib, io, json, sys
from ansible.module_utils.testing import patch_module_args
module = importlib.import_module(sys.argv[1])
out = io.StringIO()
with patch_module_args(json.loads(sys.argv[2])), contextlib.redirect_stdout(out):
    try:
        module.main()
    except SystemExit:
        pass
client = sorted(m for m in sys.modules if m == "kubernetes" or m.startswith("kubernetes."))
print(json.dumps({"result": json.loads(out.getvalue()), "client": client}))
"""

NETWORKS = {"pod_cidr": "10.244.0.0/16", "service_cidr": "10.96.0.0/12"}
ALPHA = {"name": "alpha", "subscription": {"nvidia.com/gpu": 8}}


def module_run(module: str, args: dict) -> dict:
    return in_fresh_interpreter(MODULE_RUN, f"{PACKAGE}.modules.{module}", json.dumps(args))


@pytest.mark.parametrize(
    ("module", "args"),
    [
        ("tenant", {**ALPHA, "state": "rendered", **NETWORKS}),
        ("tenant_catalog", {"state": "rendered", "tenants": [ALPHA], **NETWORKS}),
    ],
)
def test_rendered_answers_without_the_client(module, args):
    run = module_run(module, args)
    assert run["client"] == []
    assert run["result"]["requests"] == 0
    kinds = {m["kind"] for m in run["result"]["manifests"]}
    assert {"Namespace", "NetworkPolicy", "Queue"} <= kinds


def test_a_refused_input_fails_without_the_client():
    run = module_run("tenant_catalog", {"state": "rendered", "tenants": [{**ALPHA, "name": "B_"}]})
    assert run["result"]["failed"] is True
    assert any(e.startswith("tenants[0].name") for e in run["result"]["errors"])
    assert run["client"] == []


def test_a_module_that_connects_loads_the_client():
    # No kubeconfig here: the run fails to connect, after importing the client.
    run = module_run(
        "tenant_catalog", {"state": "gathered", "kubeconfig": "/nonexistent/kubeconfig"}
    )
    assert run["result"]["failed"] is True
    assert "kubernetes" in run["client"]
