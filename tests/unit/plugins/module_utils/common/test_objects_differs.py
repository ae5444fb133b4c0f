# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``differs``'s quick ways (a whole mapping or list equal as it is) give the answer the
field-by-field comparison gives, for any nesting of mappings, lists and scalars,
quantities included."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.objects import (
    _same_scalar,
    differs,
)


def field_by_field(desired: Any, live: Any) -> bool:
    """The rule without its quick ways."""
    if isinstance(desired, Mapping):
        if not isinstance(live, Mapping):
            return True
        return any(field_by_field(v, live.get(k)) for k, v in desired.items())
    if isinstance(desired, list):
        if not isinstance(live, list) or len(desired) != len(live):
            return True
        return any(field_by_field(d, x) for d, x in zip(desired, live, strict=True))
    return not _same_scalar(desired, live)


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3000),
    st.sampled_from(["0", "1", "1000m", "1k", "1Gi", "1024Mi", "TCP", "a", ""]),
)
keys = st.sampled_from(["a", "b", "cpu", "memory", "ports"])
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=12,
)


@given(values, values)
def test_the_quick_ways_agree_with_field_by_field(desired, live):
    assert differs(desired, live) == field_by_field(desired, live)


@given(st.dictionaries(keys, values, max_size=4), st.dictionaries(keys, values, max_size=3))
def test_a_live_object_with_more_fields_agrees_too(desired, extra):
    live = {**extra, **desired}
    assert differs(desired, live) is False
    assert differs(desired, live) == field_by_field(desired, live)


def test_mappings_that_are_not_dicts_are_compared_field_by_field():
    assert differs(MappingProxyType({"cpu": "1"}), {"cpu": "1000m"}) is False
    assert differs({"cpu": "1"}, MappingProxyType({"cpu": "2"})) is True


def test_equal_quantities_written_differently_are_the_same():
    assert (
        differs(
            {"spec": {"cpu": "1", "memory": "1Gi"}}, {"spec": {"cpu": "1000m", "memory": "1024Mi"}}
        )
        is False
    )
    assert differs([{"cpu": "1"}], [{"cpu": "1000m"}]) is False
    assert differs([{"cpu": "1"}], [{"cpu": "2"}]) is True
