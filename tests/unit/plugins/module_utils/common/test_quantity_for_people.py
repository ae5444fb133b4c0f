# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule quantity-for-people (``common.quantity.for_people``) and the aligned table
(``common.table``) the info modules' summaries are made of."""

from __future__ import annotations

from decimal import Decimal

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.quantity import (
    for_people,
    people_unit,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.table import (
    aligned,
    shortened,
)

GPU = "nvidia.com/gpu"


@pytest.mark.parametrize(
    ("value", "resource", "shown"),
    [
        ("204800m", "cpu", "204.8"),
        ("426667m", "cpu", "426.7"),
        ("500m", "cpu", "0.5"),
        ("160", "cpu", "160"),
        (Decimal("1e3"), "cpu", "1000"),
        ("1m", "cpu", "<0.1"),
        ("1677722Mi", "memory", "1638.4Gi"),
        ("2Ti", "memory", "2048Gi"),
        ("512Mi", "memory", "0.5Gi"),
        ("1Mi", "memory", "<0.1Gi"),
        ("0", "memory", "0"),
        ("100Gi", "ephemeral-storage", "100Gi"),
        (8, GPU, "8"),
        ("8", GPU, "8"),
        (0, GPU, "0"),
        ("not a number", "cpu", "not a number"),
    ],
)
def test_a_quantity_is_shown_in_peoples_units(value, resource, shown):
    assert for_people(value, resource) == shown


def test_the_units_for_headings():
    assert [people_unit(r) for r in ("cpu", "memory", GPU, "pods")] == [
        "cores",
        "Gi",
        "GPUs",
        "pods",
    ]


def test_a_table_aligns_its_columns_and_ends_no_line_in_spaces():
    lines = aligned([["NAME", "GPUS", "NOTE"], ["alpha", "16", ""], ["b", "8"]], right={1})
    assert lines == ["NAME   GPUS  NOTE", "alpha    16", "b         8"]
    assert aligned([]) == []


def test_a_long_list_is_shortened():
    assert shortened(["a", "b"]) == "a, b"
    assert shortened([f"n{i}" for i in range(7)], most=3) == "n0, n1, n2 and 4 more"
