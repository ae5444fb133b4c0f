# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Playbook variables a caller may have misspelt (pure: no I/O).

Ansible ignores a variable nothing reads, so ``-e tenant_catalg_file=...`` passes
silently, and the run does something the caller did not ask for.

* Rule playbook-variables (``unknown_variables``): a variable that is set and that the
  playbook does not know is refused when it starts with one of the playbook's own
  prefixes (``usage_``) or is one or two letters away from a name it knows
  (``tenant_catalg_file``); each refusal names the variable, the playbook and the name
  it most likely meant. Other variables (an inventory's own) pass, and so do Ansible's
  own (``inventory_file``) and those starting with one of ``others``: names set around
  the playbook that are not its own (``tenant_catalog`` in an inventory that runs
  ``tenant_create.yml`` too), even where they look like one of its names (``tenants``
  and ``tenant``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from difflib import get_close_matches

# How alike a name must be to a known one to be taken for a typo of it: one or two
# letters changed, dropped or swapped in a name of a dozen letters.
CLOSE = 0.85

# What Ansible itself sets in every play (its special variables): never a caller's
# misspelling, even where one looks like a playbook's name (inventory_file and
# awx_configure.yml's awx_inventory_file).
ANSIBLE_PREFIX = "ansible_"
ANSIBLE_NAMES = frozenset(
    {
        "environment",
        "group_names",
        "groups",
        "hostvars",
        "inventory_dir",
        "inventory_file",
        "inventory_hostname",
        "inventory_hostname_short",
        "item",
        "omit",
        "play_hosts",
        "playbook_dir",
        "role_name",
        "role_names",
        "role_path",
        "vars",
    }
)


def _closest(name: str, known: Sequence[str]) -> str | None:
    match = get_close_matches(name, known, n=1, cutoff=CLOSE)
    return match[0] if match else None


def unknown_variables(
    present: Iterable[str],
    known: Sequence[str],
    prefixes: Sequence[str],
    playbook: str,
    others: Sequence[str] = (),
) -> list[str]:
    """Rule playbook-variables: one message per variable the caller most likely
    misspelt, sorted by name."""
    known_set = set(known)
    messages = []
    for name in sorted(set(present) - known_set):
        if name in ANSIBLE_NAMES or name.startswith((ANSIBLE_PREFIX, *others)):
            continue
        closest = _closest(name, known)
        if not closest and not name.startswith(tuple(prefixes)):
            continue
        hint = f"did you mean {closest}?" if closest else f"it knows {', '.join(sorted(known))}"
        messages.append(f"{name}: not a variable of {playbook}; {hint} (rule playbook-variables)")
    return messages
