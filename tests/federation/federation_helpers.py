# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A local federation for a test: member local clusters of their own names and port
offsets on a one-node topology, joined to a Karmada control plane of its own name and
port offset (tools/localcluster/federation.py); everything stopped and wiped afterwards."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    CLUSTER,
    ROOT,
    state_dir,
)

FEDERATION = ROOT / "tools" / "localcluster" / "federation.py"
# one spine, one ToR, one 8-GPU node: a member's control plane is what is examined here
TINY = "name: fed-member\nspines:\n  - name: spine-0\n    tors:\n      - name: tor-0\n        nodes: [gpu-node-0]\n"


def run(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 600):
    return subprocess.run(
        cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def member_env(name: str, offset: int) -> dict[str, str]:
    return dict(
        os.environ, GPUCLOUD_LOCALCLUSTER=name, GPUCLOUD_LOCALCLUSTER_PORT_OFFSET=str(offset)
    )


def federation_cmd(name: str, *args: str, timeout: float = 600):
    return run([sys.executable, str(FEDERATION), "--name", name, *args], timeout=timeout)


def pids_of(state: Path) -> dict[str, int]:
    try:
        return json.loads((state / "pids.json").read_text())
    except OSError:
        return {}


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def member_kubeconfig(name: str) -> str:
    return str(state_dir(name) / "admin.kubeconfig")


@contextlib.contextmanager
def local_federation(
    name: str, offset: int, members: Mapping[str, tuple[str, int]], workdir: Path
) -> Iterator[dict[str, Any]]:
    """``members``: cluster name -> (location, port offset). Yields ``kubeconfig`` (the
    Karmada API server's) and ``up_seconds``; on the way out the federation and every
    member are brought down with ``--wipe``, and no member process may be left."""
    topo = workdir / "tiny.yaml"
    topo.write_text(TINY)
    pids: dict[str, dict[str, int]] = {}
    try:
        for member, (_loc, port_offset) in members.items():
            up = run(
                [sys.executable, str(CLUSTER), "up", "--topology", str(topo)],
                member_env(member, port_offset),
            )
            assert up.returncode == 0, f"member {member}:\n{up.stdout}\n{up.stderr}"
            pids[member] = pids_of(state_dir(member))
        joined = [f"--member={loc}={member}" for member, (loc, _offset) in members.items()]
        started = time.monotonic()
        up = federation_cmd(name, "up", f"--port-offset={offset}", *joined)
        assert up.returncode == 0, f"{up.stdout}\n{up.stderr}"
        yield {
            "kubeconfig": up.stdout.strip().splitlines()[-1],
            "up_seconds": time.monotonic() - started,
        }
    finally:
        federation_cmd(name, "down", "--wipe", timeout=180)
        for member, (_loc, port_offset) in members.items():
            run(
                [sys.executable, str(CLUSTER), "down", "--wipe"],
                member_env(member, port_offset),
                180,
            )
        leftover = [pid for member in pids.values() for pid in member.values() if running(pid)]
        assert leftover == [], f"member processes still running: {leftover}"
