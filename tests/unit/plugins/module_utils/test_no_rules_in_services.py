# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""No rule function lives in a ``service.py``: a service reads and writes, and the rules
it applies live in its domain's pure files (see docs/development.md, "Finding a rule").

A function declares a rule when the first line of its docstring starts with ``Rule <id>``
(``<id>`` in kebab-case), as every rule function of the collection does
(``common.rule_index.declared_id``).
"""

from __future__ import annotations

import ast
from pathlib import Path

from ansible_collections.gpucloud.platform.plugins.module_utils.common.rule_index import declared_id

MODULE_UTILS = Path(__file__).resolve().parents[4] / "plugins" / "module_utils"


def rule_functions_in_services() -> list[str]:
    found = []
    for path in sorted(MODULE_UTILS.glob("*/service.py")):
        domain = path.parent.name
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            doc = ast.get_docstring(node) or ""
            if declared_id(doc):
                found.append(
                    f"{domain}/service.py:{node.lineno} {node.name}: {doc.splitlines()[0]}"
                )
    return found


def test_the_services_are_found():
    assert len(list(MODULE_UTILS.glob("*/service.py"))) >= 10


def test_no_service_declares_a_rule():
    found = rule_functions_in_services()
    assert not found, (
        "rule functions in a service.py (move them to the domain's rule file):\n" + "\n".join(found)
    )
