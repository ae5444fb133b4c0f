# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_node_preflight: a GPU node's preflight report (rule node-preflight)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.module_utils.nodes.preflight import (
    preflight_report,
)

SETTINGS = ("nvidia_smi", "driver_min_version", "runtime_pattern")


def gpu_node_preflight(observed: Any, host: Any, settings: Any) -> dict[str, Any]:
    """The report of what the gpu_node role observed on ``host``."""
    if not isinstance(observed, Mapping):
        raise AnsibleFilterError(f"gpu_node_preflight: observed: {observed!r} must be a mapping")
    if not isinstance(settings, Mapping):
        raise AnsibleFilterError(f"gpu_node_preflight: settings: {settings!r} must be a mapping")
    missing = [k for k in SETTINGS if not settings.get(k)]
    if missing:
        raise AnsibleFilterError(f"gpu_node_preflight: settings: missing {', '.join(missing)}")
    return preflight_report(str(host), observed, settings)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"gpu_node_preflight": gpu_node_preflight}
