"""Helpers shared by the integration and conformance tests."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "tools" / "localcluster" / "cluster.py"


def state_dir(name: str | None = None) -> Path:
    name = name or os.environ.get("GPUCLOUD_LOCALCLUSTER", "default")
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "gpucloud-localcluster" / name


def wait_until(
    predicate: Callable[[], Any], timeout: float = 120, interval: float = 1, what: str = "condition"
) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail with ``what`` on timeout."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what} (last value: {last!r})")
