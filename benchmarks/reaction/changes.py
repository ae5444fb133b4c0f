# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a reaction is timed on: a change made by one write, and the state that says the
platform has acted on it. Each change is prepared untimed, made (the clock starts at the
write), waited for, and cleaned up."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

TIMEOUT_S = 300.0
POLL_S = 0.2


@dataclass
class Change:
    """One timed change. ``prepare`` sets the stage, ``make`` is the write, ``done`` says
    the platform has acted, ``cleanup`` undoes what the change left."""

    kind: str
    make: Callable[[], None]
    done: Callable[[], bool]
    prepare: Callable[[], None] = field(default=lambda: None)
    cleanup: Callable[[], None] = field(default=lambda: None)


def wait_done(change: Change, started: float, timeout: float = TIMEOUT_S) -> float:
    """Seconds from ``started`` until ``change.done()``; raises after ``timeout``."""
    while time.monotonic() - started < timeout:
        if change.done():
            return time.monotonic() - started
        time.sleep(POLL_S)
    raise TimeoutError(f"the platform did not act on the {change.kind} within {timeout:.0f} s")
