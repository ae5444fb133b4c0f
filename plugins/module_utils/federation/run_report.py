# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a federation module's run reports: its planned writes recorded in order, and the
result's ``changed``, ``objects`` and ``diff``. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..queues.plan import DELETE
from ..tenants.changes import Changes, ObjectChange


def record_writes(batches: Sequence[Sequence[ObjectChange]], changes: Changes) -> None:
    """Every write of the batches, in order, as ``changes`` records them."""
    for batch in batches:
        for manifest, action, current in batch:
            changes.record(manifest, action, current)


def record_deletes(batches: Sequence[Sequence[Mapping[str, Any]]], changes: Changes) -> None:
    """Every delete of the batches, in order, as ``changes`` records them."""
    for batch in batches:
        for obj in batch:
            changes.record(obj, DELETE, obj)


def result(changes: Changes) -> dict[str, Any]:
    return {"changed": changes.changed, "objects": changes.objects, "diff": changes.diff()}
