# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The playbook_words filter: a module's refusal in the words of the playbook that ran it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.module_utils.common.words import (
    in_playbook_words,
)


def playbook_words(result: Any, variables: Any, playbook: str = "this playbook") -> str:
    """Rule playbook-words (module_utils/common/words.py): ``result`` is a failed task's
    result (its ``msg``) or a message."""
    if not isinstance(variables, Mapping):
        raise AnsibleFilterError(
            "playbook_words: variables must map module options to playbook variables"
        )
    msg = result.get("msg", "") if isinstance(result, Mapping) else result
    return in_playbook_words(
        str(msg), {str(k): str(v) for k, v in variables.items()}, str(playbook)
    )


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"playbook_words": playbook_words}
