# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The federation suite's one federation (``federation_helpers`` says which), started once
per session and shared by every file of ``tests/federation``; stopped and wiped at the end,
with no member process left."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ansible_collections.gpucloud.platform.tests.federation.federation_helpers import (
    FED_OFFSET,
    MEMBER_TOPOLOGY,
    MEMBERS,
    _fed,
    _karmada_built,
    _member_env,
    _pids,
    _run,
    _running,
)
from ansible_collections.gpucloud.platform.tests.integration.conftest import (
    ansible_environment,
    run_module_in,
)
from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    CLUSTER,
    state_dir,
)


@pytest.fixture(scope="session")
def federation() -> Iterator[dict[str, Any]]:
    """Both members and the federation up; everything stopped and wiped afterwards."""
    if not _karmada_built():
        pytest.fail(
            "Karmada's binaries are not built: run tools/localcluster/build_federation.py "
            "(scripts/test federation builds them first)"
        )
    from kubernetes import config

    pids: dict[str, dict[str, int]] = {}
    try:
        for name in MEMBERS:
            up = _run(
                [sys.executable, str(CLUSTER), "up", "--topology", str(MEMBER_TOPOLOGY)],
                _member_env(name),
            )
            assert up.returncode == 0, f"member {name}:\n{up.stdout}\n{up.stderr}"
            pids[name] = _pids(state_dir(name))
        members = [f"--member={loc}={name}" for name, (loc, _offset) in MEMBERS.items()]
        started = time.monotonic()
        up = _fed("up", f"--port-offset={FED_OFFSET}", *members)
        assert up.returncode == 0, f"{up.stdout}\n{up.stderr}"
        kubeconfig = up.stdout.strip().splitlines()[-1]
        yield {
            "kubeconfig": kubeconfig,
            "karmada": config.new_client_from_config(config_file=kubeconfig),
            "members": {
                name: config.new_client_from_config(
                    config_file=str(state_dir(name) / "admin.kubeconfig")
                )
                for name in MEMBERS
            },
            "up_seconds": time.monotonic() - started,
        }
    finally:
        _fed("down", "--wipe", timeout=180)
        for name in MEMBERS:
            _run([sys.executable, str(CLUSTER), "down", "--wipe"], _member_env(name), 180)
        leftover = [pid for member in pids.values() for pid in member.values() if _running(pid)]
        assert leftover == [], f"member processes still running: {leftover}"


def _dynamic(api):
    from kubernetes import dynamic

    return dynamic.DynamicClient(api)


@pytest.fixture(scope="session")
def run_on_federation(federation) -> Callable[..., dict[str, Any]]:
    """``run_on_federation(module, args, check=False, diff=False)``: one module of the
    collection run as a playbook runs it (``ansible -m``), its connection the Karmada API
    server's kubeconfig; returns its result, failed or not."""
    env = ansible_environment(federation["kubeconfig"])

    def run(
        module: str, args: dict[str, Any], check: bool = False, diff: bool = False
    ) -> dict[str, Any]:
        return run_module_in(env, module, args, check, diff)

    return run
