# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which checkpoints a tenant's checkpoint bucket keeps.

The layout a training job writes (docs/object-store.md): ``<job>/<checkpoint>``, where a
checkpoint is one object (``<job>/step-500.pt``) or everything under one prefix
(``<job>/step-500/...``). Objects at the bucket's top level are each a checkpoint of
their own, under no job.

Rules held here:

* Rule checkpoint-of-object (``checkpoint_of``): the job and the checkpoint a key
  belongs to.
* Rule checkpoint-retention (``expired``): per job, the newest ``keep`` checkpoints stay
  (newest by the newest object in each; the later name first among equals) and every
  object of the others goes. A job with ``keep`` or fewer loses nothing.

Pure: no I/O.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..common.errors import FieldError

DEFAULT_KEEP = 2


@dataclass(frozen=True)
class Checkpoint:
    job: str
    name: str
    newest: datetime
    keys: tuple[str, ...]
    size: int

    @property
    def where(self) -> str:
        return f"{self.job}/{self.name}" if self.job else self.name


def keep_errors(keep: object, field: str = "keep") -> list[FieldError]:
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        return [
            FieldError(
                field,
                f"{keep!r} must be a whole number of at least 1 (0 would delete every checkpoint)",
            )
        ]
    return []


def checkpoint_of(key: str) -> tuple[str, str]:
    """Rule checkpoint-of-object: (job, checkpoint) of a key."""
    parts = key.split("/")
    if len(parts) == 1:
        return "", parts[0]
    return parts[0], parts[1]


def checkpoints(objects: Iterable[Mapping[str, Any]]) -> list[Checkpoint]:
    """The checkpoints the listed objects (Key, LastModified, Size) make up."""
    grouped: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for obj in objects:
        grouped[checkpoint_of(str(obj["Key"]))].append(obj)
    return [
        Checkpoint(
            job=job,
            name=name,
            newest=max(o["LastModified"] for o in members),
            keys=tuple(sorted(str(o["Key"]) for o in members)),
            size=sum(int(o.get("Size") or 0) for o in members),
        )
        for (job, name), members in sorted(grouped.items())
    ]


def expired(found: Iterable[Checkpoint], keep: int) -> list[Checkpoint]:
    """Rule checkpoint-retention: the checkpoints beyond each job's newest ``keep``."""
    by_job: dict[str, list[Checkpoint]] = defaultdict(list)
    for checkpoint in found:
        by_job[checkpoint.job].append(checkpoint)
    out: list[Checkpoint] = []
    for job in sorted(by_job):
        newest_first = sorted(by_job[job], key=lambda c: (c.newest, c.name), reverse=True)
        out += newest_first[keep:]
    return out
