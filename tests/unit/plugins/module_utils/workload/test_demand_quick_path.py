# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule job-demand has one home, ``workload/demand``: the quick way it reads the GPUs and pods
of a listed job (``gpus_and_pods``, which the spot reclaim, the arbiter, the large-job
throttle and job feasibility ask) gives exactly what ``job_demand`` gives, and the
quantity memo it depends on gives what a quantity read anew gives."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common import quantity
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.workload import (
    demand as jobs_demand,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.workload.demand import (
    gpus_and_pods,
    job_demand,
)
from ansible_collections.gpucloud.platform.tests.unit.outcomes import outcome

# --- quantities ---------------------------------------------------------------------

QUANTITY_TEXT = st.builds(
    lambda number, suffix: f"{number}{suffix}",
    st.one_of(st.integers(-3, 10**20), st.decimals(allow_nan=True, allow_infinity=True)),
    st.sampled_from(["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "Ti", "ki", "x", "e3", "E"]),
)
QUANTITIES = st.one_of(
    QUANTITY_TEXT,
    st.sampled_from(["8", "500m", "64Gi", "1e3", " 4", "", " ", "1e999", "1e-999", "NaN"]),
    st.integers(-2, 10**120),
    st.floats(),
    st.booleans(),
    st.none(),
    st.text(max_size=4),
)


@given(values=st.lists(QUANTITIES, max_size=10))
def test_a_remembered_quantity_is_the_quantity_read_anew(values):
    for value in [*values, *values]:
        assert outcome(quantity.parse, value, "q") == outcome(quantity.read_quantity, value, "q")
        known = quantity.remembered(value)
        if known is not None:
            assert known.is_finite() and outcome(quantity.read_quantity, value, "q")[2] == known


# --- job demand ---------------------------------------------------------------------

# Mostly what manifests write (so the quick way gets to answer), sometimes anything.
COMMON_AMOUNT = st.sampled_from(["1", "2", "4", "8", "500m", "64Gi", "0", "1.5", 4, 0])
AMOUNT = st.one_of(COMMON_AMOUNT, COMMON_AMOUNT, COMMON_AMOUNT, QUANTITIES)
RESOURCE_NAMES = st.sampled_from(["nvidia.com/gpu", "cpu", "memory", "ephemeral-storage"])
RESOURCE_LIST = st.one_of(
    st.dictionaries(RESOURCE_NAMES, AMOUNT, max_size=3), st.none(), st.just([])
)
CONTAINER = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "resources": st.one_of(
                st.fixed_dictionaries(
                    {}, optional={"requests": RESOURCE_LIST, "limits": RESOURCE_LIST}
                ),
                st.none(),
            ),
            "name": st.just("c"),
        },
    ),
    st.just("not a container"),
)
POD = st.fixed_dictionaries(
    {},
    optional={
        "containers": st.one_of(st.lists(CONTAINER, max_size=3), st.none()),
        "initContainers": st.one_of(st.lists(CONTAINER, max_size=2), st.just([])),
    },
)
REPLICAS = st.one_of(
    st.integers(-1, 9), st.just(2**31), st.booleans(), st.none(), st.just("3"), st.just(2.0)
)
TASK = st.fixed_dictionaries(
    {},
    optional={
        "replicas": REPLICAS,
        "template": st.one_of(st.fixed_dictionaries({}, optional={"spec": POD}), st.none()),
    },
)
VCJOB = st.fixed_dictionaries(
    {"metadata": st.just({"name": "j"})},
    optional={
        "spec": st.one_of(
            st.fixed_dictionaries({}, optional={"tasks": st.lists(TASK, max_size=3)}),
            st.none(),
        )
    },
)


def demand_of(job):
    demand = job_demand(job)
    return demand.gpus, demand.pods


@settings(max_examples=300)
@given(job=VCJOB)
def test_gpus_and_pods_read_the_quick_way_are_job_demands(job):
    # Twice: the first read fills the quantity memo the quick way depends on.
    for _read in range(2):
        assert outcome(gpus_and_pods, job) == outcome(demand_of, job)


def test_the_quick_way_counts_a_listed_job_and_leaves_the_rest_to_job_demand():
    task = {
        "replicas": 3,
        "template": {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "2"}}}]}},
    }
    job = {"metadata": {"name": "j"}, "spec": {"tasks": [task]}}
    assert gpus_and_pods(job) == (6, 3) == demand_of(job)
    assert jobs_demand._common_shape_demand(job["spec"]) == (6, 3)  # "2" is remembered now
    init = {"initContainers": [{"resources": {"limits": {"nvidia.com/gpu": "8"}}}]}
    task["template"]["spec"].update(init)
    assert jobs_demand._common_shape_demand(job["spec"]) is None
    assert gpus_and_pods(job) == (24, 3) == demand_of(job)
    # Requests first, else limits, resource by resource.
    both = {"requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": "2", "cpu": "2"}}
    task["template"]["spec"] = {"containers": [{"resources": both}]}
    assert gpus_and_pods(job) == (6, 3) == demand_of(job)
    # A count no int32 holds is job_demand's: its CPU sum overflows, and so it refuses.
    task["replicas"] = 10**999_950
    task["template"]["spec"] = {"containers": [{"resources": {"limits": {"cpu": "1e99"}}}]}
    quantity.parse("1e99", "cpu")  # now remembered
    assert outcome(gpus_and_pods, job) == outcome(demand_of, job)
    assert outcome(demand_of, job)[:2] == ("raised", PlatformValidationError)
    task["replicas"] = 3
    bad = {"requests": {"nvidia.com/gpu": "2", "cpu": "lots"}}
    task["template"]["spec"] = {"containers": [{"resources": bad}]}
    with pytest.raises(PlatformValidationError, match=r"j\.spec\.tasks\[0\].*cpu: 'lots'"):
        gpus_and_pods(job)
