# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a call gives, compared whole: for tests that hold a quick way to the general one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def outcome(fn: Callable[..., Any], *args: Any) -> tuple[Any, ...]:
    """What a call gives: its value and that value's text, or its error and message."""
    try:
        value = fn(*args)
    except Exception as exc:  # every error counts: its kind and its words
        return ("raised", type(exc), str(exc))
    return ("value", type(value), value, str(value))
