# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The unknown_variables filter: the variables a caller most likely misspelt."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.module_utils.common.variables import (
    unknown_variables as _unknown_variables,
)


def unknown_variables(
    present: Any,
    known: Any,
    prefixes: Any = (),
    playbook: str = "this playbook",
    others: Any = (),
) -> list[str]:
    """Rule playbook-variables (module_utils/common/variables.py)."""
    fields = (("_input", present), ("known", known), ("prefixes", prefixes), ("others", others))
    for field, value in fields:
        if isinstance(value, str) or not isinstance(value, list | tuple):
            raise AnsibleFilterError(f"unknown_variables: {field} must be a list of names")
    return _unknown_variables(
        [str(v) for v in present],
        [str(k) for k in known],
        [str(p) for p in prefixes],
        playbook,
        [str(o) for o in others],
    )


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"unknown_variables": unknown_variables}
