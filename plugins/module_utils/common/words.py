# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule playbook-words: a refusal met through a playbook speaks the caller's language.

A module names its own options (``force: true``, ``command: is required``,
``teams[1].deserved...``); the caller of a playbook set variables
(``tenant_force``, ``job_command``, ``tenant_teams``). ``in_playbook_words`` rewrites
a module's message with the playbook's mapping from option (or field path) to
variable, and names the playbook that takes them. ``playbooks/tasks/refusal.yml``
applies it in the rescue of every playbook that runs a module with the caller's
input.
"""

from __future__ import annotations

import re
from collections.abc import Mapping


def in_playbook_words(msg: str, variables: Mapping[str, str], playbook: str) -> str:
    """``msg`` with every option of ``variables`` (module option or dotted field path ->
    playbook variable) said as the variable: an instruction ``force: true`` becomes
    ``tenant_force=true``, a field ``command: ...`` or ``teams[1].deserved...`` at the
    start of an error becomes ``job_command: ...`` or ``tenant_teams[1].deserved...``.
    The longest option wins (``subscription.nvidia.com/gpu`` before ``subscription``).
    When a variable is named, the message ends by saying which playbook takes it."""
    used: list[str] = []
    options = sorted(variables, key=len, reverse=True)
    if not options:
        return msg
    alternatives = "|".join(re.escape(o) for o in options)
    # An instruction to set an option: "or force: true to delete the tenant anyway".
    setting = re.compile(rf"(?<![\w.\-/\[])({alternatives}): (true|false)\b")
    # A field path at the start of an error ("; " separates errors in one message).
    field = re.compile(rf"(^|; |\n)({alternatives})(?=[:.\[])")

    def said(option: str) -> str:
        variable = variables[option]
        if variable not in used:
            used.append(variable)
        return variable

    out = setting.sub(lambda m: f"{said(m.group(1))}={m.group(2)}", msg)
    out = field.sub(lambda m: m.group(1) + said(m.group(2)), out)
    if not used:
        return out
    which = " and ".join(used) if len(used) <= 2 else ", ".join(used[:-1]) + " and " + used[-1]
    verb = "is a variable" if len(used) == 1 else "are variables"
    return f"{out} ({which} {verb} of {playbook})"
