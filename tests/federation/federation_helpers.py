# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the federation suite's files share: its one federation (``conftest.federation``
starts it), two member local clusters of their own, ``fed-idc`` and ``fed-cloud`` (port
offsets 600 and 800, ``topologies/federation-member.yaml``), joined to a Karmada control
plane ``fed-test`` (federation port offset 900); and how the files reach it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    CLUSTER,
    ROOT,
    WATCHERS,
    state_dir,
)

FEDERATION = ROOT / "tools" / "localcluster" / "federation.py"
BUILD = ROOT / "tools" / "localcluster" / "build_federation.py"
# name -> (location, port offset); the federation's own ports are in a block of their own
MEMBERS = {"fed-idc": ("idc", 600), "fed-cloud": ("cloud", 800)}
FED_NAME, FED_OFFSET = "fed-test", 900
LOCATION = "platform.io/node-location"
# one spine, one ToR, one 8-GPU node: a member's control plane is what is examined here
MEMBER_TOPOLOGY = ROOT / "tools" / "localcluster" / "topologies" / "federation-member.yaml"


def _run(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 600):
    return subprocess.run(
        cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def _member_env(name: str) -> dict[str, str]:
    return dict(
        os.environ,
        GPUCLOUD_LOCALCLUSTER=name,
        GPUCLOUD_LOCALCLUSTER_PORT_OFFSET=str(MEMBERS[name][1]),
    )


def _fed(*args: str, timeout: float = 600):
    return _run([sys.executable, str(FEDERATION), "--name", FED_NAME, *args], timeout=timeout)


def _fed_state() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "gpucloud-federation" / FED_NAME


def _pids(state: Path) -> dict[str, int]:
    try:
        return json.loads((state / "pids.json").read_text())
    except OSError:
        return {}


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _karmada_built() -> bool:
    out = _run([sys.executable, str(BUILD), "--print-dir"], timeout=60)
    return out.returncode == 0 and all(
        (Path(out.stdout.strip()) / b).exists()
        for b in ("karmada-controller-manager", "karmada-scheduler", "karmada-webhook")
    )


def dynamic(api):
    from kubernetes import dynamic as kdynamic

    return kdynamic.DynamicClient(api)


def stop_member_api_server(name: str) -> None:
    """Kill member ``name``'s API server at once (SIGKILL, as a host that is lost stops
    answering), then record it stopped so that ``up`` starts it again."""
    import signal

    pid = int(_pids(state_dir(name)).get("kube-apiserver") or 0)
    cmdline = Path(f"/proc/{pid}/cmdline")
    if pid and cmdline.exists() and b"kube-apiserver" in cmdline.read_bytes():
        os.kill(pid, signal.SIGKILL)
    done = _run(
        [sys.executable, str(CLUSTER), "stop", "kube-apiserver", "--timeout", "0"],
        _member_env(name),
    )
    assert done.returncode == 0, done.stderr


def restore_member(name: str) -> None:
    """Start member ``name``'s API server again, with the components that watch it (their
    informers re-list only after a back-off of up to a minute otherwise)."""
    for component in WATCHERS:
        _run([sys.executable, str(CLUSTER), "stop", component], _member_env(name))
    up = _run([sys.executable, str(CLUSTER), "up"], _member_env(name))
    assert up.returncode == 0, f"member {name}:\n{up.stdout}\n{up.stderr}"
