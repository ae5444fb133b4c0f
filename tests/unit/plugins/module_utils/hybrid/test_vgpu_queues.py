# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules vgpu-purchase and vgpu-queue-capability: vGPU in every tenant queue."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common import names
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid import vgpu as v

NUMBER, MEMORY, CORES = names.VGPU_NUMBER, names.VGPU_MEMORY, names.VGPU_CORES


def purchase(value):
    errors = []
    return v.vgpu_purchase(value, "vgpu", errors), errors


def test_a_full_purchase_is_its_queue_resources():
    got, errors = purchase({"number": 4, "memory_mib": 81920, "cores": 200})
    assert errors == []
    assert got == {NUMBER: 4, MEMORY: 81920, CORES: 200}


def test_cores_default_to_a_whole_gpu_per_vgpu_and_memory_stays_unnamed():
    # A 0 memory capability would refuse every pod that asks for memory; the number bounds it.
    got, _unused = purchase({"number": 3})
    assert got == {NUMBER: 3, CORES: 300}


def test_none_is_no_purchase():
    assert purchase(None) == (None, [])


@pytest.mark.parametrize(
    "value, field, words",
    [
        ({"memory_mib": 1}, "vgpu.number", "is required"),
        ({"number": -1}, "vgpu.number", "0 or more"),
        ({"number": 1.5}, "vgpu.number", "whole number"),
        ({"number": True}, "vgpu.number", "whole number"),
        ({"number": 1, "cores": "lots"}, "vgpu.cores", "whole number"),
        ({"number": 1, "gpus": 1}, "vgpu.gpus", "not a key of a vGPU purchase"),
        ([4], "vgpu", "must be a mapping"),
    ],
)
def test_bad_purchases_name_field_value_and_rule(value, field, words):
    got, errors = purchase(value)
    assert got is None
    assert [e.field for e in errors] == [field]
    assert words in errors[0].message and "rule vgpu-purchase" in errors[0].message


def test_a_queue_with_a_purchase_gets_it_whatever_it_holds():
    bought = {NUMBER: Decimal(4), CORES: Decimal(400)}
    assert v.vgpu_queue_capability(bought, {NUMBER: Decimal(9)}) == bought


def test_a_queue_without_a_purchase_names_all_three_at_zero():
    assert v.vgpu_queue_capability(None, {}) == {NUMBER: 0, MEMORY: 0, CORES: 0}


def test_a_queue_without_a_purchase_keeps_what_its_pods_hold_rounded_up():
    held = {NUMBER: Decimal(2), MEMORY: Decimal("1024.5"), CORES: Decimal(30)}
    assert v.vgpu_queue_capability(None, held) == {NUMBER: 2, MEMORY: 1025, CORES: 30}


@given(
    st.dictionaries(
        st.sampled_from(names.VGPU_QUEUE_RESOURCES),
        st.decimals(min_value=0, max_value=10**9, places=3, allow_nan=False),
    )
)
def test_without_a_purchase_the_capability_is_never_below_what_runs(held):
    """Invariant: no running pod is ever above its queue's vGPU capability, and every
    vGPU resource is named (an unnamed one is unlimited)."""
    cap = v.vgpu_queue_capability(None, held)
    assert set(cap) == set(names.VGPU_QUEUE_RESOURCES)
    assert all(cap[k] >= held.get(k, 0) and cap[k] == cap[k].to_integral_value() for k in cap)


@given(st.integers(0, 64), st.one_of(st.none(), st.integers(0, 10**7)), st.integers(0, 6400))
def test_a_purchase_reads_back_as_itself(number, memory, cores):
    value = {"number": number, "cores": cores}
    if memory is not None:
        value["memory_mib"] = memory
    got, _unused = purchase(value)
    back = v.purchase_of(got)
    assert back == (value if number else None)
    assert v.without_vgpu({**got, "nvidia.com/gpu": Decimal(1)}) == {"nvidia.com/gpu": 1}
