# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The real ``ansible-rulebook`` running ``platform_reconcile.yml`` against a cluster, as
the benchmark and the integration test of the event source start it: its output so far,
how many times each play started, and a wait for it to fall quiet."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
RULEBOOK = "extensions/eda/rulebooks/platform_reconcile.yml"
ARGS = ("-i", "inventories/local", "--env-vars", "KUBECONFIG")
SPOT_PLAY = "PLAY [Recompute spot capacity]"
# The source's coalescing window (5 s) and a margin: a burst's trailing run has started
# by then, if there is one.
QUIET_S = 8.0


class Rulebook:
    """``ansible-rulebook --rulebook platform_reconcile.yml`` writing to ``log``."""

    def __init__(self, log: Path, proc: subprocess.Popen):
        self.log = log
        self.proc = proc

    @classmethod
    def start(cls, env: Mapping[str, str], log: Path, timeout: float = 120) -> Rulebook:
        """Start it, and return once its first spot recompute (the source's first LIST is
        a change of every node and queue) has run and it has fallen quiet: the whole chain
        works."""
        with log.open("w") as out:
            proc = subprocess.Popen(
                [str(BIN / "ansible-rulebook"), "--rulebook", RULEBOOK, *ARGS],
                cwd=ROOT,
                env=dict(env),
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        book = cls(log, proc)
        try:
            deadline = time.monotonic() + timeout
            while book.runs(SPOT_PLAY) == 0:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"ansible-rulebook did not start:\n{book.tail()}")
                time.sleep(1)
            book.settle(timeout=timeout)
        except BaseException:
            book.stop()
            raise
        return book

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def tail(self, chars: int = 3000) -> str:
        return self.output()[-chars:]

    def runs(self, play: str) -> int:
        """How many runs of ``play`` have started."""
        return self.output().count(play)

    def settle(self, play: str = SPOT_PLAY, quiet_s: float = QUIET_S, timeout: float = 120) -> None:
        """Wait until no run of ``play`` has started for ``quiet_s`` and the last one has
        ended, so a change starts from a still platform."""
        deadline = time.monotonic() + timeout
        seen, since = self.runs(play), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.5)
            if self.proc.poll() is not None:
                raise RuntimeError(f"ansible-rulebook exited:\n{self.tail()}")
            now = self.runs(play)
            if now != seen:
                seen, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet_s and "PLAY RECAP" in self.tail(4000):
                return
        raise RuntimeError(f"{play} still running after {timeout} s")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
