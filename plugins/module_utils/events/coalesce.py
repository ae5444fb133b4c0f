# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule event-coalesce: a burst of one kind of event becomes at most two (pure, no I/O).

Per ``platform_event``, the first event after a quiet period passes at once (the leading
edge: the reaction is immediate). Until ``window`` seconds have passed, later events of
the same name are held, only the newest kept; when the window closes the newest passes
(the trailing edge), with ``coalesced`` saying how many it stands for, and a new window
opens from then, so a storm that goes on passes one event per window. A window that
closes with nothing held ends, and the next event is a leading edge again.

Why here and not in the rulebook: ansible-rulebook's ``throttle`` hands a matching
event to the first throttled rule only (its rules engine consumes it), so a rulebook
cannot have both a leading-edge and a trailing-edge rule, nor two throttled reconciles
for one event (docs/design-differences.md). Every reconcile the rulebook runs reads the
whole cluster, so the newest event of a burst says all a run needs: that a run is due.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .event import Event


@dataclass
class _Window:
    closes: float
    held: Event | None = None
    count: int = 0


class Coalescer:
    """Rule event-coalesce for one source; ``window`` in seconds (0: every event passes)."""

    def __init__(self, window: float):
        self.window = window
        self._open: dict[str, _Window] = {}

    def offer(self, event: Mapping[str, Any], now: float) -> list[Event]:
        """What passes now of ``event``, seen at ``now`` (a monotonic clock): the events of
        windows that closed before it, then ``event`` itself when it is a leading edge."""
        out = self.due(now)
        if self.window <= 0:
            return [*out, dict(event)]
        key = str(event.get("platform_event") or "")
        window = self._open.get(key)
        if window is None:
            self._open[key] = _Window(closes=now + self.window)
            return [*out, dict(event)]
        window.held, window.count = dict(event), window.count + 1
        return out

    def due(self, now: float) -> list[Event]:
        """The trailing edges of the windows that have closed by ``now``, oldest first."""
        out: list[Event] = []
        for key, window in sorted(self._open.items(), key=lambda kv: kv[1].closes):
            if window.closes > now:
                continue
            if window.held is None:
                del self._open[key]
                continue
            out.append({**window.held, "coalesced": window.count})
            self._open[key] = _Window(closes=now + self.window)
        return out

    def next_due(self) -> float | None:
        """When the next window closes (None: none is open)."""
        return min((w.closes for w in self._open.values()), default=None)
