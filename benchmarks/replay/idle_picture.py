# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The idle picture: for one configuration's replay, the GPUs that stood idle each traced
hour, stacked by why the jobs that asked for them waited (``idle``), with the busy
windows shaded. matplotlib is imported by ``draw_idle`` alone."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from .idle import NO_JOB_WAITING
from .metrics import Window, held_spans, overlap
from .picture import DPI, HOUR_S, SIZE, shade_busy
from .records import Run


def idle_by_hour(run: Run, hour_s: float = HOUR_S) -> dict[str, list[float]]:
    """Cause -> the mean idle GPUs of each hour of the run's day, each look holding until
    the next (the last until the end of the day); causes most idle first, "no job
    waiting" last."""
    hours = max(1, math.ceil(run.day_s / hour_s))
    samples = sorted(run.samples, key=lambda s: s.at)
    out: dict[str, list[float]] = {}
    spans = held_spans([s.at for s in samples], run.day_s)
    for sample, (start, until) in zip(samples, spans, strict=True):
        for cause, gpus in sample.idle_by_cause.items():
            row = out.setdefault(cause, [0.0] * hours)
            for h in range(hours):
                row[h] += gpus * overlap(start, until, [(h * hour_s, (h + 1) * hour_s)]) / hour_s
    return dict(sorted(out.items(), key=lambda kv: (kv[0] == NO_JOB_WAITING, -sum(kv[1]), kv[0])))


def draw_idle(run: Run, busy: Sequence[Window], path: str | Path) -> Path:
    """Writes the idle picture of ``run`` to ``path`` as a PNG, and returns the path."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=SIZE, dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    shade_busy(axes, busy)
    rows = idle_by_hour(run)
    bottom = [0.0] * max((len(v) for v in rows.values()), default=0)
    for cause, values in rows.items():
        # Bars over [h, h+1): the mean of that traced hour.
        axes.bar(
            [h + 0.5 for h in range(len(values))],
            values,
            width=0.9,
            bottom=bottom,
            label=cause,
            color="lightgrey" if cause == NO_JOB_WAITING else None,
        )
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    capacity = max((s.capacity for s in run.samples), default=0)
    axes.set_xlim(0, max(1.0, run.day_s / HOUR_S))
    axes.set_ylim(0, max(1, capacity))
    axes.set_xlabel("traced hours")
    axes.set_ylabel("idle GPUs, mean of the hour")
    seed = "none" if run.seed is None else str(run.seed)
    axes.set_title(
        f"Idle GPUs by why the jobs that asked for them waited: {run.configuration}, "
        f"{run.trace}, factor {run.factor:g}, seed {seed}"
    )
    axes.grid(True, axis="y", alpha=0.3)
    axes.legend(loc="upper left", fontsize=8)
    figure.tight_layout()
    out = Path(path)
    figure.savefig(out, format="png")
    return out
