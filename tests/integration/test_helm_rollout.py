# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The chart roles' own wait for a Helm release (platform_helm's release entry point),
against the local cluster: a line on every poll, the play failing by name when a
workload does not roll out, and nothing waited for when the release is unchanged."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpucloud.platform.tests.integration.test_roles import (
    PLAYBOOK,
    ROOT,
    chart,
    helm_binary,
)

pytestmark = pytest.mark.integration


def release(tmp_path: Path, kubeconfig: str, namespace: str, values: dict, timeout: str):
    """platform_helm's release entry point for the rollout stand-in chart, with Ansible's
    default output (the progress lines are what is under test)."""
    play = {
        "name": "Install the rollout chart",
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": False,
        "tasks": [
            {
                "name": "Release",
                "ansible.builtin.include_role": {
                    "name": "gpucloud.platform.platform_helm",
                    "tasks_from": "release",
                },
            }
        ],
    }
    book = tmp_path / "release.yml"
    book.write_text(yaml.safe_dump([play]))
    extra = {
        "platform_kubeconfig": str(kubeconfig),
        "platform_helm_binary": helm_binary(),
        "platform_helm_component": "rollout",
        "platform_helm_release": "ro",
        "platform_helm_namespace": namespace,
        "platform_helm_chart_ref": chart("rollout"),
        "platform_helm_chart_repo_url": "",
        "platform_helm_chart_name": "rollout",
        "platform_helm_chart_version": "0.1.0",
        "platform_helm_values": values,
        "platform_helm_wait_timeout": timeout,
        "platform_helm_poll_interval": 2,
        "ansible_python_interpreter": str(ROOT / ".venv" / "bin" / "python"),
    }
    varfile = tmp_path / "vars.yml"
    varfile.write_text(yaml.safe_dump(extra))
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
        # A skipped task prints no header: what ran is what the output shows.
        "ANSIBLE_DISPLAY_SKIPPED_HOSTS": "false",
        "K8S_AUTH_KUBECONFIG": str(kubeconfig),
    }
    started = time.monotonic()
    proc = subprocess.run(
        [str(PLAYBOOK), "-i", "localhost,", str(book), "-e", f"@{varfile}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return proc, time.monotonic() - started


def test_a_release_that_rolls_out_is_waited_for_then_left_alone(tmp_path, kubeconfig, namespace):
    proc, _took = release(tmp_path, kubeconfig, namespace, {"replicas": 2}, "2m0s")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert (
        "Wait until every workload is ready, a look every platform_helm_poll_interval seconds: ro"
        in proc.stdout
    )
    assert "ok=" in proc.stdout and "failed=0" in proc.stdout

    # Unchanged: nothing to install, so nothing is waited for.
    again, _took = release(tmp_path, kubeconfig, namespace, {"replicas": 2}, "2m0s")
    assert again.returncode == 0, again.stdout[-3000:]
    assert "changed=0" in again.stdout
    assert "Read the release's manifest" not in again.stdout


def test_a_release_that_never_rolls_out_prints_progress_and_fails_by_name(
    tmp_path, kubeconfig, namespace
):
    proc, took = release(
        tmp_path,
        kubeconfig,
        namespace,
        {"replicas": 2, "nodeSelector": {"key": "platform.io/no-such-node", "value": "true"}},
        "8s",
    )
    assert proc.returncode != 0
    # A line on every poll (8 s at a 2 s interval: 4 retries), so a long wait is never silent.
    retrying = [line for line in proc.stdout.splitlines() if line.startswith("FAILED - RETRYING")]
    assert len(retrying) >= 3, proc.stdout[-3000:]
    assert all("Wait until every workload is ready" in line for line in retrying), retrying
    # The failure names the workload that did not roll out, and why, and not the ready one.
    assert f"ro in {namespace} is not ready after 8s" in proc.stdout
    assert f"Deployment/{namespace}/ro-web - 0/2 replicas updated and ready" in proc.stdout
    assert "ro-db" not in proc.stdout.split("is not ready after")[-1].split("\n")[0]
    assert took < 120
