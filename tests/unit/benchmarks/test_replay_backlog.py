# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The job controller's backlog and the refused jobs of a replay: counted per look, shown
as the most at one look, and in the table."""

from __future__ import annotations

from ansible_collections.gpucloud.platform.benchmarks.replay import metrics, observe
from ansible_collections.gpucloud.platform.benchmarks.replay.records import Run, Sample


def vcjob(name, phase=None):
    status = {"state": {"phase": phase}} if phase else {}
    return {"metadata": {"name": name}, "status": status}


def test_the_backlog_counts_the_replay_jobs_without_a_phase():
    jobs = [
        vcjob("replay-0001"),
        vcjob("replay-0002", "Pending"),
        vcjob("other"),
        vcjob("replay-0003"),
    ]
    assert observe.backlog(jobs) == 2


def run(backlogs, refused=0):
    samples = tuple(
        Sample(at=float(i), allocated=1, capacity=2, backlog=b) for i, b in enumerate(backlogs)
    )
    return Run(
        configuration="platform",
        trace="t.yaml",
        factor=10,
        day_s=10,
        reconcile_period_s=60,
        schedule_period_s=10,
        throttle_window_s=300,
        jobs=(),
        samples=samples,
        refused=refused,
    )


def test_the_figures_keep_the_most_at_one_look_and_the_refused():
    figures = metrics.measure(run([0, 7, 3], refused=4), [(0.0, 10.0)])
    assert figures.backlog_max == 7 and figures.refused == 4
    assert metrics.as_dict(figures)["backlog_max"] == 7
    text = metrics.table({"platform": figures})
    assert "refused at submission" in text and "most jobs awaiting Volcano's controller" in text
