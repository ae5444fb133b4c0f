# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The quick ways victims are read and chosen give exactly what the general ones give:
prices and times read from a memo or a fast path, the heap
against a full sort, and the reclaim's candidates against the rules read one by one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.filter.spot_victims import (
    _record,
    spot_victims,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    JOB_HOLDING_PHASES,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.times import (
    api_seconds,
    read_rfc3339,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.candidates import (
    candidates_from_vcjobs,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.victims import (
    SpotJob,
    choose_victims,
    parse_price,
    parse_time,
    read_price,
    read_time,
    victim_order_key,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.workload.demand import job_demand
from ansible_collections.gpucloud.platform.tests.unit.outcomes import outcome

# --- prices -------------------------------------------------------------------------

DECIMAL_TEXT = st.decimals(allow_nan=True, allow_infinity=True).map(str)
PRICE_TEXT = st.one_of(
    DECIMAL_TEXT,
    st.builds(
        lambda pad, text, pad2: f"{pad}{text}{pad2}",
        st.sampled_from(["", " ", "\t"]),
        DECIMAL_TEXT,
        st.sampled_from(["", " ", "\n"]),
    ),
    st.sampled_from(["0.3", "0.30", "1e-2", "1E2", "-0", "+0.5", "1_000", "", "cheap", "0x1"]),
    st.text(max_size=6),
)
PRICES = st.one_of(
    PRICE_TEXT,
    st.floats(),
    st.sampled_from([0.0, -0.0, 1.0, 0.1]),
    st.integers(-5, 10**30),
    st.booleans(),
    st.none(),
    st.decimals(allow_nan=True, allow_infinity=True),
    st.just([1]),
)


@settings(deadline=None)  # an invariant, not a timing: a busy machine must not fail it
@given(values=st.lists(PRICES, max_size=12))
def test_a_remembered_price_is_the_price_read_anew(values):
    # In any order, twice over: 1, 1.0 and True, or 0.0 and -0.0, are equal keys of
    # different prices, so a memo must never answer one with the other.
    for value in [*values, *values]:
        assert outcome(parse_price, value, "p") == outcome(read_price, value, "p")


# --- times --------------------------------------------------------------------------

ZONES = st.sampled_from(
    [UTC, timezone(timedelta(hours=8)), timezone(timedelta(hours=-5, minutes=-30)), None]
)
MOMENTS = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=ZONES
)


def written(moment: datetime, form: int) -> str:
    zulu = moment.replace(tzinfo=None)
    return [
        zulu.strftime("%Y-%m-%dT%H:%M:%SZ"),
        zulu.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        moment.isoformat(),
        zulu.isoformat() + "z",
        zulu.isoformat().replace("T", "t") + "Z",
        f" {zulu.isoformat()}Z",
        zulu.isoformat(sep=" ") + "Z",
        zulu.strftime("%Y-%m-%dT%H:%MZ"),
    ][form]


TIMES = st.one_of(
    st.builds(written, MOMENTS, st.integers(0, 7)),
    MOMENTS,
    st.text(alphabet="0123456789-:TZz.+ ", max_size=26),
    st.sampled_from(["", "2026-13-02T03:04:05Z", "2026-01-02T25:00:00Z", "yesterday", 5, None]),
)


@settings(deadline=None)  # an invariant, not a timing: a busy machine must not fail it
@given(value=TIMES)
def test_a_time_read_the_quick_way_is_the_time_read_the_general_way(value):
    assert outcome(parse_time, value, "t") == outcome(read_time, value, "t")
    seconds = api_seconds(value)
    if seconds is not None:
        assert seconds == read_rfc3339(value).timestamp()


def test_the_quick_way_takes_what_the_api_server_writes():
    assert api_seconds("2026-01-01T12:00:00Z") == datetime(2026, 1, 1, 12, tzinfo=UTC).timestamp()
    assert api_seconds("2026-01-01T12:00:00.500000Z") is not None
    for other in ("2026-01-01T20:00:00+08:00", "2026-01-01T12:00:00z", " 2026-01-01T12:00:00Z"):
        assert api_seconds(other) is None
        assert parse_time(other, "t") == read_time(other, "t")


# --- choosing -----------------------------------------------------------------------

SPOT_JOBS = st.lists(
    st.builds(
        SpotJob,
        namespace=st.sampled_from(["x", "y"]),
        name=st.text("ab", min_size=1, max_size=2),
        price=st.sampled_from([Decimal(0), Decimal("0.1"), Decimal("0.10"), Decimal("0.5")]),
        gpus=st.integers(0, 8),
        pods=st.integers(1, 3),
        started=st.sampled_from([0.0, 60.0, 120.0]),
    ),
    max_size=40,
)


def sort_and_prefix(jobs, need, allow_partial=False):
    """The rules written out: every job holding GPUs sorted by the victim order (a
    stable sort: ties keep the input order), then the shortest prefix freeing ``need``."""
    ranked = sorted((j for j in jobs if j.gpus > 0), key=victim_order_key)
    held = sum(j.gpus for j in ranked)
    if held < need and not allow_partial:
        raise PlatformValidationError(
            [f"need: {need} GPUs cannot be freed: the {len(ranked)} spot jobs hold {held} GPUs"]
        )
    chosen, freed = [], 0
    for job in ranked:
        if freed >= need:
            break
        chosen.append(job)
        freed += job.gpus
    return chosen


@settings(deadline=None)  # an invariant, not a timing: a busy machine must not fail it
@given(jobs=SPOT_JOBS, need=st.integers(0, 100), allow_partial=st.booleans())
def test_the_heap_chooses_what_a_full_sort_and_a_prefix_choose(jobs, need, allow_partial):
    try:
        expected = sort_and_prefix(jobs, need, allow_partial)
    except PlatformValidationError as exc:
        with pytest.raises(PlatformValidationError) as got:
            choose_victims(jobs, need, allow_partial)
        assert str(got.value).startswith(str(exc))
        return
    chosen = choose_victims(jobs, need, allow_partial)
    # The very same records, in the same order (equal twins included).
    assert [id(j) for j in chosen] == [id(j) for j in expected]


JOB_MAPS = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.text("ab", min_size=1, max_size=2),
            "namespace": st.sampled_from(["x", "y"]),
            "gpus": st.one_of(st.integers(0, 8), st.just("4")),
            "replicas": st.one_of(st.integers(1, 3), st.just(2.0)),
            "started_at": st.sampled_from(
                ["2026-01-01T12:00:00Z", "2026-01-01T20:00:00+08:00", "2026-01-01T11:00:00z"]
            ),
        },
        optional={"price": st.sampled_from([0.1, "0.1", " 0.10 ", 0, None, Decimal("0.5")])},
    ),
    max_size=30,
)


@settings(deadline=None)  # an invariant, not a timing: a busy machine must not fail it
@given(maps=JOB_MAPS, need=st.integers(0, 60))
def test_the_filter_chooses_what_a_full_sort_of_its_records_chooses(maps, need):
    records = [_record(m, i) for i, m in enumerate(maps)]
    try:
        expected = sort_and_prefix(records, need)
    except PlatformValidationError:
        with pytest.raises(Exception, match="cannot be freed"):
            spot_victims(maps, need)
        return
    position = {id(r): i for i, r in enumerate(records)}
    assert [id(m) for m in spot_victims(maps, need)] == [
        id(maps[position[id(r)]]) for r in expected
    ]


# --- candidates ---------------------------------------------------------------------


def candidates_one_by_one(vcjobs, spot_queues):
    """Rule spot-candidate with every value read the general way (``read_price``,
    ``read_time``, ``job_demand``)."""
    out, warnings = [], []
    for job in vcjobs:
        meta = job.get("metadata") or {}
        spec = job.get("spec") or {}
        state = (job.get("status") or {}).get("state") or {}
        if (
            (meta.get("labels") or {}).get("platform.io/billing-type") != "spot"
            or (spec.get("queue") or "") not in spot_queues
            or meta.get("deletionTimestamp")
            or state.get("phase") not in JOB_HOLDING_PHASES
        ):
            continue
        where = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        try:
            price = read_price(
                (meta.get("annotations") or {}).get("platform.io/spot-price"),
                f"{where}.metadata.annotations.platform.io/spot-price",
            )
        except PlatformValidationError as exc:
            warnings.append(f"{exc}; it counts as price 0")
            price = Decimal(0)
        demand = job_demand(job)
        raw = state.get("lastTransitionTime") or meta.get("creationTimestamp")
        started = read_time(raw, f"{where}.status.state.lastTransitionTime") if raw else 0.0
        out.append(
            SpotJob(
                meta.get("namespace", ""),
                meta.get("name", ""),
                price,
                demand.gpus,
                demand.pods,
                started,
                spec.get("queue") or "",
                meta.get("uid") or "",
            )
        )
    return out, warnings


def listed(i: int, price: Any, started: Any, gpus: Any, replicas: Any, phase: str) -> dict:
    return {
        "metadata": {
            "name": f"j{i}",
            "namespace": "tenant-a",
            "uid": f"u{i}",
            "labels": {"platform.io/billing-type": "spot"},
            "annotations": {} if price is None else {"platform.io/spot-price": price},
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {
            "queue": "tenant-a-spot",
            "tasks": [
                {
                    "replicas": replicas,
                    "template": {
                        "spec": {
                            "containers": [{"resources": {"limits": {"nvidia.com/gpu": gpus}}}]
                        }
                    },
                }
            ],
        },
        "status": {"state": {"phase": phase, "lastTransitionTime": started}},
    }


LISTED = st.lists(
    st.builds(
        listed,
        i=st.integers(0, 5),
        price=st.one_of(st.none(), PRICE_TEXT),
        started=st.one_of(st.none(), st.builds(written, MOMENTS, st.integers(0, 7))),
        gpus=st.sampled_from(["1", "4", "8", 2, "0.5", "x"]),
        replicas=st.sampled_from([1, 2, 0, None]),
        phase=st.sampled_from(["Running", "Running", "Pending"]),
    ),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(vcjobs=LISTED, need=st.integers(0, 40))
def test_candidates_and_victims_are_those_of_the_rules_read_one_by_one(vcjobs, need):
    got = outcome(candidates_from_vcjobs, vcjobs, ["tenant-a-spot"])
    assert got == outcome(candidates_one_by_one, vcjobs, ["tenant-a-spot"])
    if got[0] == "value":
        candidates = got[2][0]
        assert outcome(choose_victims, candidates, need, True) == outcome(
            sort_and_prefix, candidates, need, True
        )
