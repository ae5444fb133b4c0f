# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/test selects each cluster stage's tests by marker (``-m federation``, ``-m
conformance``, ``-m integration``): a test file of that stage without its marker would be
deselected without a word. Every such file says its marker once, in ``pytestmark``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# directory -> the markers its stage selects (scripts/test)
STAGES = {
    "tests/integration": {"integration"},
    "tests/conformance": {"conformance"},
    "tests/docs": {"integration"},
    "tests/federation": {"federation"},
}


def module_markers(path: Path) -> set[str]:
    """The marker names of the file's module-level ``pytestmark`` (one or a list)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            values = node.value.elts if isinstance(node.value, ast.List) else [node.value]
            return {v.attr for v in values if isinstance(v, ast.Attribute)}
    return set()


FILES = sorted(
    (directory, path) for directory in STAGES for path in (ROOT / directory).glob("test_*.py")
)


def test_every_stage_has_test_files():
    assert {directory for directory, _path in FILES} == set(STAGES)


@pytest.mark.parametrize(("directory", "path"), FILES, ids=[p.name for _d, p in FILES])
def test_a_stage_test_file_carries_its_stages_marker(directory, path):
    assert module_markers(path) & STAGES[directory], (
        f"{path.relative_to(ROOT)}: no pytestmark with {' or '.join(sorted(STAGES[directory]))}; "
        "scripts/test would deselect it"
    )


def test_an_unmarked_file_is_found(tmp_path):
    unmarked = tmp_path / "test_x.py"
    unmarked.write_text("import pytest\n\ndef test_x():\n    assert True\n")
    marked = tmp_path / "test_y.py"
    marked.write_text("import pytest\npytestmark = [pytest.mark.federation, pytest.mark.slow]\n")
    assert module_markers(unmarked) == set()
    assert module_markers(marked) == {"federation", "slow"}
