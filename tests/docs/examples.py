# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The examples of a documentation page, as the docs test runs them.

An example is a fenced block a reader would run:

* ``bash``, ``sh`` or ``shell``: a script, run as written from the repository root;
* ``console``: the lines after ``$ `` are the commands;
* ``yaml`` that is a playbook (a list of plays, each with ``hosts``) or a list of tasks
  (each naming a module, ``gpucloud.platform.tenant`` or ``ansible.builtin.assert``):
  run with ``ansible-playbook``, tasks inside a play on ``localhost``.

Any other block (an inventory fragment, a manifest, output, a diagram) is not an
example. An HTML comment on the line before a block says more about it (invisible on a
rendered page)::

    <!-- docs-test: skip needs a real AWX controller -->
    <!-- docs-test: expect tenant-acme-spot -->      (its output contains the text)
    <!-- docs-test: fails must be at least 1 -->     (it is a refusal; its output says so)
    <!-- docs-test: file /tmp/docs/catalog.yml -->   (a yaml block the next example reads)

The markers of one block may share the comment, separated by ``;``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

SCRIPT_LANGS = ("bash", "sh", "shell")
MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<body>.*?)\s*-->\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w-]*)\s*$")
MARKER_KINDS = ("skip", "expect", "fails", "file")


@dataclass(frozen=True)
class Example:
    """One runnable block: ``kind`` is ``script``, ``tasks``, ``playbook`` or ``file``;
    ``line`` is the line of its opening fence."""

    page: str
    line: int
    kind: str
    text: str
    skip: str | None = None
    expect: tuple[str, ...] = ()
    fails: str | None = None
    path: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def markers_of(comment: str) -> dict[str, list[str]]:
    """``skip reason; expect a; expect b`` -> {"skip": ["reason"], "expect": ["a", "b"]}.

    A part that does not start with a marker continues the one before it, so a reason
    may hold a ``;`` (``skip needs X; Y follows`` is one reason); the first part must
    be a marker."""
    out: dict[str, list[str]] = {}
    last: list[str] | None = None
    for part in comment.split(";"):
        part = part.strip()
        if not part:
            continue
        kind, _sep, rest = part.partition(" ")
        if kind in MARKER_KINDS:
            last = out.setdefault(kind, [])
            last.append(rest.strip())
        elif last is None:
            raise ValueError(
                f"unknown docs-test marker {kind!r} (one of {', '.join(MARKER_KINDS)})"
            )
        else:
            last[-1] = f"{last[-1]}; {part}"
    return out


def _yaml_kind(text: str) -> str | None:
    try:
        data: Any = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    if not isinstance(data, list) or not data or not all(isinstance(i, dict) for i in data):
        return None
    if all("hosts" in item for item in data):
        return "playbook"
    if all(any("." in str(key) for key in item) for item in data):
        return "tasks"
    return None


def _console_commands(text: str) -> str:
    return "\n".join(line[2:] for line in text.splitlines() if line.startswith("$ "))


def _kind(lang: str, text: str, marks: dict[str, list[str]]) -> str | None:
    if "file" in marks:
        return "file"
    if lang in SCRIPT_LANGS:
        return "script"
    if lang == "console":
        return "script"
    if lang in ("yaml", "yml"):
        return _yaml_kind(text)
    return None


def page_examples(page: str, text: str) -> list[Example]:
    """The examples of one page, in page order (see the module docstring)."""
    lines = text.splitlines()
    out: list[Example] = []
    marks: dict[str, list[str]] = {}
    i = 0
    while i < len(lines):
        marker = MARKER.match(lines[i])
        if marker:
            for kind, values in markers_of(marker.group("body")).items():
                marks.setdefault(kind, []).extend(values)
            i += 1
            continue
        fence = FENCE.match(lines[i])
        if not fence:
            if lines[i].strip():
                marks = {}
            i += 1
            continue
        start, lang, indent = i + 1, fence.group("lang"), fence.group("indent")  # 1-based
        i += 1
        body: list[str] = []
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        block = "\n".join(body) + "\n"
        if lang == "console":
            block = _console_commands(block) + "\n"
        kind = _kind(lang, block, marks)
        if kind is not None:
            out.append(
                Example(
                    page=page,
                    line=start,
                    kind=kind,
                    text=block,
                    skip=(marks.get("skip") or [None])[0],
                    expect=tuple(marks.get("expect", [])),
                    fails=(marks.get("fails") or [None])[0],
                    path=(marks.get("file") or [None])[0],
                )
            )
        marks = {}
    return out


def examples_of(root: Path, pages: list[str]) -> list[Example]:
    """Every page's examples, pages in the order given."""
    out: list[Example] = []
    for page in pages:
        out.extend(page_examples(page, (root / page).read_text(encoding="utf-8")))
    return out
