# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The replay's picture (benchmarks/replay/picture.py): a PNG of the configurations'
allocation over the traced day, titled with what was replayed, marks drawn once."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.benchmarks.replay.picture import (
    draw,
    held_until_end,
    hours,
    legend_label,
    marks_of,
    title,
)
from ansible_collections.gpucloud.platform.benchmarks.replay.records import Mark, Run, Sample

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
DAY = 86_400
MARKS = (Mark(at=36_000, label="create gamma"), Mark(at=50_400, label="update acme"))


def run(configuration: str, shares: list[float], marks: tuple[Mark, ...] = MARKS) -> Run:
    """A day sampled hourly on 128 GPUs at the given shares, repeated."""
    samples = tuple(
        Sample(at=h * 3600, allocated=int(128 * shares[h % len(shares)]), capacity=128)
        for h in range(24)
    )
    return Run(
        configuration=configuration,
        trace="day.yaml",
        factor=60,
        day_s=DAY,
        reconcile_period_s=30,
        schedule_period_s=5,
        throttle_window_s=600,
        jobs=(),
        samples=samples,
        marks=marks,
        seed=7,
    )


def test_draw_writes_a_png(tmp_path):
    runs = [
        run("platform", [0.5, 0.9, 0.95]),
        run("static", [0.4, 0.6]),
        # The same events, one recorded a second later: drawn where it happened.
        run("volcano", [0.7], marks=(*MARKS, Mark(at=36_001, label="create gamma"))),
    ]
    path = draw(runs, [(75_600, 86_400)], tmp_path / "replay.png")
    assert path == tmp_path / "replay.png"
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    assert len(data) > 10_000
    # The size in the IHDR chunk: 12 x 5 inches at 100 dots per inch.
    assert int.from_bytes(data[16:20], "big") == 1200
    assert int.from_bytes(data[20:24], "big") == 500


def test_draw_takes_a_run_without_samples_marks_or_seed(tmp_path):
    bare = Run("static", "small.yaml", 1, 0, 0, 5, 600, jobs=(), samples=())
    path = draw([bare], [], str(tmp_path / "bare.png"))
    assert path.read_bytes().startswith(PNG_SIGNATURE)


def test_draw_refuses_no_runs(tmp_path):
    with pytest.raises(ValueError, match="no runs"):
        draw([], [], tmp_path / "none.png")
    assert not (tmp_path / "none.png").exists()


def test_title_names_the_trace_the_factor_and_the_seed():
    assert title(run("platform", [1])) == (
        "Allocation over the traced day: day.yaml, factor 60, seed 7"
    )
    unseeded = Run("static", "small.yaml", 2.5, 10, 0, 5, 600, jobs=(), samples=())
    assert title(unseeded).endswith("small.yaml, factor 2.5, seed none")


def test_marks_are_drawn_once_in_time_order():
    runs = [run("platform", [1], marks=MARKS[::-1]), run("static", [1])]
    assert marks_of(runs) == list(MARKS)


def test_points_are_in_hours_and_percent():
    assert hours([(0, 0.5), (5400, 1.0)]) == ([0.0, 1.5], [50.0, 100.0])


def test_legend_gives_the_busy_window_mean():
    assert legend_label(run("platform", [0.5, 1.0]), [(0, 7200)]) == "platform (busy mean 75.0 %)"


def test_the_last_sample_holds_until_the_end_of_the_day():
    r = run("platform", [0.5])
    assert held_until_end(r)[-2:] == [(82_800, 0.5), (DAY, 0.5)]
    assert len(held_until_end(r)) == 25
    assert held_until_end(Run("static", "t.yaml", 1, 0, 0, 5, 600, jobs=(), samples=())) == []


def test_an_event_refused_by_some_configurations_says_which():
    refused = (Mark(at=36_000, label="create gamma (refused)"), MARKS[1])
    runs = [run("platform", [0.5]), run("static", [0.5]), run("volcano", [0.5], refused)]
    assert marks_of(runs) == [
        Mark(at=36_000, label="create gamma (refused under volcano)"),
        MARKS[1],
    ]
    everywhere = [run("platform", [0.5], refused), run("volcano", [0.5], refused)]
    assert marks_of(everywhere)[0] == Mark(at=36_000, label="create gamma (refused)")
