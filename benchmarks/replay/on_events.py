# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``platform-events`` replay's event side: the collection's event source run in the
replay's process, and which reconciles its events want run, as ``platform_reconcile.yml``
says (``triggers``). A reconciler waits on its ``wanted`` flag instead of only its
schedule: an event that arrives during a run makes one run after it, never a second run
at once (the rulebook's lock per playbook)."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.gpucloud.platform.benchmarks.replay import triggers
from ansible_collections.gpucloud.platform.plugins.module_utils.events.inputs import SourceArgs
from ansible_collections.gpucloud.platform.plugins.module_utils.events.service import run_source

# The event source's settings in production (platform_reconcile.yml), traced seconds,
# compressed like the rest, never below what a watch on two cores can tell apart.
SOURCE_RESYNC_S = 30
SOURCE_COALESCE_S = 5
SOURCE_MIN_S = 0.05


class EventTriggers:
    """Which reconciles the events want run, and how many of each event came in."""

    def __init__(
        self,
        names: Iterable[str],
        by_event: Mapping[str, tuple[str, ...]],
        safety_net: Mapping[str, float],
    ):
        self.by_event, self.safety_net = by_event, safety_net
        self.wanted = {name: threading.Event() for name in names}
        self.seen: dict[str, int] = {}
        self._lock = threading.Lock()

    @classmethod
    def production(cls, names: Iterable[str]) -> EventTriggers:
        """The rulebook's rules and the schedules' safety-net periods, as the repository
        holds them."""
        by_event, safety_net = triggers.production()
        return cls(names, by_event, safety_net)

    def starts(self, name: str) -> bool:
        """Whether an event starts the reconcile ``name``."""
        return any(name in names for names in self.by_event.values())

    def period_s(self, name: str, default_s: float) -> float:
        """The reconcile's schedule, traced seconds: the safety net's period when events
        start it, else ``default_s``."""
        return self.safety_net.get(name, default_s) if self.starts(name) else default_s

    def emit(self, event: Mapping[str, Any]) -> None:
        """The source's callback: count the event, mark the reconciles it starts."""
        kind = str(event.get("platform_event"))
        with self._lock:
            self.seen[kind] = self.seen.get(kind, 0) + 1
        for name in self.by_event.get(kind, ()):
            if name in self.wanted:
                self.wanted[name].set()

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(sorted(self.seen.items()))

    def wake_all(self) -> None:
        """Wake every waiting reconciler (the replay is stopping)."""
        for wanted in self.wanted.values():
            wanted.set()

    def follow(self, kubeconfig: str, factor: float, stop: threading.Event) -> None:
        """Run the event source until ``stop``, its periods compressed ``factor`` times."""
        args = SourceArgs(
            connection={"kubeconfig": kubeconfig},
            resync_seconds=max(SOURCE_MIN_S, SOURCE_RESYNC_S / factor),
            coalesce_seconds=max(SOURCE_MIN_S, SOURCE_COALESCE_S / factor),
        )
        run_source(args, self.emit, stop)
