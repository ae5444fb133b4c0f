# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How long a pay-as-you-go grant is kept before it may be shrunk unused.

A grant is made for a job that is about to be submitted: shrunk by the next
reconcile before the job arrives, it undoes itself.

* Rule payg-grace (``hold_recent_grants``): ``payg_capacity`` stamps every
  growing grant with the time it was made (annotation
  ``platform.io/payg-granted-at``); a fit-to-use shrink leaves a grant alone
  until ``grace`` seconds after that time, and says until when. An explicit
  capability is never held back: the caller asked for exactly that size.
* Rule payg-grant-stamped (``grant_grows``): every write that grows a
  pay-as-you-go queue's GPUs is such a grant and carries the stamp, whoever
  writes it: ``payg_capacity``, and a purchase through ``tenant``
  (``tenant_payg_gpus``), which a reconcile would otherwise shrink unused at once.
  A write that does not grow the grant keeps the stamp it has (``stamp_for_write``):
  the stamp belongs to the capacity field manager, and a server-side apply of that
  manager without it would remove it, ending the grant's grace early.

Pure: ``now`` and the queues come from the caller.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from ..common.names import ANNOTATION_PAYG_GRANTED_AT
from ..common.quantity import GPU
from ..common.times import api_seconds, write_rfc3339
from .payg import PaygResize

DEFAULT_GRACE_MINUTES = 30


def _time(seconds: float) -> str:
    return write_rfc3339(datetime.fromtimestamp(seconds, tz=UTC))


def granted_at(queue: Mapping[str, Any]) -> float | None:
    """When the queue's grant was last grown, from its annotation (None: unknown, or
    not a time the API would write)."""
    raw = ((queue.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_PAYG_GRANTED_AT)
    return api_seconds(raw) if isinstance(raw, str) else None


def grants_by_queue(queues: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    out = {}
    for queue in queues:
        when = granted_at(queue)
        if when is not None:
            out[(queue.get("metadata") or {}).get("name", "")] = when
    return out


def hold_recent_grants(
    rows: Sequence[dict[str, Any]], granted: Mapping[str, float], now: float, grace: float
) -> list[dict[str, Any]]:
    """Rule payg-grace for a fit-to-use plan: a row that would shrink a grant made less
    than ``grace`` seconds ago keeps it (target = live) and gains ``kept_until``."""
    out = []
    for row in rows:
        when = granted.get(row["queue"])
        shrinks = any(Decimal(v) < Decimal(row["live"].get(r, 0)) for r, v in row["target"].items())
        if when is not None and shrinks and now < when + grace:
            row = {**row, "target": dict(row["live"]), "kept_until": grace_end(when, grace)}
        out.append(row)
    return out


def grace_end(granted: float, grace: float) -> str:
    """When a grant made at ``granted`` may be shrunk unused."""
    return _time(granted + grace)


def grant_grows(manifest: Mapping[str, Any], live: Mapping[str, Any] | None) -> bool:
    """Rule payg-grant-stamped: whether writing ``manifest`` (a pay-as-you-go queue's)
    gives it more GPUs than ``live`` holds (None: a new queue, so any GPUs at all)."""
    new = _gpus(manifest)
    old = _gpus(live) if live is not None else Decimal(0)
    return new is not None and new > (old or Decimal(0))


def _gpus(queue: Mapping[str, Any]) -> Decimal | None:
    capability = ((queue.get("spec") or {}).get("capability")) or {}
    raw = capability.get(GPU)
    return None if raw is None else Decimal(str(raw))


def stamp(manifest: dict[str, Any], now: float) -> dict[str, Any]:
    """The growing grant's manifest with the time it is made."""
    meta = manifest.setdefault("metadata", {})
    meta.setdefault("annotations", {})[ANNOTATION_PAYG_GRANTED_AT] = _time(now)
    return manifest


def stamp_for_write(
    manifest: dict[str, Any], live: Mapping[str, Any] | None, now: float
) -> dict[str, Any]:
    """Rule payg-grant-stamped for a write of a pay-as-you-go queue's ``manifest`` over
    ``live``: stamped now when it grows the grant, else carrying the live stamp, if any
    (the grant's grace runs from when it was made, not from the last write)."""
    if grant_grows(manifest, live):
        return stamp(manifest, now)
    raw = (((live or {}).get("metadata") or {}).get("annotations") or {}).get(
        ANNOTATION_PAYG_GRANTED_AT
    )
    if isinstance(raw, str):
        manifest.setdefault("metadata", {}).setdefault("annotations", {})[
            ANNOTATION_PAYG_GRANTED_AT
        ] = raw
    return manifest


def stamp_growth(resize: PaygResize, now: float, grace: float) -> None:
    """Rule payg-grace: a growing grant carries the time it is made, and its table row
    says from when a reconcile may shrink it unused."""
    for row, manifest in resize.changes:
        if row["growth"] > 0:
            stamp(manifest, now)
            for entry in resize.table:
                if entry["queue"] == row["queue"]:
                    entry["kept_until"] = grace_end(now, grace)
