# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The heartbeat_lease filter: the Lease a scheduled playbook renews when it starts and
when it succeeds (rule reconcile-heartbeat)."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.module_utils.observability.heartbeats import (
    STEPS,
    heartbeat_lease,
)


def heartbeat_lease_filter(
    playbook: Any, step: Any, renew_time: Any, holder: Any = "ansible"
) -> dict[str, Any]:
    """The Lease ``heartbeat-<playbook>[-attempt]`` renewed at ``renew_time``."""
    if not isinstance(playbook, str) or not playbook:
        raise AnsibleFilterError(f"heartbeat_lease: playbook {playbook!r} must be a name")
    if step not in STEPS:
        raise AnsibleFilterError(
            f"heartbeat_lease: step {step!r} must be one of {', '.join(STEPS)}"
        )
    return heartbeat_lease(playbook, step, str(renew_time), str(holder))


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"heartbeat_lease": heartbeat_lease_filter}
