# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading a trace: the YAML file, and the variables of the playbooks its events run.

``load(path)`` returns the trace or raises PlatformValidationError naming every error,
in the words of ``validate``; a file that is not YAML, or holds a key twice, is refused
the same way, with its line (rule trace-yaml). ``dump`` is the text a trace is written
as: one line a job.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

from ansible_collections.gpucloud.platform.plugins.module_utils.awx.surveys import (
    playbook_variables as variables_of,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    FieldError,
    PlatformValidationError,
)

from .model import ACTIONS, Trace
from .validate import PlaybookVariables, check

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOKS = ROOT / "playbooks"


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader that refuses a key given twice in one mapping (plain YAML keeps the
    last one, and a hand-written trace would silently lose the first)."""


def _unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: dict[Any, int] = {}
    for key_node, _value in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"key {key!r} appears twice in one mapping (first on line {seen[key] + 1})",
                key_node.start_mark,
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


@cache
def playbook_variables(playbooks: Path = PLAYBOOKS) -> PlaybookVariables:
    """Action -> the variables of its playbook -> required (rule playbook-variables, as
    ``awx/surveys`` reads them for the surveys)."""
    return {
        action: variables_of(yaml.safe_load((playbooks / name).read_text(encoding="utf-8")))
        for action, name in ACTIONS.items()
    }


def read(path: Path | str) -> Any:
    """The YAML of ``path``; PlatformValidationError naming the line when it is not YAML."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise PlatformValidationError([FieldError("", f"{path}: {exc.strerror}")]) from exc
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise PlatformValidationError(
            [FieldError("", f"{path}: not YAML{where}: {problem} (rule trace-yaml)")]
        ) from exc


def load(path: Path | str) -> Trace:
    """The trace in ``path``, or PlatformValidationError with every error."""
    data = read(path)
    check(data, playbook_variables())
    return Trace.from_mapping(data)


class _IndentedDumper(yaml.SafeDumper):
    """Lists indented under their key, as yamllint's default wants them."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def dump(trace: Trace, comment: str = "") -> str:
    """The YAML text of ``trace``, each job and node kind on one line, ``comment`` (lines
    of text) as comments first."""
    head = "".join(f"# {line}\n" if line else "#\n" for line in comment.splitlines())
    body = yaml.dump(
        trace.as_mapping(),
        Dumper=_IndentedDumper,
        sort_keys=False,
        default_flow_style=None,
        width=1_000,
    )
    return f"---\n{head}{body}"
