# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules as registered tables (``<domain>/registry.RULES``) and the page written from
them (docs/rule-index.md, by ``tools/rule_index.py``).

A function declares a rule when the first line of its docstring starts with
``Rule <id>``, ``<id>`` in kebab-case (``common.rule_index.declared_id``): every
function, class and method of ``plugins/module_utils`` is read. Module docstrings are
prose about their file and declare nothing. Each declared id is registered in exactly one
domain's RULES (its home); a function that applies a rule homed elsewhere may declare it
too.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
from collections import defaultdict
from pathlib import Path

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.rule_index import (
    RuleRef,
    declared_id,
    table_errors,
)

ROOT = Path(__file__).resolve().parents[4]
MODULE_UTILS = ROOT / "plugins" / "module_utils"


def _tool():
    spec = importlib.util.spec_from_file_location(
        "rule_index_tool", ROOT / "tools" / "rule_index.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TOOL = _tool()
TABLES = TOOL.tables()


def declarations() -> dict[str, list[str]]:
    """Every rule id some function, class or method declares, with where."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(MODULE_UTILS.rglob("*.py")):
        where = path.relative_to(MODULE_UTILS).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                rule = declared_id(ast.get_docstring(node))
                if rule:
                    found[rule].append(f"{where}:{node.lineno} {node.name}")
    return found


def registered() -> dict[str, list[str]]:
    """Every registered id with the domains that register it."""
    homes: dict[str, list[str]] = defaultdict(list)
    for domain, rules in TABLES.items():
        for ref in rules:
            homes[ref.id].append(domain)
    return homes


def test_the_page_is_what_the_generator_writes():
    page = (ROOT / "docs" / "rule-index.md").read_text(encoding="utf-8")
    assert page == TOOL.render(TABLES), (
        "docs/rule-index.md is not what the registries say: run `python tools/rule_index.py`"
    )


def test_every_domain_with_rules_has_a_table():
    domains = {rule.split("/")[0] for places in declarations().values() for rule in places}
    assert sorted(domains - set(TABLES)) == []


@pytest.mark.parametrize("domain", sorted(TABLES))
def test_each_table_is_well_formed(domain):
    rules = TABLES[domain]
    assert rules and all(isinstance(ref, RuleRef) for ref in rules)
    assert table_errors(domain, rules) == []


def test_every_declared_rule_is_registered_once():
    homes = registered()
    unregistered = {rule: places for rule, places in declarations().items() if rule not in homes}
    assert unregistered == {}, "declared but in no domain's registry.RULES"
    twice = {rule: domains for rule, domains in homes.items() if len(domains) > 1}
    assert twice == {}, "a rule has one home: registered by more than one domain"


def test_every_registered_rule_is_declared():
    declared = declarations()
    assert sorted(set(registered()) - set(declared)) == []


def test_each_registered_function_declares_its_id():
    wrong = [
        f"{ref.where}: {inspect.getdoc(ref.function)!r:.80}"
        for rules in TABLES.values()
        for ref in rules
        if declared_id(inspect.getdoc(ref.function)) != ref.id
    ]
    assert wrong == []


def test_rule_files_never_import_a_registry():
    """The registries import the rule files, never the other way round: no cycles."""
    importers = []
    for path in sorted(MODULE_UTILS.rglob("*.py")):
        if path.name == "registry.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or "", *(a.name for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if any(n == "registry" or n.endswith(".registry") for n in names):
                importers.append(path.relative_to(MODULE_UTILS).as_posix())
    assert importers == []


def test_the_summary_and_the_place():
    def sample():
        """Rule sample-rule: what it says,
        over two lines. More after the first sentence."""

    ref = RuleRef("sample-rule", sample)
    assert ref.summary == "what it says, over two lines."
    assert declared_id(sample.__doc__) == "sample-rule"
    assert declared_id("Rule spot-price, by class: ...") == "spot-price"
    assert declared_id("Rule job-demand's GPUs") == "job-demand"
    assert declared_id("A rule: Rule x") is None
    assert "x: rule sample-rule is registered twice" in table_errors("x", [ref, ref])
    assert any("not kebab-case" in e for e in table_errors("x", [RuleRef("Bad_id", sample)]))
