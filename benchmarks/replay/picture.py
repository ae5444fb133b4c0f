# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The replay's picture: allocation over the traced day, one line per configuration, with
the busy windows shaded, the purchases, resizes and deletions marked and the 88 % target
drawn. matplotlib is imported by ``draw`` alone, so the metrics work without it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .metrics import TARGET_ALLOCATION, Window, allocation_series, busy_allocation, percent
from .records import Mark, Run

HOUR_S = 3600
# Figure size in inches and resolution: wide enough for a day of hourly ticks.
SIZE = (12, 5)
DPI = 100


def title(run: Run) -> str:
    """What was replayed: the trace file, the compression factor and the seed."""
    seed = "none" if run.seed is None else str(run.seed)
    return f"Allocation over the traced day: {run.trace}, factor {run.factor:g}, seed {seed}"


def hours(points: Sequence[tuple[float, float]]) -> tuple[list[float], list[float]]:
    """(traced hours, allocation %) of (traced second, ratio) points."""
    return [at / HOUR_S for at, _ratio in points], [100 * ratio for _at, ratio in points]


def held_until_end(run: Run) -> list[tuple[float, float]]:
    """The run's allocation series with its last value repeated at the end of the day: a
    sample holds until the next one, the last until the end (as ``metrics`` weighs it)."""
    series = allocation_series(run)
    if series and series[-1][0] < run.day_s:
        series.append((run.day_s, series[-1][1]))
    return series


REFUSED = " (refused)"  # how the replayer labels an event whose playbook refused it


def marks_of(runs: Iterable[Run]) -> list[Mark]:
    """Every event once, in time order: the configurations replay the same events, and
    one recorded at another second by another run is drawn where it happened. An event
    refused by some configurations only says which ("create t03 (refused under
    volcano)"); refused by all, it says "(refused)"."""
    runs = list(runs)
    refused_in: dict[tuple[float, str], list[str]] = {}
    for run in runs:
        for mark in run.marks:
            event = mark.label.removesuffix(REFUSED)
            where = refused_in.setdefault((mark.at, event), [])
            if mark.label.endswith(REFUSED):
                where.append(run.configuration)
    marks = []
    for (at, event), refused in refused_in.items():
        ran_in = [r.configuration for r in runs if any(m.at == at for m in r.marks)]
        if not refused:
            label = event
        elif len(refused) == len(ran_in):
            label = event + REFUSED
        else:
            label = f"{event} (refused under {', '.join(refused)})"
        marks.append(Mark(at=at, label=label))
    return sorted(marks, key=lambda m: (m.at, m.label))


def legend_label(run: Run, busy: Sequence[Window]) -> str:
    """The configuration with its busy-window mean, so the picture reads without the table."""
    return f"{run.configuration} (busy mean {percent(busy_allocation(run, busy))})"


def shade_busy(axes: Any, busy: Sequence[Window]) -> None:
    """The busy windows as grey bands over traced hours, labelled once in the legend."""
    for i, (start, end) in enumerate(busy):
        axes.axvspan(
            start / HOUR_S,
            end / HOUR_S,
            color="grey",
            alpha=0.15,
            linewidth=0,
            label="busy window" if i == 0 else None,
        )


def draw(runs: Sequence[Run], busy: Sequence[Window], path: str | Path) -> Path:
    """Writes the picture of ``runs`` (the configurations' replays of one trace) to
    ``path`` as a PNG, and returns the path."""
    if not runs:
        raise ValueError("no runs to draw")
    # Imported here: matplotlib is a development pin, needed for the picture only. The
    # Agg canvas is used directly rather than through pyplot, so no global backend or
    # figure state is touched.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    figure = Figure(figsize=SIZE, dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    shade_busy(axes, busy)
    for run in runs:
        # A sample holds until the next one: steps, not slopes between samples.
        x, y = hours(held_until_end(run))
        axes.step(x, y, where="post", linewidth=1.2, label=legend_label(run, busy))
    axes.axhline(
        100 * TARGET_ALLOCATION,
        color="black",
        linestyle="--",
        linewidth=1,
        label=f"target {percent(TARGET_ALLOCATION)}",
    )
    for mark in marks_of(runs):
        x = mark.at / HOUR_S
        axes.axvline(x, color="grey", linestyle=":", linewidth=1)
        # Written along the line at the top, in axes height, so it stays clear of the data.
        axes.text(
            x,
            0.98,
            mark.label,
            transform=axes.get_xaxis_transform(),
            rotation=90,
            va="top",
            ha="right",
            fontsize=7,
            color="dimgrey",
            # On white, so a line passing under the label does not cross it out.
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1},
        )
    day_h = max(r.day_s for r in runs) / HOUR_S
    axes.set_xlim(0, day_h if day_h > 0 else 1)
    # Ticks on whole hours that divide a day (every 1, 2, 3 or 6 hours), not every 5.
    axes.xaxis.set_major_locator(MaxNLocator(nbins=12, steps=[1, 2, 3, 6, 10], integer=True))
    axes.set_ylim(0, 105)
    axes.set_xlabel("traced hours")
    axes.set_ylabel("GPUs allocated (%)")
    axes.set_title(title(runs[0]))
    axes.grid(True, alpha=0.3)
    axes.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    out = Path(path)
    figure.savefig(out, format="png")
    return out
