# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a trace asks, in a line (trace_check.py) or a paragraph (trace_generate.py)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence

from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    BILLING_TYPES,
    JOB_CLASSES,
)

from .generate import DAY
from .model import ACTIONS, Job, Trace

HOURS = 24
EVENT_ACTIONS = tuple(ACTIONS)


def gpu_hours(jobs: Iterable[Job]) -> float:
    """GPU-hours the jobs ask: GPUs times duration."""
    return sum(j.gpus * j.duration_s for j in jobs) / 3600


def asked_by_hour(jobs: Sequence[Job], hour: float) -> list[float]:
    """The GPUs asked on average in each hour (``hour`` seconds long) from the start to
    the last job's end, were every job to run from the second it is submitted."""
    end = max((j.at + j.duration_s for j in jobs), default=0)
    held = [0.0] * max(1, math.ceil(end / hour))
    for job in jobs:
        start, stop = job.at, job.at + job.duration_s
        for h in range(int(start // hour), math.ceil(stop / hour)):
            overlap = min(stop, (h + 1) * hour) - max(start, h * hour)
            held[h] += job.gpus * overlap / hour
    return held


def _many(count: int, what: str) -> str:
    return f"{count} {what}{'' if count == 1 else 's'}"


def _counted(counter: Counter[str], order: Sequence[str]) -> str:
    return ", ".join(f"{name} {counter[name]}" for name in order if counter[name])


def line(name: str, trace: Trace) -> str:
    """One line: the file is valid, and what it holds."""
    return (
        f"{name}: valid; {_many(len(trace.jobs), 'job')}, {_many(len(trace.tenants), 'tenant')}, "
        f"{_many(len(trace.events), 'event')}, {trace.cluster.gpus()} GPUs, "
        f"{gpu_hours(trace.jobs):,.0f} GPU-hours asked"
    )


def paragraph(trace: Trace, day_seconds: int = DAY) -> str:
    """The jobs by billing type and class, the GPU-hours asked against the cluster's over
    the day, and the busiest hour (a 24th of the day) were every job to run from its
    submission."""
    jobs = trace.jobs
    gpus = trace.cluster.gpus()
    by_billing = Counter(j.billing for j in jobs)
    kinds = []
    for billing in BILLING_TYPES:
        classes = Counter(j.job_class for j in jobs if j.billing == billing)
        if by_billing[billing]:
            kinds.append(f"{billing} {by_billing[billing]} ({_counted(classes, JOB_CLASSES)})")
    hours = {b: gpu_hours(j for j in jobs if j.billing == b) for b in BILLING_TYPES}
    asked = sum(hours.values())
    capacity = gpus * day_seconds / 3600
    hour = day_seconds / HOURS
    held = asked_by_hour(jobs, hour)
    busiest = max(range(len(held)), key=held.__getitem__)
    actions = Counter(e.action for e in trace.events)
    nodes = sum(n.count for n in trace.cluster.nodes)
    return (
        f"{len(jobs)} jobs over a day of {day_seconds} s on {gpus} GPUs ({nodes} nodes, "
        f"{trace.cluster.idc_gpus} GPUs in the IDC); {_many(len(trace.tenants), 'tenant')} "
        f"from the start, {_many(len(trace.events), 'event')}"
        f"{f' ({_counted(actions, EVENT_ACTIONS)})' if actions else ''}. "
        f"Jobs by billing type (and class): {'; '.join(kinds)}. "
        f"GPU-hours asked: {asked:,.0f} ({', '.join(f'{b} {hours[b]:,.0f}' for b in BILLING_TYPES)}), "
        f"{asked / capacity:.2f} times the cluster's {capacity:,.0f} over the day. "
        f"Busiest hour: {busiest:02d}:00-{busiest + 1:02d}:00 "
        f"({busiest * hour:g}-{(busiest + 1) * hour:g} s), {held[busiest]:,.0f} GPUs asked on "
        f"average ({held[busiest] / gpus:.2f} times the cluster's {gpus}), were every job to run "
        f"from its submission."
    )
