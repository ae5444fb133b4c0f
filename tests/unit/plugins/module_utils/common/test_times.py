# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""RFC 3339 times, read and written in one place."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.times import (
    as_utc,
    read_rfc3339,
    write_rfc3339,
)


def test_every_form_kubernetes_writes_is_read():
    noon = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert read_rfc3339("2026-01-02T03:04:05Z") == noon
    assert read_rfc3339("2026-01-02T03:04:05z") == noon
    assert read_rfc3339("2026-01-02t03:04:05Z") == noon
    assert read_rfc3339("2026-01-02T11:04:05+08:00") == noon
    assert read_rfc3339("2026-01-02T03:04:05.250000Z") == noon.replace(microsecond=250000)
    assert read_rfc3339(noon) is noon


def test_what_is_not_a_date_time_is_none():
    for value in ("", "2026-01-02", "yesterday", "2026-13-02T03:04:05Z", None, 5):
        assert read_rfc3339(value) is None, value
    naive = read_rfc3339("2026-01-02T03:04:05")
    assert naive is not None and naive.tzinfo is None
    assert as_utc(naive).tzinfo is UTC


def test_the_forms_written():
    moment = datetime(2026, 1, 2, 11, 4, 5, 123456, tzinfo=timezone(timedelta(hours=8)))
    assert write_rfc3339(moment) == "2026-01-02T03:04:05Z"
    assert write_rfc3339(moment, micro=True) == "2026-01-02T03:04:05.123456Z"


@given(
    st.datetimes(
        min_value=datetime(1970, 1, 1), max_value=datetime(9999, 1, 1), timezones=st.just(UTC)
    ),
    st.booleans(),
)
def test_written_times_read_back(moment, micro):
    back = read_rfc3339(write_rfc3339(moment, micro=micro))
    assert back == (moment if micro else moment.replace(microsecond=0))
