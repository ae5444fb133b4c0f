# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The federation suite's one federation (``federation_helpers`` says which), started once
per session and shared by every file of ``tests/federation``; stopped and wiped at the end,
with no member process left. The platform's own objects are put in it once, by module
federation_platform (``federation_platform``), for every file that needs them."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ansible_collections.gpucloud.platform.tests.federation.federation_helpers import (
    CLOUD_JOIN,
    FED_OFFSET,
    MEMBER_TOPOLOGY,
    MEMBERS,
    PLATFORM_ARGS,
    _fed,
    _karmada_built,
    _member_env,
    _pids,
    _run,
    _running,
    member_platform,
    platform_versions,
)
from ansible_collections.gpucloud.platform.tests.integration.conftest import (
    ansible_environment,
    run_module_in,
)
from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    CLUSTER,
    state_dir,
    wait_until,
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
        # The IDC member is joined by the local federation's `up`, the cloud member by
        # module federation_member: both ways of rule federation-member-join run here.
        members = [f"--member={loc}={name}" for name, (loc, _o) in MEMBERS.items() if loc == "idc"]
        started = time.monotonic()
        up = _fed("up", f"--port-offset={FED_OFFSET}", *members)
        assert up.returncode == 0, f"{up.stdout}\n{up.stderr}"
        kubeconfig = up.stdout.strip().splitlines()[-1]
        cloud_join = run_module_in(
            ansible_environment(kubeconfig), "gpucloud.platform.federation_member", CLOUD_JOIN
        )
        assert not cloud_join.get("failed"), cloud_join
        yield {
            "kubeconfig": kubeconfig,
            "cloud_join": cloud_join,
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


@pytest.fixture(scope="session")
def federation_platform(federation, run_on_federation) -> dict[str, Any]:
    """The platform's objects in the federation, by module federation_platform with
    ``PLATFORM_ARGS``, once per suite run, and in both members before any file goes on (a
    tenant's burst leaf needs cloud-burst, a job its PriorityClass). First a check-mode
    run, with what Karmada and each member held before and after it, for
    test_federation_platform to judge."""
    from ansible_collections.gpucloud.platform.plugins.module_utils.kube.cluster import Cluster

    karmada = Cluster.from_kubeconfig(federation["kubeconfig"])
    members = {
        name: Cluster.from_kubeconfig(str(state_dir(name) / "admin.kubeconfig")) for name in MEMBERS
    }

    def held() -> dict[str, Any]:
        return {
            "karmada": platform_versions(karmada),
            **{name: member_platform(m) for name, m in members.items()},
        }

    started = time.monotonic()
    before = held()
    check = run_on_federation("federation_platform", PLATFORM_ARGS, check=True, diff=True)
    time.sleep(5)  # what Karmada would push, it has pushed by now
    after_check = held()
    done = run_on_federation("federation_platform", PLATFORM_ARGS, diff=True)
    assert done.get("failed") is not True, done
    conf = karmada.get("v1", "ConfigMap", "volcano-scheduler-configmap", "volcano-system")
    text = conf["data"]["volcano-scheduler.conf"]
    for name, member in members.items():
        wait_until(
            lambda m=member: (
                (p := member_platform(m))["conf"] == text and len(p["priority_classes"]) == 5
            ),
            120,
            1,
            f"the PriorityClasses and the scheduler conf in {name}",
        )
    cloud = next(n for n, (location, _o) in MEMBERS.items() if location == "cloud")
    wait_until(
        lambda: member_platform(members[cloud])["cloud_burst_gpus"] == "8",
        120,
        1,
        f"cloud-burst in {cloud}",
    )
    return {
        "karmada": karmada,
        "members": members,
        "before": before,
        "check": check,
        "after_check": after_check,
        "result": done,
        "conf": text,
        "seconds": time.monotonic() - started,
    }
