# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""RFC 3339 times as the API server writes and reads them (pure).

Python 3.11's ``datetime.fromisoformat`` reads every form Kubernetes writes
(``2026-01-02T03:04:05Z``, ``...05.123456Z``, ``+08:00``), so parsing is the standard
library's; what is ours is only what a time without a zone means and the forms written.
"""

from __future__ import annotations

from datetime import UTC, datetime


def read_rfc3339(value: object) -> datetime | None:
    """The time ``value`` names (a date-time, ``T`` between date and time), or None when
    it is not one. A time without a zone is returned without one: callers decide."""
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or "T" not in value.strip().upper():
        return None
    text = value.strip()
    # RFC 3339 allows a lower-case "z"; fromisoformat reads only "Z".
    text = text[:-1] + "Z" if text.endswith("z") else text
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def api_seconds(value: object) -> float | None:
    """Seconds since the epoch of a time written the way the API server writes it
    (a date, ``T``, a time, ``Z``; nothing around it), else None.

    The quick way to the answer ``read_rfc3339(value).timestamp()`` gives: for such a
    string ``read_rfc3339`` strips nothing, changes no "z" and finds the ``T``, so
    both hand the same text to ``datetime.fromisoformat``. None for every other
    value, and for a string ``fromisoformat`` refuses: the caller reads it the
    general way (and words the error)."""
    if (
        isinstance(value, str)
        and len(value) > 10
        and value[10] == "T"
        and value[-1] == "Z"
        and "0" <= value[0] <= "9"
    ):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return None
        return moment.timestamp() if moment.tzinfo is not None else None
    return None


def as_utc(moment: datetime) -> datetime:
    """A time without a zone is UTC (what Kubernetes writes is always UTC)."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def write_rfc3339(moment: datetime, micro: bool = False) -> str:
    """``2026-01-01T12:00:00Z``, or with ``micro`` the MicroTime form
    ``2026-01-01T12:00:00.000000Z`` (Lease times)."""
    fmt = "%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ"
    return as_utc(moment).astimezone(UTC).strftime(fmt)
