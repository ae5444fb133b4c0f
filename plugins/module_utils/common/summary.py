# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule run-summary: every run says what it did in a few lines a person reads.

Each module's ``summary`` return (``kube.runner.run_module(summary=...)``) is built
by a pure function of its domain (``<domain>/summary.py``) from the parameters and
the result; a playbook's last task prints it. In check mode every line is in the
conditional ("would create ..."): nothing was applied, and no line says it was.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

GPU = "nvidia.com/gpu"


def did(check_mode: bool, done: str, would: str) -> str:
    """``done`` ("created") in a real run, ``would`` ("would create") in check mode."""
    return would if check_mode else done


def gpus(resources: Mapping[str, Any] | None) -> int | str:
    """The GPUs of a resource list (0 when it names none), as a whole number when it is one."""
    value = (resources or {}).get(GPU, 0)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return int(number) if number == int(number) else value


def names(items: Iterable[Any], empty: str = "none") -> str:
    """``a, b, c``, or ``empty`` when there is none."""
    listed = [str(i) for i in items]
    return ", ".join(listed) if listed else empty


def count(n: int, what: str) -> str:
    """``1 object``, ``3 objects``."""
    return f"{n} {what}" if n == 1 else f"{n} {what}s"
