# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The admission deadline of a job: Volcano's ``sla`` waiting time.

In a fully used subscription, capacity's enqueue check refuses a new PodGroup
(its queue is at capability), and Volcano's preempt and reclaim act only for
admitted PodGroups, so a large job would never preempt and a team below its
deserved would never take back what a sibling borrowed. The platform's
scheduler configuration has the ``sla`` plugin alone in a tier before
capacity's (rule sla-before-capacity, ``policy/scheduler_conf_tier_rules``); a PodGroup
annotated ``volcano.sh/sla-waiting-time`` that has waited that long is
admitted by sla's permit, whatever capacity says, and preemption and reclaim
start for it. Allocation still respects every queue's capability, so
admission past capability only lets a job take what preempt (its own queue)
or reclaim (siblings above their deserved) frees.

Rule sla-wait-by-class: only classes that may take GPUs from others carry the
annotation (critical, large, normal; the class table's ``sla_waiting_seconds``).
Debug jobs never preempt and spot jobs take nothing from anyone, so they carry
none and the admission policy refuses one set by hand.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..common.names import SLA_WAITING_ANNOTATIONS

# The annotations (SLA_WAITING_ANNOTATION, SLA_WAITING_ANNOTATIONS) and the PriorityClasses
# that may never carry one (SLA_FORBIDDEN_PRIORITY_CLASSES) are common/names'.
SLA_WAITING_MAX_SECONDS = 86400

_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|m|s|us|µs|ns)")


def duration_text(seconds: int) -> str:
    """A whole number of seconds as a Go duration (``time.ParseDuration`` reads it)."""
    return f"{int(seconds)}s"


def parse_duration(text: object) -> float | None:
    """Seconds of a Go duration like ``5s``, ``1m30s`` or ``250ms``; None when Volcano would
    not read it as a waiting time (not a duration, or not above zero)."""
    if not isinstance(text, str) or not text:
        return None
    pos, total = 0, 0.0
    for match in _PART.finditer(text):
        if match.start() != pos:
            return None
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(text) or total <= 0:
        return None
    return total


def waiting_seconds(annotations: Mapping[str, object] | None) -> float | None:
    """Rule sla-waiting-time: the waiting time Volcano reads from a PodGroup's annotations,
    or None for none. As in Volcano, the first key that holds a valid duration wins (an
    unreadable ``volcano.sh/sla-waiting-time`` falls through to ``sla-waiting-time``)."""
    annotations = annotations or {}
    for key in SLA_WAITING_ANNOTATIONS:
        seconds = parse_duration(annotations.get(key))
        if seconds is not None:
            return seconds
    return None
