# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""No module of the collection sets off ansible-core 2.19's deprecation warnings.

ansible-core 2.19 deprecates ``warnings`` and ``deprecations`` passed to ``exit_json`` or
``fail_json``: a module warns through ``module.warn`` or
``ansible.module_utils.common.warnings.warn`` instead. A module's result is the service's
dict passed as ``exit_json(**result)`` (``kube/runner``), and a refusal's extras go to
``fail_json`` the same way, so the key may not appear anywhere a result is built: as a
keyword of any call, a key of a dict literal or a subscript assigned. Every module run of
the unit tests is checked as well (``tests/unit/conftest.py``), and the integration stage
runs modules against the local cluster and reads their output for deprecation warnings."""

from __future__ import annotations

import ast
from pathlib import Path

PLUGINS = Path(__file__).resolve().parents[3] / "plugins"
DEPRECATED_KEYS = ("warnings", "deprecations")


def deprecated_result_keys(source: str) -> list[tuple[int, str]]:
    """(line, what) for every place ``source`` puts ``warnings`` or ``deprecations`` where
    a module result or a refusal's extras may carry it to exit_json/fail_json."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            found += [
                (node.lineno, f"keyword {k.arg}=")
                for k in node.keywords
                if k.arg in DEPRECATED_KEYS
            ]
        elif isinstance(node, ast.Dict):
            found += [
                (key.lineno, f"dict key {key.value!r}")
                for key in node.keys
                if isinstance(key, ast.Constant) and key.value in DEPRECATED_KEYS
            ]
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            index = node.slice
            if isinstance(index, ast.Constant) and index.value in DEPRECATED_KEYS:
                found.append((node.lineno, f"item {index.value!r} assigned"))
    return found


def plugin_files() -> list[Path]:
    return sorted(p for p in PLUGINS.rglob("*.py") if "__pycache__" not in p.parts)


def test_the_check_finds_each_form():
    source = (
        "module.exit_json(changed=False, warnings=['w'])\n"
        "module.fail_json(msg='m', deprecations=[])\n"
        "result = {'changed': True, 'warnings': []}\n"
        "result['warnings'] = ['w']\n"
        "raise Refused('no', **dict(warnings=[]))\n"
    )
    assert [line for line, _what in deprecated_result_keys(source)] == [1, 2, 3, 4, 5]
    assert deprecated_result_keys("warn('w')\nmodule.warn('w')\nx = result.get('warnings')\n") == []


def test_no_plugin_passes_warnings_or_deprecations_in_a_result():
    found = {
        str(path.relative_to(PLUGINS)): where
        for path in plugin_files()
        if (where := deprecated_result_keys(path.read_text(encoding="utf-8")))
    }
    assert found == {}, (
        f"{found}: warn with module.warn or ansible.module_utils.common.warnings.warn "
        "(ansible-core 2.19 deprecates the result key)"
    )
