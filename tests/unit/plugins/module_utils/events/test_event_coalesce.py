# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule event-coalesce: a burst of one event passes as its first and its newest."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.events.coalesce import Coalescer


def ev(name: str, n: int) -> dict:
    return {"platform_event": name, "name": f"obj-{n}"}


def test_the_first_passes_at_once_and_the_newest_when_the_window_closes():
    c = Coalescer(5)
    assert c.offer(ev("pool_changed", 0), 0.0) == [ev("pool_changed", 0)]
    assert c.offer(ev("pool_changed", 1), 1.0) == []
    assert c.offer(ev("pool_changed", 2), 4.0) == []
    assert c.next_due() == 5.0
    assert c.due(4.9) == []
    assert c.due(5.0) == [{**ev("pool_changed", 2), "coalesced": 2}]
    # A quiet window after the trailing edge ends; the next event leads again.
    assert c.due(10.0) == [] and c.next_due() is None
    assert c.offer(ev("pool_changed", 3), 11.0) == [ev("pool_changed", 3)]


def test_each_event_name_has_its_own_window():
    c = Coalescer(5)
    assert c.offer(ev("pool_changed", 0), 0.0) == [ev("pool_changed", 0)]
    assert c.offer(ev("paying_job_blocked", 1), 1.0) == [ev("paying_job_blocked", 1)]
    assert c.offer(ev("pool_changed", 2), 2.0) == []
    assert c.due(6.0) == [{**ev("pool_changed", 2), "coalesced": 1}]


def test_a_closed_window_is_flushed_before_the_next_event():
    c = Coalescer(5)
    c.offer(ev("pool_changed", 0), 0.0)
    c.offer(ev("pool_changed", 1), 1.0)
    # Nobody called due() at 5 s: the held event still comes first, and the new window
    # opened by the trailing edge holds this one.
    assert c.offer(ev("pool_changed", 2), 7.0) == [{**ev("pool_changed", 1), "coalesced": 1}]
    assert c.due(12.0) == [{**ev("pool_changed", 2), "coalesced": 1}]


def test_a_window_of_0_passes_every_event():
    c = Coalescer(0)
    assert [c.offer(ev("pool_changed", n), float(n)) for n in range(3)] == [
        [ev("pool_changed", n)] for n in range(3)
    ]
    assert c.next_due() is None


@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b"]), st.floats(0, 0.5, allow_nan=False)),
        min_size=1,
        max_size=300,
    ),
    st.floats(0.5, 10, allow_nan=False),
)
def test_every_event_is_followed_by_a_pass_and_a_storm_is_one_pass_per_window(steps, window):
    """Whatever the burst: the last event of each name passes (itself, or as a trailing
    edge) no later than one window after it came; and each name passes at most once per
    window plus its first."""
    c = Coalescer(window)
    now, passed, last_seen = 0.0, [], {}

    def advance(to: float) -> None:
        # The source's main loop wakes as each window closes (ClusterEvents.run).
        while c.next_due() is not None and c.next_due() <= to:
            at = c.next_due()
            passed.extend((at, e) for e in c.due(at))

    for n, (name, gap) in enumerate(steps):
        now += gap
        advance(now)
        last_seen[name] = (n, now)
        passed.extend((now, e) for e in c.offer({"platform_event": name, "n": n}, now))
    advance(now + 2 * window)
    for name, (n, at) in last_seen.items():
        mine = [(t, e) for t, e in passed if e["platform_event"] == name]
        assert mine[-1][1]["n"] == n and mine[-1][0] <= at + window
        first = min(t for t, _event in mine)
        assert len(mine) <= 2 + (at - first) / window
