# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The benchmarks' ABBA order and the mean they take over it."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

from _api_counter import Measurement, abba, mean


def test_two_turns_run_abba():
    assert [side for _turn, side in abba(2)] == ["a", "b", "b", "a"]
    assert abba(2) == [(0, "a"), (0, "b"), (1, "b"), (1, "a")]


def test_linear_growth_weighs_the_same_on_both_sides():
    # a fleet that makes every run 10 s slower than the one before
    order = abba(2)
    seconds = {slot: 60.0 + 10 * position for position, slot in enumerate(order)}
    a = [seconds[s] for s in order if s[1] == "a"]
    b = [seconds[s] for s in order if s[1] == "b"]
    assert sum(a) / len(a) == sum(b) / len(b) == 75.0


def test_one_turn_is_one_pair():
    assert abba(1) == [(0, "a"), (0, "b")]


def test_mean_of_runs():
    runs = [
        Measurement("x", 40.0, 12000, {"PATCH": 12000}),
        Measurement("y", 60.0, 12002, {"PATCH": 12000, "GET": 2}),
    ]
    both = mean(runs, "both")
    assert (both.label, both.seconds, both.requests) == ("both", 50.0, 12001)
    assert both.by_method == {"PATCH": 12000, "GET": 1}


def test_one_run_is_itself_not_a_mean():
    run = Measurement("bare client #1", 40.0, 12000, {"PATCH": 12000})
    assert mean([run], "bare client (mean)") is run
