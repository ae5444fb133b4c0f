# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The local cluster's processes: starting a component in its own session with
its log, the pid file, whether a pid still runs the expected program, health
checks, stopping, and waiting for a condition with a pointer to the log."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from components import Component
from settings import APISERVER


def read_pids(state: Path) -> dict[str, int]:
    try:
        return json.loads((state / "pids.json").read_text())
    except (OSError, ValueError):
        return {}


def write_pids(state: Path, pids: dict[str, int]) -> None:
    (state / "pids.json").write_text(json.dumps(pids, indent=2, sort_keys=True))


def alive(pid: int, argv0: str | None = None) -> bool:
    """True when pid runs and, if given, runs the expected program (pids are reused)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        status = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    if status == "Z":
        return False
    return argv0 is None or any(argv0.encode() in part for part in cmdline[:3])


@functools.cache
def health_tls(state: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """TLS for the https health URLs: with the admin certificate for the API
    server's, without one for the others (vc-webhook-manager's health server
    refuses ours)."""
    ca = str(state / "pki" / "ca.crt")
    admin = ssl.create_default_context(cafile=ca)
    admin.load_cert_chain(str(state / "pki" / "admin.crt"), str(state / "pki" / "admin.key"))
    return admin, ssl.create_default_context(cafile=ca)


def healthy(state: Path, comp: Component) -> bool:
    if comp.health is None:
        return True
    # Health endpoints, not the Kubernetes API: the kubernetes client would add nothing.
    try:
        ctx = None
        if comp.health.startswith("https"):
            admin, anonymous = health_tls(state)
            ctx = admin if comp.health.startswith(APISERVER) else anonymous
        with urllib.request.urlopen(comp.health, context=ctx, timeout=5) as resp:
            return resp.status == 200
    except (OSError, urllib.error.URLError, ssl.SSLError):
        return False


# A cluster started beside other work (the test stages beside integration) runs its
# processes at this nice value: GPUCLOUD_LOCALCLUSTER_NICE.
NICE_ENV = "GPUCLOUD_LOCALCLUSTER_NICE"


def nice_from_env() -> int | None:
    value = os.environ.get(NICE_ENV, "").strip()
    return int(value) if value else None


def start(state: Path, comp: Component, nice: int | None = None) -> int:
    """The component in its own session (and so its own autogroup), its output in its log.
    With ``nice`` (default: GPUCLOUD_LOCALCLUSTER_NICE), that autogroup's nice value too:
    Linux schedules each session as one group, so a plain nice would rank the process only
    against the others of its own session."""
    nice = nice_from_env() if nice is None else nice
    logs = state / "logs"
    logs.mkdir(parents=True, exist_ok=True)

    def lower_priority() -> None:  # runs in the child, after setsid
        with contextlib.suppress(OSError):
            Path("/proc/self/autogroup").write_text(str(nice))
        os.nice(nice or 0)

    with open(logs / f"{comp.name}.log", "ab") as out:
        proc = subprocess.Popen(
            comp.argv,
            env=dict(os.environ, **comp.env) if comp.env else None,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            # its own process group: `down` and `stop` signal the group, and a
            # Ctrl-C in the shell that ran `up` does not reach it
            start_new_session=True,
            cwd=state,
            preexec_fn=lower_priority if nice else None,  # no threads here
        )
    return proc.pid


def stop_pid(pid: int, timeout: float = 15) -> None:
    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and alive(pid):
        time.sleep(0.2)
    if alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


def wait_for(
    what: str,
    check: Callable[[], bool],
    timeout: float,
    state: Path | None = None,
    component: str | None = None,
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    hint = f"; see {state / 'logs' / (component + '.log')}" if state and component else ""
    raise SystemExit(f"localcluster: timed out after {timeout:.0f}s waiting for {what}{hint}")
