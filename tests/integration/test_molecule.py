# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The molecule scenario (molecule/default): syntax, converge, idempotence and
verify of site.yml against the local cluster, with molecule's default driver
(no instances). It is the suite's one whole bring-up: verify checks the Nodes'
labels, the PriorityClasses, the inventory's tenants with their claims and spot
GPUs, and a HyperNode per labelled switch; idempotence, that a second run
changes nothing; this test, the summary site.yml prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


HYPERNODES = ("topology.volcano.sh", "v1alpha1", "hypernodes")


def managed_hypernodes(api_client) -> set[str]:
    from kubernetes import client

    items = client.CustomObjectsApi(api_client).list_cluster_custom_object(
        *HYPERNODES, label_selector="platform.io/managed-by=gpucloud-platform"
    )["items"]
    return {h["metadata"]["name"] for h in items}


def test_molecule_default_scenario(kubeconfig, api_client):
    from kubernetes import client

    had = managed_hypernodes(api_client)
    env = {
        **os.environ,
        "K8S_AUTH_KUBECONFIG": str(kubeconfig),
        "PATH": f"{BIN}:{os.environ.get('PATH', '')}",
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "NO_COLOR": "1",
    }
    try:
        run = subprocess.run(
            [str(BIN / "molecule"), "test", "-s", "default"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
    finally:
        # Leave the shared cluster without the HyperNodes it made and the inventory's
        # example tenants.
        for name in managed_hypernodes(api_client) - had:
            client.CustomObjectsApi(api_client).delete_cluster_custom_object(*HYPERNODES, name)
        absent = {"tenants": [{"name": n, "state": "absent"} for n in ("demo-alpha", "demo-beta")]}
        subprocess.run(
            [
                str(BIN / "ansible-playbook"),
                "-i",
                "inventories/local",
                "site.yml",
                "--tags",
                "tenants",
                "-e",
                json.dumps(absent),
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-4000:]
    for action in ("syntax", "converge", "idempotence", "verify"):
        assert f"{action}: Executed: Successful" in out.replace("➜ ", ""), (action, out[-3000:])
    # The summary site.yml prints: a skipped chart in one line, then the platform's parts.
    for line in ('"nvidia_device_plugin: skipped — ', '"tenants: ', '"topology: ', '"spot: '):
        assert line in out, (line, out[-3000:])
