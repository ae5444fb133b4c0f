# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule run-summary for ``inference_service``: the service, its version, where it runs and
how its traffic is split."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.summary import did, names

_ACTIONS = {
    "canary": ("canary set", "canary would be set"),
    "step": ("traffic stepped", "traffic would be stepped"),
    "promote": ("canary promoted", "canary would be promoted"),
    "rollback": ("rolled back", "would be rolled back"),
}


def service_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    """What the run did to the service, then its version, queue and traffic split.
    ``state: parsed`` writes nothing (``changed: false``) and says what it would write
    (``writes``) as a check-mode run does, in the same words."""
    name = f"tenant-{params['tenant']}/{params['name']}"
    changed = bool(result.get("changed") or result.get("writes"))
    if params.get("state") == "absent":
        if not changed:
            return [f"model service {name}: there is none; nothing deleted"]
        return [f"model service {name}: {did(check_mode, 'deleted', 'would be deleted')}"]
    action = params.get("action") or "deploy"
    if not changed:
        verb = "unchanged"
    elif action in _ACTIONS:
        verb = did(check_mode, *_ACTIONS[action])
    else:
        verb = did(check_mode, "deployed", "would be deployed")
    service = result.get("service") or {}
    traffic = service.get("traffic") or {}
    split = names(f"{v} {p}%" for v, p in traffic.items())
    line = f"model service {name}: {verb}"
    if service:
        line += (
            f"; {did(check_mode, 'runs', 'would run')} version {service.get('current_version')} in queue {service.get('queue')}"
            f" ({service.get('billing_type')}), traffic {split}"
        )
    lines = [line]
    status = result.get("status") or {}
    if status.get("waited_seconds") is not None:
        lines.append(f"Ready after {status['waited_seconds']} s")
    return lines


def graph_summary(
    params: Mapping[str, Any], result: Mapping[str, Any], check_mode: bool
) -> list[str]:
    """What the run did to the A/B graph, and its routes. ``state: parsed`` writes nothing
    and says what it would write, as a check-mode run does."""
    graph = result.get("graph") or params.get("name")
    absent = params.get("state") == "absent"
    if not result.get("writes"):
        if absent:
            return [f"A/B graph {graph}: not in the cluster; nothing to delete"]
        return [f"A/B graph {graph}: routes as asked already; nothing to change"]
    if absent:
        return [f"A/B graph {graph}: {did(check_mode, 'deleted', 'would be deleted')}"]
    routes = names(f"{r.get('service')} {r.get('weight')}%" for r in params.get("routes") or [])
    return [f"A/B graph {graph}: {did(check_mode, 'written', 'would be written')}; routes {routes}"]
