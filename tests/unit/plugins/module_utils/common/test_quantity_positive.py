# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``quantity.is_positive``: a size above zero; anything else (refused by the parser,
zero, negative, a bool, None) is not one."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.quantity import is_positive


@pytest.mark.parametrize("value", ["500Gi", "1", 2, "0.5Ti", "100m"])
def test_sizes_above_zero_are_positive(value):
    assert is_positive(value)


@pytest.mark.parametrize("value", [None, True, False, "0", 0, "-1Gi", "lots", "", [], {}])
def test_anything_else_is_not(value):
    assert not is_positive(value)
