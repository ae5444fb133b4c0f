# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The awx_objects filter: the AWX objects that run this collection (rule awx-objects)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.module_utils.awx.objects import (
    awx_objects as _awx_objects,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.awx.objects import (
    awx_settings_errors,
    preview,
)


def awx_objects(settings: Any, surveys: Any, playbooks: Any, masked: bool = False) -> list[Any]:
    """Every AWX object, in the order AWX needs them; ``masked``: credential inputs shown
    as their length (rule awx-secret-preview)."""
    if not isinstance(settings, Mapping):
        raise AnsibleFilterError(f"awx_objects: settings: {settings!r} must be a mapping")
    if not isinstance(surveys, Mapping):
        raise AnsibleFilterError(
            f"awx_objects: surveys: {surveys!r} must be a mapping of playbook to survey"
        )
    if isinstance(playbooks, str) or not isinstance(playbooks, list | tuple):
        raise AnsibleFilterError(
            f"awx_objects: playbooks: {playbooks!r} must be a list of playbook names"
        )
    errors = awx_settings_errors(settings, surveys, playbooks)
    if errors:
        raise AnsibleFilterError("awx_objects: " + "; ".join(str(e) for e in errors))
    objects = _awx_objects(settings, surveys)
    return preview(objects) if masked else objects


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"awx_objects": awx_objects}
