# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule diff-per-object: a module that changes many objects shows one diff per object.

The services build their diff as ``{"before": {key: object}, "after": {key: object}}``,
keyed by object (a queue name, ``Kind/namespace/name``). Ansible renders a dict diff
as one text of every object and compares the two texts line by line: for 10,000 spot
queues that took 54 s after the run. Given a list, it renders each entry on its own
(4.4 s for the same 10,000), under its own header, so ``--diff`` also says which
object each change belongs to. Pure; ``kube.runner`` applies it for the modules that
ask for it (``run_module(..., diff_by_object=True)``).

Rule diff-shows-change: what a diff shows is what changes. ``shaped`` is the one place a
module's diff is cut to that (``kube.runner`` for every module, ``k8s_objects`` for the
objects the roles apply): the fields the API server, kubectl or a controller own
(``objects.strip_server_fields``: ``managedFields``, ``resourceVersion``, ``uid``,
``creationTimestamp``, ``generation``, ``status``, their annotations) are left out, a
Secret's values are shown as digests, and an object of a multi-object diff whose change is
one value is one line (``Node/gpu-node-7: label topology.volcano.sh/tor: tor-3 → tor-2``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from .objects import strip_server_fields


def per_object(diff: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One Ansible diff per key of a keyed before/after, sorted by key. An object only
    in ``after`` is new (its before is empty), one only in ``before`` goes. Every key
    stays, even one whose before and after look equal: the services key only what they
    write, so an entry is a write ``--diff`` must not hide (Ansible prints nothing for
    it). Each entry is ``object_diff``'s: without server fields, before cut to what the
    service writes, one line when one value changes."""
    before: Mapping[str, Any] = diff.get("before") or {}
    after: Mapping[str, Any] = diff.get("after") or {}
    return [
        object_diff(key, before.get(key), after.get(key), project=True)
        for key in sorted(set(before) | set(after))
    ]


def shaped(diff: Any, by_object: bool = False) -> Any:
    """A module's ``diff`` as Ansible shows it: keyed by object (``by_object``), one
    entry per object (``per_object``); otherwise the same ``{"before", "after"}`` without
    server fields, ``before`` cut to what ``after`` says when both are Kubernetes
    objects (the fields the server defaulted are not a change)."""
    if not isinstance(diff, Mapping) or not {"before", "after"} >= set(diff):
        return diff  # already entries (a list), or a form of its own
    if by_object:
        return per_object(diff)
    before, after = clean(diff.get("before")), clean(diff.get("after"))
    if _is_object(before) and _is_object(after):
        before = cut_to(before, after)
    return {"before": before, "after": after}


def object_diff(
    header: str, before: Any, after: Any, project: bool = False, secret: bool = False
) -> dict[str, Any]:
    """One object's Ansible diff entry under ``header``: ``before`` and ``after`` without
    the fields the server owns (``clean``), a Secret's values as digests (``secret``, or
    ``kind: Secret``), ``before`` cut to the keys ``after`` has (``project``: ``after``
    is what is written, and fields only the live object has are not a change), and
    ``{"prepared": line}`` when exactly one value changes in an object that stays."""
    before, after = clean(before, secret), clean(after, secret)
    if project and isinstance(before, Mapping) and isinstance(after, Mapping):
        before = cut_to(before, after)
    line = one_line(header, before, after)
    if line is not None:
        return {"prepared": line}
    return {
        "before_header": header,
        "after_header": header,
        "before": _shown(before),
        "after": _shown(after),
    }


def changes(entry: Mapping[str, Any]) -> bool:
    """Whether an Ansible diff entry shows a change (a one-line entry always does)."""
    if "prepared" in entry:
        return bool(entry["prepared"])
    return entry.get("before") != entry.get("after")


def clean(value: Any, secret: bool = False) -> Any:
    """``value`` without what the server owns when it is (part of) a Kubernetes object:
    a mapping with ``metadata`` or ``status``; a Secret's ``data``/``stringData`` values
    become digests, so a diff says that a value changed, never what it is."""
    if not isinstance(value, Mapping):
        return value
    if "metadata" in value or "status" in value:
        value = strip_server_fields(value)
    if secret or value.get("kind") == "Secret":
        value = dict(value)
        for key in ("data", "stringData"):
            if isinstance(value.get(key), Mapping):
                value[key] = {k: _digest(v) for k, v in value[key].items()}
    return value


def cut_to(live: Any, desired: Any) -> Any:
    """``live`` cut down to the keys ``desired`` has (mappings only; lists and values
    whole): the fields a write leaves alone are not part of its diff."""
    if isinstance(desired, Mapping) and isinstance(live, Mapping):
        return {k: cut_to(live[k], v) for k, v in desired.items() if k in live}
    return live


def one_line(header: str, before: Any, after: Any) -> str | None:
    """``"<header>: <field>: <before> → <after>\n"`` when ``before`` and ``after`` are
    both non-empty mappings that differ in exactly one value (a value added or removed
    is ``absent`` on its other side); None otherwise (a new or removed object, a list
    that changes, several values). A label or an annotation is named as such
    (``label topology.volcano.sh/tor``), any other field by its path (``spec.weight``)."""
    if not (isinstance(before, Mapping) and isinstance(after, Mapping) and before and after):
        return None
    found: list[tuple[tuple[str, ...], Any, Any]] = []
    if not _leaf_changes(before, after, (), found, limit=2) or len(found) != 1:
        return None
    path, old, new = found[0]
    return f"{header}: {_field(path)}: {_value(old)} → {_value(new)}\n"


_ABSENT = object()


def _leaf_changes(before: Any, after: Any, path: tuple[str, ...], found: list, limit: int) -> bool:
    """Collects the values that differ into ``found`` (up to ``limit``); False when a
    change is not one value (a mapping or a list added, removed or changed)."""
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        for key in sorted(set(before) | set(after), key=str):
            old, new = before.get(key, _ABSENT), after.get(key, _ABSENT)
            if old == new:
                continue
            if not _leaf_changes(old, new, (*path, str(key)), found, limit):
                return False
            if len(found) >= limit:
                return True
        return True
    if not all(v is _ABSENT or _scalar(v) for v in (before, after)):
        return False
    found.append((path, before, after))
    return True


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _field(path: tuple[str, ...]) -> str:
    if len(path) > 2 and path[0] == "metadata" and path[1] in ("labels", "annotations"):
        return f"{path[1][:-1]} {'.'.join(path[2:])}"
    return ".".join(path)


def _value(value: Any) -> str:
    if value is _ABSENT:
        return "absent"
    if isinstance(value, str):
        return value if value.strip() and value == value.strip() else json.dumps(value)
    return json.dumps(value)


def _digest(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return f"(hidden, sha256 {hashlib.sha256(text.encode()).hexdigest()[:12]})"


def _is_object(value: Any) -> bool:
    return isinstance(value, Mapping) and isinstance(value.get("metadata"), Mapping)


def _shown(value: Any) -> Any:
    """What Ansible's diff renderer takes: a mapping (it serializes it), text, or None
    (empty). Anything else, such as a list, is wrapped so it is shown, not refused."""
    if value is None or isinstance(value, Mapping | str):
        return value
    return {"value": value}
