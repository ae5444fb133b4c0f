# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules as registered tables: every domain's ``registry.RULES`` lists its rules, one
``RuleRef`` each, and ``tools/rule_index.py`` writes docs/rule-index.md from them.

A function (or class, or method) declares a rule when the first line of its docstring
starts with ``Rule <id>`` (``declared_id``), ``<id>`` in kebab-case: ``Rule payg-grace:
...``, ``Rule spot-price, by class: ...``. A rule applied in several places has one home,
the function its domain registers; the others name it in their docstrings the same way.
Pure.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

RULE_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
DECLARATION = re.compile(r"Rule (" + RULE_ID.pattern + r")\b(?!-)")
SENTENCE_END = re.compile(r"(?<=[.!?])\s")
PACKAGE = "plugins.module_utils."


def declared_id(doc: str | None) -> str | None:
    """The rule id a docstring declares (the first line starts ``Rule <id>``), or None."""
    match = DECLARATION.match(inspect.cleandoc(doc or ""))
    return match.group(1) if match else None


def first_sentence(text: str) -> str:
    """``text`` with its whitespace collapsed, up to the end of its first sentence."""
    flat = " ".join(text.split())
    return SENTENCE_END.split(flat, maxsplit=1)[0]


@dataclass(frozen=True)
class RuleRef:
    """One rule of a registered table: its id and the function that is its home."""

    id: str
    function: Callable[..., Any]

    @property
    def doc(self) -> str:
        return inspect.getdoc(self.function) or ""

    @property
    def summary(self) -> str:
        """What the rule says: the docstring's text after ``Rule <id>:`` up to the first
        sentence end; a docstring that goes on otherwise (``Rule <id>, for ...``) gives its
        whole first sentence."""
        prefix = f"Rule {self.id}:"
        if self.doc.startswith(prefix):
            return first_sentence(self.doc[len(prefix) :])
        return first_sentence(self.doc)

    @property
    def domain(self) -> str:
        return where_of(self.function).split("/", 1)[0]

    @property
    def where(self) -> str:
        """``domain/file.function`` (``domain/file.Class.method`` for a method)."""
        return where_of(self.function)


def where_of(function: Callable[..., Any]) -> str:
    """``domain/file.qualname`` of a function of ``plugins/module_utils``."""
    module = getattr(function, "__module__", "") or ""
    _before, _found, path = module.rpartition(PACKAGE)
    return f"{path.replace('.', '/')}.{getattr(function, '__qualname__', '?')}"


def table_errors(domain: str, rules: Iterable[RuleRef]) -> list[str]:
    """What is wrong with ``domain``'s table: an id twice, an id not in kebab-case, a
    function outside the domain, a function whose docstring does not declare its id."""
    errors = []
    seen: set[str] = set()
    for ref in rules:
        if ref.id in seen:
            errors.append(f"{domain}: rule {ref.id} is registered twice")
        seen.add(ref.id)
        if not RULE_ID.fullmatch(ref.id):
            errors.append(f"{domain}: rule id {ref.id!r} is not kebab-case")
        if ref.domain != domain:
            errors.append(f"{domain}: rule {ref.id}'s function {ref.where} is not the domain's")
        declared = declared_id(ref.doc)
        if declared != ref.id:
            errors.append(
                f"{domain}: {ref.where}'s docstring declares {declared or 'no rule'}, not rule {ref.id}"
            )
    return errors
