# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules vgpu-request and vgpu-or-whole-gpu: what a container asks of HAMi's vGPU device."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common import names
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid import vgpu as v

VOLCANO = Path("/root/go/pkg/mod/volcano.sh/volcano@v1.15.1")

valid_requests = st.fixed_dictionaries(
    {"number": st.integers(1, v.MAX_VGPU_NUMBER)},
    optional={
        "memory_mib": st.integers(1, v.MAX_MEMORY_MIB),
        "cores": st.integers(1, v.MAX_CORES),
    },
)


def test_the_resource_names_are_volcano_s():
    assert names.VGPU_NUMBER == "volcano.sh/vgpu-number"
    assert names.VGPU_MEMORY == "volcano.sh/vgpu-memory"
    assert names.VGPU_CORES == "volcano.sh/vgpu-cores"


def test_the_resource_names_match_the_volcano_source():
    source = VOLCANO / "pkg/scheduler/api/devices/config/vgpu.go"
    if not source.is_file():
        pytest.skip("Volcano 1.15.1 source not present")
    text = source.read_text()
    for name in (names.VGPU_NUMBER, names.VGPU_MEMORY, names.VGPU_CORES, names.VGPU_NODE_REGISTER):
        assert f'"{name}"' in text


def test_a_full_request():
    value = {"number": 2, "memory_mib": 8192, "cores": 30}
    assert v.vgpu_request_errors("vgpu", value) == []
    assert v.vgpu_resources(value) == {
        "volcano.sh/vgpu-number": 2,
        "volcano.sh/vgpu-memory": 8192,
        "volcano.sh/vgpu-cores": 30,
    }


def test_number_alone_takes_the_whole_memory():
    assert v.vgpu_resources({"number": 1}) == {"volcano.sh/vgpu-number": 1}


def test_none_is_no_request():
    assert v.vgpu_request_errors("vgpu", None) == []


@pytest.mark.parametrize(
    ("value", "field", "words"),
    [
        ({}, "vgpu.number", "is required"),
        ({"number": 0}, "vgpu.number", "from 1 to 8"),
        ({"number": 9}, "vgpu.number", "largest node has 8"),
        ({"number": True}, "vgpu.number", "whole number"),
        ({"number": "1"}, "vgpu.number", "whole number"),
        ({"number": 1.5}, "vgpu.number", "whole number"),
        ({"number": 1, "memory_mib": 0}, "vgpu.memory_mib", "MiB"),
        ({"number": 1, "memory_mib": "8Gi"}, "vgpu.memory_mib", "whole number"),
        ({"number": 1, "memory_mib": 2**31}, "vgpu.memory_mib", "MiB"),
        ({"number": 1, "cores": 0}, "vgpu.cores", "percent"),
        ({"number": 1, "cores": 101}, "vgpu.cores", "percent"),
        ({"number": 1, "gpu_memory": 1024}, "vgpu.gpu_memory", "not a key"),
    ],
)
def test_bad_requests_name_field_value_and_rule(value, field, words):
    errors = v.vgpu_request_errors("vgpu", value)
    assert [e.field for e in errors] == [field]
    assert words in errors[0].message
    assert "rule vgpu-request" in errors[0].message


def test_a_request_that_is_not_a_mapping():
    (error,) = v.vgpu_request_errors("containers[0].vgpu", 2)
    assert error.field == "containers[0].vgpu"
    assert "2 must be a mapping" in error.message


def test_the_node_size_bounds_the_number():
    assert v.vgpu_request_errors("vgpu", {"number": 4}, max_number=4) == []
    (error,) = v.vgpu_request_errors("vgpu", {"number": 5}, max_number=4)
    assert "largest node has 4" in error.message


def test_every_problem_is_reported_at_once():
    errors = v.vgpu_request_errors("vgpu", {"number": 0, "memory_mib": -1, "cores": 200, "x": 1})
    assert sorted(e.field for e in errors) == [
        "vgpu.cores",
        "vgpu.memory_mib",
        "vgpu.number",
        "vgpu.x",
    ]


def test_vgpu_resources_refuses_a_bad_request():
    with pytest.raises(PlatformValidationError) as caught:
        v.vgpu_resources({"number": 0})
    assert caught.value.errors[0].field == "vgpu.number"


@given(valid_requests)
def test_a_valid_request_becomes_exactly_its_resources(value):
    """Invariant: every valid request passes, and its resources carry each given key's
    value under the key's resource name, and nothing else."""
    assert v.vgpu_request_errors("vgpu", value) == []
    resources = v.vgpu_resources(value)
    assert resources == {v.VGPU_KEYS[k]: n for k, n in value.items()}
    assert all(isinstance(n, int) and not isinstance(n, bool) for n in resources.values())


@given(valid_requests, st.integers(-(2**40), 2**40))
def test_an_out_of_range_number_is_the_only_error(value, number):
    """Invariant: the number is accepted exactly when it is from 1 to the node's GPUs."""
    errors = v.vgpu_request_errors("vgpu", {**value, "number": number})
    assert bool(errors) == (not 1 <= number <= v.MAX_VGPU_NUMBER)
    assert all(e.field == "vgpu.number" for e in errors)


@given(valid_requests, st.integers(-1000, 1000))
def test_cores_are_a_percentage(value, cores):
    errors = v.vgpu_request_errors("vgpu", {**value, "cores": cores})
    assert bool(errors) == (not 1 <= cores <= 100)


# rule vgpu-or-whole-gpu


@pytest.mark.parametrize("gpus", [1, 8, "1", "2"])
def test_whole_gpus_and_vgpus_in_one_container_are_refused(gpus):
    (error,) = v.vgpu_conflict_errors("containers[0]", gpus, {"number": 1})
    assert error.field == "containers[0]"
    assert "rule vgpu-or-whole-gpu" in error.message
    assert repr(gpus) in error.message
    assert "nvidia.com/gpu" in error.message


@pytest.mark.parametrize(
    ("gpus", "vgpu"),
    [(0, {"number": 1}), (None, {"number": 1}), ("0", {"number": 1}), (4, None), (4, {})],
)
def test_one_kind_alone_is_fine(gpus, vgpu):
    assert v.vgpu_conflict_errors("c", gpus, vgpu) == []


def test_a_manifest_container_with_both_is_refused():
    resources = {
        "limits": {"nvidia.com/gpu": 1, "volcano.sh/vgpu-number": 1},
        "requests": {"cpu": "4"},
    }
    (error,) = v.resource_conflict_errors("spec.tasks[0].containers[0].resources", resources)
    assert "volcano.sh/vgpu-number" in error.message


def test_a_manifest_container_with_one_kind_is_fine():
    assert v.resource_conflict_errors("r", {"limits": {"nvidia.com/gpu": 2}}) == []
    assert (
        v.resource_conflict_errors("r", {"limits": v.vgpu_resources({"number": 1, "cores": 50})})
        == []
    )
    assert v.resource_conflict_errors("r", None) == []


@given(valid_requests, st.integers(0, 8))
def test_the_resources_of_a_request_conflict_exactly_with_whole_gpus(value, gpus):
    """Invariant: a container with a valid vGPU request is refused exactly when it also
    asks for at least one whole GPU."""
    resources = {"limits": {**v.vgpu_resources(value), "nvidia.com/gpu": gpus}}
    assert bool(v.resource_conflict_errors("r", resources)) == (gpus > 0)
