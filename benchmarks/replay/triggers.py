# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the ``platform-events`` replay takes from the platform's own files, so it runs
the reconcilers as production's event-driven set-up does and never a copy of it:

* which reconcile each event starts: the rules of
  ``extensions/eda/rulebooks/platform_reconcile.yml`` (an event, the playbooks whose rule
  names it);
* how often each reconcile still runs on its schedule: ``awx_configure.yml``'s
  ``awx_schedules``, ``events_every_minutes`` where the rulebook activation takes the
  work (the safety net), else ``every_minutes``.

No cluster I/O: it reads the two files, and the parsers take what was read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
RULEBOOK = ROOT / "extensions" / "eda" / "rulebooks" / "platform_reconcile.yml"
AWX_CONFIGURE = ROOT / "playbooks" / "awx_configure.yml"
# event.platform_event == "name", as the rulebook's conditions compare it.
_NAMED = re.compile(r'event\.platform_event\s*==\s*"([a-z_]+)"')


def reconciles_by_event(rulebook: Any) -> dict[str, tuple[str, ...]]:
    """Each event the rulebook's rules name, and the reconciles (playbook names without
    ``.yml``) those rules run, in rule order."""
    out: dict[str, tuple[str, ...]] = {}
    for ruleset in rulebook:
        for rule in ruleset.get("rules") or ():
            action = rule.get("action") or {}
            playbook = (action.get("run_playbook") or {}).get("name")
            if not playbook:
                continue
            name = Path(playbook).stem
            for event in _NAMED.findall(rule.get("condition") or ""):
                if name not in out.get(event, ()):
                    out[event] = (*out.get(event, ()), name)
    return out


def periods_with_events(awx_configure: Any) -> dict[str, float]:
    """Each scheduled playbook's period in seconds when the rulebook activation runs
    beside it: ``events_every_minutes``, else ``every_minutes``."""
    schedules = awx_configure[0]["vars"]["awx_schedules"]
    out: dict[str, float] = {}
    for schedule in schedules:
        name = str(schedule["playbook"])
        minutes = schedule.get("events_every_minutes", schedule.get("every_minutes"))
        if minutes is not None:
            out[name] = 60.0 * float(minutes)
    return out


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def production() -> tuple[Mapping[str, tuple[str, ...]], Mapping[str, float]]:
    """The rulebook's events and the schedules' periods, as the repository holds them."""
    return reconciles_by_event(load(RULEBOOK)), periods_with_events(load(AWX_CONFIGURE))
