# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule run-summary for the ``tenant`` and ``team_queue`` modules: the tenant, what was
(in check mode, would be) written, and its queues with their sizes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..common.summary import did, gpus, names

# action -> (done, would)
_ACTIONS = {
    "create": ("created", "would create"),
    "update": ("updated", "would update"),
    "delete": ("deleted", "would delete"),
}


def object_counts(objects: Sequence[Mapping[str, Any]], check_mode: bool) -> str:
    """``created 9 objects, updated 1`` (in check mode ``would create ...``), or ``unchanged``."""
    by_action = Counter(o.get("action") for o in objects)
    parts = []
    for action, (done, would) in _ACTIONS.items():
        if by_action.get(action):
            n = by_action[action]
            parts.append(f"{did(check_mode, done, would)} {n} object{'s' if n != 1 else ''}")
    return ", ".join(parts) if parts else "unchanged"


def _queues(objects: Sequence[Mapping[str, Any]], check_mode: bool) -> str:
    rows = [o for o in objects if o.get("kind") == "Queue"]
    return names(f"{o['name']} ({did(check_mode, *_ACTIONS[o['action']])})" for o in rows)


def _team_size(team: Mapping[str, Any]) -> str:
    size = f"{team['name']} deserves {gpus(team.get('deserved'))}"
    if team.get("capability"):
        size += f", at most {gpus(team['capability'])}"
    return size


def tenant_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    """What a ``tenant`` run did to the tenant, its queues and their sizes in GPUs."""
    name = params["name"]
    objects = result.get("objects") or []
    if params.get("state") == "rendered":
        manifests = result.get("manifests") or []
        return [f"tenant {name}: rendered {len(manifests)} manifests; nothing was read or written"]
    if params.get("state") == "absent":
        running = result.get("running") or {}
        lines = [f"tenant {name}: {object_counts(objects, check_mode)}"]
        if objects:
            lines.append(f"queues {_queues(objects, check_mode)}")
        if running.get("jobs") or running.get("pods"):
            lines.append(
                f"{running.get('jobs', 0)} active jobs and {running.get('pods', 0)} active pods "
                f"{did(check_mode, 'were deleted with it', 'would be deleted with it')}"
            )
        return lines
    subscription = params.get("subscription") or {}
    sizes = [
        f"subscription {gpus(subscription)} GPUs (cpu {subscription.get('cpu', '-')}, memory {subscription.get('memory', '-')})"
    ]
    if params.get("payg") is not None:
        sizes.append(f"pay-as-you-go {gpus(params['payg'])} GPUs")
    teams = params.get("teams")
    if teams:
        sizes.append("teams: " + "; ".join(_team_size(t) for t in teams) + " GPUs")
    lines = [f"tenant {name}: {object_counts(objects, check_mode)} (namespace tenant-{name})"]
    lines.append(", ".join(sizes))
    queues = [o for o in objects if o.get("kind") == "Queue"]
    if queues:
        lines.append(f"queues {_queues(objects, check_mode)}")
    return lines


def team_queue_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    """What a ``team_queue`` run did to one team queue of a tenant."""
    queue = f"tenant-{params['tenant']}-{params['name']}"
    objects = result.get("objects") or []
    line = f"team {params['name']} of tenant {params['tenant']} ({queue}): {object_counts(objects, check_mode)}"
    if params.get("state", "present") != "absent" and params.get("deserved") is not None:
        line += f"; deserves {gpus(params['deserved'])} GPUs"
        if params.get("capability") is not None:
            line += f", at most {gpus(params['capability'])}"
    lines = [line]
    if objects:
        lines.append(
            "objects: "
            + names(
                f"{o['kind']} {o['name']} ({did(check_mode, *_ACTIONS.get(o['action'], (o['action'], o['action'])))})"
                for o in objects
            )
        )
    return lines
